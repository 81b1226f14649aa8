import { DataSource, EntityManager, QueryFailedError } from 'typeorm';

const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

/**
 * Runs `work` in one transaction and retries it (a few times, with jitter) when PostgreSQL
 * aborts it for a deadlock or a serialization failure, so that callers only ever see the
 * outcome of a whole unit of work.
 */
export async function inTransaction<T>(
  dataSource: DataSource,
  work: (em: EntityManager) => Promise<T>,
  attempts = 4,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await dataSource.transaction(work);
    } catch (error) {
      const code =
        error instanceof QueryFailedError ? (error.driverError as { code?: string }).code : undefined;
      if (!code || !RETRYABLE.has(code) || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
}
