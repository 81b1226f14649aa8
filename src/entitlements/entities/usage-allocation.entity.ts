import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { UsageRecord } from './usage-record.entity';

/**
 * The part of a usage record taken from one bucket (partitioned by month of `recorded_at`, the
 * record's, with the key `(id, recorded_at)`: migration LedgerPartitions): a plan group's quota (`source: plan`), the
 * customer's override of the feature (`override`) or a grant (`grant`). The rows the period sums
 * read. `customer_id`, `feature_id` and `recorded_at` are the record's, copied so that a
 * period's usage is two probes of one index (`running`, migration UsageRunningTotals) and a walk
 * of the reversed allocations in it.
 */
@Entity({ name: 'usage_allocations' })
@Index('usage_allocations_usage_idx', ['usageId'])
@Index('usage_allocations_running_idx', ['customerId', 'featureId', 'group', 'recordedAt', 'id'])
@Index('usage_allocations_reversed_idx', ['customerId', 'featureId', 'group', 'recordedAt'], {
  where: '"reversed"',
})
export class UsageAllocation {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'usage_allocations_pk' })
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'usage_id', type: 'bigint' })
  usageId: string;

  @ManyToOne(() => UsageRecord, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'usage_id', referencedColumnName: 'id', foreignKeyConstraintName: 'usage_allocations_usage_fk' },
    { name: 'recorded_at', referencedColumnName: 'recordedAt' },
  ])
  usage?: UsageRecord;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @Column({ name: 'feature_id', type: 'int' })
  featureId: number;

  /** `plan`, `override` or `grant`. */
  @Column({ type: 'varchar', length: 8, default: 'plan' })
  source: string;

  /** The plan group of a plan bucket's allocation; null for an override's or a grant's. */
  @Column({ name: 'plan_group', type: 'varchar', length: 64, nullable: true })
  group: string | null;

  /** The grant a grant allocation took from. */
  @Column({ name: 'grant_id', type: 'int', nullable: true })
  grantId: number | null;

  /** Informational: the start of the bucket's period when the record was made; null for a grant's. */
  @Column({ name: 'period_start', type: 'timestamptz', precision: 3, nullable: true })
  periodStart: Date | null;

  @Column({ type: 'numeric', precision: 26, scale: 6 })
  amount: string;

  /** The partition key (the table is partitioned by month like `usage_records`): the record's. */
  @PrimaryColumn({
    name: 'recorded_at',
    type: 'timestamptz',
    precision: 3,
    primaryKeyConstraintName: 'usage_allocations_pk',
  })
  recordedAt: Date;

  /** Set with the record's `reversed_at`: the allocation no longer counts. */
  @Column({ type: 'boolean', default: false })
  reversed: boolean;

  /** Once reversed: whether the amount came back (a grant's does not once the grant has ended). */
  @Column({ type: 'boolean', nullable: true })
  restored: boolean | null;

  /**
   * The amounts of the customer's allocations of this feature and plan group up to and including
   * this one, in `(recorded_at, id)` order, reversed ones included. Written by `usage.insert`;
   * for rows inserted without it, by the trigger `usage_allocations_running` (migration UsageRunningTotals).
   */
  @Column({ type: 'numeric', precision: 32, scale: 6 })
  running: string;
}
