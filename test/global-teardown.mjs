// Jest global teardown: drop this run's databases and stop the embedded server, so that a
// test run leaves no PostgreSQL process behind.
import { rmSync } from 'node:fs';
import pg from 'pg';

export default async function globalTeardown() {
  const embedded = globalThis.__EMBEDDED_PG__;
  if (embedded) {
    await embedded.server.stop();
    rmSync(embedded.dir, { recursive: true, force: true });
    return;
  }
  const client = new pg.Client({ connectionString: process.env.TEST_ADMIN_DATABASE_URL });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT datname FROM pg_database WHERE datname LIKE $1', [
      `%${process.env.TEST_RUN_ID}%`,
    ]);
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
