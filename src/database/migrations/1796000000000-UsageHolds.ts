import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Usage holds (docs/entitlements.md#holds): `usage_holds`, one row per hold with its allocations
 * as JSON, deleted with its customer or feature. The indexes serve a customer's holds not ended
 * per feature (read with every check and consume), the expiry scheduler's scan by `expires_at`
 * (both partial: ended holds add nothing to either), the newest-first list and the caller's
 * `hold_id`, unique per project and customer.
 */
export class UsageHolds1796000000000 implements MigrationInterface {
  name = 'UsageHolds1796000000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "usage_holds" ("id" BIGSERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL, "feature_id" integer NOT NULL, "hold_id" character varying(255) NOT NULL, "amount" numeric(26,6) NOT NULL, "overage" numeric(26,6) NOT NULL DEFAULT '0', "allow_overage" boolean NOT NULL DEFAULT false, "allocations" jsonb NOT NULL, "status" character varying(10) NOT NULL DEFAULT 'held', "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "ended_at" TIMESTAMP(3) WITH TIME ZONE, "usage_id" bigint, CONSTRAINT "PK_8deefca473593c4493d0fafb53b" PRIMARY KEY ("id"))`,
    );
    await q.query(`CREATE INDEX "usage_holds_customer_idx" ON "usage_holds" ("customer_id", "id") `);
    await q.query(
      `CREATE INDEX "usage_holds_expires_idx" ON "usage_holds" ("expires_at") WHERE "status" = 'held'`,
    );
    await q.query(
      `CREATE INDEX "usage_holds_live_idx" ON "usage_holds" ("customer_id", "feature_id", "expires_at") WHERE "status" = 'held'`,
    );
    await q.query(
      `CREATE UNIQUE INDEX "usage_holds_hold_id_uq" ON "usage_holds" ("project_id", "customer_id", "hold_id") `,
    );
    await q.query(
      `ALTER TABLE "usage_holds" ADD CONSTRAINT "usage_holds_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "usage_holds" ADD CONSTRAINT "usage_holds_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "usage_holds"`);
  }
}
