import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { Feature } from '../../plans/entities/feature.entity';
import type { HoldAllocationJson } from '../entitlements.repository';

/** A hold's stored status: `held` until it is committed, released or marked expired by the scheduler. */
export type StoredHoldStatus = 'held' | 'committed' | 'released' | 'expired';

/**
 * A usage hold (docs/entitlements.md#holds): an amount of a metered feature reserved for one
 * customer until `expires_at`, with what it took from each bucket when it was made. It is no
 * ledger record: it counts in balances while `status` is `held` and `expires_at` is after the
 * instant read (an expired hold stops counting whether or not the scheduler has marked it yet).
 * `hold_id` is the caller's, unique per project and customer forever. Only read and written
 * through `HoldsRepository`, and by the entitlement state read.
 */
@Entity({ name: 'usage_holds' })
@Index('usage_holds_hold_id_uq', ['projectId', 'customerId', 'holdId'], { unique: true })
// the state a check or a consume reads: a customer's holds not ended, per feature
@Index('usage_holds_live_idx', ['customerId', 'featureId', 'expiresAt'], { where: `"status" = 'held'` })
// the expiry scheduler's scan of the holds not ended by their expiry
@Index('usage_holds_expires_idx', ['expiresAt'], { where: `"status" = 'held'` })
// the customer's list, newest first
@Index('usage_holds_customer_idx', ['customerId', 'id'])
export class UsageHold {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'customer_id', referencedColumnName: 'id', foreignKeyConstraintName: 'usage_holds_customer_fk' },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  customer?: Customer;

  @Column({ name: 'feature_id', type: 'int' })
  featureId: number;

  @ManyToOne(() => Feature, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'feature_id', referencedColumnName: 'id', foreignKeyConstraintName: 'usage_holds_feature_fk' },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  feature?: Feature;

  @Column({ name: 'hold_id', type: 'varchar', length: 255 })
  holdId: string;

  /** In the feature's units: the allocations' sum plus `overage`. */
  @Column({ type: 'numeric', precision: 26, scale: 6 })
  amount: string;

  /** The part of `amount` held from no bucket (`allowOverage`). */
  @Column({ type: 'numeric', precision: 26, scale: 6, default: 0 })
  overage: string;

  @Column({ name: 'allow_overage', type: 'boolean', default: false })
  allowOverage: boolean;

  /** What it took from each bucket, in the order of consumption (amounts as decimal text). */
  @Column({ type: 'jsonb' })
  allocations: HoldAllocationJson[];

  @Column({ type: 'varchar', length: 10, default: 'held' })
  status: StoredHoldStatus;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  /** The commit's `recordedAt`, the release's instant, or `expires_at` once marked expired. */
  @Column({ name: 'ended_at', type: 'timestamptz', precision: 3, nullable: true })
  endedAt: Date | null;

  /**
   * The commit's record. No foreign key: the ledger may be pruned (a pruned record's hold keeps
   * the id it had).
   */
  @Column({ name: 'usage_id', type: 'bigint', nullable: true })
  usageId: string | null;
}
