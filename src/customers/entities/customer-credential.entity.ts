import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { Customer } from './customer.entity';

export const CREDENTIAL_PASSWORD = 1;

@Entity({ name: 'customer_credentials' })
@Index('customer_credentials_customer_type_uq', ['customerId', 'type'], { unique: true })
export class CustomerCredential {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  /** The customer's project: the foreign key includes it, so the customer cannot be another project's. */
  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, (c) => c.credentials, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'customer_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'customer_credentials_customer_fk',
    },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  customer?: Customer;

  /** 1: password (bcrypt). */
  @Column({ type: 'smallint' })
  type: number;

  @Column({ name: 'secret_hash', type: 'varchar', length: 255 })
  secretHash: string;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}
