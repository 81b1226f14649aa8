import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { Customer } from '../../customers/entities/customer.entity';
import { Plan } from '../../plans/entities/plan.entity';
import { CodeBatch } from './code-batch.entity';

/** Stored status; `expired` is derived from `expiresAt` when read (docs/api-guide.md#codes). */
export type StoredCodeStatus = 'available' | 'redeemed' | 'revoked';
/** A batch code is single-use; a campaign code is one readable string for many customers. */
export type CodeKind = 'batch' | 'campaign';

@Entity({ name: 'codes' })
@Check('codes_status_chk', `"status" IN ('available', 'redeemed', 'revoked')`)
@Check('codes_kind_chk', `"kind" IN ('batch', 'campaign')`)
@Index('codes_campaign_key_idx', ['projectId', 'codeKey'])
@Index('codes_code_uq', ['code'], { unique: true })
@Index('codes_project_id_idx', ['projectId', 'id'])
@Index('codes_batch_idx', ['batchId'])
@Index('codes_plan_idx', ['planId'])
@Index('codes_redeemed_by_idx', ['redeemedByCustomerId'])
export class Code {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'varchar', length: 16, default: 'batch' })
  kind: CodeKind;

  /** A batch code's batch; null for a campaign code. */
  @Column({ name: 'batch_id', type: 'int', nullable: true })
  batchId: number | null;

  @ManyToOne(() => CodeBatch, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'batch_id', foreignKeyConstraintName: 'codes_batch_fk' })
  batch?: CodeBatch;

  @Column({ name: 'plan_id', type: 'int' })
  planId: number;

  @ManyToOne(() => Plan, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'plan_id', foreignKeyConstraintName: 'codes_plan_fk' })
  plan?: Plan;

  /**
   * A batch code: 16 Crockford base32 characters, normalised (no dashes, upper case); globally
   * unique. Null for a campaign code, whose string is `displayCode` and key `codeKey`.
   */
  @Column({ type: 'char', length: 16, nullable: true })
  code: string | null;

  /** A campaign code's string as shown (upper case, dashes kept). */
  @Column({ name: 'display_code', type: 'varchar', length: 32, nullable: true })
  displayCode: string | null;

  /** A campaign code's key (`codeKey()`): unique among the project's codes that hold it. */
  @Column({ name: 'code_key', type: 'varchar', length: 32, nullable: true })
  codeKey: string | null;

  /** Campaign codes: before this instant the code cannot be redeemed. */
  @Column({ name: 'starts_at', type: 'timestamptz', precision: 3, nullable: true })
  startsAt: Date | null;

  /** Campaign codes: the cap on successful redemptions; null: none. */
  @Column({ name: 'max_redemptions', type: 'int', nullable: true })
  maxRedemptions: number | null;

  @Column({ name: 'per_customer_limit', type: 'int', default: 1 })
  perCustomerLimit: number;

  /** Campaign codes: successful redemptions, raised by the redemption's last statement. */
  @Column({ name: 'redemption_count', type: 'int', default: 0 })
  redemptionCount: number;

  @Column({ name: 'new_customers_only', type: 'boolean', default: false })
  newCustomersOnly: boolean;

  /** Campaign codes: plan groups whose holders may not redeem (a JSON list of strings). */
  @Column({ name: 'not_if_held_plan_groups', type: 'jsonb', nullable: true })
  notIfHeldPlanGroups: string[] | null;

  @Column({ type: 'boolean', default: false })
  trial: boolean;

  /** ISO 8601 duration; null: permanent. */
  @Column({ type: 'varchar', length: 32, nullable: true })
  duration: string | null;

  @Column({ type: 'varchar', length: 16, default: 'available' })
  status: StoredCodeStatus;

  @Column({ type: 'varchar', length: 500, nullable: true })
  note: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'redeemed_at', type: 'timestamptz', precision: 3, nullable: true })
  redeemedAt: Date | null;

  @Column({ name: 'redeemed_by_customer_id', type: 'int', nullable: true })
  redeemedByCustomerId: number | null;

  /** Deleting the customer keeps the code's record and clears this link, so a code stays used. */
  @ManyToOne(() => Customer, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'redeemed_by_customer_id', foreignKeyConstraintName: 'codes_redeemed_by_customer_fk' })
  redeemedBy?: Customer;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}
