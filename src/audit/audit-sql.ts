/**
 * The insert of a unit of work's audit records, as a rider (see src/database/riders.ts): `$1` is
 * a JSON array of rows in the order written, each with the columns of `audit_events` by name.
 * The table's trigger queues them for the sealer (`audit_unsealed`) in the same statement.
 */
export const INSERT_AUDIT_RECORDS = `INSERT INTO audit_events (id, project_id, at, actor_type, actor_key_id, actor_key_prefix,
       actor_customer_id, action, resource_type, resource_id, changes, request_id, idempotency_key, ip)
SELECT r.id, r.project_id, r.at, r.actor_type, r.actor_key_id, r.actor_key_prefix, r.actor_customer_id,
       r.action, r.resource_type, r.resource_id, r.changes, r.request_id, r.idempotency_key, r.ip
  FROM ROWS FROM (jsonb_to_recordset($1::jsonb) AS (id text, project_id text, at timestamptz,
       actor_type text, actor_key_id int, actor_key_prefix text, actor_customer_id int, action text,
       resource_type text, resource_id text, changes jsonb, request_id text, idempotency_key text,
       ip text)) WITH ORDINALITY AS r(id, project_id, at, actor_type, actor_key_id, actor_key_prefix,
       actor_customer_id, action, resource_type, resource_id, changes, request_id, idempotency_key, ip, ord)
 ORDER BY r.ord`;
