import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { Feature } from '../../plans/entities/feature.entity';

/**
 * An operator's word on one customer and feature: `deny` (not granted), or `set` (granted; on a
 * metered feature one bucket with `limit` replaces the plans' buckets). At most one per customer
 * and feature: a `PUT` replaces the row. In effect until `expires_at` (null: until removed); an
 * expired row stays until the next `PUT` or `DELETE` so that its removal is announced once.
 */
@Entity({ name: 'customer_overrides' })
// the boundary scheduler's scan of overrides reaching their end
@Index('customer_overrides_expires_idx', ['expiresAt'], { where: '"expires_at" IS NOT NULL' })
export class CustomerOverride {
  @PrimaryColumn({ name: 'customer_id', type: 'int' })
  customerId: number;

  @PrimaryColumn({ name: 'feature_id', type: 'int' })
  featureId: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'customer_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'customer_overrides_customer_fk',
    },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  customer?: Customer;

  // a feature an override names is not deleted (FEATURE_IN_USE); the cascade removes expired ones
  @ManyToOne(() => Feature, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'feature_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'customer_overrides_feature_fk',
    },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  feature?: Feature;

  /** `set` or `deny`. */
  @Column({ type: 'varchar', length: 8 })
  mode: string;

  /** `set` on a metered feature: the bucket's limit (null: unlimited); otherwise null. */
  @Column({ name: 'override_limit', type: 'numeric', precision: 26, scale: 6, nullable: true })
  limit: string | null;

  @Column({ type: 'int', nullable: true })
  priority: number | null;

  @Column({ name: 'reset_interval', type: 'varchar', length: 32, nullable: true })
  resetInterval: string | null;

  /**
   * Copied with `reset_interval` from the plan bucket (`run` when the PUT names the interval or no
   * plan bucket is in effect); null for `deny` and on a boolean feature.
   */
  @Column({ name: 'reset_anchor', type: 'varchar', length: 8, nullable: true })
  resetAnchor: 'run' | 'calendar' | null;

  /** A calendar P1M, P3M or P6M period's day of the month, copied with `reset_interval`. */
  @Column({ name: 'reset_day_of_month', type: 'smallint', nullable: true })
  resetDayOfMonth: number | null;

  /** A calendar bucket's own zone, copied with `reset_interval`; null: the customer's, else the project's. */
  @Column({ name: 'reset_time_zone', type: 'varchar', length: 64, nullable: true })
  resetTimeZone: string | null;

  /** The start of the override bucket's periods (`anchor + k x resetInterval`, or calendar units from it). */
  @Column({ type: 'timestamptz', precision: 3, nullable: true })
  anchor: Date | null;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  reason: string | null;

  /** This `PUT`'s instant. */
  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}
