import { Column, CreateDateColumn, DeleteDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/**
 * The tenant: every other record belongs to one project. Deleting one is a soft delete (see
 * docs/decisions.md#projects-are-soft-deleted): its keys then answer PROJECT_NOT_FOUND.
 */
@Entity({ name: 'projects' })
export class Project {
  @PrimaryColumn({ type: 'varchar', length: 24 })
  id: string;

  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ name: 'auto_create_customer_at_redemption', type: 'boolean', default: false })
  autoCreateCustomerAtRedemption: boolean;

  @Column({ name: 'require_signature', type: 'boolean', default: false })
  requireSignature: boolean;

  /** The zone of calendar periods whose quota and customer name none, as sent (never null). */
  @Column({ name: 'time_zone', type: 'varchar', length: 64, default: 'UTC' })
  timeZone: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;

  @DeleteDateColumn({ name: 'deleted_at', type: 'timestamptz', precision: 3, nullable: true })
  deletedAt: Date | null;
}
