import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * Failed attempts counted per key (see `FailureCounters`): public logins
 * (`lp:`/`li:` + a SHA-256, `ip:<address>`, `LoginThrottle`) and admin tokens
 * (`admin:<address>`). In the database, not in memory, so that every replica counts the same
 * failures.
 */
@Entity({ name: 'login_failures' })
@Index('login_failures_window_idx', ['windowStart'])
export class LoginFailure {
  @PrimaryColumn({ type: 'varchar', length: 128, primaryKeyConstraintName: 'login_failures_pk' })
  key: string;

  @Column({ name: 'window_start', type: 'timestamptz', precision: 3 })
  windowStart: Date;

  @Column({ type: 'int' })
  failures: number;

  /** Time of the last counted attempt: growing delays and the end of a growing counter count from it. */
  @Column({ name: 'last_failure_at', type: 'timestamptz', precision: 3, default: () => 'now()' })
  lastFailureAt: Date;
}
