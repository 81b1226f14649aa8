import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './data-source-options';

/** Any fixed 64-bit number shared by every replica: "subscription-service migrations". */
const MIGRATION_LOCK_ID = 7_311_402_001;

/**
 * Applies pending migrations while holding a PostgreSQL advisory lock, so replicas that start
 * together run them once: the first takes the lock and migrates, the others wait, then find
 * nothing pending.
 */
export async function migrateWithLock(
  url: string,
  log: (msg: string) => void = () => undefined,
): Promise<string[]> {
  const lock = new Client({ connectionString: url, application_name: 'subscription-service-migrator' });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const dataSource = new DataSource({
      ...buildDataSourceOptions({ url, poolSize: 2 }),
      logging: ['error'],
    });
    await dataSource.initialize();
    try {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      applied.forEach((m) => log(`migration applied: ${m.name}`));
      return applied.map((m) => m.name);
    } finally {
      await dataSource.destroy();
    }
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => undefined);
    await lock.end();
  }
}
