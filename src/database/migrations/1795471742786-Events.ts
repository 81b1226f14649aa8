import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Events and webhooks (docs/events.md): the events table (the outbox, with a unique key per window
 * boundary), per-customer sequence numbers, the boundary scheduler's cursor (starting now, so
 * that an existing database does not announce its past), webhook endpoints, deliveries and their
 * attempts, and two partial indexes of subscriptions for the scheduler's range scans.
 */
export class Events1795471742786 implements MigrationInterface {
  name = 'Events1795471742786';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "events" ("id" character varying(28) NOT NULL, "project_id" character varying(24) NOT NULL, "type" character varying(64) NOT NULL, "customer_id" integer, "customer_seq" integer, "data" jsonb NOT NULL, "unique_key" character varying(64), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_40731c7151fe4be3116e45ddf73" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE UNIQUE INDEX "events_unique_key_uq" ON "events"  ("unique_key") `);
    await queryRunner.query(`CREATE INDEX "events_created_idx" ON "events"  ("created_at") `);
    await queryRunner.query(
      `CREATE INDEX "events_project_customer_idx" ON "events"  ("project_id", "customer_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "events_project_created_idx" ON "events"  ("project_id", "created_at", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "customer_event_seqs" ("customer_id" integer NOT NULL, "project_id" character varying(24) NOT NULL, "seq" integer NOT NULL, CONSTRAINT "PK_44d849d2391da3f3cfb286e6d72" PRIMARY KEY ("customer_id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "event_schedule_cursors" ("kind" character varying(32) NOT NULL, "scanned_to" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_600b3522bcc56881fd802ea084e" PRIMARY KEY ("kind"))`,
    );
    await queryRunner.query(
      `INSERT INTO "event_schedule_cursors" ("kind", "scanned_to") VALUES ('windows', now())`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_endpoints" ("id" character varying(27) NOT NULL, "project_id" character varying(24) NOT NULL, "url" character varying(2048) NOT NULL, "description" character varying(500), "event_types" text array NOT NULL DEFAULT '{}', "enabled" boolean NOT NULL DEFAULT true, "disabled_reason" character varying(500), "failing_since" TIMESTAMP(3) WITH TIME ZONE, "secret" text NOT NULL, "previous_secret" text, "previous_secret_expires_at" TIMESTAMP(3) WITH TIME ZONE, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_054c4cfb95223732f5939d2d546" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_endpoints_project_idx" ON "webhook_endpoints"  ("project_id", "created_at") `,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "event_id" character varying(28) NOT NULL, "endpoint_id" character varying(27) NOT NULL, "status" character varying(16) NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "next_attempt_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_535dd409947fb6d8fc6dfc0112a" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries"  ("endpoint_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries"  ("event_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries"  ("next_attempt_at") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_attempts" ("id" SERIAL NOT NULL, "delivery_id" integer NOT NULL, "attempted_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "outcome" character varying(16) NOT NULL, "status_code" integer, "error" character varying(500), "duration_ms" integer NOT NULL, CONSTRAINT "PK_2de7e7887ad97de459adab62638" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts"  ("delivery_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "subscriptions_active_valid_to_idx" ON "subscriptions"  ("valid_to") WHERE "status" = 'active' AND "valid_to" IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "subscriptions_active_valid_from_idx" ON "subscriptions"  ("valid_from") WHERE "status" = 'active'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_fk" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_fk" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_fk" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_attempts" DROP CONSTRAINT "webhook_attempts_delivery_fk"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_endpoint_fk"`,
    );
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event_fk"`);
    await queryRunner.query(`DROP INDEX "public"."subscriptions_active_valid_from_idx"`);
    await queryRunner.query(`DROP INDEX "public"."subscriptions_active_valid_to_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_attempts_delivery_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_attempts"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_due_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_event_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_endpoint_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_endpoints_project_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_endpoints"`);
    await queryRunner.query(`DROP TABLE "event_schedule_cursors"`);
    await queryRunner.query(`DROP TABLE "customer_event_seqs"`);
    await queryRunner.query(`DROP INDEX "public"."events_project_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."events_project_customer_idx"`);
    await queryRunner.query(`DROP INDEX "public"."events_created_idx"`);
    await queryRunner.query(`DROP INDEX "public"."events_unique_key_uq"`);
    await queryRunner.query(`DROP TABLE "events"`);
  }
}
