import { MigrationInterface, QueryRunner } from 'typeorm';

/** The two series of running totals: their table, total column, amount column and series key. */
const SERIES = [
  {
    table: 'usage_allocations',
    total: 'running',
    amount: 'amount',
    key: ['customer_id', 'feature_id', 'plan_group'],
  },
  { table: 'usage_records', total: 'overage_running', amount: 'overage', key: ['customer_id', 'feature_id'] },
] as const;

/**
 * Running totals, so that a period's usage costs two index probes instead of a walk over every
 * allocation recorded in the period, which grew with the customer's usage on every check and
 * consume of a customer with a busy quota (docs/benchmarks.md#usage-against-the-records-of-a-period).
 *
 * - `usage_allocations.running`: the sum of the amounts of the customer's allocations in the same
 *   feature and plan group up to and including this one, in `(recorded_at, id)` order, reversed
 *   ones included. The usage of a period `[start, end)` is the running total of the last
 *   allocation in it, minus the total just before its first allocation in it, minus the amounts
 *   reversed in the period (a partial index holds only reversed allocations).
 * - `usage_records.overage_running`: the same for the overage of the customer's records of a feature.
 *
 * The service writes both with the row (`usage.insert`, under the customer's lock, at a time never
 * before the customer's latest record). Rows written without them (the version still running
 * during a rolling update, a hand-written insert) get them from a BEFORE INSERT trigger, which
 * also keeps their `recorded_at` from going back within the series (a replica whose clock lags),
 * as the running totals' order needs; its `WHEN` keeps it from running for the service's rows.
 */
export class UsageRunningTotals1795490000000 implements MigrationInterface {
  name = 'UsageRunningTotals1795490000000';

  public async up(q: QueryRunner): Promise<void> {
    for (const series of SERIES) {
      await q.query(`ALTER TABLE "${series.table}" ADD "${series.total}" numeric(32,6)`);
      await q.query(`
        UPDATE ${series.table} t SET ${series.total} = r.total
          FROM (SELECT id, sum(${series.amount}) OVER (PARTITION BY ${series.key.join(', ')} ORDER BY recorded_at, id) AS total
                  FROM ${series.table}) r
         WHERE r.id = t.id`);
      await q.query(`ALTER TABLE "${series.table}" ALTER COLUMN "${series.total}" SET NOT NULL`);
    }

    await q.query(`DROP INDEX "usage_allocations_period_idx"`);
    await q.query(
      `CREATE INDEX "usage_allocations_running_idx" ON "usage_allocations" ("customer_id", "feature_id", "plan_group", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_allocations_reversed_idx" ON "usage_allocations" ("customer_id", "feature_id", "plan_group", "recorded_at") WHERE "reversed"`,
    );
    await q.query(`DROP INDEX "usage_records_customer_feature_idx"`);
    await q.query(
      `CREATE INDEX "usage_records_customer_feature_idx" ON "usage_records" ("customer_id", "feature_id", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_records_reversed_idx" ON "usage_records" ("customer_id", "feature_id", "recorded_at") WHERE "reversed_at" IS NOT NULL`,
    );

    for (const series of SERIES) {
      await q.query(`
        CREATE FUNCTION ${series.table}_running() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          last_at timestamptz;
          last_total numeric;
        BEGIN
          SELECT t.recorded_at, t.${series.total} INTO last_at, last_total FROM ${series.table} t
           WHERE ${series.key.map((c) => `t.${c} = NEW.${c}`).join(' AND ')}
           ORDER BY t.recorded_at DESC, t.id DESC LIMIT 1;
          NEW.recorded_at := greatest(NEW.recorded_at, last_at);
          NEW.${series.total} := coalesce(last_total, 0) + NEW.${series.amount};
          RETURN NEW;
        END $$`);
      await q.query(`
        CREATE TRIGGER ${series.table}_running BEFORE INSERT ON ${series.table}
          FOR EACH ROW WHEN (NEW.${series.total} IS NULL) EXECUTE FUNCTION ${series.table}_running()`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const { table } of SERIES) {
      await q.query(`DROP TRIGGER ${table}_running ON ${table}`);
      await q.query(`DROP FUNCTION ${table}_running()`);
    }
    await q.query(`DROP INDEX "usage_records_reversed_idx"`);
    await q.query(`DROP INDEX "usage_records_customer_feature_idx"`);
    await q.query(
      `CREATE INDEX "usage_records_customer_feature_idx" ON "usage_records" ("customer_id", "feature_id", "recorded_at")`,
    );
    await q.query(`DROP INDEX "usage_allocations_reversed_idx"`);
    await q.query(`DROP INDEX "usage_allocations_running_idx"`);
    await q.query(
      `CREATE INDEX "usage_allocations_period_idx" ON "usage_allocations" ("customer_id", "feature_id", "plan_group", "recorded_at") WHERE NOT "reversed"`,
    );
    await q.query(`ALTER TABLE "usage_records" DROP COLUMN "overage_running"`);
    await q.query(`ALTER TABLE "usage_allocations" DROP COLUMN "running"`);
  }
}
