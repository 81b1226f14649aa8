import { DataSource, EntityManager, QueryFailedError } from 'typeorm';

const RETRYABLE = new Set(['40001', '40P01']); // serialization_failure, deadlock_detected

/**
 * Something that takes part in a unit of work's own transaction: `begin` runs first (it may
 * throw to refuse the work), `beforeCommit` runs last with the work's result, and whatever both
 * write commits or rolls back with the work. The idempotency record of a keyed request is one
 * (`IdempotencyContext`): it is passed explicitly, never found through async context.
 */
export interface TransactionParticipant {
  begin(em: EntityManager): Promise<void>;
  beforeCommit(em: EntityManager, result: unknown): Promise<void>;
  /** Called once the transaction has committed. */
  afterCommit(): void;
}

export interface TransactionOptions {
  /** Joins the transaction (the `Idempotency-Key` of the request, see `IdempotencyScope`). */
  participant?: TransactionParticipant;
  /** Tries in all, counting the first; 4 when unset. */
  attempts?: number;
}

/**
 * Runs `work` in one transaction and retries it (a few times, with jitter) when PostgreSQL
 * aborts it for a deadlock or a serialization failure, so that callers only ever see the
 * outcome of a whole unit of work.
 *
 * With a `participant` (the request's idempotency context), the participant's `begin` runs
 * before the work and its `beforeCommit` after it, in the same transaction: for a keyed request
 * that takes the key's lock, finds an earlier answer, and stores this answer with the work, so
 * the answer and the work commit or roll back together.
 */
export async function inTransaction<T>(
  dataSource: DataSource,
  work: (em: EntityManager) => Promise<T>,
  options: TransactionOptions | number = {},
): Promise<T> {
  const { participant, attempts = 4 } = typeof options === 'number' ? { attempts: options } : options;
  const unit = participant
    ? async (em: EntityManager) => {
        await participant.begin(em);
        const result = await work(em);
        await participant.beforeCommit(em, result);
        return result;
      }
    : work;
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await dataSource.transaction(unit);
      participant?.afterCommit();
      return result;
    } catch (error) {
      const code =
        error instanceof QueryFailedError ? (error.driverError as { code?: string }).code : undefined;
      if (!code || !RETRYABLE.has(code) || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
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
