import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError, ISO_MS } from './support/expect';
import { eventually, Received, sleep, WebhookReceiver } from './support/webhook-receiver';

/**
 * Events and webhooks (docs/events.md) through HTTP, on real PostgreSQL, delivered to a real HTTP
 * receiver on loopback (WEBHOOK_ALLOW_INSECURE_URLS=true), with a short retry schedule.
 */
describe('events and webhooks', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let n = 0;
  const path = (name: string) => `/${name}-${++n}`;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await createTestApp({
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,2500ms,5s',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      EVENTS_SCHEDULER_INTERVAL_MS: '200',
      WEBHOOK_TIMEOUT_MS: '3000',
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
  });

  const api = (p: TestProject) => ({
    get: (url: string) => t.http.get(`/api/private/v1${url}`).set(bearer(p.privateKey)),
    post: (url: string, body?: object) =>
      t.http
        .post(`/api/private/v1${url}`)
        .set(bearer(p.privateKey))
        .send(body ?? {}),
    patch: (url: string, body: object) =>
      t.http.patch(`/api/private/v1${url}`).set(bearer(p.privateKey)).send(body),
    delete: (url: string) => t.http.delete(`/api/private/v1${url}`).set(bearer(p.privateKey)),
  });

  async function endpoint(p: TestProject, at: string, eventTypes?: string[]) {
    const res = await api(p)
      .post('/webhook-endpoints', { url: receiver.url(at), eventTypes })
      .expect(201);
    return res.body.data as { id: string; secret: string };
  }

  async function plan(p: TestProject, value: number, group = 'tier') {
    const slug = `p${++n}`;
    const res = await api(p)
      .post('/plans', { slug, name: `Plan ${slug}`, value, group })
      .expect(201);
    return res.body.data as { id: number; name: string };
  }

  const code = async (p: TestProject, planId: number, duration: string | null) =>
    (await api(p).post('/codes', { planId, duration, count: 1 }).expect(201)).body.data.codes[0] as string;

  const byType = (list: Received[], type: string) => list.filter((r) => r.body.type === type);

  describe('endpoints', () => {
    it('creates an endpoint with a whsec_ secret shown once, lists, reads, changes and deletes it', async () => {
      const p = await t.createProject();
      const created = await api(p)
        .post('/webhook-endpoints', {
          url: receiver.url('/x'),
          eventTypes: ['code.revoked'],
          description: 'ops',
        })
        .expect(201);
      const ep = created.body.data;
      expect(ep).toEqual({
        id: expect.stringMatching(/^we_[a-z2-7]{24}$/),
        url: receiver.url('/x'),
        description: 'ops',
        eventTypes: ['code.revoked'],
        enabled: true,
        disabledReason: null,
        failingSince: null,
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
      });
      expect(Buffer.from(ep.secret.slice(6), 'base64')).toHaveLength(24);
      // stored encrypted, never in clear
      const [row] = await t.dataSource.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [ep.id]);
      expect(row.secret).not.toContain(ep.secret.slice(6));

      const read = (await api(p).get(`/webhook-endpoints/${ep.id}`).expect(200)).body.data;
      expect(read).not.toHaveProperty('secret');
      const list = (await api(p).get('/webhook-endpoints').expect(200)).body.data;
      expect(list).toMatchObject({ total: 1, page: 1, pageSize: 10, totalPages: 1 });
      expect(list.data[0].id).toBe(ep.id);

      const changed = await api(p)
        .patch(`/webhook-endpoints/${ep.id}`, { eventTypes: [], enabled: false })
        .expect(200);
      expect(changed.body.data).toMatchObject({
        eventTypes: [],
        enabled: false,
        disabledReason: expect.any(String),
      });
      const again = await api(p).patch(`/webhook-endpoints/${ep.id}`, { enabled: true }).expect(200);
      expect(again.body.data).toMatchObject({ enabled: true, disabledReason: null });

      await api(p).delete(`/webhook-endpoints/${ep.id}`).expect(200);
      expectError(await api(p).get(`/webhook-endpoints/${ep.id}`), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND');
    });

    it('refuses bad input with a 400 naming the field', async () => {
      const p = await t.createProject();
      const long = await api(p).post('/webhook-endpoints', {
        url: `https://example.com/${'a'.repeat(2030)}`,
      });
      expectError(long, 400, 'VALIDATION_FAILED');
      expect(long.body.error.details).toEqual(
        expect.arrayContaining([expect.objectContaining({ field: 'url' })]),
      );

      const unknown = await api(p).post('/webhook-endpoints', {
        url: receiver.url('/y'),
        eventTypes: ['code.eaten'],
      });
      expectError(unknown, 400, 'VALIDATION_FAILED');
      expect(unknown.body.error.details[0].field).toMatch(/^eventTypes/);
      const test = await api(p).post('/webhook-endpoints', {
        url: receiver.url('/y'),
        eventTypes: ['webhook.test'],
      });
      expectError(test, 400, 'VALIDATION_FAILED');

      const ep = await endpoint(p, '/y');
      const empty = await api(p).patch(`/webhook-endpoints/${ep.id}`, {});
      expectError(empty, 400, 'VALIDATION_FAILED');
      expect(empty.body.error.details).toEqual([expect.objectContaining({ field: 'body' })]);
      const nullUrl = await api(p).patch(`/webhook-endpoints/${ep.id}`, { url: null });
      expectError(nullUrl, 400, 'VALIDATION_FAILED');
      expect(nullUrl.body.error.details[0].field).toBe('url');

      expectError(await api(p).get('/events?limit=101'), 400, 'VALIDATION_FAILED');
      expectError(await api(p).get('/events?type=nope'), 400, 'VALIDATION_FAILED');
      const cursor = await api(p).get('/events?cursor=bm9wZQ');
      expectError(cursor, 400, 'VALIDATION_FAILED');
      expect(cursor.body.error.details[0].field).toBe('cursor');
    });

    it('refuses unsafe URLs when the insecure switch is off, a hostname resolving to loopback included', async () => {
      const secure = await t.startReplica({
        WEBHOOK_ALLOW_INSECURE_URLS: 'false',
        WEBHOOK_WORKER_ENABLED: 'false',
        EVENTS_SCHEDULER_ENABLED: 'false',
      });
      try {
        const p = await t.createProject();
        const create = (url: string) =>
          request(secure.getHttpServer())
            .post('/api/private/v1/webhook-endpoints')
            .set(bearer(p.privateKey))
            .send({ url });
        for (const url of [
          'http://93.184.216.34/hook', // not https
          'https://127.0.0.1/hook', // loopback
          'https://localhost/hook', // a name resolving to loopback
          'https://[::1]/hook',
          'https://0.0.0.0/hook', // unspecified
          'https://10.0.0.8/hook', // private
          'https://172.20.1.1/hook',
          'https://192.168.0.10/hook',
          'https://100.64.1.1/hook', // shared address space
          'https://169.254.169.254/latest/meta-data', // link-local, cloud metadata
          'https://100.100.100.200/', // Alibaba metadata
          'https://[fd00:ec2::254]/', // AWS metadata over IPv6
          'https://[fe80::1]/',
          'https://[fc00::1]/',
          'https://[::ffff:127.0.0.1]/', // IPv4-mapped
          'https://[::ffff:a9fe:a9fe]/',
          'https://no-such-host.invalid/hook', // does not resolve
        ]) {
          const res = await create(url);
          expectError(res, 400, 'VALIDATION_FAILED');
          expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'url' })]);
        }
        // a public address literal passes (no DNS needed)
        const ok = await create('https://93.184.216.34/hook');
        expect(ok.status).toBe(201);
        // and a change to an unsafe URL is refused too
        const patched = await request(secure.getHttpServer())
          .patch(`/api/private/v1/webhook-endpoints/${ok.body.data.id}`)
          .set(bearer(p.privateKey))
          .send({ url: 'https://127.0.0.1/x' });
        expectError(patched, 400, 'VALIDATION_FAILED');
      } finally {
        await secure.close();
      }
    });

    it('test sends a webhook.test event now and answers what the receiver said', async () => {
      const p = await t.createProject();
      const at = path('test');
      receiver.respond(at, (i) => (i === 1 ? 200 : 503));
      const ep = await endpoint(p, at);
      const ok = (await api(p).post(`/webhook-endpoints/${ep.id}/test`).expect(200)).body.data;
      expect(ok).toEqual({ delivered: true, status: 200, error: null, durationMs: expect.any(Number) });
      const [got] = receiver.at(at);
      expect(got.body.type).toBe('webhook.test');
      expect(() =>
        new Webhook(ep.secret).verify(got.raw, got.headers as Record<string, string>),
      ).not.toThrow();
      const bad = (await api(p).post(`/webhook-endpoints/${ep.id}/test`).expect(200)).body.data;
      expect(bad).toMatchObject({ delivered: false, status: 503 });
      // not stored
      expect((await api(p).get('/events').expect(200)).body.data.data).toEqual([]);
    });
  });

  describe('delivery', () => {
    it('delivers every event type of a write with the right data, signed as Standard Webhooks v1', async () => {
      const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
      const at = path('all');
      const ep = await endpoint(p, at);
      const free = await plan(p, 0);
      const pro = await plan(p, 20);

      const created = (await api(p).post('/customers', { username: 'ada_lovelace' }).expect(201)).body.data;
      await api(p).patch(`/customers/${created.id}`, { enabled: false }).expect(200);
      const raw = await code(p, pro.id, 'P30D');
      const redeemed = (
        await api(p)
          .post('/redemptions', { code: raw, customer: { type: 'username', value: 'ada_lovelace' } })
          .expect(200)
      ).body.data;
      const revocable = await code(p, pro.id, 'P30D');
      const revokedId = (await api(p).get('/codes?status=available').expect(200)).body.data.data[0].id;
      await api(p).post(`/codes/${revokedId}/revoke`).expect(200);
      await api(p).delete(`/customers/${created.id}`).expect(200);
      expect(revocable).toBeDefined();

      const expected = [
        'customer.created',
        'subscriptions.changed',
        'customer.updated',
        'subscriptions.changed',
        'subscription.ended',
        'code.redeemed',
        'code.revoked',
        'customer.deleted',
      ];
      const got = await eventually('every event', () =>
        receiver.at(at).length >= expected.length ? receiver.at(at) : null,
      );
      await sleep(300);
      expect(receiver.at(at)).toHaveLength(expected.length);
      expect(got.map((r) => r.body.type).sort()).toEqual([...expected].sort());

      const wh = new Webhook(ep.secret);
      for (const r of got) {
        // the library checks the signature (with the secret's bytes) and the timestamp
        expect(wh.verify(r.raw, r.headers as Record<string, string>)).toEqual(r.body);
        expect(r.headers['webhook-id']).toMatch(/^evt_[a-z2-7]{24}$/);
        expect(Object.keys(r.body).sort()).toEqual(['data', 'timestamp', 'type']);
        const stored = (await api(p).get(`/events/${r.headers['webhook-id']}`).expect(200)).body.data;
        expect(stored).toEqual({
          id: r.headers['webhook-id'],
          type: r.body.type,
          createdAt: r.body.timestamp,
          projectId: p.id,
          data: r.body.data,
        });
      }

      const customer = { id: created.id, username: 'ada_lovelace' };
      const one = (type: string) => byType(got, type).map((r) => r.body.data);
      expect(one('customer.created')[0]).toEqual({
        customer: expect.objectContaining({
          id: created.id,
          username: 'ada_lovelace',
          projectId: p.id,
          enabled: true,
        }),
        customerSeq: expect.any(Number),
      });
      expect(one('customer.created')[0].customer.identifiers).toEqual([
        expect.objectContaining({ type: 'username', value: 'ada_lovelace' }),
      ]);
      expect(one('customer.updated')[0].customer).toMatchObject({ id: created.id, enabled: false });
      expect(one('customer.deleted')[0].customer).toMatchObject({ id: created.id, username: 'ada_lovelace' });

      const [signup, grant] = one('subscriptions.changed').sort((a, b) => a.customerSeq - b.customerSeq);
      const freeWindow = signup.created[0];
      expect(signup).toEqual({
        customer,
        source: 'signup',
        codeId: null,
        created: [
          {
            id: expect.any(Number),
            planId: free.id,
            planName: free.name,
            group: 'tier',
            validFrom: expect.stringMatching(ISO_MS),
            validTo: null,
            status: 'active',
            source: 'signup',
            codeId: null,
            trial: false,
          },
        ],
        ended: [],
        cancelled: [],
        moved: [],
        customerSeq: expect.any(Number),
      });
      const codeId = one('code.redeemed')[0].code.id;
      // the free tail in effect ends now and is re-created after the Pro window
      expect(grant).toMatchObject({ customer, source: 'code', codeId, cancelled: [], moved: [] });
      expect(grant.created.map((w: any) => [w.planId, w.source])).toEqual([
        [pro.id, 'code'],
        [free.id, 'signup'],
      ]);
      expect(grant.created.map((w: any) => w.id)).toEqual(redeemed.subscriptions.map((s: any) => s.id));
      expect(grant.ended).toEqual([
        { ...freeWindow, validTo: expect.stringMatching(ISO_MS), status: 'active' },
      ]);
      expect(one('subscription.ended')[0]).toEqual({
        customer,
        window: grant.ended[0],
        reason: 'replaced',
        customerSeq: expect.any(Number),
      });
      expect(one('code.redeemed')[0]).toEqual({
        code: expect.objectContaining({
          status: 'redeemed',
          redeemedByCustomerId: created.id,
          planId: pro.id,
        }),
        customer,
        customerSeq: expect.any(Number),
      });
      expect(one('code.revoked')[0]).toEqual({
        code: expect.objectContaining({ id: revokedId, status: 'revoked' }),
      });

      // customerSeq grows with each event of the customer, in the order of the writes
      const seqs = got
        .filter((r) => r.body.type !== 'code.revoked')
        .map((r) => r.body.data.customerSeq)
        .sort((a, b) => a - b);
      expect(seqs).toEqual([1, 2, 3, 4, 5, 6, 7]);
      const bySeq = got
        .filter((r) => r.body.type !== 'code.revoked')
        .sort((a, b) => a.body.data.customerSeq - b.body.data.customerSeq)
        .map((r) => r.body.type);
      expect(bySeq[0]).toBe('customer.created');
      expect(bySeq[2]).toBe('customer.updated');
      expect(bySeq[6]).toBe('customer.deleted');

      // every delivery is recorded as delivered, with its attempt
      const deliveries = (await api(p).get(`/events/${got[0].headers['webhook-id']}/deliveries`).expect(200))
        .body.data;
      expect(deliveries).toEqual([
        {
          id: expect.any(Number),
          endpointId: ep.id,
          status: 'delivered',
          nextAttemptAt: null,
          createdAt: expect.stringMatching(ISO_MS),
          attempts: [
            {
              attemptedAt: expect.stringMatching(ISO_MS),
              outcome: 'delivered',
              statusCode: 200,
              error: null,
              durationMs: expect.any(Number),
            },
          ],
        },
      ]);
    });

    it('announces a window created to start later when it starts, and windows when they expire', async () => {
      const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
      const at = path('time');
      await endpoint(p, at, ['subscription.started', 'subscription.ended']);
      const high = await plan(p, 30);
      const low = await plan(p, 10);
      const c = (await api(p).post('/customers', { username: 'time_user' }).expect(201)).body.data;
      const ref = { type: 'username', value: 'time_user' };
      await api(p)
        .post('/subscriptions/activate', { customer: ref, planId: high.id, duration: 'PT2S' })
        .expect(200);
      const later = (
        await api(p)
          .post('/subscriptions/activate', { customer: ref, planId: low.id, duration: 'PT2S' })
          .expect(200)
      ).body.data.subscriptions[0];
      expect(Date.parse(later.validFrom)).toBeGreaterThan(Date.now() - 1000);

      const got = await eventually(
        'start and two ends',
        () => (receiver.at(at).length >= 3 ? receiver.at(at) : null),
        15_000,
      );
      await sleep(500);
      expect(receiver.at(at)).toHaveLength(3);
      const started = byType(got, 'subscription.started').map((r) => r.body.data);
      expect(started).toEqual([
        {
          customer: { id: c.id, username: 'time_user' },
          window: expect.objectContaining({
            id: later.id,
            planId: low.id,
            validFrom: later.validFrom,
            status: 'active',
            source: 'activation',
          }),
          customerSeq: expect.any(Number),
        },
      ]);
      const ended = byType(got, 'subscription.ended').map((r) => r.body.data);
      expect(ended.map((d) => [d.window.planId, d.reason])).toEqual(
        expect.arrayContaining([
          [high.id, 'expired'],
          [low.id, 'expired'],
        ]),
      );
      // within 5 seconds of the boundary
      const startedAt = byType(got, 'subscription.started')[0].at;
      expect(startedAt - Date.parse(later.validFrom)).toBeLessThan(5000);
      // the immediate window got no subscription.started
      const events = (await api(p).get(`/events?customerId=${c.id}&type=subscription.started`).expect(200))
        .body.data.data;
      expect(events).toHaveLength(1);
    });

    it('retries a receiver answering 500 twice then 200: three attempts, growing delays, one webhook-id', async () => {
      const p = await t.createProject();
      const at = path('flaky');
      receiver.respond(at, (i) => (i <= 2 ? 500 : 200));
      await endpoint(p, at);
      await api(p).post('/customers', { username: 'flaky_user' }).expect(201);
      const got = await eventually(
        'three attempts',
        () => (receiver.at(at).length >= 3 ? receiver.at(at) : null),
        20_000,
      );
      await sleep(1500);
      expect(receiver.at(at)).toHaveLength(3);
      expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
      const first = got[1].at - got[0].at;
      const second = got[2].at - got[1].at;
      expect(first).toBeGreaterThanOrEqual(900); // 1 s - 10 %
      expect(second).toBeGreaterThan(first);
      const id = got[0].headers['webhook-id'];
      const [delivery] = (await api(p).get(`/events/${id}/deliveries`).expect(200)).body.data;
      expect(delivery.status).toBe('delivered');
      expect(delivery.attempts.map((a: any) => [a.outcome, a.statusCode])).toEqual([
        ['failed', 500],
        ['failed', 500],
        ['delivered', 200],
      ]);
    });

    it('honours Retry-After and does not follow redirects', async () => {
      const p = await t.createProject();
      const at = path('redirect');
      receiver.respond(at, (i) =>
        i === 1
          ? { status: 302, headers: { location: receiver.url('/elsewhere'), 'retry-after': '3' } }
          : 200,
      );
      await endpoint(p, at);
      await api(p).post('/customers', { username: 'redir_user' }).expect(201);
      const got = await eventually(
        'the retry',
        () => (receiver.at(at).length >= 2 ? receiver.at(at) : null),
        15_000,
      );
      expect(receiver.at('/elsewhere')).toHaveLength(0);
      expect(got[1].at - got[0].at).toBeGreaterThanOrEqual(2900);
      const [delivery] = (await api(p).get(`/events/${got[0].headers['webhook-id']}/deliveries`).expect(200))
        .body.data;
      expect(delivery.attempts[0]).toMatchObject({
        outcome: 'failed',
        statusCode: 302,
        error: expect.stringMatching(/redirect/),
      });
    });

    it('410 Gone disables the endpoint at once, with the reason readable; its pending deliveries stop', async () => {
      const p = await t.createProject();
      const at = path('gone');
      receiver.respond(at, () => 410);
      const ep = await endpoint(p, at);
      await api(p).post('/customers', { username: 'gone_user' }).expect(201);
      const read = await eventually('the endpoint disabled', async () => {
        const data = (await api(p).get(`/webhook-endpoints/${ep.id}`).expect(200)).body.data;
        return data.enabled ? null : data;
      });
      expect(read.disabledReason).toMatch(/410/);
      await api(p)
        .patch(`/customers/${(await api(p).get('/customers').expect(200)).body.data.data[0].id}`, {
          enabled: false,
        })
        .expect(200);
      await sleep(800);
      expect(receiver.at(at)).toHaveLength(1);
      // redelivery to a disabled endpoint named in the body is refused
      const event = (await api(p).get('/events?limit=1').expect(200)).body.data.data[0];
      expectError(
        await api(p).post(`/events/${event.id}/redeliver`, { endpointId: ep.id }),
        409,
        'WEBHOOK_ENDPOINT_DISABLED',
      );
    });

    it('an endpoint failing every attempt for 5 days is disabled, with the reason readable', async () => {
      const p = await t.createProject();
      const at = path('failing');
      receiver.respond(at, () => 500);
      const ep = await endpoint(p, at);
      await api(p).post('/customers', { username: 'failing_u1' }).expect(201);
      await eventually('a failure', async () => {
        const data = (await api(p).get(`/webhook-endpoints/${ep.id}`).expect(200)).body.data;
        return data.failingSince;
      });
      expect((await api(p).get(`/webhook-endpoints/${ep.id}`).expect(200)).body.data.enabled).toBe(true);
      // as if the first failure had been 5 days ago
      await t.dataSource.query(
        `UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`,
        [ep.id],
      );
      const read = await eventually('the endpoint disabled', async () => {
        const data = (await api(p).get(`/webhook-endpoints/${ep.id}`).expect(200)).body.data;
        return data.enabled ? null : data;
      });
      expect(read.disabledReason).toMatch(/5 days/);
      const [row] = await t.dataSource.query(
        `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending FROM webhook_deliveries WHERE endpoint_id = $1`,
        [ep.id],
      );
      expect(row.pending).toBe(0);
    });

    it('a rolled-back redemption, and a dry run, leave no event', async () => {
      const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
      const at = path('rollback');
      await endpoint(p, at);
      const pro = await plan(p, 20);
      const count = async () =>
        (await t.dataSource.query('SELECT count(*)::int AS n FROM events WHERE project_id = $1', [p.id]))[0]
          .n as number;

      // a dry run does the whole work and rolls it back
      const dry = await api(p)
        .post('/redemptions?dryRun=true')
        .send({
          code: await code(p, pro.id, 'P30D'),
          customer: { type: 'email', value: 'dry@example.com' },
          autoCreate: true,
        });
      expect(dry.status).toBe(200);
      expect(await count()).toBe(0);

      // a redemption whose transaction fails after its events were written (a trigger refuses the
      // event insert for this customer): the 500 leaves no event, no customer, the code available
      await t.dataSource.query(`
        CREATE FUNCTION doom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.data->'customer'->>'username' = 'doomed_user' THEN RAISE EXCEPTION 'doomed'; END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER doom AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION doom();`);
      try {
        const raw = await code(p, pro.id, 'P30D');
        const failed = await api(p).post('/redemptions', {
          code: raw,
          customer: { type: 'username', value: 'doomed_user' },
          autoCreate: true,
        });
        expectError(failed, 500, 'INTERNAL_ERROR');
        expect(await count()).toBe(0);
        expect((await api(p).get('/customers?search=doomed').expect(200)).body.data.total).toBe(0);
        expect((await api(p).get('/codes?status=available').expect(200)).body.data.total).toBe(2);
      } finally {
        // dropping a partitioned table's trigger locks each partition before the table itself, the
        // reverse of every statement's order (deadlock with a concurrent insert or claim): lock the
        // table, and with it its partitions, first
        await t.dataSource.query(`
          BEGIN;
          LOCK TABLE events IN ACCESS EXCLUSIVE MODE;
          DROP TRIGGER doom ON events;
          DROP FUNCTION doom();
          COMMIT;`);
      }

      // the same call once the trigger is gone commits its events, and only those are delivered
      const ok = await api(p).post('/redemptions', {
        code: await code(p, pro.id, 'P30D'),
        customer: { type: 'username', value: 'lucky_user' },
        autoCreate: true,
      });
      expect(ok.status).toBe(200);
      expect(await count()).toBe(3); // customer.created, subscriptions.changed, code.redeemed
      await eventually('the deliveries', () => receiver.at(at).length >= 3);
      await sleep(500);
      expect(receiver.at(at).map((r) => r.body.data.customer.username ?? r.body.data.customer)).not.toContain(
        'doomed_user',
      );
      expect(receiver.at(at)).toHaveLength(3);
    });

    it('eventTypes filters hold, and a project never receives another project\u2019s events', async () => {
      const a = await t.createProject();
      const b = await t.createProject();
      const onlyCustomers = path('filter');
      const bAll = path('other');
      await endpoint(a, onlyCustomers, ['customer.updated']);
      await endpoint(b, bAll);
      const c = (await api(a).post('/customers', { username: 'filter_user' }).expect(201)).body.data;
      await api(a).patch(`/customers/${c.id}`, { enabled: false }).expect(200);
      await eventually('the update', () => receiver.at(onlyCustomers).length >= 1);
      await sleep(800);
      expect(receiver.at(onlyCustomers).map((r) => r.body.type)).toEqual(['customer.updated']);
      expect(receiver.at(bAll)).toHaveLength(0);
    });

    it('after a rotation deliveries carry signatures under both secrets, each verifiable', async () => {
      const p = await t.createProject();
      const at = path('rotate');
      const ep = await endpoint(p, at);
      const rotated = (await api(p).post(`/webhook-endpoints/${ep.id}/rotate-secret`).expect(200)).body.data;
      expect(rotated.secret).toMatch(/^whsec_/);
      expect(rotated.secret).not.toBe(ep.secret);
      expect(Date.parse(rotated.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
      await api(p).post('/customers', { username: 'rotate_user' }).expect(201);
      const [got] = await eventually('the delivery', () => (receiver.at(at).length ? receiver.at(at) : null));
      const signatures = String(got.headers['webhook-signature']).split(' ');
      expect(signatures).toHaveLength(2);
      for (const secret of [ep.secret, rotated.secret])
        expect(new Webhook(secret).verify(got.raw, got.headers as Record<string, string>)).toEqual(got.body);
      // each signature is under one secret
      const only = (sig: string) =>
        ({ ...got.headers, 'webhook-signature': sig }) as unknown as Record<string, string>;
      expect(() => new Webhook(rotated.secret).verify(got.raw, only(signatures[0]))).not.toThrow();
      expect(() => new Webhook(ep.secret).verify(got.raw, only(signatures[1]))).not.toThrow();
      expect(() => new Webhook(ep.secret).verify(got.raw, only(signatures[0]))).toThrow();
    });

    it('redelivers an event to every endpoint that wants it, or to the one named', async () => {
      const p = await t.createProject();
      const one = path('re1');
      const two = path('re2');
      const e1 = await endpoint(p, one);
      await endpoint(p, two, ['code.revoked']);
      await api(p).post('/customers', { username: 'redeliver_u' }).expect(201);
      await eventually('the first delivery', () => receiver.at(one).length >= 1);
      const event = (await api(p).get('/events?type=customer.created').expect(200)).body.data.data[0];
      expect((await api(p).post(`/events/${event.id}/redeliver`).expect(202)).body.data).toEqual({
        deliveries: 1,
      });
      expect(
        (await api(p).post(`/events/${event.id}/redeliver`, { endpointId: e1.id }).expect(202)).body.data,
      ).toEqual({
        deliveries: 1,
      });
      await eventually('two more', () => receiver.at(one).length >= 3);
      expect(receiver.at(one).every((r) => r.headers['webhook-id'] === event.id)).toBe(true);
      expect(receiver.at(two)).toHaveLength(0);
      expectError(
        await api(p).post(`/events/${event.id}/redeliver`, { endpointId: 'we_aaaaaaaaaaaaaaaaaaaaaaaa' }),
        404,
        'WEBHOOK_ENDPOINT_NOT_FOUND',
      );
    });
  });

  describe('pull API', () => {
    it('pages newest first with a cursor, filters by type and customerId', async () => {
      const p = await t.createProject();
      const c1 = (await api(p).post('/customers', { username: 'pull_user_1' }).expect(201)).body.data;
      const c2 = (await api(p).post('/customers', { username: 'pull_user_2' }).expect(201)).body.data;
      await api(p).patch(`/customers/${c1.id}`, { enabled: false }).expect(200);
      const all: any[] = [];
      let cursor: string | null = null;
      do {
        const q: string = cursor ? `/events?limit=2&cursor=${cursor}` : '/events?limit=2';
        const page: any = (await api(p).get(q).expect(200)).body.data;
        expect(page.data.length).toBeLessThanOrEqual(2);
        all.push(...page.data);
        cursor = page.nextCursor;
      } while (cursor);
      expect(all.map((e) => e.type)).toEqual(['customer.updated', 'customer.created', 'customer.created']);
      const times = all.map((e) => Date.parse(e.createdAt));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      const ofC1 = (await api(p).get(`/events?customerId=${c1.id}`).expect(200)).body.data;
      expect(ofC1.data.map((e: any) => e.type)).toEqual(['customer.updated', 'customer.created']);
      expect(ofC1.nextCursor).toBeNull();
      expect(ofC1.data.map((e: any) => e.data.customerSeq)).toEqual([2, 1]);
      const created = (await api(p).get('/events?type=customer.created').expect(200)).body.data.data;
      expect(created.map((e: any) => e.data.customer.id).sort()).toEqual([c1.id, c2.id].sort());
    });
  });

  describe('recording', () => {
    it('a lone surrogate in an identifier (stored as U+FFFD) does not break the write: 201, and the event shows U+FFFD', async () => {
      const p = await t.createProject();
      const res = await api(p)
        .post('/customers', { username: 'surrogate_u', identifiers: [{ type: 'email', value: 'a\ud800b' }] })
        .expect(201);
      const [event] = (
        await api(p).get(`/events?type=customer.created&customerId=${res.body.data.id}`).expect(200)
      ).body.data.data;
      expect(event.data.customer.identifiers).toContainEqual(
        expect.objectContaining({ type: 'email', value: 'a\ufffdb' }),
      );
    });
  });

  describe('usage.limit_reached', () => {
    it('a consume that empties a bucket records and delivers one; a later consume with overage, or one emptying it again, in the same period does not', async () => {
      const p = await t.createProject();
      const other = await t.createProject();
      const at = path('usage');
      await endpoint(p, at, ['usage.limit_reached', 'customer.updated']);
      const feature = (
        await api(p)
          .post('/features', { slug: 'calls', name: 'Calls', metered: true, unit: 'call' })
          .expect(201)
      ).body.data as { id: number; slug: string };
      const pl = (
        await api(p)
          .post('/plans', {
            slug: 'metered',
            name: 'Metered',
            value: 10,
            group: 'tier',
            quotas: [{ featureId: feature.id, limit: 10, resetInterval: 'P1M' }],
          })
          .expect(201)
      ).body.data as { id: number };
      const c = (await api(p).post('/customers', { username: 'usage_limit_u' }).expect(201)).body.data;
      await api(p)
        .post('/subscriptions/activate', { customer: { type: 'username', value: c.username }, planId: pl.id })
        .expect(200);
      const use = (eventId: string, amount: number, allowOverage = false) =>
        api(p)
          .post('/usage', { eventId, customerId: c.id, feature: 'calls', amount, allowOverage })
          .expect(201);
      await use('u1', 4);
      const pulled = async () =>
        (await api(p).get(`/events?type=usage.limit_reached&customerId=${c.id}`).expect(200)).body.data.data;
      expect(await pulled()).toHaveLength(0); // 6 remain
      const emptied = (await use('u2', 6)).body.data;
      expect(emptied.balance).toMatchObject({ limit: 10, used: 10, remaining: 0 });
      const [event] = await pulled();
      expect(event.data).toMatchObject({
        customer: { id: c.id, username: 'usage_limit_u' },
        feature: { id: feature.id, slug: 'calls' },
        bucket: {
          limit: 10,
          used: 10,
          remaining: 0,
          group: 'tier',
          planId: pl.id,
          periodStart: expect.stringMatching(ISO_MS),
        },
        customerSeq: expect.any(Number),
      });
      await eventually('the limit_reached delivery', () => receiver.at(at).length >= 1);

      const over = (await use('u3', 5, true)).body.data;
      expect(over.usage).toMatchObject({ amount: 5, overage: 5 });
      expect(await pulled()).toHaveLength(1);
      // emptied again in the same period (the 6 given back, then taken again): still the one event
      await api(p).post(`/usage/${emptied.usage.id}/reverse`).expect(200);
      const again = (await use('u4', 6)).body.data;
      expect(again.balance).toMatchObject({ limit: 10, used: 10, remaining: 0 });
      expect(await pulled()).toHaveLength(1);
      // an event recorded after the overage consume arrives: had it recorded another, that was due first
      await api(p).patch(`/customers/${c.id}`, { enabled: true }).expect(200);
      await eventually('the customer.updated delivery', () =>
        byType(receiver.at(at), 'customer.updated').length >= 1 ? true : null,
      );
      const delivered = byType(receiver.at(at), 'usage.limit_reached');
      expect(delivered).toHaveLength(1);
      expect(delivered[0].headers['webhook-id']).toBe(event.id);
      expect(delivered[0].body.data).toEqual(event.data);
      // another project's key sees none of it
      const theirs = (await api(other).get('/events?type=usage.limit_reached').expect(200)).body.data.data;
      expect(theirs).toHaveLength(0);
      expectError(await api(other).get(`/events/${event.id}`), 404, 'EVENT_NOT_FOUND');
    });
  });

  describe('tenancy', () => {
    it("another project's endpoint or event id is not found", async () => {
      const a = await t.createProject();
      const b = await t.createProject();
      const ep = await endpoint(a, path('tenancy'));
      await api(a).post('/customers', { username: 'tenant_user' }).expect(201);
      const event = (await api(a).get('/events').expect(200)).body.data.data[0];
      const B = api(b);
      expectError(await B.get(`/webhook-endpoints/${ep.id}`), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND');
      expectError(
        await B.patch(`/webhook-endpoints/${ep.id}`, { enabled: false }),
        404,
        'WEBHOOK_ENDPOINT_NOT_FOUND',
      );
      expectError(
        await B.post(`/webhook-endpoints/${ep.id}/rotate-secret`),
        404,
        'WEBHOOK_ENDPOINT_NOT_FOUND',
      );
      expectError(await B.post(`/webhook-endpoints/${ep.id}/test`), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND');
      expectError(await B.delete(`/webhook-endpoints/${ep.id}`), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND');
      expectError(await B.get(`/events/${event.id}`), 404, 'EVENT_NOT_FOUND');
      expectError(await B.get(`/events/${event.id}/deliveries`), 404, 'EVENT_NOT_FOUND');
      expectError(await B.post(`/events/${event.id}/redeliver`), 404, 'EVENT_NOT_FOUND');
      const bEp = await endpoint(b, path('tenancy-b'));
      expectError(
        await api(a).post(`/events/${event.id}/redeliver`, { endpointId: bEp.id }),
        404,
        'WEBHOOK_ENDPOINT_NOT_FOUND',
      );
      expect((await B.get('/webhook-endpoints').expect(200)).body.data.data.map((e: any) => e.id)).toEqual([
        bEp.id,
      ]);
      expect((await B.get('/events').expect(200)).body.data.data).toEqual([]);
      // still there for its own project
      await api(a).get(`/webhook-endpoints/${ep.id}`).expect(200);
    });
  });

  describe('metrics', () => {
    it('/metrics counts deliveries by outcome and shows the age of the oldest undelivered event', async () => {
      const text = (await t.http.get('/metrics').expect(200)).text;
      expect(text).toMatch(/^webhook_deliveries_total\{outcome="delivered"\} \d+/m);
      expect(text).toMatch(/^webhook_deliveries_total\{outcome="retrying"\} \d+/m);
      expect(text).toMatch(/^webhook_oldest_undelivered_event_age_seconds \d+(\.\d+)?$/m);
    });
  });
});
