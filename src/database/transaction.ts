import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import { currentManager, runInTransaction } from './transactional';

const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected (inTransactionOpenedByWork)

export type { TransactionParticipant } from './transactional';
import type { UnitOfWorkOptions } from './transactional';

/** Deprecated name of `UnitOfWorkOptions` (this file goes once every caller uses `runInTransaction`). */
export type TransactionOptions = UnitOfWorkOptions;

/**
 * `runInTransaction` for callers that still take the manager as an argument.
 *
 * Runs `work` in one transaction and retries it (a few times, with jitter) when PostgreSQL
 * aborts it for a deadlock or a serialization failure, so that callers only ever see the
 * outcome of a whole unit of work.
 *
 * With a `participant` (the request's idempotency context), the participant's `begin` runs
 * before the work and its `beforeCommit` after it, in the same transaction: for a keyed request
 * that takes the key's lock, finds an earlier answer, and stores this answer with the work, so
 * the answer and the work commit or roll back together.
 */
export function inTransaction<T>(
  _dataSource: DataSource,
  work: (em: EntityManager) => Promise<T>,
  options: TransactionOptions | number = {},
): Promise<T> {
  return runInTransaction(
    () => work(currentManager()),
    typeof options === 'number' ? { attempts: options } : options,
  );
}

/** How a unit of work of `inTransactionOpenedByWork` ended its transaction itself, if it did. */
export interface OwnTransaction {
  /** Set by the work once its last statement went with `COMMIT` (`Statements.chain`). */
  committed: boolean;
}

/**
 * `inTransaction` for a unit of work that opens the transaction itself with its first
 * statement (`Statements.begin`: `BEGIN` and a row lock in one round trip), and may commit it
 * with its last (`own.committed`); else a plain `COMMIT`, or `ROLLBACK` when the work throws,
 * and the same retries. For the hottest write (a consume), where each round trip of a lone
 * `BEGIN` or `COMMIT` was a fifth of the work. Without participant.
 */
export async function inTransactionOpenedByWork<T>(
  dataSource: DataSource,
  work: (em: EntityManager, own: OwnTransaction) => Promise<T>,
  attempts = 4,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const runner = dataSource.createQueryRunner();
    try {
      await runner.connect();
      const own: OwnTransaction = { committed: false };
      const result = await work(runner.manager, own);
      if (!own.committed) await runner.query('COMMIT');
      return result;
    } catch (error) {
      // without a transaction open (the work failed before its first statement) this only warns
      await runner.query('ROLLBACK').catch(() => undefined);
      const code =
        error instanceof QueryFailedError ? (error.driverError as { code?: string }).code : undefined;
      if (!code || !RETRYABLE.has(code) || attempt >= attempts) throw error;
    } finally {
      await runner.release();
    }
    await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
  }
}
