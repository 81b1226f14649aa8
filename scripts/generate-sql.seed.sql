-- The rows `npm run sql` (scripts/generate-sql.ts) writes before it calls the @GenerateSql methods:
-- one of each kind, so that a method given their ids finds them, sends the statements that follow a
-- row found, and writes rows whose foreign keys hold. The database is new: every id below is 1
-- (2 for the second plan and feature). The calls' params name these rows.
INSERT INTO projects (id, name) VALUES ('prj_1', 'Acme');
INSERT INTO api_keys (project_id, kind, name, prefix, key_hash)
VALUES ('prj_1', 'private', 'Backend', 'sk_3f9a', repeat('a', 64));
INSERT INTO plans (project_id, slug, name, value, plan_group)
VALUES ('prj_1', 'pro', 'Pro', 10, 'default'), ('prj_1', 'free', 'Free', 0, 'default');
INSERT INTO features (project_id, slug, name, metered, unit)
VALUES ('prj_1', 'api-calls', 'API calls', true, 'call'), ('prj_1', 'export', 'Export', false, '');
INSERT INTO quotas (project_id, plan_id, feature_id, quota_limit, reset_interval)
VALUES ('prj_1', 1, 1, 1000, '1 month');
INSERT INTO customers (project_id, username) VALUES ('prj_1', 'ada');
INSERT INTO customer_identifiers (project_id, customer_id, type, value, readonly)
VALUES ('prj_1', 1, 'username', 'ada', true), ('prj_1', 1, 'email', 'ada@example.com', false);
INSERT INTO customer_credentials (project_id, customer_id, type, secret_hash)
VALUES ('prj_1', 1, 1, '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA');
INSERT INTO code_batches (project_id, plan_id, duration, count, note)
VALUES ('prj_1', 1, '1 month', 1, 'Spring campaign');
INSERT INTO codes (project_id, batch_id, plan_id, code, duration)
VALUES ('prj_1', 1, 1, 'ABCD2345EFGH6789', '1 month');
INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, created_at)
VALUES ('prj_1', 1, 1, 'default', '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', 'signup', '2026-01-01T00:00:00Z');
INSERT INTO events (id, project_id, type, customer_id, customer_seq, data, created_at)
VALUES ('evt_1', 'prj_1', 'customer.created', 1, 1, '{"customerId": 1, "customerSeq": 1}', '2026-03-15T12:00:00Z');
INSERT INTO customer_event_seqs (customer_id, project_id, seq) VALUES (1, 'prj_1', 1);
INSERT INTO webhook_endpoints (id, project_id, url, secret)
VALUES ('we_1', 'prj_1', 'https://example.com/hooks', 'whsec_1');
INSERT INTO webhook_deliveries (project_id, event_id, event_created_at, endpoint_id, attempts, next_attempt_at)
SELECT 'prj_1', 'evt_1', created_at, 'we_1', 1, now() FROM events WHERE id = 'evt_1';
INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, recorded_at)
VALUES ('prj_1', 1, 1, 'use_1', 5, '2026-01-10T00:00:00Z');
INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at)
VALUES ('prj_1', 1, 1, 1, 'default', '2026-01-01T00:00:00Z', 5, '2026-01-10T00:00:00Z');
INSERT INTO usage_event_ids (project_id, customer_id, event_id, feature_id, usage_id, recorded_at, amount, overage)
VALUES ('prj_1', 1, 'use_1', 1, 1, '2026-01-10T00:00:00Z', 5, 0);
INSERT INTO customer_sessions (project_id, customer_id, token_hash, expires_at)
VALUES ('prj_1', 1, repeat('b', 64), now() + interval '1 day');
INSERT INTO idempotency_records (project_id, key, fingerprint, response_status, response_body, expires_at)
VALUES ('prj_1', 'order-1', repeat('c', 64), 201, to_jsonb('{}'::text), now() + interval '1 day');
