import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export interface PoolerProbe {
  /** Two client connections, one after the other, ran on the same server backend: a transaction pooler. */
  transactionPooled: boolean;
  /** A named prepared statement made by one client did not get in the way of another's (false: it did). */
  prepares: boolean;
}

/**
 * Finds out whether `url` leads to a pooler that shares server connections between clients per
 * transaction (PgBouncer in transaction mode) and, if so, whether named prepared statements
 * survive it (PgBouncer 1.21 or later with `max_prepared_statements` above 0 keeps track of them;
 * earlier versions hand one client's statement to the next client on that server connection).
 *
 * Client A prepares a named statement in a transaction and commits: a transaction pooler gives
 * its server connection back to the pool. Client B then opens a transaction; PgBouncer hands out
 * the most recently used server connection first, so B lands on A's backend (same
 * `pg_backend_pid()`), which never happens on a direct connection or in session mode. B then
 * prepares the same name, as the service's next client would: "already exists" (42P05) means the
 * pooler cannot be trusted with prepared statements. A pooler that happens to give B another
 * backend is reported as not pooled (the probe can miss, never invent, a pooler).
 */
export async function probePooler(url: string): Promise<PoolerProbe> {
  const name = `pooler_probe_${randomBytes(6).toString('hex')}`;
  const pid = 'SELECT pg_backend_pid() AS pid';
  const options = {
    connectionString: url,
    application_name: 'subscription-service-probe',
    connectionTimeoutMillis: 5000,
    query_timeout: 5000,
  };
  const a = new Client(options);
  const b = new Client(options);
  try {
    await a.connect();
    await b.connect();
    await a.query('BEGIN');
    const [{ pid: first }] = (await a.query<{ pid: number }>({ name, text: pid })).rows;
    await a.query('COMMIT');
    await b.query('BEGIN');
    const [{ pid: second }] = (await b.query<{ pid: number }>(pid)).rows;
    if (first !== second) {
      await b.query('COMMIT');
      return { transactionPooled: false, prepares: true };
    }
    try {
      await b.query({ name, text: pid });
      await b.query('COMMIT');
      return { transactionPooled: true, prepares: true };
    } catch (error) {
      if ((error as { code?: string }).code !== '42P05') throw error;
      await b.query('ROLLBACK');
      await b.query(`DEALLOCATE ${name}`).catch(() => undefined); // best effort: it may land elsewhere
      return { transactionPooled: true, prepares: false };
    }
  } finally {
    await Promise.all([a.end().catch(() => undefined), b.end().catch(() => undefined)]);
  }
}
