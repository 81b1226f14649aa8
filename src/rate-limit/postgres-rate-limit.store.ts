import { DataSource } from 'typeorm';
import type { RateLimitClock, RateLimitStore, WindowHit } from './rate-limit.store';

interface HitRow {
  hits: number;
  reset_seconds: number;
}

/**
 * Counters in the UNLOGGED table `rate_limit_counters`: one upsert per request (the approach of
 * `LoginThrottle`), which starts a new window when the stored one has ended. The database's clock
 * decides (shifted by `RateLimitClock`, which only tests move), so replicas with drifting clocks
 * still agree.
 */
export class PostgresRateLimitStore implements RateLimitStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: RateLimitClock,
  ) {}

  async hit(subject: string, windowSeconds: number): Promise<WindowHit> {
    const [row]: HitRow[] = await this.dataSource.query(
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

  async prune(): Promise<number> {
    const [{ n }]: Array<{ n: number }> = await this.dataSource.query(
      `WITH gone AS (DELETE FROM rate_limit_counters WHERE expires_at <= now() + make_interval(secs => $1::float8) RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [this.clock.shiftSeconds],
    );
    return n;
  }
}
