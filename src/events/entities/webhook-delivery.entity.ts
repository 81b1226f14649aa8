import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import { CreatedAt, UpdatedAt } from '../../common/entity-columns';
import { EventRecord } from './event.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'skipped';

/**
 * One event to one endpoint: written with the event (the outbox), claimed by a worker when due.
 * Partitioned by UTC day of its event's time (`event_created_at`, migration EventPartitions), so
 * it is dropped with its event.
 */
@Entity({ name: 'webhook_deliveries' })
@Index('webhook_deliveries_event_idx', ['eventId'])
@Index('webhook_deliveries_endpoint_idx', ['endpointId'])
@Index('webhook_deliveries_endpoint_due_idx', ['endpointId', 'nextAttemptAt'], {
  where: `"status" = 'pending'`,
})
export class WebhookDelivery {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'webhook_deliveries_pk' })
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ name: 'event_id', type: 'varchar', length: 28 })
  eventId: string;

  /** Its event's `created_at`: the partition key. */
  @PrimaryColumn({
    name: 'event_created_at',
    type: 'timestamptz',
    precision: 3,
    primaryKeyConstraintName: 'webhook_deliveries_pk',
  })
  eventCreatedAt: Date;

  @ManyToOne(() => EventRecord, { onDelete: 'CASCADE' })
  @JoinColumn([
    { name: 'event_id', referencedColumnName: 'id', foreignKeyConstraintName: 'webhook_deliveries_event_fk' },
    { name: 'event_created_at', referencedColumnName: 'createdAt' },
  ])
  event?: EventRecord;

  @Column({ name: 'endpoint_id', type: 'varchar', length: 27 })
  endpointId: string;

  @ManyToOne(() => WebhookEndpoint, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'endpoint_id', foreignKeyConstraintName: 'webhook_deliveries_endpoint_fk' })
  endpoint?: WebhookEndpoint;

  @Column({ type: 'varchar', length: 16, default: 'pending' })
  status: DeliveryStatus;

  /** Attempts started (a claim counts one). */
  @Column({ type: 'int', default: 0 })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', precision: 3 })
  nextAttemptAt: Date;

  @CreatedAt()
  createdAt: Date;

  @UpdatedAt()
  updatedAt: Date;
}

/** One HTTP attempt of a delivery, partitioned like its delivery (by its event's day). */
@Entity({ name: 'webhook_attempts' })
@Index('webhook_attempts_delivery_idx', ['deliveryId'])
export class WebhookAttempt {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'webhook_attempts_pk' })
  id: string;

  @Column({ name: 'delivery_id', type: 'bigint' })
  deliveryId: string;

  /** Its delivery's `event_created_at`: the partition key. */
  @PrimaryColumn({
    name: 'event_created_at',
    type: 'timestamptz',
    precision: 3,
    primaryKeyConstraintName: 'webhook_attempts_pk',
  })
  eventCreatedAt: Date;

  @ManyToOne(() => WebhookDelivery, { onDelete: 'CASCADE' })
  @JoinColumn([
    {
      name: 'delivery_id',
      referencedColumnName: 'id',
      foreignKeyConstraintName: 'webhook_attempts_delivery_fk',
    },
    { name: 'event_created_at', referencedColumnName: 'eventCreatedAt' },
  ])
  delivery?: WebhookDelivery;

  @Column({ name: 'attempted_at', type: 'timestamptz', precision: 3 })
  attemptedAt: Date;

  /** `delivered` or `failed`. */
  @Column({ type: 'varchar', length: 16 })
  outcome: string;

  @Column({ name: 'status_code', type: 'int', nullable: true })
  statusCode: number | null;

  @Column({ type: 'varchar', length: 500, nullable: true })
  error: string | null;

  @Column({ name: 'duration_ms', type: 'int' })
  durationMs: number;
}
