import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One fixed-window request counter of the rate limiter's PostgreSQL store (see
 * `rate-limit.repository.ts`). Keys: `key:<api key id>` and `address:<client address>`.
 * The table is UNLOGGED (migration RateLimits): counters are worth no WAL and may be lost in a
 * crash; expired rows are pruned every few minutes.
 */
@Entity({ name: 'rate_limit_counters' })
@Index('rate_limit_counters_expires_idx', ['expiresAt'])
export class RateLimitCounter {
  @PrimaryColumn({ type: 'varchar', length: 200, primaryKeyConstraintName: 'rate_limit_counters_pk' })
  key: string;

  @Column({ type: 'int' })
  hits: number;

  /** End of the current window, which began with its first request. */
  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;
}
