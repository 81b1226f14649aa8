import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrateWithLock } from '../../src/database/migrator';

const adminUrl = () => {
  const url = process.env.TEST_ADMIN_DATABASE_URL;
  if (!url) throw new Error('TEST_ADMIN_DATABASE_URL is not set: run the tests through jest (globalSetup)');
  return url;
};

export const databaseUrl = (name: string) => {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
};

async function withAdmin<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The migrated template of this run, made once (under an advisory lock) and cloned per file. */
async function ensureTemplate(): Promise<string> {
  const name = `tpl_${process.env.TEST_RUN_ID}`;
  await withAdmin(async (client) => {
    await client.query('SELECT pg_advisory_lock(4242)');
    try {
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (found.rowCount === 0) {
        await client.query(`CREATE DATABASE "${name}"`);
        await migrateWithLock(databaseUrl(name));
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock(4242)');
    }
  });
  return name;
}

/** A fresh, fully migrated database for one test file. */
export async function createTestDatabase(): Promise<{
  name: string;
  url: string;
  drop: () => Promise<void>;
}> {
  const template = await ensureTemplate();
  const name = `t_${process.env.TEST_RUN_ID}_${randomBytes(4).toString('hex')}`;
  await withAdmin((client) => client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return {
    name,
    url: databaseUrl(name),
    drop: () =>
      withAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}

/** An empty database (no migrations), for the migration tests. */
export async function createEmptyDatabase(): Promise<{
  name: string;
  url: string;
  drop: () => Promise<void>;
}> {
  const name = `e_${process.env.TEST_RUN_ID}_${randomBytes(4).toString('hex')}`;
  await withAdmin((client) => client.query(`CREATE DATABASE "${name}"`));
  return {
    name,
    url: databaseUrl(name),
    drop: () =>
      withAdmin((client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}

/** `text` under `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)`: run it as the statement would be, then read it with `buffersTouched`. */
export const explainedForBuffers = (text: string) => `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`;

/** The shared buffers (hit and read) a statement touched, from the rows of `explainedForBuffers`. */
export function buffersTouched(rows: unknown[]): number {
  const [{ 'QUERY PLAN': plan }] = rows as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
  return nodeBuffers(plan[0].Plan);
}

/** The shared buffers (hit and read) one node of an `explainedForBuffers` plan touched, its children's included. */
export const nodeBuffers = (node: PlanNode): number =>
  (node['Shared Hit Blocks'] as number) + (node['Shared Read Blocks'] as number);

/** A node of a plan in `EXPLAIN (FORMAT JSON)`: its fields as PostgreSQL names them. */
export type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** Every node of `plan` (the `Plan` of an `EXPLAIN (FORMAT JSON)` row), the root first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}
