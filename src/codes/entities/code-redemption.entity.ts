import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Customer } from '../../customers/entities/customer.entity';
import { Code } from './code.entity';

/**
 * One successful redemption of a campaign code: who, when, which windows. A batch code's one
 * redemption stays on its row (`redeemed_at`, `redeemed_by_customer_id`).
 */
@Entity({ name: 'code_redemptions' })
@Index('code_redemptions_code_idx', ['codeId', 'id'])
@Index('code_redemptions_code_customer_idx', ['codeId', 'customerId'])
@Index('code_redemptions_customer_idx', ['customerId'])
export class CodeRedemption {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'code_id', type: 'int' })
  codeId: number;

  @ManyToOne(() => Code, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'code_id', foreignKeyConstraintName: 'code_redemptions_code_fk' })
  code?: Code;

  /** Deleting the customer keeps the record (and the code's count) and clears this link. */
  @Column({ name: 'customer_id', type: 'int', nullable: true })
  customerId: number | null;

  @ManyToOne(() => Customer, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'customer_id', foreignKeyConstraintName: 'code_redemptions_customer_fk' })
  customer?: Customer;

  /** The grant's instant. */
  @Column({ name: 'redeemed_at', type: 'timestamptz', precision: 3 })
  redeemedAt: Date;

  /** The windows the redemption created. */
  @Column({ name: 'window_ids', type: 'int', array: true })
  windowIds: number[];
}
