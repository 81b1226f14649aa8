import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { Customer } from '../../customers/entities/customer.entity';
import { Code } from '../../codes/entities/code.entity';
import { Plan } from '../../plans/entities/plan.entity';

export type SubscriptionStatus = 'active' | 'cancelled';
export type SubscriptionSource = 'signup' | 'code' | 'activation';

/**
 * One window `[validFrom, validTo)` of a customer's chain in one plan group
 * (docs/api-guide.md#plan-groups-and-chains).
 */
@Entity({ name: 'subscriptions' })
@Check('subscriptions_status_chk', `"status" IN ('active', 'cancelled')`)
@Check('subscriptions_source_chk', `"source" IN ('signup', 'code', 'activation')`)
@Index('subscriptions_customer_group_idx', ['customerId', 'group'])
@Index('subscriptions_plan_idx', ['planId'])
@Index('subscriptions_code_idx', ['codeId'])
// the boundary scheduler of events (src/events): windows starting or ending in a range of time
@Index('subscriptions_active_valid_from_idx', ['validFrom'], { where: `"status" = 'active'` })
@Index('subscriptions_active_valid_to_idx', ['validTo'], {
  where: `"status" = 'active' AND "valid_to" IS NOT NULL`,
})
// the boundary scheduler's trial events: the active trial windows by end
@Index('subscriptions_active_trial_valid_to_idx', ['validTo'], { where: `"trial" AND "status" = 'active'` })
// the live windows of a customer's group (the redemption's chain read): an index on an expression,
// which TypeORM cannot declare; made by migration LiveWindowsIndex and left alone by the schema diff
@Index('subscriptions_live_chain_idx', { synchronize: false })
export class Subscription {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'customer_id', foreignKeyConstraintName: 'subscriptions_customer_fk' })
  customer?: Customer;

  @Column({ name: 'plan_id', type: 'int' })
  planId: number;

  @ManyToOne(() => Plan, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'plan_id', foreignKeyConstraintName: 'subscriptions_plan_fk' })
  plan?: Plan;

  /** The plan's group, copied so that a chain is read with one index. */
  @Column({ name: 'plan_group', type: 'varchar', length: 64 })
  group: string;

  @Column({ name: 'valid_from', type: 'timestamptz', precision: 3 })
  validFrom: Date;

  /** null: permanent. */
  @Column({ name: 'valid_to', type: 'timestamptz', precision: 3, nullable: true })
  validTo: Date | null;

  @Column({ type: 'varchar', length: 16, default: 'active' })
  status: SubscriptionStatus;

  @Column({ type: 'varchar', length: 16 })
  source: SubscriptionSource;

  /**
   * A trial window (docs/api-guide.md#trials): a window of its plan, but worth 0 in every later
   * grant, and at most one per customer and plan group, ever.
   */
  @Column({ type: 'boolean', default: false })
  trial: boolean;

  @Column({ name: 'code_id', type: 'int', nullable: true })
  codeId: number | null;

  @ManyToOne(() => Code, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'code_id', foreignKeyConstraintName: 'subscriptions_code_fk' })
  code?: Code;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}
