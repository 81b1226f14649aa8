import { Injectable } from '@nestjs/common';
import { pruneInBatches } from '../database/prune';
import { Transactions } from '../database/transactional';
import { GenerateSql } from '../database/generate-sql';

/** A failure counter as `FailureCounters` judges it: its count and its ages in seconds. */
export interface CounterRow {
  key: string;
  failures: number;
  since_start: number;
  since_last: number;
}

/**
 * Every statement of the auth module: the failure counters (`login_failures`, used by
 * `FailureCounters`) and the request nonces (`request_nonces`, used by `RequestNonceStore`). The
 * services keep the rules. Every statement runs in the current unit of work's transaction, if
 * one is open.
 */
@Injectable()
export class AuthRepository {
  constructor(private readonly transactions: Transactions) {}

  private get tx() {
    return this.transactions.tx;
  }

  /** Creates the counters of `keys` that do not exist yet (in key order: one lock order). */
  @GenerateSql({ params: [['login:prj_1:ada', 'login:prj_1:203.0.113.7']] })
  async insertMissingCounters(keys: string[]): Promise<void> {
    await this.tx.query(
      `INSERT INTO login_failures (key, window_start, failures, last_failure_at)
         SELECT k, now(), 0, now() FROM unnest($1::varchar[]) AS k ORDER BY k
         ON CONFLICT (key) DO NOTHING`,
      [keys],
    );
  }

  /** The counters of `keys`, locked for the rest of the current transaction (in key order). */
  @GenerateSql({ params: [['login:prj_1:ada', 'login:prj_1:203.0.113.7']] })
  lockCounters(keys: string[]): Promise<CounterRow[]> {
    return this.tx.query(
      `SELECT key, failures,
                extract(epoch FROM now() - window_start)::float8 AS since_start,
                extract(epoch FROM now() - last_failure_at)::float8 AS since_last
           FROM login_failures WHERE key = ANY($1::varchar[]) ORDER BY key FOR UPDATE`,
      [keys],
    );
  }

  /** Writes the new counts, each a failure now; `reset`: its window starts now. */
  @GenerateSql({
    params: [
      [
        { key: 'login:prj_1:ada', failures: 3, reset: false },
        { key: 'login:prj_1:203.0.113.7', failures: 1, reset: true },
      ],
    ],
  })
  async writeCounts(next: Array<{ key: string; failures: number; reset: boolean }>): Promise<void> {
    await this.tx.query(
      `UPDATE login_failures AS f
            SET failures = v.failures, last_failure_at = now(),
                window_start = CASE WHEN v.reset THEN now() ELSE f.window_start END
           FROM unnest($1::varchar[], $2::int[], $3::boolean[]) AS v(key, failures, reset)
          WHERE f.key = v.key`,
      [next.map((n) => n.key), next.map((n) => n.failures), next.map((n) => n.reset)],
    );
  }

  /** One counter, unlocked. */
  @GenerateSql({ params: ['login:prj_1:ada'] })
  async readCounter(key: string): Promise<CounterRow | undefined> {
    const rows: CounterRow[] = await this.tx.query(
      `SELECT key, failures,
              extract(epoch FROM now() - window_start)::float8 AS since_start,
              extract(epoch FROM now() - last_failure_at)::float8 AS since_last
         FROM login_failures WHERE key = $1`,
      [key],
    );
    return rows[0];
  }

  /**
   * One count back on each counter of `keys`, the rows locked in key order first, the order
   * `lockCounters` takes them in: an `UPDATE ... WHERE key = ANY(...)` alone locks them in the
   * order it finds them, and deadlocked with a concurrent attempt's `lockCounters` (two password
   * changes of one customer at once).
   */
  @GenerateSql({ params: [['login:prj_1:ada', 'login:prj_1:203.0.113.7']] })
  async giveBack(keys: string[]): Promise<void> {
    await this.tx.query(
      `WITH locked AS (SELECT key FROM login_failures WHERE key = ANY($1::varchar[]) ORDER BY key FOR UPDATE)
       UPDATE login_failures AS f SET failures = greatest(f.failures - 1, 0) FROM locked WHERE f.key = locked.key`,
      [keys],
    );
  }

  @GenerateSql({ params: ['login:prj_1:ada'] })
  async deleteCounter(key: string): Promise<void> {
    await this.tx.query('DELETE FROM login_failures WHERE key = $1', [key]);
  }

  /** Deletes the counters with no failure in the last `windowSeconds`; returns how many. */
  @GenerateSql({ params: [900] })
  pruneCounters(windowSeconds: number): Promise<number> {
    return pruneInBatches(this.tx, {
      table: 'login_failures',
      condition:
        'window_start <= now() - make_interval(secs => $1) AND last_failure_at <= now() - make_interval(secs => $1)',
      values: [windowSeconds],
    });
  }

  /**
   * Records the nonce; false when the key already used it and the record is still live.
   * The UNIQUE (api_key_id, nonce) decides: `ON CONFLICT` takes over only a row that has
   * expired but not been pruned yet, and leaves a live one alone (no row returned = reused).
   */
  @GenerateSql({
    params: [1, 'c1f0e2d3b4a59687', new Date('2026-03-15T12:05:00Z'), new Date('2026-03-15T12:00:00Z')],
  })
  async insertNonce(apiKeyId: number, nonce: string, expiresAt: Date, now: Date): Promise<boolean> {
    const rows: unknown[] = await this.tx.query(
      `INSERT INTO request_nonces AS n (api_key_id, nonce, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (api_key_id, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
        WHERE n.expires_at < $4
       RETURNING 1 AS stored`,
      [apiKeyId, nonce, expiresAt, now],
    );
    return rows.length > 0;
  }

  /** Deletes the nonces expired before `now`; returns how many. */
  @GenerateSql({ params: [new Date('2026-03-15T12:00:00Z')] })
  pruneNonces(now: Date): Promise<number> {
    return pruneInBatches(this.tx, {
      table: 'request_nonces',
      condition: 'expires_at < $1',
      values: [now],
    });
  }
}
