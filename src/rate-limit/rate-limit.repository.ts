import { pruneInBatches } from '../database/prune';
import type { Transactions } from '../database/transactional';
import type { RateLimitClock, RateLimitStore, WindowHit } from './rate-limit.store';
import { GenerateSql } from '../database/generate-sql';

interface HitRow {
  hits: number;
  reset_seconds: number;
}

/**
 * The rate-limit module's repository: every statement on the UNLOGGED table
 * `rate_limit_counters`, and the Postgres `RateLimitStore` itself (the store IS the data access of
 * this module, so it is not wrapped again). One upsert per request (the approach of
 * `FailureCounters`), which starts a new window when the stored one has ended. The database's clock
 * decides (shifted by `RateLimitClock`, which only tests move), so replicas with drifting clocks
 * still agree. A hit is counted before any use case starts, so its statement commits on its own.
 */
export class PostgresRateLimitRepository implements RateLimitStore {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: RateLimitClock,
  ) {}

  @GenerateSql({ params: ['key:1', 60] })
  async hit(subject: string, windowSeconds: number): Promise<WindowHit> {
    const [row]: HitRow[] = await this.transactions.tx.query(
      `INSERT INTO rate_limit_counters AS c (key, hits, expires_at)
       VALUES ($1, 1, now() + make_interval(secs => $3::float8 + $2::float8))
       ON CONFLICT (key) DO UPDATE SET
         hits       = CASE WHEN c.expires_at <= now() + make_interval(secs => $3::float8) THEN 1 ELSE c.hits + 1 END,
         expires_at = CASE WHEN c.expires_at <= now() + make_interval(secs => $3::float8)
                           THEN now() + make_interval(secs => $3::float8 + $2::float8) ELSE c.expires_at END
       RETURNING hits, extract(epoch FROM expires_at - now() - make_interval(secs => $3::float8))::float8 AS reset_seconds`,
      [subject, windowSeconds, this.clock.shiftSeconds],
    );
    return { count: row.hits, resetSeconds: row.reset_seconds };
  }

  /** Deletes the counters whose window has ended; returns how many. */
  @GenerateSql({ params: [] })
  prune(): Promise<number> {
    return pruneInBatches(this.transactions.tx, {
      table: 'rate_limit_counters',
      condition: 'expires_at <= now() + make_interval(secs => $1::float8)',
      values: [this.clock.shiftSeconds],
    });
  }
}
