import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { Feature } from '../../plans/entities/feature.entity';

/**
 * One consumption of a metered feature by a customer: the ledger, partitioned by month of
 * `recorded_at` (migration LedgerPartitions; TypeORM sees the parent table only), hence the key
 * `(id, recorded_at)`. `event_id` is the caller's, unique per project and customer forever
 * through `usage_event_ids`. Only read and written through `UsageRepository`.
 */
@Entity({ name: 'usage_records' })
// the ledger page, newest first
@Index('usage_records_customer_recorded_idx', ['customerId', 'recordedAt', 'id'])
// the overage of one feature since a period start: two probes for `overage_running`, and the reversed records
@Index('usage_records_customer_feature_idx', ['customerId', 'featureId', 'recordedAt', 'id'])
@Index('usage_records_reversed_idx', ['customerId', 'featureId', 'recordedAt'], {
  where: '"reversed_at" IS NOT NULL',
})
export class UsageRecord {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'usage_records_pk' })
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'customer_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'usage_records_customer_fk',
    },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  customer?: Customer;

  @Column({ name: 'feature_id', type: 'int' })
  featureId: number;

  @ManyToOne(() => Feature, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'feature_id', referencedColumnName: 'id', foreignKeyConstraintName: 'usage_records_feature_fk' },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  feature?: Feature;

  @Column({ name: 'event_id', type: 'varchar', length: 255 })
  eventId: string;

  /** In the feature's units, at most 6 decimal places. */
  @Column({ type: 'numeric', precision: 26, scale: 6 })
  amount: string;

  /** The part of `amount` no bucket could take (allowOverage). */
  @Column({ type: 'numeric', precision: 26, scale: 6, default: 0 })
  overage: string;

  /** The part of `amount` taken from grants: the rest (less overage) counts against an override. */
  @Column({ type: 'numeric', precision: 26, scale: 6, default: 0 })
  granted: string;

  /** The partition key. */
  @PrimaryColumn({
    name: 'recorded_at',
    type: 'timestamptz',
    precision: 3,
    primaryKeyConstraintName: 'usage_records_pk',
  })
  recordedAt: Date;

  @Column({ name: 'reversed_at', type: 'timestamptz', precision: 3, nullable: true })
  reversedAt: Date | null;

  /**
   * The overage of the customer's records of this feature up to and including this one, in
   * `(recorded_at, id)` order, reversed ones included. Written by `usage.insert`; for rows
   * inserted without it, by the trigger `usage_records_running` (migration UsageRunningTotals).
   */
  @Column({ name: 'overage_running', type: 'numeric', precision: 32, scale: 6 })
  overageRunning: string;

  /**
   * The record's place among the customer's records of this feature (1, 2, 3, … in
   * `(recorded_at, id)` order): a ledger page counts its records as the difference of two places.
   * Written as `overage_running` is (migration UsageRecordPositions).
   */
  @Column({ name: 'feature_seq', type: 'bigint' })
  featureSeq: string;
}
