import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { Customer } from './customer.entity';

@Entity({ name: 'customer_identifiers' })
@Index('customer_identifiers_pair_uq', ['projectId', 'type', 'value'], { unique: true })
@Index('customer_identifiers_customer_idx', ['customerId'])
@Index('customer_identifiers_value_trgm_idx', { synchronize: false })
export class CustomerIdentifier {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, (c) => c.identifiers, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'customer_id', foreignKeyConstraintName: 'customer_identifiers_customer_fk' })
  customer?: Customer;

  @Column({ type: 'varchar', length: 16 })
  type: string;

  @Column({ type: 'varchar', length: 128 })
  value: string;

  /** True only for the system-maintained `username` identifier. */
  @Column({ type: 'boolean', default: false })
  readonly: boolean;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}
