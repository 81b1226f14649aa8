import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The live windows of a customer's plan group found without walking its ended ones: an index on
 * `(customer_id, plan_group, COALESCE(valid_to, 'infinity'))` of the active windows, which the
 * redemption's chain read (`LIVE_CHAIN`, `COALESCE(valid_to, 'infinity') > $3`) scans as one
 * range. Through `(customer_id, plan_group)` alone, PostgreSQL fetched and filtered every window
 * the customer ever had in the group, so a long-time customer's redemption grew slower with every
 * window (figures: docs/benchmarks.md#measurements-behind-decisions).
 *
 * Built in the migration's transaction, which holds writes to `subscriptions` for the time of the
 * build. `CREATE INDEX CONCURRENTLY` cannot run there: it would wait for the snapshot of a
 * replica's migrator waiting for the migration lock, which waits for this one. On a table too
 * large for that pause, create the index concurrently by hand before the release (the statement
 * and the build's time are in docs/operations.md#upgrading-with-migrations): `IF NOT EXISTS`
 * then makes this a no-op. The old index stays: the other reads of a customer's windows use it.
 */
export class LiveWindowsIndex1795500000000 implements MigrationInterface {
  name = 'LiveWindowsIndex1795500000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX IF NOT EXISTS "subscriptions_live_chain_idx" ON "subscriptions" ` +
        `("customer_id", "plan_group", (COALESCE("valid_to", 'infinity'::timestamptz))) WHERE "status" = 'active'`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS "subscriptions_live_chain_idx"`);
  }
}
