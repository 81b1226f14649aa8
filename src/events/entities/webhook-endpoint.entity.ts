import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';

/**
 * A receiver of a project's events (docs/events.md#webhook-endpoints). Secrets are stored encrypted
 * (SecretBox).
 */
@Entity({ name: 'webhook_endpoints' })
@Index('webhook_endpoints_project_idx', ['projectId', 'createdAt'])
export class WebhookEndpoint {
  @PrimaryColumn({ type: 'varchar', length: 27 })
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'varchar', length: 500, nullable: true })
  description: string | null;

  /** Empty: every type. */
  @Column({ name: 'event_types', type: 'text', array: true, default: () => "'{}'" })
  eventTypes: string[];

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({ name: 'disabled_reason', type: 'varchar', length: 500, nullable: true })
  disabledReason: string | null;

  /** Since when every attempt has failed; null after a success. */
  @Column({ name: 'failing_since', type: 'timestamptz', precision: 3, nullable: true })
  failingSince: Date | null;

  @Column({ type: 'text' })
  secret: string;

  @Column({ name: 'previous_secret', type: 'text', nullable: true })
  previousSecret: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', precision: 3, nullable: true })
  previousSecretExpiresAt: Date | null;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}
