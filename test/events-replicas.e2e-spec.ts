import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { NestExpressApplication } from '@nestjs/platform-express';
import request from 'supertest';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { freePort } from './support/ports';
import { eventually, sleep, WebhookReceiver } from './support/webhook-receiver';

/**
 * Events across replicas (docs/events.md#time-boundary-events and #delivery): each window boundary
 * gives exactly one event whatever the number of instances, boundaries passed while no scheduler
 * ran are announced at the next start (30 days back), and a delivery cut by a crash is made by
 * another instance.
 *
 * The first instance runs neither the worker nor the scheduler; each test starts the instances
 * that do.
 */
describe('events across replicas', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  // the child process of the crash test reads the endpoints' secrets with the same key
  const secretKey = randomBytes(32).toString('base64');
  const background = {
    WEBHOOK_WORKER_ENABLED: 'true',
    EVENTS_SCHEDULER_ENABLED: 'true',
  };

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await createTestApp({
      SECRET_ENCRYPTION_KEY: secretKey,
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_WORKER_ENABLED: 'false',
      EVENTS_SCHEDULER_ENABLED: 'false',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      EVENTS_SCHEDULER_INTERVAL_MS: '200',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
  });

  const api = (p: TestProject) => ({
    post: (url: string, body: object) =>
      t.http.post(`/api/private/v1${url}`).set(bearer(p.privateKey)).send(body),
  });

  async function setUp(at: string, types?: string[]) {
    const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
    await api(p)
      .post('/webhook-endpoints', { url: receiver.url(at), eventTypes: types })
      .expect(201);
    const plan = (
      await api(p).post('/plans', { slug: 'pro', name: 'Pro', value: 20, group: 'tier' }).expect(201)
    ).body.data;
    return { p, plan };
  }

  const countEvents = async (projectId: string, type: string) =>
    (
      await t.dataSource.query(`SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND type = $2`, [
        projectId,
        type,
      ])
    )[0].n as number;

  it('announces a window that ended while no scheduler ran at the next start, 30 days back at most', async () => {
    const { p, plan } = await setUp('/catch-up', ['subscription.ended']);
    const c = (await api(p).post('/customers', { username: 'sleeper_1' }).expect(201)).body.data;
    await api(p)
      .post('/subscriptions/activate', {
        customer: { type: 'username', value: 'sleeper_1' },
        planId: plan.id,
        duration: 'PT1S',
      })
      .expect(200);
    // windows that ended 10 and 35 days ago, while the service was "stopped" for 40 days
    const insert = (daysAgo: number) =>
      t.dataSource.query(
        `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, created_at)
         VALUES ($1, $2, $3, 'old', now() - make_interval(days => $4 + 1), now() - make_interval(days => $4), 'activation',
                 now() - make_interval(days => $4 + 1)) RETURNING id`,
        [p.id, c.id, plan.id, daysAgo],
      );
    const [[recent], [tooOld]] = [await insert(10), await insert(35)];
    await t.dataSource.query(`UPDATE event_schedule_cursors SET scanned_to = now() - interval '40 days'`);
    await sleep(1500);
    expect(await countEvents(p.id, 'subscription.ended')).toBe(0);

    const replica = await t.startReplica(background);
    try {
      const got = await eventually('the catch-up deliveries', () =>
        receiver.at('/catch-up').length >= 2 ? receiver.at('/catch-up') : null,
      );
      await sleep(800);
      const windows = got.map((r) => r.body.data.window.id);
      expect(windows).toHaveLength(2);
      expect(windows).toContain(recent.id);
      expect(windows).not.toContain(tooOld.id);
      expect(got.every((r) => r.body.data.reason === 'expired')).toBe(true);
    } finally {
      await replica.close();
    }
  });

  it('two instances: 20 windows ending within seconds give exactly 20 subscription.ended events, each delivered once', async () => {
    const { p, plan } = await setUp('/twenty', ['subscription.ended']);
    const replicas: NestExpressApplication[] = [];
    try {
      replicas.push(await t.startReplica(background), await t.startReplica(background));
      const windows: number[] = [];
      for (let i = 0; i < 20; i++) {
        const res = await api(p)
          .post('/subscriptions/activate', {
            customer: { type: 'username', value: `replica_user_${String(i).padStart(2, '0')}` },
            autoCreate: true,
            planId: plan.id,
            duration: 'PT3S',
          })
          .expect(200);
        windows.push(res.body.data.subscriptions[0].id);
      }
      await eventually('20 deliveries', () => receiver.at('/twenty').length >= 20, 30_000);
      await sleep(2000); // room for a duplicate to show up
      expect(await countEvents(p.id, 'subscription.ended')).toBe(20);
      const got = receiver.at('/twenty');
      expect(got).toHaveLength(20);
      expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(20);
      expect(got.map((r) => r.body.data.window.id).sort((a, b) => a - b)).toEqual(
        [...windows].sort((a, b) => a - b),
      );
      const [row] = await t.dataSource.query(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE d.status = 'delivered')::int AS delivered
           FROM webhook_deliveries d WHERE d.project_id = $1`,
        [p.id],
      );
      expect(row).toEqual({ n: 20, delivered: 20 });
      // both instances answer the pull API alike
      const page = await request(replicas[1].getHttpServer())
        .get('/api/private/v1/events?type=subscription.ended&limit=100')
        .set(bearer(p.privateKey))
        .expect(200);
      expect(page.body.data.data).toHaveLength(20);
    } finally {
      for (const r of replicas) await r.close();
    }
  });

  it('checks the URL again at each delivery: a loopback endpoint is not reached by a worker with the switch off', async () => {
    const { p } = await setUp('/recheck');
    const secure = await t.startReplica({ ...background, WEBHOOK_ALLOW_INSECURE_URLS: 'false' });
    try {
      await api(p).post('/customers', { username: 'recheck_user' }).expect(201);
      const [attempt] = await eventually('a refused attempt', async () => {
        const rows = await t.dataSource.query(
          `SELECT a.error FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.project_id = $1`,
          [p.id],
        );
        return rows.length ? rows : null;
      });
      expect(attempt.error).toMatch(/URL refused/);
      expect(receiver.at('/recheck')).toHaveLength(0);
    } finally {
      await secure.close();
    }
  });

  it('an instance killed after a redemption committed, before its delivery ended: another instance delivers it', async () => {
    const { p, plan } = await setUp('/crash', ['code.redeemed']);
    receiver.respond('/crash', (n) => (n === 1 ? 'hang' : 200));
    const raw = (await api(p).post('/codes', { planId: plan.id, duration: 'P30D', count: 1 }).expect(201))
      .body.data.codes[0];
    const port = await freePort();
    let child: ChildProcess | undefined = spawn(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', 'src/main.ts'],
      {
        cwd: resolve(__dirname, '..'),
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          DATABASE_URL: t.databaseUrl,
          SECRET_ENCRYPTION_KEY: secretKey,
          PORT: String(port),
          HOST: '127.0.0.1',
          DB_MIGRATE_ON_START: 'false',
          LOG_LEVEL: 'silent',
          WEBHOOK_ALLOW_INSECURE_URLS: 'true',
          WEBHOOK_WORKER_ENABLED: 'true',
          EVENTS_SCHEDULER_ENABLED: 'false',
          WEBHOOK_POLL_INTERVAL_MS: '100',
          WEBHOOK_TIMEOUT_MS: '2000',
        },
        stdio: 'ignore',
      },
    );
    let replica: NestExpressApplication | undefined;
    try {
      const base = `http://127.0.0.1:${port}`;
      await eventually(
        'the child to be ready',
        async () => {
          if (child!.exitCode !== null) throw new Error('the child exited during start-up');
          return (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200;
        },
        90_000,
      );
      const redeemed = await fetch(`${base}/api/private/v1/redemptions`, {
        method: 'POST',
        headers: { ...bearer(p.privateKey), 'content-type': 'application/json' },
        body: JSON.stringify({
          code: raw,
          customer: { type: 'username', value: 'crash_user' },
          autoCreate: true,
        }),
      });
      expect(redeemed.status).toBe(200);
      // the child has claimed the delivery and is posting it: kill it there
      const [first] = await eventually('the first attempt', () =>
        receiver.at('/crash').length ? receiver.at('/crash') : null,
      );
      child.kill('SIGKILL');
      await new Promise((r) => child!.once('exit', r));
      child = undefined;

      replica = await t.startReplica({ WEBHOOK_WORKER_ENABLED: 'true', EVENTS_SCHEDULER_ENABLED: 'false' });
      const again = await eventually(
        'the delivery by another instance',
        () => receiver.at('/crash')[1],
        30_000,
      );
      expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
      expect(again.body).toEqual(first.body);
      await eventually('the delivery recorded', async () => {
        const [row] = await t.dataSource.query(`SELECT status FROM webhook_deliveries WHERE event_id = $1`, [
          first.headers['webhook-id'],
        ]);
        return row?.status === 'delivered';
      });
    } finally {
      if (child) child.kill('SIGKILL');
      await replica?.close();
    }
  }, 150_000);
});
