import { Propagation, ClsPluginTransactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { EntityManager, QueryFailedError } from 'typeorm';
import { clsRootWithoutIdleEnhancers } from './cls-root';
import { ridersAlone, takeRiders } from './riders';

/**
 * The transaction of the current unit of work, carried in async context by `nestjs-cls`.
 *
 * A use case (a service method) declares its unit of work with `@Transactional()`; repositories
 * inject `Transactions` and run their statements on `transactions.tx`, the current transaction's
 * `EntityManager` (or the data source's manager outside one). Nobody threads an `EntityManager`
 * through signatures, and no repository begins or commits.
 */
export type Transactions = TransactionHost<TransactionalAdapterTypeOrm>;
export const Transactions = TransactionHost;

/**
 * Registers the async context and the transaction host (once, in `AppModule`), without the idle
 * global guard and interceptor nestjs-cls would add to every route (see `clsRootWithoutIdleEnhancers`).
 */
export const TransactionsModule = clsRootWithoutIdleEnhancers({
  global: true,
  plugins: [
    new ClsPluginTransactional({
      imports: [TypeOrmModule],
      adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
    }),
  ],
});

/** PostgreSQL's serialization_failure and deadlock_detected: the whole unit of work may be tried again. */
const RETRYABLE = new Set(['40001', '40P01']);
const DEFAULT_ATTEMPTS = 4;

/**
 * Something that takes part in a unit of work's transaction: `begin` runs first (it may throw to
 * refuse the work), `beforeCommit` last with the work's result, `afterCommit` once it committed.
 * The idempotency record of a keyed request is one (`IdempotencyContext`).
 */
export interface TransactionParticipant {
  begin(em: EntityManager): Promise<void>;
  beforeCommit(em: EntityManager, result: unknown): Promise<void>;
  afterCommit(): void;
}

export interface UnitOfWorkOptions {
  /** Tries in all, counting the first. */
  attempts?: number;
  /** Joins the transaction (the request's `Idempotency-Key`). */
  participant?: TransactionParticipant;
}

function isRetryable(error: unknown): boolean {
  const code = error instanceof QueryFailedError ? (error.driverError as { code?: string }).code : undefined;
  return code !== undefined && RETRYABLE.has(code);
}

/**
 * Runs `work` as one unit of work on `host` (the application's `Transactions`). Inside a
 * transaction already open (a caller's unit of work), `work` joins it; otherwise a new
 * transaction is opened around it and committed when it returns, and the whole of it is tried
 * again (a few times, after a short random pause) when PostgreSQL aborts it for a deadlock or a
 * serialization failure. Retrying only the outermost unit keeps a retry from replaying half of a
 * transaction that has already aborted.
 */
export async function runInTransaction<T>(
  host: Transactions,
  work: () => Promise<T>,
  { attempts = DEFAULT_ATTEMPTS, participant }: UnitOfWorkOptions = {},
): Promise<T> {
  const unit = participant
    ? async () => {
        await participant.begin(host.tx);
        const result = await work();
        await participant.beforeCommit(host.tx, result);
        return result;
      }
    : work;
  if (host.isTransactionActive()) return unit();
  // the riders no carrier took (see riders.ts) are sent last, before the commit
  const owned = async () => {
    const result = await unit();
    const riders = takeRiders(host.tx);
    if (riders.length > 0) {
      const { text, values } = ridersAlone(riders);
      await host.tx.query(text, values);
    }
    return result;
  };
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await host.withTransaction(Propagation.RequiresNew, owned);
      participant?.afterCommit();
      return result;
    } catch (error) {
      if (!isRetryable(error) || attempt >= attempts) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 * attempt + Math.random() * 20));
    }
  }
}

/** Each instance's own `Transactions`, found once (see `Transactional`). */
const hostOf = new WeakMap<object, Transactions>();

function transactionsOf(instance: object, method: string): Transactions {
  let host = hostOf.get(instance);
  if (!host) {
    host = Object.values(instance).find((value) => value instanceof TransactionHost) as
      Transactions | undefined;
    if (!host)
      throw new Error(
        `${instance.constructor.name}.${method} is @Transactional() but its class injects no Transactions`,
      );
    hostOf.set(instance, host);
  }
  return host;
}

/**
 * Declares a service method a unit of work: it runs in one transaction (see `runInTransaction`),
 * so every statement its repositories send commits or rolls back together. The class injects
 * `Transactions`: each application has its own (tests run several in one process), so the
 * decorator uses the instance's, never a process-wide one.
 */
export function Transactional(options: UnitOfWorkOptions = {}): MethodDecorator {
  return (_target, key, descriptor: PropertyDescriptor) => {
    const original = descriptor.value as (...args: unknown[]) => Promise<unknown>;
    descriptor.value = function (this: object, ...args: unknown[]) {
      return runInTransaction(transactionsOf(this, String(key)), () => original.apply(this, args), options);
    };
    Object.defineProperty(descriptor.value, 'name', { value: original.name });
    return descriptor;
  };
}
