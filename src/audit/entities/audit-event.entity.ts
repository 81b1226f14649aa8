import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';
import type { AuditActorType } from '../audit-actions';

/** A record's changed fields, each `{ from, to }` (docs/operations.md#audit-log). */
export type AuditChanges = Record<string, { from: unknown; to: unknown }>;

/**
 * One record of the audit log (docs/operations.md#audit-log), written in the transaction of the
 * change it tells, and never updated. `position` is the order written, global. Until the sealer
 * chains it into its project's chain the record is in `audit_unsealed` (a trigger puts it there);
 * then its place in the chain is in `audit_seals`. No foreign key to the project: a deleted
 * project's records stay readable.
 */
@Entity({ name: 'audit_events' })
// newest first, by project and by resource: descending, which the entity metadata cannot say
@Index('audit_events_project_at_idx', { synchronize: false })
@Index('audit_events_resource_idx', { synchronize: false })
@Index('audit_events_request_idx', ['projectId', 'requestId'])
export class AuditEvent {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  position: string;

  /** `aud_` + 24 lowercase base32 characters. */
  @Index('audit_events_id_uq', { unique: true })
  @Column({ type: 'text' })
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'timestamptz', precision: 3 })
  at: Date;

  @Column({ name: 'actor_type', type: 'varchar', length: 16 })
  actorType: AuditActorType;

  @Column({ name: 'actor_key_id', type: 'int', nullable: true })
  actorKeyId: number | null;

  @Column({ name: 'actor_key_prefix', type: 'varchar', length: 32, nullable: true })
  actorKeyPrefix: string | null;

  @Column({ name: 'actor_customer_id', type: 'int', nullable: true })
  actorCustomerId: number | null;

  @Column({ type: 'varchar', length: 64 })
  action: string;

  @Column({ name: 'resource_type', type: 'varchar', length: 32 })
  resourceType: string;

  @Column({ name: 'resource_id', type: 'text' })
  resourceId: string;

  @Column({ type: 'jsonb', nullable: true })
  changes: AuditChanges | null;

  @Column({ name: 'request_id', type: 'text', nullable: true })
  requestId: string | null;

  @Column({ name: 'idempotency_key', type: 'text', nullable: true })
  idempotencyKey: string | null;

  @Column({ type: 'text', nullable: true })
  ip: string | null;
}
