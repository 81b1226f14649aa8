import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module';
import {
  configureApp,
  configureHttpServer,
  createHttpAdapter,
  drainHttpServer,
  HTTP_APP_OPTIONS,
} from './configure-app';
import { createRootLogger, resolveLogFormat, withQuietStartup } from './common/http/logging';
import { loadDotEnv, LOG_LEVELS, validateEnv } from './config/env';
import { embeddedSecretKey, EmbeddedDatabase, startEmbeddedPostgres } from './database/embedded';
import { migrateWithLock } from './database/migrator';
import { cutDatabaseConnections } from './database/timeouts';
import { DataSource } from 'typeorm';
import { seedDemoProject } from './demo/demo-seed';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MetricsServer } from './metrics/metrics-server';

const DATA_DIR = '.data';
/** After SHUTDOWN_TIMEOUT_MS: the time left to answer the cancelled requests and close the pool before the process exits anyway. */
const HARD_EXIT_AFTER_DEADLINE_MS = 800;

/**
 * The process id of a live PostgreSQL on `dataDir` (its `postmaster.pid`), or undefined. A second
 * `npm start` in the same clone would otherwise fail inside the embedded server's start with no
 * useful message.
 */
function postgresRunningOn(dataDir: string): number | undefined {
  const pidFile = join(dataDir, 'pg', 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    // EPERM: it runs, as another user (the postgres user when started by root)
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/** "port 3000 is already in use" instead of Node's `listen EADDRINUSE` (or nothing at all). */
function portInUse(error: unknown, ports: { PORT: number; METRICS_PORT?: number }): Error | undefined {
  const e = error as NodeJS.ErrnoException & { port?: number };
  if (e?.code !== 'EADDRINUSE') return undefined;
  const setting = e.port !== undefined && e.port === ports.METRICS_PORT ? 'METRICS_PORT' : 'PORT';
  const port = e.port ?? ports[setting];
  return new Error(`port ${port} is already in use: stop the other instance or set ${setting}`);
}

async function bootstrap(): Promise<void> {
  loadDotEnv();
  // Start-up lines (before the application and its logger exist) are `info` lines of the same
  // pino logger set-up, so LOG_LEVEL applies to them too; an invalid level is reported by the
  // validation below.
  const early = createRootLogger(
    LOG_LEVELS.includes(process.env.LOG_LEVEL ?? '') ? process.env.LOG_LEVEL! : 'info',
    resolveLogFormat(process.env.LOG_FORMAT),
  );
  const say = (msg: string) => early.info(msg);
  let embedded: EmbeddedDatabase | undefined;
  if (!process.env.DATABASE_URL && process.env.NODE_ENV === 'production') {
    throw new Error(
      'DATABASE_URL is required when NODE_ENV=production (the embedded PostgreSQL is for local use only)',
    );
  }
  if (!process.env.DATABASE_URL) {
    const running = postgresRunningOn(DATA_DIR);
    if (running !== undefined) {
      throw new Error(
        `the embedded PostgreSQL data directory ${DATA_DIR}/ is in use by another instance (PostgreSQL process ${running}): ` +
          'stop the other instance, or set DATABASE_URL to a PostgreSQL server of your own',
      );
    }
    say(`DATABASE_URL is not set: starting an embedded PostgreSQL with its data under ${DATA_DIR}/`);
    embedded = await startEmbeddedPostgres(DATA_DIR, say);
    process.env.DATABASE_URL = embedded.url;
    process.env.EMBEDDED_DATABASE = 'true';
    process.env.SECRET_ENCRYPTION_KEY ??= embeddedSecretKey(DATA_DIR);
  }
  const stopEmbedded = async () => {
    if (embedded) await embedded.stop().catch(() => undefined);
    embedded = undefined;
  };

  try {
    const env = validateEnv(process.env);
    // through a transaction pooler the migration lock (a session's) does not hold: DATABASE_DIRECT_URL
    if (env.DB_MIGRATE_ON_START) await migrateWithLock(env.DATABASE_DIRECT_URL || env.DATABASE_URL, say);

    const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(), createHttpAdapter(), {
      ...HTTP_APP_OPTIONS,
      bufferLogs: true,
    });
    app.useLogger(withQuietStartup(app.get(Logger)));
    configureApp(app);
    // SIGTERM / SIGINT: stop accepting, finish requests in flight (at most SHUTDOWN_TIMEOUT_MS),
    // close the pool, then stop the embedded database (Nest's own shutdown hooks would not reach
    // that last step).
    let closing = false;
    const shutdown = (signal: NodeJS.Signals) => {
      if (closing) return;
      closing = true;
      say(`${signal}: shutting down`);
      // whatever still hangs (a frozen database) does not keep the process past the deadline
      setTimeout(() => {
        process.stderr.write('shutdown deadline passed: exiting\n');
        process.exit(1);
      }, env.SHUTDOWN_TIMEOUT_MS + HARD_EXIT_AFTER_DEADLINE_MS).unref();
      drainHttpServer(app.getHttpServer(), {
        graceMs: env.SHUTDOWN_TIMEOUT_MS,
        onDeadline: () => {
          const cut = cutDatabaseConnections((app.get(DataSource).driver as { master?: unknown }).master);
          say(`shutdown deadline: ${cut} database connection(s) cut, their transactions roll back`);
        },
      })
        .then(() => app.close())
        .then(stopEmbedded)
        .then(() => process.exit(0))
        .catch((error: unknown) => {
          process.stderr.write(`shutdown failed: ${String(error)}\n`);
          process.exit(1);
        });
    };
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);

    configureHttpServer(app.getHttpServer(), {
      requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: env.KEEP_ALIVE_TIMEOUT_MS,
    });
    try {
      await app.listen(env.PORT, env.HOST);
    } catch (error) {
      await app.close().catch(() => undefined);
      throw portInUse(error, env) ?? error;
    }
    const url = `http://localhost:${env.PORT}`;
    say(`listening on ${env.HOST}:${env.PORT}; API docs at ${url}/docs`);
    const metricsPort = app.get(MetricsServer).port;
    if (metricsPort !== undefined) say(`metrics at http://${env.HOST}:${metricsPort}/metrics`);
    if (!env.ADMIN_TOKEN) {
      // the walk-through starts with the admin API: say why it answers 404 rather than let it look broken
      say(
        'the admin API (/api/admin/v1) is off: ADMIN_TOKEN is not set; to turn it on, start with ' +
          'ADMIN_TOKEN=<at least 32 characters, e.g. from openssl rand -hex 32> (or set it in .env)',
      );
    }
    if (env.EMBEDDED_DATABASE) await seedDemoProject(app, url);
  } catch (error) {
    await stopEmbedded();
    throw error;
  }
}

bootstrap().catch((error: unknown) => {
  // whatever was thrown (a library may reject with a non-Error, even undefined): never a bare "undefined"
  const message =
    error instanceof Error
      ? error.message
      : error === undefined || error === null
        ? 'an unknown error (nothing was reported)'
        : (JSON.stringify(error) ?? String(error));
  process.stderr.write(`Start-up failed: ${message}\n`);
  process.exit(1);
});
