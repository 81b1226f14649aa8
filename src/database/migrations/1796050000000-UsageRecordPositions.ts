import { MigrationInterface, QueryRunner } from 'typeorm';

/** The trigger function of migration UsageRunningTotals, as this migration found it (for `down`). */
const RUNNING_ONLY = `
  CREATE OR REPLACE FUNCTION usage_records_running() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE
    last_at timestamptz;
    last_total numeric;
  BEGIN
    SELECT t.recorded_at, t.overage_running INTO last_at, last_total FROM usage_records t
     WHERE t.customer_id = NEW.customer_id AND t.feature_id = NEW.feature_id
     ORDER BY t.recorded_at DESC, t.id DESC LIMIT 1;
    NEW.recorded_at := greatest(NEW.recorded_at, last_at);
    NEW.overage_running := coalesce(last_total, 0) + NEW.overage;
    RETURN NEW;
  END $$`;

/**
 * `usage_records.feature_seq`: a record's place among its customer's records of the same feature
 * (1, 2, 3, … in `(recorded_at, id)` order), so that a ledger page's `total` is the difference of
 * two places found by index probes instead of a count of every record the filter matches, which
 * grew with the customer's ledger (docs/entitlements.md#the-ledger-page).
 *
 * Existing rows are numbered by one `UPDATE`, which rewrites every record: on a large ledger, run
 * it in a quiet hour (docs/operations.md#upgrading has how long it takes). The service writes the place
 * with the row, from the last place of the series, as it writes `overage_running`; the trigger of
 * migration UsageRunningTotals now also numbers rows written without it (the version still
 * running during a rolling update, a hand-written insert).
 */
export class UsageRecordPositions1796050000000 implements MigrationInterface {
  name = 'UsageRecordPositions1796050000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "usage_records" ADD "feature_seq" bigint`);
    await q.query(`
      UPDATE usage_records t SET feature_seq = r.seq
        FROM (SELECT id, row_number() OVER (PARTITION BY customer_id, feature_id ORDER BY recorded_at, id) AS seq
                FROM usage_records) r
       WHERE r.id = t.id`);
    await q.query(`ALTER TABLE "usage_records" ALTER COLUMN "feature_seq" SET NOT NULL`);
    await q.query(`
      CREATE OR REPLACE FUNCTION usage_records_running() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        last_at timestamptz;
        last_total numeric;
        last_seq bigint;
      BEGIN
        SELECT t.recorded_at, t.overage_running, t.feature_seq INTO last_at, last_total, last_seq FROM usage_records t
         WHERE t.customer_id = NEW.customer_id AND t.feature_id = NEW.feature_id
         ORDER BY t.recorded_at DESC, t.id DESC LIMIT 1;
        NEW.recorded_at := greatest(NEW.recorded_at, last_at);
        NEW.overage_running := coalesce(NEW.overage_running, coalesce(last_total, 0) + NEW.overage);
        NEW.feature_seq := coalesce(NEW.feature_seq, coalesce(last_seq, 0) + 1);
        RETURN NEW;
      END $$`);
    await q.query(`DROP TRIGGER usage_records_running ON usage_records`);
    await q.query(`
      CREATE TRIGGER usage_records_running BEFORE INSERT ON usage_records
        FOR EACH ROW WHEN (NEW.overage_running IS NULL OR NEW.feature_seq IS NULL) EXECUTE FUNCTION usage_records_running()`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER usage_records_running ON usage_records`);
    await q.query(RUNNING_ONLY);
    await q.query(`
      CREATE TRIGGER usage_records_running BEFORE INSERT ON usage_records
        FOR EACH ROW WHEN (NEW.overage_running IS NULL) EXECUTE FUNCTION usage_records_running()`);
    await q.query(`ALTER TABLE "usage_records" DROP COLUMN "feature_seq"`);
  }
}
