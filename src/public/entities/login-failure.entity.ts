import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * Failed public logins counted per key in fixed windows (see `login-throttle.service.ts`).
 * Keys: `id:<projectId>:<sha256 of type and value>` and `ip:<address>`. In the database, not
 * in memory, so that every replica counts the same failures.
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
}
