import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { Customer } from './customer.entity';

export const CREDENTIAL_PASSWORD = 1;

@Entity({ name: 'customer_credentials' })
@Index('customer_credentials_customer_type_uq', ['customerId', 'type'], { unique: true })
export class CustomerCredential {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, (c) => c.credentials, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'customer_id', foreignKeyConstraintName: 'customer_credentials_customer_fk' })
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
