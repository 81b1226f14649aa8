import { Column, Entity, Index, OneToMany, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { CustomerCredential } from './customer-credential.entity';
import { CustomerIdentifier } from './customer-identifier.entity';

@Entity({ name: 'customers' })
// unique: the target of the credentials' foreign key (customer_id, project_id)
@Index('customers_project_id_idx', ['projectId', 'id'], { unique: true })
// unique per project, compared case-insensitively: UNIQUE (project_id, lower(username)), in the migration
@Index('customers_project_username_uq', { synchronize: false })
@Index('customers_username_trgm_idx', { synchronize: false })
export class Customer {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'varchar', length: 16 })
  username: string;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({ type: 'boolean', default: false })
  temporary: boolean;

  /** The zone of the customer's calendar periods, as sent; null: the project's. */
  @Column({ name: 'time_zone', type: 'varchar', length: 64, nullable: true })
  timeZone: string | null;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;

  @OneToMany(() => CustomerIdentifier, (i) => i.customer)
  identifiers?: CustomerIdentifier[];

  @OneToMany(() => CustomerCredential, (c) => c.customer)
  credentials?: CustomerCredential[];
}
