import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The end of a project's audit chain as the sealer left it (`seq`, `hash` of its last sealed
 * record), and the last record retention deleted (`prunedSeq`, `prunedHash`): `verify` checks
 * the chain's first and last records against them.
 */
@Entity({ name: 'audit_chain_heads' })
export class AuditChainHead {
  @PrimaryColumn({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'bigint' })
  seq: string;

  @Column({ type: 'text' })
  hash: string;

  @Column({ name: 'pruned_seq', type: 'bigint', nullable: true })
  prunedSeq: string | null;

  @Column({ name: 'pruned_hash', type: 'text', nullable: true })
  prunedHash: string | null;
}
