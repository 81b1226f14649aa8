import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt } from '../../common/entity-columns';
import { Customer } from '../../customers/entities/customer.entity';

/**
 * A customer-level token issued by the public login (docs/public-api.md#customer-tokens).
 * Only the SHA-256 of the token is stored; deleting the customer deletes its sessions.
 */
@Entity({ name: 'customer_sessions' })
@Index('customer_sessions_customer_idx', ['customerId'])
@Index('customer_sessions_expires_idx', ['expiresAt'])
export class CustomerSession {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'customer_id', foreignKeyConstraintName: 'customer_sessions_customer_fk' })
  customer?: Customer;

  @Index('customer_sessions_token_hash_uq', { unique: true })
  @Column({ name: 'token_hash', type: 'char', length: 64 })
  tokenHash: string;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;

  @CreatedAt()
  createdAt: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', precision: 3, nullable: true })
  lastUsedAt: Date | null;
}
