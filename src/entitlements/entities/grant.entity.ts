import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt } from '../../common/entity-columns';
import { Customer } from '../../customers/entities/customer.entity';
import { Feature } from '../../plans/entities/feature.entity';

/**
 * An amount of one metered feature given to one customer outside any plan: one more bucket of the
 * feature while `effective_at <= t < expires_at` and not voided. `used` is kept on the row (the
 * consume that takes from it adds, a reversal while it is in effect gives back), so reading a
 * grant costs the same however many records took from it.
 */
@Entity({ name: 'grants' })
// the grants a check reads with the customer's state: not voided and not long expired, one range
// of (customer_id, feature_id, coalesce(expires_at, 'infinity')); an expression index, made by
// the migration GrantsAndOverrides
@Index('grants_customer_feature_idx', { synchronize: false })
// the customer's list, newest first
@Index('grants_customer_idx', ['customerId', 'id'])
// a read of an instant before a void (`?at=`) finds the grants voided after it
@Index('grants_voided_idx', ['customerId', 'voidedAt'], { where: '"voided_at" IS NOT NULL' })
// the boundary scheduler's scan of grants reaching their end
@Index('grants_expires_idx', ['expiresAt'], { where: '"voided_at" IS NULL AND "expires_at" IS NOT NULL' })
export class Grant {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'customer_id', referencedColumnName: 'id', foreignKeyConstraintName: 'grants_customer_fk' },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  customer?: Customer;

  @Column({ name: 'feature_id', type: 'int' })
  featureId: number;

  // a feature is deleted only once no grant in effect or scheduled names it; ended ones go with it
  @ManyToOne(() => Feature, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'feature_id', referencedColumnName: 'id', foreignKeyConstraintName: 'grants_feature_fk' },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  feature?: Feature;

  @Column({ type: 'numeric', precision: 26, scale: 6 })
  amount: string;

  /** What records took from the grant, less what reversals gave back while it was in effect. */
  @Column({ type: 'numeric', precision: 26, scale: 6, default: 0 })
  used: string;

  @Column({ type: 'int', default: 0 })
  priority: number;

  @Column({ name: 'effective_at', type: 'timestamptz', precision: 3 })
  effectiveAt: Date;

  /** null: never. */
  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  reason: string | null;

  @Column({ type: 'jsonb', default: {} })
  metadata: Record<string, string>;

  @CreatedAt()
  createdAt: Date;

  @Column({ name: 'voided_at', type: 'timestamptz', precision: 3, nullable: true })
  voidedAt: Date | null;

  @Column({ name: 'void_reason', type: 'varchar', length: 500, nullable: true })
  voidReason: string | null;
}
