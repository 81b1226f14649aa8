import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from '../src/database/data-source-options';
import { migrateWithLock } from '../src/database/migrator';
import { createEmptyDatabase } from './support/database';

type Db = Awaited<ReturnType<typeof createEmptyDatabase>>;

async function query<T = Record<string, unknown>>(
  url: string,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

const tables = async (url: string) =>
  (
    await query<{ tablename: string }>(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
  ).map((r) => r.tablename);

const executed = async (url: string) =>
  (await query<{ name: string }>(url, 'SELECT name FROM migrations ORDER BY id')).map((r) => r.name);

/** The migrations the code base declares, in order (read by TypeORM from the same glob). */
async function declaredMigrations(url: string): Promise<string[]> {
  const ds = new DataSource(buildDataSourceOptions({ url, poolSize: 1 }));
  await ds.initialize();
  try {
    return ds.migrations.map((m) => m.name ?? m.constructor.name);
  } finally {
    await ds.destroy();
  }
}

describe('migrations', () => {
  const dbs: Db[] = [];
  const fresh = async () => {
    const db = await createEmptyDatabase();
    dbs.push(db);
    return db;
  };
  let all: string[];
  let db: Db;

  beforeAll(async () => {
    db = await fresh();
    all = await declaredMigrations(db.url);
  });
  afterAll(async () => {
    for (const d of dbs) await d.drop();
  });

  it('declares at least the initial migrations, in timestamp order', () => {
    expect(all.length).toBeGreaterThanOrEqual(2);
    expect(all[0]).toBe('InitProjectsAndKeys1763800000000');
    const stamps = all.map((n) => Number(/(\d{13})$/.exec(n)?.[1]));
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
  });

  it('applies every migration on an empty database', async () => {
    expect(await tables(db.url)).toEqual([]);
    const applied = await migrateWithLock(db.url);
    expect(applied).toEqual(all);
    expect(await executed(db.url)).toEqual(all);

    const present = await tables(db.url);
    for (const t of [
      'projects',
      'api_keys',
      'customers',
      'customer_identifiers',
      'plans',
      'features',
      'quotas',
      'codes',
      'code_batches',
      'subscriptions',
      'idempotency_records',
    ]) {
      expect(present).toContain(t);
    }
    const ext = await query(db.url, "SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'");
    expect(ext).toHaveLength(1);
    const trgm = await query<{ indexname: string }>(
      db.url,
      "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND indexdef ILIKE '%gin_trgm_ops%' ORDER BY indexname",
    );
    expect(trgm.map((r) => r.indexname)).toEqual(
      expect.arrayContaining(['customer_identifiers_value_trgm_idx', 'customers_username_trgm_idx']),
    );
  });

  it('applies nothing the second time', async () => {
    await expect(migrateWithLock(db.url)).resolves.toEqual([]);
    expect(await executed(db.url)).toEqual(all);
  });

  it('reverts every migration with down() and applies them all again', async () => {
    const ds = new DataSource({
      ...buildDataSourceOptions({ url: db.url, poolSize: 2 }),
      logging: ['error'],
    });
    await ds.initialize();
    try {
      for (let left = all.length; left > 0; left--) {
        await ds.undoLastMigration({ transaction: 'each' });
        expect(await executed(db.url)).toEqual(all.slice(0, left - 1));
      }
    } finally {
      await ds.destroy();
    }
    // Only TypeORM's own bookkeeping table is left.
    expect(await tables(db.url)).toEqual(['migrations']);

    await expect(migrateWithLock(db.url)).resolves.toEqual(all);
    expect(await executed(db.url)).toEqual(all);
    expect(await tables(db.url)).toEqual(
      expect.arrayContaining(['projects', 'api_keys', 'customers', 'codes']),
    );
  });

  it('UsageRunningTotals and UsageRecordPositions: running totals and places of the rows already there in (recorded_at, id) order; new rows get theirs, never back in time', async () => {
    const own = await fresh();
    await migrateWithLock(own.url);
    const ds = new DataSource({
      ...buildDataSourceOptions({ url: own.url, poolSize: 1 }),
      logging: ['error'],
    });
    await ds.initialize();
    try {
      while ((await executed(own.url)).includes('UsageRunningTotals1795490000000'))
        await ds.undoLastMigration({ transaction: 'each' });
    } finally {
      await ds.destroy();
    }
    // rows as the previous release wrote them: ids in insertion order, one recorded out of time order
    await query(
      own.url,
      `WITH p AS (INSERT INTO projects (id, name) VALUES ('p_running', 'running') RETURNING id),
            c AS (INSERT INTO customers (project_id, username) SELECT id, 'runner' FROM p RETURNING id, project_id),
            f AS (INSERT INTO features (project_id, slug, name) SELECT id, 'calls', 'Calls' FROM p RETURNING id)
       INSERT INTO usage_records (id, project_id, customer_id, feature_id, event_id, amount, overage, recorded_at)
       SELECT r.id, c.project_id, c.id, f.id, 'e' || r.id, r.amount, r.overage, r.at::timestamptz
         FROM c, f, (VALUES (1, 1, 0, '2025-01-01T00:00:00Z'), (2, 2, 3, '2025-01-03T00:00:00Z'),
                            (3, 4, 1, '2025-01-02T00:00:00Z'), (4, 10, 0, '2025-01-01T12:00:00Z'))
                     AS r(id, amount, overage, at)`,
    );
    await query(own.url, "SELECT setval('usage_records_id_seq', 4)");
    await query(
      own.url,
      `INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at)
       SELECT project_id, id, customer_id, feature_id, CASE WHEN id = 4 THEN 'addon' ELSE 'tier' END, recorded_at, amount, recorded_at
         FROM usage_records ORDER BY id`,
    );
    // UsageRunningTotals first, then the migrations after it that were reverted with it
    expect((await migrateWithLock(own.url))[0]).toBe('UsageRunningTotals1795490000000');
    const allocations = () =>
      query<{ usage_id: string; plan_group: string; running: string }>(
        own.url,
        'SELECT usage_id, plan_group, running::float8::text AS running FROM usage_allocations ORDER BY usage_id',
      );
    expect(await allocations()).toEqual([
      { usage_id: '1', plan_group: 'tier', running: '1' },
      { usage_id: '2', plan_group: 'tier', running: '7' },
      { usage_id: '3', plan_group: 'tier', running: '5' },
      { usage_id: '4', plan_group: 'addon', running: '10' },
    ]);
    expect(
      await query(own.url, 'SELECT id, overage_running::float8::text AS o FROM usage_records ORDER BY id'),
    ).toEqual([
      { id: '1', o: '0' },
      { id: '2', o: '4' },
      { id: '3', o: '1' },
      { id: '4', o: '0' },
    ]);

    // a writer whose clock lags (Jan 2, after a Jan 3 record): its rows join the series at its end
    await query(
      own.url,
      `WITH u AS (INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at)
                  SELECT project_id, customer_id, feature_id, 'late', 5, 2, '2025-01-02T06:00:00Z' FROM usage_records WHERE id = 1
                  RETURNING *)
       INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at)
       SELECT project_id, id, customer_id, feature_id, 'tier', recorded_at, amount, recorded_at FROM u`,
    );
    const [late] = await query<{ at: Date; o: string; running: string; allocated_at: Date }>(
      own.url,
      `SELECT u.recorded_at AS at, u.overage_running::float8::text AS o, a.running::float8::text AS running, a.recorded_at AS allocated_at
         FROM usage_records u JOIN usage_allocations a ON a.usage_id = u.id WHERE u.event_id = 'late'`,
    );
    expect(late).toEqual({
      at: new Date('2025-01-03T00:00:00Z'),
      o: '6',
      running: '12',
      allocated_at: new Date('2025-01-03T00:00:00Z'),
    });
    // UsageRecordPositions (migrated with it): places in (recorded_at, id) order, the late row last
    expect(
      await query(own.url, 'SELECT event_id, feature_seq::int AS seq FROM usage_records ORDER BY id'),
    ).toEqual([
      { event_id: 'e1', seq: 1 },
      { event_id: 'e2', seq: 4 },
      { event_id: 'e3', seq: 3 },
      { event_id: 'e4', seq: 2 },
      { event_id: 'late', seq: 5 },
    ]);
  });

  it('LedgerPartitions: converts an existing ledger into monthly partitions without losing or changing a row', async () => {
    const own = await fresh();
    await migrateWithLock(own.url);
    const ds = new DataSource({
      ...buildDataSourceOptions({ url: own.url, poolSize: 1 }),
      logging: ['error'],
    });
    await ds.initialize();
    try {
      while ((await executed(own.url)).includes('LedgerPartitions1796100000000'))
        await ds.undoLastMigration({ transaction: 'each' });
    } finally {
      await ds.destroy();
    }
    // a ledger as the previous release wrote it: three months, allocations, a reversal
    await query(
      own.url,
      `WITH p AS (INSERT INTO projects (id, name) VALUES ('p_ledger', 'ledger') RETURNING id),
            c AS (INSERT INTO customers (project_id, username) SELECT id, 'keeper' FROM p RETURNING id, project_id),
            f AS (INSERT INTO features (project_id, slug, name) SELECT id, 'calls', 'Calls' FROM p RETURNING id)
       INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at, reversed_at)
       SELECT c.project_id, c.id, f.id, 'e' || k, k, 0, timestamptz '2025-01-20T00:00:00Z' + k * interval '9 days',
              CASE WHEN k = 3 THEN timestamptz '2025-04-01T00:00:00Z' END
         FROM c, f, generate_series(1, 8) k`,
    );
    await query(
      own.url,
      `INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at, reversed, restored)
       SELECT project_id, id, customer_id, feature_id, 'tier', date_trunc('month', recorded_at), amount, recorded_at,
              reversed_at IS NOT NULL, CASE WHEN reversed_at IS NOT NULL THEN true END
         FROM usage_records ORDER BY id`,
    );
    const records = () => query(own.url, 'SELECT * FROM usage_records ORDER BY id');
    const allocations = () => query(own.url, 'SELECT * FROM usage_allocations ORDER BY id');
    const [beforeRecords, beforeAllocations] = [await records(), await allocations()];

    expect((await migrateWithLock(own.url))[0]).toBe('LedgerPartitions1796100000000');
    expect(await records()).toEqual(beforeRecords);
    expect(await allocations()).toEqual(beforeAllocations);
    // each row in its month's partition, none in DEFAULT; every event id kept in usage_event_ids
    expect(
      await query(
        own.url,
        `SELECT tableoid::regclass::text AS part, count(*)::int AS n FROM usage_records GROUP BY 1 ORDER BY 1`,
      ),
    ).toEqual([
      { part: 'usage_records_p202501', n: 1 },
      { part: 'usage_records_p202502', n: 3 },
      { part: 'usage_records_p202503', n: 3 },
      { part: 'usage_records_p202504', n: 1 },
    ]);
    expect(await query(own.url, `SELECT count(*)::int AS n FROM usage_allocations_default`)).toEqual([
      { n: 0 },
    ]);
    expect(
      await query(
        own.url,
        `SELECT count(*)::int AS n FROM usage_event_ids k JOIN usage_records u
            ON u.id = k.usage_id AND u.recorded_at = k.recorded_at AND u.event_id = k.event_id AND u.amount = k.amount`,
      ),
    ).toEqual([{ n: 8 }]);
    // ids continue from the old sequence; an allocation must name its record's month; a second
    // record of an event id fails
    const [next] = await query<{ id: string }>(
      own.url,
      `INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at)
       SELECT project_id, customer_id, feature_id, 'e9', 1, 0, '2025-04-05T00:00:00Z' FROM usage_records WHERE id = 1
       RETURNING id`,
    );
    expect(Number(next.id)).toBe(9);
    await expect(
      query(
        own.url,
        `INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, amount, recorded_at, running)
         SELECT project_id, id, customer_id, feature_id, 'tier', 1, '2025-01-01T00:00:00Z', 1 FROM usage_records WHERE id = 9`,
      ),
    ).rejects.toThrow(/usage_allocations_usage_fk/);
    await expect(
      query(
        own.url,
        `INSERT INTO usage_event_ids (project_id, customer_id, event_id, feature_id, usage_id, recorded_at, amount, overage)
         SELECT project_id, customer_id, 'e1', feature_id, 9, recorded_at, 1, 0 FROM usage_records WHERE id = 9`,
      ),
    ).rejects.toThrow(/usage_event_ids_pk/);
  });

  it('EventPartitions: converts events, deliveries and attempts into days without losing a row; unique keys kept', async () => {
    const own = await fresh();
    await migrateWithLock(own.url);
    const ds = new DataSource({
      ...buildDataSourceOptions({ url: own.url, poolSize: 1 }),
      logging: ['error'],
    });
    await ds.initialize();
    try {
      while ((await executed(own.url)).includes('EventPartitions1796100100000'))
        await ds.undoLastMigration({ transaction: 'each' });
    } finally {
      await ds.destroy();
    }
    await query(
      own.url,
      `WITH p AS (INSERT INTO projects (id, name) VALUES ('p_events', 'events') RETURNING id),
            w AS (INSERT INTO webhook_endpoints (id, project_id, url, secret) SELECT 'we_conv', id, 'https://example.com/h', 's' FROM p RETURNING id, project_id),
            e AS (INSERT INTO events (id, project_id, type, data, unique_key, created_at)
                  SELECT 'evt_conv_' || k, w.project_id, 'code.revoked', '{}', CASE WHEN k = 1 THEN 'once:1' END,
                         timestamptz '2025-05-01T10:00:00Z' + k * interval '1 day'
                    FROM w, generate_series(1, 3) k RETURNING id, project_id),
            d AS (INSERT INTO webhook_deliveries (project_id, event_id, endpoint_id, next_attempt_at)
                  SELECT e.project_id, e.id, 'we_conv', now() FROM e RETURNING id)
       INSERT INTO webhook_attempts (delivery_id, attempted_at, outcome, duration_ms) SELECT id, now(), 'failed', 1 FROM d`,
    );
    const rows = () =>
      query(
        own.url,
        `SELECT e.id, e.unique_key, e.created_at, d.id::int AS delivery, a.id::int AS attempt
           FROM events e JOIN webhook_deliveries d ON d.event_id = e.id JOIN webhook_attempts a ON a.delivery_id = d.id ORDER BY e.id`,
      );
    const before = await rows();
    expect(before).toHaveLength(3);
    expect((await migrateWithLock(own.url))[0]).toBe('EventPartitions1796100100000');
    expect(await rows()).toEqual(before);
    expect(
      await query(
        own.url,
        `SELECT (SELECT tableoid::regclass::text FROM events WHERE id = 'evt_conv_1') AS event,
                (SELECT tableoid::regclass::text FROM webhook_attempts a WHERE a.delivery_id = $1) AS attempt,
                (SELECT count(*)::int FROM event_unique_keys WHERE unique_key = 'once:1') AS keys`,
        [before[0].delivery],
      ),
    ).toEqual([{ event: 'events_p20250502', attempt: 'webhook_attempts_p20250502', keys: 1 }]);
  });

  it('runs each migration exactly once when two migrators start together', async () => {
    const other = await fresh();
    const [a, b] = await Promise.all([migrateWithLock(other.url), migrateWithLock(other.url)]);
    expect([...a, ...b].sort()).toEqual([...all].sort());
    // One of them did everything; the other waited for the lock and found nothing pending.
    expect([a.length, b.length].sort((x, y) => x - y)).toEqual([0, all.length]);
    expect(await executed(other.url)).toEqual(all);
    const duplicates = await query(
      other.url,
      'SELECT name FROM migrations GROUP BY name HAVING count(*) > 1',
    );
    expect(duplicates).toEqual([]);
  });

  it('runs each migration exactly once when two processes start together', async () => {
    const third = await fresh();
    const script =
      "require('./src/database/migrator').migrateWithLock(process.env.URL).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); })";
    const start = () =>
      new Promise<{ code: number | null; stderr: string }>((done, fail) => {
        const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
          cwd: resolve(__dirname, '..'),
          env: { ...process.env, URL: third.url },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (chunk) => (stderr += chunk));
        child.on('error', fail);
        child.on('close', (code) => done({ code, stderr }));
      });
    const results = await Promise.all([start(), start()]);
    for (const r of results)
      expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await executed(third.url)).toEqual(all);
    const duplicates = await query(
      third.url,
      'SELECT name FROM migrations GROUP BY name HAVING count(*) > 1',
    );
    expect(duplicates).toEqual([]);
  }, 60_000);
});
