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

/** SQLSTATEs of a database that is stopping, starting, overloaded or too slow. */
const UNAVAILABLE_STATES = new Set([
  '57014', // query_canceled: statement_timeout (or a cancel at shutdown)
  '57P01', // admin_shutdown: the server stops, or pg_terminate_backend
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the server is starting or recovering
  '53300', // too_many_connections
  '55P03', // lock_not_available
]);

/** What pg and pg-pool say when the connection is gone, never came, or did not answer in time. */
const UNAVAILABLE_MESSAGE =
  /^(Query read timeout|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable)/;
const UNAVAILABLE_SYSCALL = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * The database is unreachable, restarting, or did not answer within its timeouts: the request
 * did not (or may not have) happen and can be retried later, so it answers 503, never 500.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const e of [error, error instanceof QueryFailedError ? error.driverError : undefined]) {
    if (!e || typeof e !== 'object') continue;
    const code = (e as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      (UNAVAILABLE_STATES.has(code) || code.startsWith('08') || UNAVAILABLE_SYSCALL.has(code))
    )
      return true;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)) return true;
  }
  return false;
}
