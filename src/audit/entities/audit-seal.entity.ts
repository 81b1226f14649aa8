import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A record's place in its project's hash chain, written by the sealer
 * (docs/operations.md#audit-log): the record's project and `position` (the key), its `seq` (1, 2,
 * 3… per project), the `hash` of the record before (`prevHash`, null for the first) and its own.
 * Kept apart from `audit_events` so that a record is written once and never updated. No foreign
 * key to the record: retention deletes both, and a seal whose record is gone is what verify
 * reports as missing.
 */
@Entity({ name: 'audit_seals' })
@Index('audit_seals_seq_uq', ['projectId', 'seq'], { unique: true })
export class AuditSeal {
  @PrimaryColumn({
    name: 'project_id',
    type: 'varchar',
    length: 24,
    primaryKeyConstraintName: 'audit_seals_pk',
  })
  projectId: string;

  @PrimaryColumn({ type: 'bigint', primaryKeyConstraintName: 'audit_seals_pk' })
  position: string;

  @Column({ type: 'bigint' })
  seq: string;

  @Column({ name: 'prev_hash', type: 'text', nullable: true })
  prevHash: string | null;

  @Column({ type: 'text' })
  hash: string;
}
