import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Grants and per-customer overrides (docs/entitlements.md#grants-and-overrides): the `grants` and
 * `customer_overrides` tables; on the ledger, each allocation's `source` (`plan`, `override`,
 * `grant`), its `grant_id` and, once reversed, whether it was `restored`; `plan_group` and
 * `period_start` become null for the allocations that have none; `usage_records.granted` is the
 * part of a record taken from grants. The new columns have constant defaults, so adding them
 * does not rewrite the ledger; dropping NOT NULL only changes the catalog.
 */
export class GrantsAndOverrides1795600000000 implements MigrationInterface {
  name = 'GrantsAndOverrides1795600000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "grants" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL, "feature_id" integer NOT NULL, "amount" numeric(26,6) NOT NULL, "used" numeric(26,6) NOT NULL DEFAULT '0', "priority" integer NOT NULL DEFAULT '0', "effective_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE, "reason" character varying(500), "metadata" jsonb NOT NULL DEFAULT '{}', "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "voided_at" TIMESTAMP(3) WITH TIME ZONE, "void_reason" character varying(500), CONSTRAINT "PK_a25f5f89eff8b3277f7969b7094" PRIMARY KEY ("id"))`,
    );
    await q.query(
      `CREATE INDEX "grants_expires_idx" ON "grants" ("expires_at") WHERE "voided_at" IS NULL AND "expires_at" IS NOT NULL`,
    );
    await q.query(`CREATE INDEX "grants_customer_idx" ON "grants" ("customer_id", "id")`);
    await q.query(
      `CREATE INDEX "grants_voided_idx" ON "grants" ("customer_id", "voided_at") WHERE "voided_at" IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX "grants_customer_feature_idx" ON "grants" ("customer_id", "feature_id", (COALESCE("expires_at", 'infinity'::timestamptz))) WHERE "voided_at" IS NULL`,
    );
    await q.query(
      `ALTER TABLE "grants" ADD CONSTRAINT "grants_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "grants" ADD CONSTRAINT "grants_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    await q.query(
      `CREATE TABLE "customer_overrides" ("customer_id" integer NOT NULL, "feature_id" integer NOT NULL, "project_id" character varying(24) NOT NULL, "mode" character varying(8) NOT NULL, "override_limit" numeric(26,6), "priority" integer, "reset_interval" character varying(32), "anchor" TIMESTAMP(3) WITH TIME ZONE, "expires_at" TIMESTAMP(3) WITH TIME ZONE, "reason" character varying(500), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_cbd59eba4486cc8215bbbcff2db" PRIMARY KEY ("customer_id", "feature_id"))`,
    );
    await q.query(
      `CREATE INDEX "customer_overrides_expires_idx" ON "customer_overrides" ("expires_at") WHERE "expires_at" IS NOT NULL`,
    );
    await q.query(
      `ALTER TABLE "customer_overrides" ADD CONSTRAINT "customer_overrides_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "customer_overrides" ADD CONSTRAINT "customer_overrides_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    await q.query(`ALTER TABLE "usage_records" ADD "granted" numeric(26,6) NOT NULL DEFAULT '0'`);
    await q.query(
      `ALTER TABLE "usage_allocations" ADD "source" character varying(8) NOT NULL DEFAULT 'plan'`,
    );
    await q.query(`ALTER TABLE "usage_allocations" ADD "grant_id" integer`);
    await q.query(`ALTER TABLE "usage_allocations" ADD "restored" boolean`);
    await q.query(`ALTER TABLE "usage_allocations" ALTER COLUMN "plan_group" DROP NOT NULL`);
    await q.query(`ALTER TABLE "usage_allocations" ALTER COLUMN "period_start" DROP NOT NULL`);
    // reversals made before this version gave everything back
    await q.query(`UPDATE "usage_allocations" SET "restored" = true WHERE "reversed"`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM "usage_allocations" WHERE "source" <> 'plan'`);
    await q.query(`ALTER TABLE "usage_allocations" ALTER COLUMN "period_start" SET NOT NULL`);
    await q.query(`ALTER TABLE "usage_allocations" ALTER COLUMN "plan_group" SET NOT NULL`);
    await q.query(`ALTER TABLE "usage_allocations" DROP COLUMN "restored"`);
    await q.query(`ALTER TABLE "usage_allocations" DROP COLUMN "grant_id"`);
    await q.query(`ALTER TABLE "usage_allocations" DROP COLUMN "source"`);
    await q.query(`ALTER TABLE "usage_records" DROP COLUMN "granted"`);
    await q.query(`DROP TABLE "customer_overrides"`);
    await q.query(`DROP TABLE "grants"`);
  }
}
