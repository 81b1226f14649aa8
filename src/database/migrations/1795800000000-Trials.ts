import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Trials (docs/api-guide.md#trials): a window flagged `trial`. The column has a constant default,
 * so adding it rewrites no table. The partial index holds only the active trial windows, which the
 * boundary scheduler scans for `trial.ending` and `trial.ended`.
 */
export class Trials1795800000000 implements MigrationInterface {
  name = 'Trials1795800000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "subscriptions" ADD "trial" boolean NOT NULL DEFAULT false`);
    await q.query(
      `CREATE INDEX "subscriptions_active_trial_valid_to_idx" ON "subscriptions" ("valid_to") WHERE "trial" AND "status" = 'active'`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "subscriptions_active_trial_valid_to_idx"`);
    await q.query(`ALTER TABLE "subscriptions" DROP COLUMN "trial"`);
  }
}
