import { DataSource, EntityManager } from 'typeorm';
import { currentManager, runInTransaction } from './transactional';

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
