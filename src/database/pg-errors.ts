import { QueryFailedError } from 'typeorm';

interface PgError {
  code?: string;
  constraint?: string;
}

const pgErrorOf = (error: unknown): PgError | undefined =>
  error instanceof QueryFailedError ? (error.driverError as PgError) : (error as PgError | undefined);

/** A PostgreSQL unique violation (23505), optionally on one named constraint or index. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pg = pgErrorOf(error);
  return pg?.code === '23505' && (constraint === undefined || pg.constraint === constraint);
}

/** A PostgreSQL foreign key violation (23503): the row referred to is gone (or never was). */
export const isForeignKeyViolation = (error: unknown): boolean => pgErrorOf(error)?.code === '23503';

/** Which constraint a unique violation hit. */
export const violatedConstraint = (error: unknown): string | undefined => pgErrorOf(error)?.constraint;
