import { MigrationInterface, QueryRunner } from 'typeorm';

/** The three tables split by day of their event's time: columns (in order), key, partition key, old key's name. */
const TABLES = [
  {
    table: 'events',
    key: 'created_at',
    pk: 'events_pk',
    oldPk: 'PK_40731c7151fe4be3116e45ddf73',
    columns: `"id" character varying(28) NOT NULL, "project_id" character varying(24) NOT NULL,
      "type" character varying(64) NOT NULL, "customer_id" integer, "customer_seq" integer, "data" jsonb NOT NULL,
      "unique_key" character varying(64), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now()`,
    names: 'id, project_id, type, customer_id, customer_seq, data, unique_key, created_at',
    from: 'SELECT id, project_id, type, customer_id, customer_seq, data, unique_key, created_at FROM events_unpartitioned',
  },
  {
    table: 'webhook_deliveries',
    key: 'event_created_at',
    pk: 'webhook_deliveries_pk',
    oldPk: 'PK_535dd409947fb6d8fc6dfc0112a',
    columns: `"id" bigint NOT NULL DEFAULT nextval('webhook_deliveries_id_seq'), "project_id" character varying(24) NOT NULL,
      "event_id" character varying(28) NOT NULL, "endpoint_id" character varying(27) NOT NULL,
      "status" character varying(16) NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0',
      "next_attempt_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(),
      "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "event_created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL`,
    names:
      'id, project_id, event_id, endpoint_id, status, attempts, next_attempt_at, created_at, updated_at, event_created_at',
    from: `SELECT d.id, d.project_id, d.event_id, d.endpoint_id, d.status, d.attempts, d.next_attempt_at, d.created_at,
                  d.updated_at, e.created_at
             FROM webhook_deliveries_unpartitioned d JOIN events_unpartitioned e ON e.id = d.event_id`,
  },
  {
    table: 'webhook_attempts',
    key: 'event_created_at',
    pk: 'webhook_attempts_pk',
    oldPk: 'PK_2de7e7887ad97de459adab62638',
    columns: `"id" bigint NOT NULL DEFAULT nextval('webhook_attempts_id_seq'), "delivery_id" bigint NOT NULL,
      "attempted_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "outcome" character varying(16) NOT NULL, "status_code" integer,
      "error" character varying(500), "duration_ms" integer NOT NULL, "event_created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL`,
    names: 'id, delivery_id, attempted_at, outcome, status_code, error, duration_ms, event_created_at',
    from: `SELECT a.id, a.delivery_id, a.attempted_at, a.outcome, a.status_code, a.error, a.duration_ms, e.created_at
             FROM webhook_attempts_unpartitioned a JOIN webhook_deliveries_unpartitioned d ON d.id = a.delivery_id
             JOIN events_unpartitioned e ON e.id = d.event_id`,
  },
] as const;

/**
 * Events and their deliveries split by day (docs/events.md#retention): `events` partitioned by
 * UTC day of `created_at`, `webhook_deliveries` and `webhook_attempts` by the day of their
 * event's (`event_created_at`, copied), so that a day past the retention is dropped whole, its
 * deliveries and attempts with it, instead of deleted row by row. The keys gain the partition key
 * (`(id, created_at)`, `(id, event_created_at)`); deliveries' and attempts' ids become bigint.
 * The once-only `unique_key` of an event, which must hold across days, moves to
 * `event_unique_keys`, not split by time.
 */
export class EventPartitions1796100100000 implements MigrationInterface {
  name = 'EventPartitions1796100100000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhook_attempts" DROP CONSTRAINT "webhook_attempts_delivery_fk"`);
    await q.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event_fk"`);
    await q.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_endpoint_fk"`);
    for (const t of TABLES) await q.query(`ALTER TABLE "${t.table}" RENAME TO "${t.table}_unpartitioned"`);
    for (const t of ['webhook_deliveries', 'webhook_attempts'])
      await q.query(`ALTER SEQUENCE "${t}_id_seq" AS bigint`);
    const days: Array<{ start: Date }> = await q.query(
      `SELECT d AS start FROM (
         SELECT DISTINCT date_trunc('day', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS d FROM events_unpartitioned
         UNION
         SELECT (date_trunc('day', now() AT TIME ZONE 'UTC') + make_interval(days => k)) AT TIME ZONE 'UTC'
           FROM generate_series(0, 7) k) x ORDER BY d`,
    );
    for (const t of TABLES) {
      await q.query(`CREATE TABLE "${t.table}" (${t.columns}) PARTITION BY RANGE ("${t.key}")`);
      if (t.table !== 'events')
        await q.query(`ALTER SEQUENCE "${t.table}_id_seq" OWNED BY "${t.table}"."id"`);
      await q.query(`CREATE TABLE "${t.table}_default" PARTITION OF "${t.table}" DEFAULT`);
      for (const { start } of days) {
        const from = new Date(start);
        const to = new Date(from.getTime() + 86_400_000);
        const name = `${t.table}_p${from.toISOString().slice(0, 10).replace(/-/g, '')}`;
        await q.query(
          `CREATE TABLE "${name}" PARTITION OF "${t.table}" FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`,
        );
      }
      await q.query(`INSERT INTO "${t.table}" (${t.names}) ${t.from}`);
    }
    await q.query(
      `CREATE TABLE "event_unique_keys" ("unique_key" character varying(64) NOT NULL,
         "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "event_unique_keys_pk" PRIMARY KEY ("unique_key"))`,
    );
    await q.query(
      `INSERT INTO "event_unique_keys" (unique_key, created_at) SELECT unique_key, created_at FROM events WHERE unique_key IS NOT NULL`,
    );
    await q.query(`CREATE INDEX "event_unique_keys_created_idx" ON "event_unique_keys" ("created_at")`);
    for (const t of [...TABLES].reverse()) await q.query(`DROP TABLE "${t.table}_unpartitioned"`);

    for (const t of TABLES)
      await q.query(`ALTER TABLE "${t.table}" ADD CONSTRAINT "${t.pk}" PRIMARY KEY ("id", "${t.key}")`);
    await q.query(
      `CREATE INDEX "events_project_customer_idx" ON "events" ("project_id", "customer_id", "created_at", "id")`,
    );
    await q.query(`CREATE INDEX "events_project_created_idx" ON "events" ("project_id", "created_at", "id")`);
    await q.query(`CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" ("endpoint_id")`);
    await q.query(`CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" ("event_id")`);
    await q.query(
      `CREATE INDEX "webhook_deliveries_endpoint_due_idx" ON "webhook_deliveries" ("endpoint_id", "next_attempt_at") WHERE "status" = 'pending'`,
    );
    await q.query(`CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts" ("delivery_id")`);
    await q.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_fk" FOREIGN KEY ("event_id", "event_created_at") REFERENCES "events"("id","created_at") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_fk" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_fk" FOREIGN KEY ("delivery_id", "event_created_at") REFERENCES "webhook_deliveries"("id","event_created_at") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "webhook_attempts" DROP CONSTRAINT "webhook_attempts_delivery_fk"`);
    await q.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_event_fk"`);
    await q.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "webhook_deliveries_endpoint_fk"`);
    for (const t of TABLES) {
      await q.query(`ALTER TABLE "${t.table}" RENAME TO "${t.table}_partitioned"`);
      const columns = t.columns.replace(/, "event_created_at" TIMESTAMP\(3\) WITH TIME ZONE NOT NULL$/, '');
      await q.query(`CREATE TABLE "${t.table}" (${columns}, CONSTRAINT "${t.oldPk}" PRIMARY KEY ("id"))`);
      if (t.table !== 'events')
        await q.query(`ALTER SEQUENCE "${t.table}_id_seq" OWNED BY "${t.table}"."id"`);
      const names = t.names.replace(', event_created_at', '');
      await q.query(`INSERT INTO "${t.table}" (${names}) SELECT ${names} FROM "${t.table}_partitioned"`);
    }
    for (const t of [...TABLES].reverse()) await q.query(`DROP TABLE "${t.table}_partitioned"`);
    await q.query(`DROP TABLE "event_unique_keys"`);
    for (const t of ['webhook_deliveries', 'webhook_attempts']) {
      await q.query(`ALTER TABLE "${t}" ALTER COLUMN "id" TYPE integer`);
      await q.query(`ALTER SEQUENCE "${t}_id_seq" AS integer`);
    }
    await q.query(`ALTER TABLE "webhook_attempts" ALTER COLUMN "delivery_id" TYPE integer`);
    await q.query(`CREATE UNIQUE INDEX "events_unique_key_uq" ON "events" ("unique_key")`);
    await q.query(`CREATE INDEX "events_created_idx" ON "events" ("created_at")`);
    await q.query(
      `CREATE INDEX "events_project_customer_idx" ON "events" ("project_id", "customer_id", "created_at", "id")`,
    );
    await q.query(`CREATE INDEX "events_project_created_idx" ON "events" ("project_id", "created_at", "id")`);
    await q.query(`CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" ("endpoint_id")`);
    await q.query(`CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" ("event_id")`);
    await q.query(
      `CREATE INDEX "webhook_deliveries_endpoint_due_idx" ON "webhook_deliveries" ("endpoint_id", "next_attempt_at") WHERE "status" = 'pending'`,
    );
    await q.query(`CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts" ("delivery_id")`);
    await q.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_fk" FOREIGN KEY ("event_id") REFERENCES "events"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_fk" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_fk" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }
}
