import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { Customer } from './customer.entity';

/**
 * One change of a customer's `timeZone`, written with the PATCH that made it; null on either
 * side: the customer followed (or follows) the project's zone. The zone at an instant x is the
 * `fromZone` of the earliest change after x, else the customer's current one
 * (docs/entitlements.md).
 */
@Entity({ name: 'customer_time_zone_changes' })
@Index('customer_time_zone_changes_customer_idx', ['customerId', 'changedAt'])
export class CustomerTimeZoneChange {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  /** The customer's project: the foreign key includes it, so the customer cannot be another project's. */
  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'customer_id', type: 'int' })
  customerId: number;

  @ManyToOne(() => Customer, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'customer_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'customer_time_zone_changes_customer_fk',
    },
    { name: 'project_id', referencedColumnName: 'projectId' },
  ])
  customer?: Customer;

  @Column({ name: 'changed_at', type: 'timestamptz', precision: 3 })
  changedAt: Date;

  @Column({ name: 'from_zone', type: 'varchar', length: 64, nullable: true })
  fromZone: string | null;

  @Column({ name: 'to_zone', type: 'varchar', length: 64, nullable: true })
  toZone: string | null;
}
