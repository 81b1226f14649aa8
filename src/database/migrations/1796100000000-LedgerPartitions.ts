import { MigrationInterface, QueryRunner } from 'typeorm';

/** The ledger's two tables: their columns (in order), primary key name, and sequence. */
const LEDGER = [
  {
    table: 'usage_records',
    pk: 'usage_records_pk',
    oldPk: 'PK_e511cf9f7dc53851569f87467a5',
    columns: `"id" bigint NOT NULL DEFAULT nextval('usage_records_id_seq'), "project_id" character varying(24) NOT NULL,
      "customer_id" integer NOT NULL, "feature_id" integer NOT NULL, "event_id" character varying(255) NOT NULL,
      "amount" numeric(26,6) NOT NULL, "overage" numeric(26,6) NOT NULL DEFAULT '0',
      "recorded_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "reversed_at" TIMESTAMP(3) WITH TIME ZONE,
      "overage_running" numeric(32,6) NOT NULL, "granted" numeric(26,6) NOT NULL DEFAULT '0', "feature_seq" bigint NOT NULL`,
    names: `id, project_id, customer_id, feature_id, event_id, amount, overage, recorded_at, reversed_at, overage_running, granted, feature_seq`,
  },
  {
    table: 'usage_allocations',
    pk: 'usage_allocations_pk',
    oldPk: 'PK_e0155ede5af3210c43e8adc2a9b',
    columns: `"id" bigint NOT NULL DEFAULT nextval('usage_allocations_id_seq'), "project_id" character varying(24) NOT NULL,
      "usage_id" bigint NOT NULL, "customer_id" integer NOT NULL, "feature_id" integer NOT NULL,
      "plan_group" character varying(64), "period_start" TIMESTAMP(3) WITH TIME ZONE, "amount" numeric(26,6) NOT NULL,
      "recorded_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "reversed" boolean NOT NULL DEFAULT false,
      "running" numeric(32,6) NOT NULL, "source" character varying(8) NOT NULL DEFAULT 'plan', "grant_id" integer,
      "restored" boolean`,
    names: `id, project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at, reversed, running, source, grant_id, restored`,
  },
] as const;

/**
 * The ledger split by time (docs/operations.md#partitioned-tables): `usage_records` and
 * `usage_allocations` become tables partitioned by month of `recorded_at` (an allocation's is its
 * record's), so that old months can be dropped whole and a month's indexes stay the size of a
 * month. A unique key of a partitioned table must hold the partition key, so both primary keys
 * become `(id, recorded_at)` and an allocation names its record by both. The event id's
 * uniqueness per project and customer, which had to hold forever and across months, moves to
 * `usage_event_ids`, not split by time: one narrow row per record, written with it.
 *
 * An existing ledger is converted in place: each table renamed, the partitioned one created with
 * a partition for every month holding rows (and this month and the next two), the rows copied,
 * then the keys, indexes, foreign keys and running-total triggers made again. It holds the
 * tables locked throughout: docs/operations.md#partitioned-tables says how long it takes.
 */
export class LedgerPartitions1796100000000 implements MigrationInterface {
  name = 'LedgerPartitions1796100000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "usage_allocations" DROP CONSTRAINT "usage_allocations_usage_fk"`);
    for (const t of LEDGER) {
      await q.query(`ALTER TABLE "${t.table}" RENAME TO "${t.table}_unpartitioned"`);
      await q.query(`CREATE TABLE "${t.table}" (${t.columns}) PARTITION BY RANGE ("recorded_at")`);
      await q.query(`ALTER SEQUENCE "${t.table}_id_seq" OWNED BY "${t.table}"."id"`);
      await q.query(`CREATE TABLE "${t.table}_default" PARTITION OF "${t.table}" DEFAULT`);
      const months: Array<{ start: Date }> = await q.query(
        `SELECT m AS start FROM (
           SELECT DISTINCT date_trunc('month', recorded_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS m FROM "${t.table}_unpartitioned"
           UNION
           SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => k)) AT TIME ZONE 'UTC'
             FROM generate_series(0, 2) k) x ORDER BY m`,
      );
      for (const { start } of months) {
        const from = new Date(start);
        const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
        const name = `${t.table}_p${from.toISOString().slice(0, 7).replace('-', '')}`;
        await q.query(
          `CREATE TABLE "${name}" PARTITION OF "${t.table}" FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`,
        );
      }
      await q.query(
        `INSERT INTO "${t.table}" (${t.names}) SELECT ${t.names} FROM "${t.table}_unpartitioned"`,
      );
    }

    await q.query(
      `CREATE TABLE "usage_event_ids" ("project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL,
         "event_id" character varying(255) NOT NULL, "feature_id" integer NOT NULL, "usage_id" bigint NOT NULL,
         "recorded_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "amount" numeric(26,6) NOT NULL,
         "overage" numeric(26,6) NOT NULL,
         CONSTRAINT "usage_event_ids_pk" PRIMARY KEY ("project_id", "customer_id", "event_id"))`,
    );
    await q.query(
      `INSERT INTO "usage_event_ids" (project_id, customer_id, event_id, feature_id, usage_id, recorded_at, amount, overage)
       SELECT project_id, customer_id, event_id, feature_id, id, recorded_at, amount, overage FROM "usage_records"`,
    );

    // the old tables go with their indexes, constraints and triggers (whose names are then free)
    await q.query(`DROP TABLE "usage_allocations_unpartitioned"`);
    await q.query(`DROP TABLE "usage_records_unpartitioned"`);

    for (const t of LEDGER)
      await q.query(`ALTER TABLE "${t.table}" ADD CONSTRAINT "${t.pk}" PRIMARY KEY ("id", "recorded_at")`);
    await q.query(
      `CREATE INDEX "usage_records_customer_recorded_idx" ON "usage_records" ("customer_id", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_records_customer_feature_idx" ON "usage_records" ("customer_id", "feature_id", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_records_reversed_idx" ON "usage_records" ("customer_id", "feature_id", "recorded_at") WHERE "reversed_at" IS NOT NULL`,
    );
    await q.query(`CREATE INDEX "usage_allocations_usage_idx" ON "usage_allocations" ("usage_id")`);
    await q.query(
      `CREATE INDEX "usage_allocations_running_idx" ON "usage_allocations" ("customer_id", "feature_id", "plan_group", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_allocations_reversed_idx" ON "usage_allocations" ("customer_id", "feature_id", "plan_group", "recorded_at") WHERE "reversed"`,
    );
    await q.query(
      `ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "usage_allocations" ADD CONSTRAINT "usage_allocations_usage_fk" FOREIGN KEY ("usage_id", "recorded_at") REFERENCES "usage_records"("id","recorded_at") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "usage_event_ids" ADD CONSTRAINT "usage_event_ids_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "usage_event_ids" ADD CONSTRAINT "usage_event_ids_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    // An allocation written without its running total takes its record's instant (the record's
    // trigger may have moved it later), so that it stays in its record's partition and its key.
    await q.query(`
      CREATE OR REPLACE FUNCTION usage_allocations_running() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        last_at timestamptz;
        last_total numeric;
        record_at timestamptz;
      BEGIN
        SELECT t.recorded_at, t.running INTO last_at, last_total FROM usage_allocations t
         WHERE t.customer_id = NEW.customer_id AND t.feature_id = NEW.feature_id AND t.plan_group = NEW.plan_group
         ORDER BY t.recorded_at DESC, t.id DESC LIMIT 1;
        SELECT r.recorded_at INTO record_at FROM usage_records r WHERE r.id = NEW.usage_id;
        NEW.recorded_at := coalesce(record_at, greatest(NEW.recorded_at, last_at));
        NEW.running := coalesce(last_total, 0) + NEW.amount;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER usage_records_running BEFORE INSERT ON usage_records
        FOR EACH ROW WHEN (NEW.overage_running IS NULL OR NEW.feature_seq IS NULL) EXECUTE FUNCTION usage_records_running()`);
    await q.query(`
      CREATE TRIGGER usage_allocations_running BEFORE INSERT ON usage_allocations
        FOR EACH ROW WHEN (NEW.running IS NULL) EXECUTE FUNCTION usage_allocations_running()`);
    // the new tables' statistics, so that the first plans made for them know their size
    await q.query(`ANALYZE usage_records, usage_allocations, usage_event_ids`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "usage_allocations" DROP CONSTRAINT "usage_allocations_usage_fk"`);
    await q.query(`DROP TABLE "usage_event_ids"`);
    for (const t of LEDGER) {
      await q.query(`ALTER TABLE "${t.table}" RENAME TO "${t.table}_partitioned"`);
      await q.query(`CREATE TABLE "${t.table}" (${t.columns}, CONSTRAINT "${t.oldPk}" PRIMARY KEY ("id"))`);
      await q.query(`ALTER SEQUENCE "${t.table}_id_seq" OWNED BY "${t.table}"."id"`);
      await q.query(`INSERT INTO "${t.table}" (${t.names}) SELECT ${t.names} FROM "${t.table}_partitioned"`);
    }
    await q.query(`DROP TABLE "usage_allocations_partitioned"`);
    await q.query(`DROP TABLE "usage_records_partitioned"`);
    await q.query(
      `CREATE INDEX "usage_records_customer_recorded_idx" ON "usage_records" ("customer_id", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_records_customer_feature_idx" ON "usage_records" ("customer_id", "feature_id", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_records_reversed_idx" ON "usage_records" ("customer_id", "feature_id", "recorded_at") WHERE "reversed_at" IS NOT NULL`,
    );
    await q.query(
      `CREATE UNIQUE INDEX "usage_records_event_uq" ON "usage_records" ("project_id", "customer_id", "event_id")`,
    );
    await q.query(`CREATE INDEX "usage_allocations_usage_idx" ON "usage_allocations" ("usage_id")`);
    await q.query(
      `CREATE INDEX "usage_allocations_running_idx" ON "usage_allocations" ("customer_id", "feature_id", "plan_group", "recorded_at", "id")`,
    );
    await q.query(
      `CREATE INDEX "usage_allocations_reversed_idx" ON "usage_allocations" ("customer_id", "feature_id", "plan_group", "recorded_at") WHERE "reversed"`,
    );
    await q.query(
      `ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "usage_allocations" ADD CONSTRAINT "usage_allocations_usage_fk" FOREIGN KEY ("usage_id") REFERENCES "usage_records"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(`
      CREATE OR REPLACE FUNCTION usage_allocations_running() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        last_at timestamptz;
        last_total numeric;
      BEGIN
        SELECT t.recorded_at, t.running INTO last_at, last_total FROM usage_allocations t
         WHERE t.customer_id = NEW.customer_id AND t.feature_id = NEW.feature_id AND t.plan_group = NEW.plan_group
         ORDER BY t.recorded_at DESC, t.id DESC LIMIT 1;
        NEW.recorded_at := greatest(NEW.recorded_at, last_at);
        NEW.running := coalesce(last_total, 0) + NEW.amount;
        RETURN NEW;
      END $$`);
    await q.query(`
      CREATE TRIGGER usage_records_running BEFORE INSERT ON usage_records
        FOR EACH ROW WHEN (NEW.overage_running IS NULL OR NEW.feature_seq IS NULL) EXECUTE FUNCTION usage_records_running()`);
    await q.query(`
      CREATE TRIGGER usage_allocations_running BEFORE INSERT ON usage_allocations
        FOR EACH ROW WHEN (NEW.running IS NULL) EXECUTE FUNCTION usage_allocations_running()`);
  }
}
