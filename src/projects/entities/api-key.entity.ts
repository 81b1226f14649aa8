import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';
import { Project } from './project.entity';

export type ApiKeyKind = 'private' | 'public';

/** A project's key. Only the SHA-256 of the key is stored; a public key's signing secret is encrypted. */
@Entity({ name: 'api_keys' })
@Index('api_keys_project_idx', ['projectId'])
@Check('api_keys_kind_chk', `"kind" IN ('private', 'public')`)
export class ApiKey {
  @PrimaryGeneratedColumn({ type: 'int' })
  id: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @ManyToOne(() => Project, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'project_id', foreignKeyConstraintName: 'api_keys_project_fk' })
  project?: Project;

  @Column({ type: 'varchar', length: 16 })
  kind: ApiKeyKind;

  @Column({ type: 'varchar', length: 100, nullable: true })
  name: string | null;

  /** First characters of the key, for people to tell keys apart (`sk_AbC1…`). */
  @Column({ type: 'varchar', length: 12 })
  prefix: string;

  @Index('api_keys_hash_uq', { unique: true })
  @Column({ name: 'key_hash', type: 'char', length: 64 })
  keyHash: string;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({ name: 'signing_secret_enc', type: 'text', nullable: true })
  signingSecretEnc: string | null;

  /**
   * A private key's scopes, sorted, `{*}` for all; null for a public key (and for a private key
   * made by a version before scopes, which holds them all).
   */
  @Column({ type: 'text', array: true, nullable: true })
  scopes: string[] | null;

  /** When the key stops working; null: never. */
  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3, nullable: true })
  expiresAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', precision: 3 })
  updatedAt: Date;
}
