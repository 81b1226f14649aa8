import { Entity, PrimaryColumn } from 'typeorm';

/**
 * The records the sealer has not chained yet, one narrow row each: written by the trigger
 * `audit_events_unsealed` in the statement that writes the records, deleted by the seal. The
 * sealer finds the projects with work, and each project's records in the order written, here.
 */
@Entity({ name: 'audit_unsealed' })
export class AuditUnsealed {
  @PrimaryColumn({
    name: 'project_id',
    type: 'varchar',
    length: 24,
    primaryKeyConstraintName: 'audit_unsealed_pk',
  })
  projectId: string;

  @PrimaryColumn({ type: 'bigint', primaryKeyConstraintName: 'audit_unsealed_pk' })
  position: string;
}
