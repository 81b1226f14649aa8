import type { AuditEventView } from './dto/audit-event.dto';
import type { AuditChanges } from './entities/audit-event.entity';

/**
 * A record as the repository reads it: its row of `audit_events` with its seal's columns (null
 * until sealed); `bigint` columns come back as strings.
 */
export interface AuditEventRow {
  position: string;
  id: string;
  project_id: string;
  at: Date;
  actor_type: string;
  actor_key_id: number | null;
  actor_key_prefix: string | null;
  actor_customer_id: number | null;
  action: string;
  resource_type: string;
  resource_id: string;
  changes: AuditChanges | null;
  request_id: string | null;
  idempotency_key: string | null;
  ip: string | null;
  seq: string | null;
  prev_hash: string | null;
  hash: string | null;
}

/** The record's own columns: `a` is its row of `audit_events`. */
const RECORD_COLUMNS = `a.position, a.id, a.project_id, a.at, a.actor_type, a.actor_key_id,
       a.actor_key_prefix, a.actor_customer_id, a.action, a.resource_type, a.resource_id, a.changes,
       a.request_id, a.idempotency_key, a.ip`;

/**
 * The columns of an `AuditEventRow`, for the statements that read whole records: the record's
 * and its seal's, `s` its row of `audit_seals` (`AUDIT_RECORDS` joins them).
 */
export const AUDIT_EVENT_COLUMNS = `${RECORD_COLUMNS}, s.seq, s.prev_hash, s.hash`;

/** The same columns for records known not to be sealed (`a` alone, the seal's columns null). */
export const UNSEALED_AUDIT_EVENT_COLUMNS = `${RECORD_COLUMNS}, NULL::bigint AS seq, NULL::text AS prev_hash, NULL::text AS hash`;

/** Records with their seals, sealed or not: the `FROM` of the statements that read whole records. */
export const AUDIT_RECORDS = `audit_events a
  LEFT JOIN audit_seals s ON s.project_id = a.project_id AND s.position = a.position`;

/**
 * A record as the API answers it. The sealer hashes exactly this (without `hash`), and verify
 * hashes it again from the row as it is now, so whatever the row holds is what is checked.
 */
export const toAuditEventView = (row: AuditEventRow): AuditEventView => ({
  id: row.id,
  at: row.at.toISOString(),
  projectId: row.project_id,
  actor: {
    type: row.actor_type,
    keyId: row.actor_key_id,
    keyPrefix: row.actor_key_prefix,
    customerId: row.actor_customer_id,
  },
  action: row.action,
  resourceType: row.resource_type,
  resourceId: row.resource_id,
  changes: row.changes,
  requestId: row.request_id,
  idempotencyKey: row.idempotency_key,
  ip: row.ip,
  seq: row.seq === null ? null : Number(row.seq),
  prevHash: row.prev_hash,
  hash: row.hash,
});
