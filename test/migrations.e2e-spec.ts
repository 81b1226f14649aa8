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
