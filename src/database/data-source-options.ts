import { join } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { DatabaseTimeouts, poolTimeoutOptions, QUERY_TIMEOUT_MARGIN_MS } from './timeouts';

export interface DatabaseSettings {
  url: string;
  poolSize?: number;
  /** How long an unused pool connection stays open, in ms; unset: pg's default (10 s). */
  poolIdleMs?: number;
  logging?: boolean;
  /** The service's pool: statement and client timeouts, bounded wait for a slot, TCP keep-alive. Unset (migrations, CLI): none. */
  timeouts?: DatabaseTimeouts;
}

/**
 * The service's pool, from its settings: the primary's and each read replica's alike (size, idle
 * time, and the timeouts that bound a request on a stalled server).
 */
export function servicePoolSettings(config: AppConfig): Omit<DatabaseSettings, 'url'> {
  return {
    poolSize: config.get('DB_POOL_SIZE'),
    poolIdleMs: config.get('DB_POOL_IDLE_MS'),
    timeouts: {
      statementTimeoutMs: config.get('DB_STATEMENT_TIMEOUT_MS'),
      queryTimeoutMs: config.get('DB_STATEMENT_TIMEOUT_MS') + QUERY_TIMEOUT_MARGIN_MS,
      poolWaitMs: config.get('DB_POOL_WAIT_MS'),
    },
  };
}

/**
 * The one place that describes the connection: used by the Nest TypeORM module, by the
 * migration CLI (`ormconfig.ts`), by the start-up migrator and by the tests.
 * Entities and migrations are found by glob so that compiled (`dist/`) and TypeScript
 * (`ts-node`, Jest) runs share it.
 */
export function buildDataSourceOptions(settings: DatabaseSettings): DataSourceOptions {
  const ext = __filename.endsWith('.ts') ? 'ts' : 'js';
  return {
    type: 'postgres',
    url: settings.url,
    entities: [join(__dirname, '..', `**/*.entity.${ext}`)],
    migrations: [join(__dirname, 'migrations', `*.${ext}`)],
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    // Failed queries are not logged here: they may carry parameters (hashes, identifiers), and the
    // ones that matter reach the exception filter, which logs them without internals.
    logging: settings.logging ? ['query', 'error'] : false,
    extra: {
      max: settings.poolSize ?? 10,
      ...(settings.poolIdleMs !== undefined ? { idleTimeoutMillis: settings.poolIdleMs } : {}),
      connectionTimeoutMillis: 10000,
      application_name: 'subscription-service',
      ...(settings.timeouts ? poolTimeoutOptions(settings.timeouts) : {}),
    },
  };
}
