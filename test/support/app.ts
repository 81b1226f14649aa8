import { randomBytes } from 'node:crypto';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import { configureApp, createHttpAdapter, HTTP_APP_OPTIONS } from '../../src/configure-app';
import { createTestDatabase } from './database';
import { PgBouncer, pgbouncerVersion, startPgBouncer } from './pgbouncer';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestProject {
  id: string;
  name: string;
  privateKey: string;
  privateKeyId: number;
  publicKey: string;
  publicKeyId: number;
  signingSecret: string;
}

export interface TestApp {
  app: NestExpressApplication;
  http: TestAgent;
  dataSource: DataSource;
  /** The database itself (not through a pooler). */
  databaseUrl: string;
  /** The application's DATABASE_URL: `databaseUrl`, or PgBouncer in front of it (`TEST_PGBOUNCER=1`). */
  appDatabaseUrl: string;
  /** The environment the application was started with (a child process of the same service needs its SECRET_ENCRYPTION_KEY). */
  env: Readonly<Record<string, string>>;
  /** A project with one private and one public key, made through the admin interface. */
  createProject(settings?: {
    name?: string;
    autoCreateCustomerAtRedemption?: boolean;
    requireSignature?: boolean;
  }): Promise<TestProject>;
  /** Another application instance on the same database (a second replica), with `env` added. */
  startReplica(env?: Record<string, string>): Promise<NestExpressApplication>;
  close(): Promise<void>;
}

/** Boots the application with exactly `env` as its environment (`process.env` is neither read nor written). */
export async function startApp(env: Record<string, string>): Promise<NestExpressApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot({ env })] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>(createHttpAdapter(), {
    ...HTTP_APP_OPTIONS,
    logger: false,
  });
  configureApp(app);
  await app.init();
  return app;
}

/** PgBouncer before 1.21 cannot keep named prepared statements in transaction mode. */
export const poolerKeepsPreparedStatements = (version: string | undefined): boolean => {
  const [major, minor] = (version ?? '0.0').split('.').map(Number);
  return major > 1 || (major === 1 && minor >= 21);
};

export interface TestAppOptions {
  /** A database of the test's own instead of a fresh clone of the migrated template. */
  database?: { url: string; drop: () => Promise<void> };
}

/**
 * Boots the real application on a database of its own; once per test file. With
 * `TEST_PGBOUNCER=1` the application reaches it through a PgBouncer in transaction mode started
 * for this file (DATABASE_URL = the pooler, DATABASE_DIRECT_URL = the database itself, prepared
 * statements off below PgBouncer 1.21), so the same suites prove the service behind a pooler.
 */
export async function createTestApp(
  extraEnv: Record<string, string> | ((databaseUrl: string) => Record<string, string>) = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const db = options.database ?? (await createTestDatabase());
  if (typeof extraEnv === 'function') extraEnv = extraEnv(db.url);
  let pooler: PgBouncer | undefined;
  if (process.env.TEST_PGBOUNCER === '1') pooler = await startPgBouncer(db.url);
  const appDatabaseUrl = pooler ? pooler.via(db.url) : db.url;
  const env = {
    DATABASE_URL: appDatabaseUrl,
    ...(pooler
      ? {
          DATABASE_DIRECT_URL: db.url,
          DB_PREPARED_STATEMENTS: String(poolerKeepsPreparedStatements(pgbouncerVersion())),
        }
      : {}),
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    ADMIN_TOKEN,
    LOG_LEVEL: 'silent',
    DB_MIGRATE_ON_START: 'false',
    BCRYPT_COST: '4',
    ...extraEnv,
  };
  const app = await startApp(env);
  const replicas: NestExpressApplication[] = [];
  const http = request(app.getHttpServer());
  let counter = 0;

  return {
    app,
    http,
    dataSource: app.get<DataSource>(getDataSourceToken()),
    databaseUrl: db.url,
    appDatabaseUrl,
    env,
    async createProject(settings = {}) {
      const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
      const name = settings.name ?? `Project ${++counter}`;
      const project = await http
        .post('/api/admin/v1/projects')
        .set(admin)
        .send({ ...settings, name })
        .expect(201);
      const id = project.body.data.id as string;
      const sk = await http
        .post(`/api/admin/v1/projects/${id}/keys`)
        .set(admin)
        .send({ kind: 'private' })
        .expect(201);
      const pk = await http
        .post(`/api/admin/v1/projects/${id}/keys`)
        .set(admin)
        .send({ kind: 'public' })
        .expect(201);
      return {
        id,
        name,
        privateKey: sk.body.data.key,
        privateKeyId: sk.body.data.id,
        publicKey: pk.body.data.key,
        publicKeyId: pk.body.data.id,
        signingSecret: pk.body.data.signingSecret,
      };
    },
    async startReplica(more = {}) {
      const replica = await startApp({ ...env, ...more });
      replicas.push(replica);
      return replica;
    },
    async close() {
      for (const r of replicas) await r.close();
      await app.close();
      await pooler?.stop();
      await db.drop();
    },
  };
}

/** `Authorization` header of a private key. */
export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
