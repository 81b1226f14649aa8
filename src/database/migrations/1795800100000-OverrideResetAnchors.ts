import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An override copies a calendar quota's reset rule with its interval (docs/entitlements.md#overrides):
 * `reset_anchor`, `reset_day_of_month` and `reset_time_zone`, null for `deny` and on a boolean
 * feature. Existing `set` rows on a metered feature were anchored on their run, so they get `run`.
 * Nullable columns: adding them rewrites no table.
 */
export class OverrideResetAnchors1795800100000 implements MigrationInterface {
  name = 'OverrideResetAnchors1795800100000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "customer_overrides" ADD "reset_anchor" character varying(8)`);
    await q.query(`ALTER TABLE "customer_overrides" ADD "reset_day_of_month" smallint`);
    await q.query(`ALTER TABLE "customer_overrides" ADD "reset_time_zone" character varying(64)`);
    await q.query(`UPDATE "customer_overrides" SET "reset_anchor" = 'run' WHERE "anchor" IS NOT NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "customer_overrides" DROP COLUMN "reset_time_zone"`);
    await q.query(`ALTER TABLE "customer_overrides" DROP COLUMN "reset_day_of_month"`);
    await q.query(`ALTER TABLE "customer_overrides" DROP COLUMN "reset_anchor"`);
  }
}
