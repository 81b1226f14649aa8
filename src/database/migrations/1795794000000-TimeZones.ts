import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Calendar resets in time zones and usage thresholds (docs/entitlements.md): a quota's
 * `reset_anchor`, `reset_day_of_month`, `reset_time_zone` and `thresholds`; the project's
 * `time_zone` (never null) and the customer's (null: the project's); and the two histories of
 * zone changes, so that a period can follow the zone as it was at its start. The new columns are
 * nullable or have constant defaults, so adding them rewrites no table.
 */
export class TimeZones1795794000000 implements MigrationInterface {
  name = 'TimeZones1795794000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "quotas" ADD "reset_anchor" character varying(8) NOT NULL DEFAULT 'run'`);
    await q.query(`ALTER TABLE "quotas" ADD "reset_day_of_month" smallint`);
    await q.query(`ALTER TABLE "quotas" ADD "reset_time_zone" character varying(64)`);
    await q.query(`ALTER TABLE "quotas" ADD "thresholds" smallint array NOT NULL DEFAULT '{}'`);
    await q.query(`ALTER TABLE "projects" ADD "time_zone" character varying(64) NOT NULL DEFAULT 'UTC'`);
    await q.query(`ALTER TABLE "customers" ADD "time_zone" character varying(64)`);

    await q.query(
      `CREATE TABLE "project_time_zone_changes" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "changed_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "from_zone" character varying(64) NOT NULL, "to_zone" character varying(64) NOT NULL, CONSTRAINT "PK_c75d0da0a8f16ceba58099023e8" PRIMARY KEY ("id"))`,
    );
    await q.query(
      `CREATE INDEX "project_time_zone_changes_project_idx" ON "project_time_zone_changes" ("project_id", "changed_at")`,
    );
    await q.query(
      `ALTER TABLE "project_time_zone_changes" ADD CONSTRAINT "project_time_zone_changes_project_fk" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    await q.query(
      `CREATE TABLE "customer_time_zone_changes" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL, "changed_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "from_zone" character varying(64), "to_zone" character varying(64), CONSTRAINT "PK_307a1781dc8ff750d7c0f167922" PRIMARY KEY ("id"))`,
    );
    await q.query(
      `CREATE INDEX "customer_time_zone_changes_customer_idx" ON "customer_time_zone_changes" ("customer_id", "changed_at")`,
    );
    await q.query(
      `ALTER TABLE "customer_time_zone_changes" ADD CONSTRAINT "customer_time_zone_changes_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "customer_time_zone_changes"`);
    await q.query(`DROP TABLE "project_time_zone_changes"`);
    await q.query(`ALTER TABLE "customers" DROP COLUMN "time_zone"`);
    await q.query(`ALTER TABLE "projects" DROP COLUMN "time_zone"`);
    await q.query(`ALTER TABLE "quotas" DROP COLUMN "thresholds"`);
    await q.query(`ALTER TABLE "quotas" DROP COLUMN "reset_time_zone"`);
    await q.query(`ALTER TABLE "quotas" DROP COLUMN "reset_day_of_month"`);
    await q.query(`ALTER TABLE "quotas" DROP COLUMN "reset_anchor"`);
  }
}
