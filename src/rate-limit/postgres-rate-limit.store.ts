import { DataSource } from 'typeorm';
import type { RateLimitStore, WindowHit } from './rate-limit.store';

interface HitRow {
  hits: number;
  reset_seconds: number;
}

/**
 * Counters in the UNLOGGED table `rate_limit_counters`: one upsert per request (the approach of
 * `LoginThrottle`), which starts a new window when the stored one has ended. The database's clock
 * decides, so replicas with drifting clocks still agree.
 */
export class PostgresRateLimitStore implements RateLimitStore {
  constructor(private readonly dataSource: DataSource) {}

  async hit(subject: string, windowSeconds: number): Promise<WindowHit> {
    const [row]: HitRow[] = await this.dataSource.query(
      `INSERT INTO rate_limit_counters AS c (key, hits, expires_at)
       VALUES ($1, 1, now() + make_interval(secs => $2))
       ON CONFLICT (key) DO UPDATE SET
         hits       = CASE WHEN c.expires_at <= now() THEN 1 ELSE c.hits + 1 END,
         expires_at = CASE WHEN c.expires_at <= now() THEN now() + make_interval(secs => $2) ELSE c.expires_at END
       RETURNING hits, extract(epoch FROM expires_at - now())::float8 AS reset_seconds`,
      [subject, windowSeconds],
    );
    return { count: row.hits, resetSeconds: row.reset_seconds };
  }

  async prune(): Promise<number> {
    const [{ n }]: Array<{ n: number }> = await this.dataSource.query(
      `WITH gone AS (DELETE FROM rate_limit_counters WHERE expires_at <= now() RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
    );
    return n;
  }
}
