import { Client } from 'pg';
import type { EntityManager } from 'typeorm';

/** What the pool of the service needs besides the URL (`DB_*` variables). */
export interface DatabaseTimeouts {
  /** `statement_timeout` of every session, in ms: PostgreSQL cancels a statement that runs longer. */
  statementTimeoutMs: number;
  /**
   * How long the client waits for the answer of one statement, in ms: covers what the server
   * cannot cancel (a frozen network, a stopped server). The connection is then destroyed.
   */
  queryTimeoutMs: number;
  /** How long a request waits for a pool slot or a new connection, in ms. */
  poolWaitMs: number;
}

/** How often PostgreSQL checks, during a statement, that the client is still connected (ms). */
export const CLIENT_CHECK_INTERVAL_MS = 1000;

/** Margin of the client's wait over the server's statement timeout, so the server's cancel is seen first. */
export const QUERY_TIMEOUT_MARGIN_MS = 1000;

interface ClientInternals {
  connectionParameters: { query_timeout?: number | false };
  connection: { stream: { destroy(): void } };
}

/**
 * The pg client of the service's pool. When a statement gets no answer within `query_timeout`
 * (pg's own timer), pg rejects it but leaves the connection as it is, its next statements
 * queued behind the lost one: here the connection is destroyed instead, so the pool drops it,
 * the transaction's ROLLBACK fails at once rather than waiting in turn, and PostgreSQL rolls
 * the transaction back when it sees the connection close.
 * It also restores the session's normal query timeout at the end of a transaction that
 * `allowLongStatements` raised it for.
 */
export class GuardedClient extends Client {
  private normalQueryTimeout?: number | false;

  override query(...args: unknown[]): never {
    const internals = this as unknown as ClientInternals;
    const text = typeof args[0] === 'string' ? args[0] : undefined;
    if (this.normalQueryTimeout !== undefined && (text === 'COMMIT' || text === 'ROLLBACK')) {
      internals.connectionParameters.query_timeout = this.normalQueryTimeout;
      this.normalQueryTimeout = undefined;
    }
    const result = (super.query as (...a: unknown[]) => unknown).apply(this, args);
    if (result && typeof (result as Promise<unknown>).catch === 'function') {
      (result as Promise<unknown>).catch((error: unknown) => {
        if (error instanceof Error && error.message === 'Query read timeout')
          internals.connection.stream.destroy();
      });
    }
    return result as never;
  }

  /** For `allowLongStatements`: raises the client's wait until the transaction ends. */
  raiseQueryTimeout(ms: number): void {
    const params = (this as unknown as ClientInternals).connectionParameters;
    this.normalQueryTimeout ??= params.query_timeout ?? false;
    params.query_timeout = ms;
  }
}

/**
 * Lets the statements of the rest of `em`'s transaction run up to `ms` (a known long operation,
 * such as a batch of 10,000 codes): `SET LOCAL statement_timeout`, and the client's own wait
 * raised to match, until the transaction ends.
 */
export async function allowLongStatements(em: EntityManager, ms: number): Promise<void> {
  await em.query(`SET LOCAL statement_timeout = ${Math.floor(ms)}`);
  const client = (em.queryRunner as unknown as { databaseConnection?: unknown } | undefined)
    ?.databaseConnection;
  if (client instanceof GuardedClient) client.raiseQueryTimeout(ms + QUERY_TIMEOUT_MARGIN_MS);
}

/** The `extra` options of the pg pool for these timeouts. */
export function poolTimeoutOptions(t: DatabaseTimeouts): Record<string, unknown> {
  return {
    Client: GuardedClient,
    statement_timeout: t.statementTimeoutMs,
    query_timeout: t.queryTimeoutMs,
    connectionTimeoutMillis: t.poolWaitMs,
    // a peer that vanished (host down, network cut) is found on idle connections too
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // PostgreSQL checks that the client is still there during a long statement (a lock wait
    // included) and rolls back as soon as it is gone, instead of when the statement ends: the
    // locks of a killed replica's transactions (idempotency keys among them) are freed at once.
    options: `-c client_connection_check_interval=${CLIENT_CHECK_INTERVAL_MS}`,
  };
}

/**
 * At the shutdown deadline: destroys the socket of every connection of the pool, so that each
 * statement still running fails at once (its request answers 503) and PostgreSQL rolls its
 * transaction back, freeing its locks (the idempotency keys' among them). Waiting for a frozen
 * or slow server is not an option there. Reads the pool's list of clients (`_clients`, pg-pool's
 * own, unchanged for years; there is no public one).
 */
export function cutDatabaseConnections(pool: unknown): number {
  const clients = (pool as { _clients?: Array<Partial<ClientInternals>> } | undefined)?._clients ?? [];
  for (const client of clients) client.connection?.stream.destroy();
  return clients.length;
}
