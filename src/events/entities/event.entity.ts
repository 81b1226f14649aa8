import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One event of a project (docs/events.md#event-types): written in the transaction of the change it tells
 * (the outbox), kept 30 days. `uniqueKey` makes a time boundary give one event whatever the
 * number of replicas (`subscription.started:<windowId>`, `subscription.ended:<windowId>`).
 */
@Entity({ name: 'events' })
@Index('events_project_created_idx', ['projectId', 'createdAt', 'id'])
@Index('events_project_customer_idx', ['projectId', 'customerId', 'createdAt', 'id'])
export class EventRecord {
  @PrimaryColumn({ type: 'varchar', length: 28, primaryKeyConstraintName: 'events_pk' })
  id: string;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'varchar', length: 64 })
  type: string;

  /** The customer the event names (kept after the customer is deleted); null for `code.revoked`. */
  @Column({ name: 'customer_id', type: 'int', nullable: true })
  customerId: number | null;

  @Column({ name: 'customer_seq', type: 'int', nullable: true })
  customerSeq: number | null;

  @Column({ type: 'jsonb' })
  data: Record<string, unknown>;

  /** Unique through `event_unique_keys` (this table is split by day). */
  @Column({ name: 'unique_key', type: 'varchar', length: 64, nullable: true })
  uniqueKey: string | null;

  /** The partition key: the table is partitioned by UTC day of it (migration EventPartitions). */
  @PrimaryColumn({
    name: 'created_at',
    type: 'timestamptz',
    precision: 3,
    default: () => 'now()',
    primaryKeyConstraintName: 'events_pk',
  })
  createdAt: Date;
}

/**
 * The `unique_key`s of events, not split by time: one event per key however many replicas try, as
 * the events table, partitioned by day, cannot hold a unique index on the key alone. Deleted with
 * the events' retention (the narrow rows of keyed events only).
 */
@Entity({ name: 'event_unique_keys' })
@Index('event_unique_keys_created_idx', ['createdAt'])
export class EventUniqueKey {
  @PrimaryColumn({
    name: 'unique_key',
    type: 'varchar',
    length: 64,
    primaryKeyConstraintName: 'event_unique_keys_pk',
  })
  uniqueKey: string;

  @Column({ name: 'created_at', type: 'timestamptz', precision: 3 })
  createdAt: Date;
}

/** The last `customerSeq` given to a customer's events (no foreign key: it outlives the customer). */
@Entity({ name: 'customer_event_seqs' })
export class CustomerEventSeq {
  @PrimaryColumn({ name: 'customer_id', type: 'int' })
  customerId: number;

  @Column({ name: 'project_id', type: 'varchar', length: 24 })
  projectId: string;

  @Column({ type: 'int' })
  seq: number;
}

/** How far the boundary scheduler has announced window boundaries; one row, locked by the replica scanning. */
@Entity({ name: 'event_schedule_cursors' })
export class EventScheduleCursor {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  kind: string;

  @Column({ name: 'scanned_to', type: 'timestamptz', precision: 3 })
  scannedTo: Date;
}
