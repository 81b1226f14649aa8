import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { CreatedAt } from '../../common/entity-columns';

/** One `Idempotency-Key` of one project, kept 24 hours. */
@Entity({ name: 'idempotency_records' })
@Index('idempotency_records_expires_idx', ['expiresAt'])
export class IdempotencyRecord {
  @PrimaryColumn({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  key: string;

  /** SHA-256 of method, path and body. */
  @Column({ type: 'char', length: 64 })
  fingerprint: string;

  /** Always set by this version (the answer is stored with the work); null only in a claim written by an older version, read as "still running" until it expires. */
  @Column({ name: 'response_status', type: 'int', nullable: true })
  responseStatus: number | null;

  @Column({ name: 'response_body', type: 'jsonb', nullable: true })
  responseBody: unknown;

  @CreatedAt()
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;
}
