import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { Customer } from '../../customers/entities/customer.entity';
import { Plan } from '../../plans/entities/plan.entity';
import { CodeBatch } from './code-batch.entity';

/** Stored status; `expired` is derived from `expiresAt` when read (docs/api-guide.md#codes). */
export type StoredCodeStatus = 'available' | 'redeemed' | 'revoked';

@Entity({ name: 'codes' })
@Check('codes_status_chk', `"status" IN ('available', 'redeemed', 'revoked')`)
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

  @Column({ name: 'batch_id', type: 'int' })
  batchId: number;

  @ManyToOne(() => CodeBatch, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'batch_id', foreignKeyConstraintName: 'codes_batch_fk' })
  batch?: CodeBatch;

  @Column({ name: 'plan_id', type: 'int' })
  planId: number;

  @ManyToOne(() => Plan, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'plan_id', foreignKeyConstraintName: 'codes_plan_fk' })
  plan?: Plan;

  /** 16 Crockford base32 characters, normalised (no dashes, upper case). */
  @Column({ type: 'char', length: 16 })
  code: string;

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
