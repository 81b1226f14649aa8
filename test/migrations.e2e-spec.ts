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
