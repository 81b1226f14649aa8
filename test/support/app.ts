import { randomBytes } from 'node:crypto';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import { configureApp, createHttpAdapter } from '../../src/configure-app';
import { createTestDatabase } from './database';

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
  databaseUrl: string;
  /** The environment the application was started with (a child process of the same service needs its SECRET_ENCRYPTION_KEY). */
  env: Readonly<Record<string, string>>;
  /** A project with one private and one public key, made through the admin interface. */
  createProject(settings?: {
    name?: string;
    autoCreateCustomerAtRedemption?: boolean;
    requireSignature?: boolean;
  }): Promise<TestProject>;
  /** Another application instance on the same database (a second replica), with settings of its own if given. */
  startReplica(extraEnv?: Record<string, string>): Promise<NestExpressApplication>;
  close(): Promise<void>;
}

/** Boots the application with exactly `env` as its environment (`process.env` is neither read nor written). */
async function startApp(env: Record<string, string>): Promise<NestExpressApplication> {
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot({ env })] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>(createHttpAdapter(), {
    bodyParser: false,
    logger: false,
  });
  configureApp(app);
  await app.init();
  return app;
}

/** Boots the real application on a database of its own; once per test file. */
export async function createTestApp(
  extraEnv: Record<string, string> | ((databaseUrl: string) => Record<string, string>) = {},
): Promise<TestApp> {
  const db = await createTestDatabase();
  if (typeof extraEnv === 'function') extraEnv = extraEnv(db.url);
  const env = {
    DATABASE_URL: db.url,
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
    async startReplica(replicaEnv = {}) {
      const replica = await startApp({ ...env, ...replicaEnv });
      replicas.push(replica);
      return replica;
    },
    async close() {
      for (const r of replicas) await r.close();
      await app.close();
      await db.drop();
    },
  };
}

/** `Authorization` header of a private key. */
export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
