import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit log (docs/operations.md#audit-log): `audit_events`, one row per record in the order
 * written (`position`), with no foreign key to its project so that a deleted project's records
 * stay readable, and `audit_chain_heads`, the end of each project's hash chain and the last
 * record retention deleted. The indexes serve the newest-first list (all, by resource, by
 * request), the sealer (the unsealed records of a project) and verify (a project's chain by seq).
 */
export class AuditLog1795900000000 implements MigrationInterface {
  name = 'AuditLog1795900000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "audit_events" ("position" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "id" text NOT NULL, "project_id" character varying(24) NOT NULL, "at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "actor_type" character varying(16) NOT NULL, "actor_key_id" integer, "actor_key_prefix" character varying(32), "actor_customer_id" integer, "action" character varying(64) NOT NULL, "resource_type" character varying(32) NOT NULL, "resource_id" text NOT NULL, "changes" jsonb, "request_id" text, "idempotency_key" text, "ip" text, "seq" bigint, "prev_hash" text, "hash" text, CONSTRAINT "PK_audit_events" PRIMARY KEY ("position"))`,
    );
    await q.query(`CREATE UNIQUE INDEX "audit_events_id_uq" ON "audit_events" ("id") `);
    await q.query(
      `CREATE INDEX "audit_events_project_at_idx" ON "audit_events" ("project_id", "at" DESC, "position" DESC)`,
    );
    await q.query(
      `CREATE INDEX "audit_events_resource_idx" ON "audit_events" ("project_id", "resource_type", "resource_id", "at" DESC, "position" DESC)`,
    );
    await q.query(`CREATE INDEX "audit_events_request_idx" ON "audit_events" ("project_id", "request_id") `);
    await q.query(
      `CREATE UNIQUE INDEX "audit_events_seq_uq" ON "audit_events" ("project_id", "seq") WHERE "seq" IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX "audit_events_unsealed_idx" ON "audit_events" ("project_id", "position") WHERE "seq" IS NULL`,
    );
    await q.query(
      `CREATE TABLE "audit_chain_heads" ("project_id" character varying(24) NOT NULL, "seq" bigint NOT NULL, "hash" text NOT NULL, "pruned_seq" bigint, "pruned_hash" text, CONSTRAINT "PK_audit_chain_heads" PRIMARY KEY ("project_id"))`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "audit_chain_heads"`);
    await q.query(`DROP TABLE "audit_events"`);
  }
}
