import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { ApiKey } from '../../projects/entities/api-key.entity';

/**
 * A nonce a public key has used in a signed request (docs/public-api.md#signature-v1). The
 * primary key is the UNIQUE (api_key_id, nonce) that makes a replay fail on every replica; a row is
 * kept until its timestamp has left the accepted window, then pruned.
 */
@Entity({ name: 'request_nonces' })
@Index('request_nonces_expires_idx', ['expiresAt'])
export class RequestNonce {
  @PrimaryColumn({ name: 'api_key_id', type: 'int', primaryKeyConstraintName: 'request_nonces_pk' })
  apiKeyId: number;

  @PrimaryColumn({ type: 'varchar', length: 64, primaryKeyConstraintName: 'request_nonces_pk' })
  nonce: string;

  @ManyToOne(() => ApiKey, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'api_key_id', foreignKeyConstraintName: 'request_nonces_api_key_fk' })
  apiKey?: ApiKey;

  @Column({ name: 'expires_at', type: 'timestamptz', precision: 3 })
  expiresAt: Date;
}
