import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { Feature } from '../../plans/entities/feature.entity';

/**
 * The event ids of a customer's usage records, one row per record, not split by time: what keeps
 * an `eventId` unique per project and customer forever although the ledger is partitioned by
 * month and old months may be dropped (docs/entitlements.md#exactly-once-usage). It holds what a
 * replay is compared with (feature and amount), and where the record is: its id and `recorded_at`,
 * the ledger's key. Written with the record (`usage.insert-many`); only through `UsageRepository`.
 */
@Entity({ name: 'usage_event_ids' })
export class UsageEventId {
  @PrimaryColumn({
    name: 'project_id',
    type: 'varchar',
    length: 24,
    primaryKeyConstraintName: 'usage_event_ids_pk',
  })
  projectId: string;

  @PrimaryColumn({ name: 'customer_id', type: 'int', primaryKeyConstraintName: 'usage_event_ids_pk' })
  customerId: number;

  @PrimaryColumn({
    name: 'event_id',
    type: 'varchar',
    length: 255,
    primaryKeyConstraintName: 'usage_event_ids_pk',
  })
  eventId: string;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'customer_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'usage_event_ids_customer_fk',
    },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  customer?: Customer;

  @Column({ name: 'feature_id', type: 'int' })
  featureId: number;

  @ManyToOne(() => Feature, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'feature_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'usage_event_ids_feature_fk',
    },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  feature?: Feature;

  @Column({ name: 'usage_id', type: 'bigint' })
  usageId: string;

  @Column({ name: 'recorded_at', type: 'timestamptz', precision: 3 })
  recordedAt: Date;

  @Column({ type: 'numeric', precision: 26, scale: 6 })
  amount: string;

  @Column({ type: 'numeric', precision: 26, scale: 6 })
  overage: string;
}
