import { NestExpressApplication } from '@nestjs/platform-express';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { Clock } from '../src/common/clock';
import { HoldExpiryScheduler } from '../src/entitlements/hold-expiry.scheduler';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog, clockSetter } from './support/catalog';

const P = '/api/private/v1';
const DAY = 86_400_000;

/**
 * Usage holds under concurrency, on two application instances sharing one database
 * (docs/entitlements.md#holds): holds alone and mixed with consumes never take more than the
 * buckets allow, a commit racing the expiry is recorded or refused (never both), a commit racing a
 * release has one winner, and the expiry scheduler of every replica announces each hold once.
 */
describe('usage holds across two replicas', () => {
  let t: TestApp;
  let a: TestProject;
  let replica: NestExpressApplication;
  let one: TestAgent;
  let two: TestAgent;
  let setup: ReturnType<typeof catalog>;
  let seq = 0;
  const A = () => bearer(a.privateKey);

  beforeAll(async () => {
    t = await createTestApp({ EVENTS_SCHEDULER_ENABLED: 'false' });
    a = await t.createProject();
    replica = await t.startReplica();
    one = t.http;
    two = request(replica.getHttpServer());
    setup = catalog(t, 'hc');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  /** A customer holding a plan of `limit` of a new metered feature since yesterday. */
  async function limited(limit: number) {
    const f = await setup.feature(A());
    const p = await setup.plan(A(), 'tier', [{ featureId: f.id, limit, resetInterval: 'P1M' }]);
    const c = await setup.customer(A());
    await setup.windowOf(a.id, {
      customerId: c.id,
      planId: p.id,
      group: 'tier',
      validFrom: new Date(Date.now() - DAY).toISOString(),
    });
    return { f, c };
  }
  const agent = (i: number) => (i % 2 === 0 ? one : two);
  const hold = (i: number, body: Record<string, unknown>) =>
    agent(i)
      .post(`${P}/usage/holds`)
      .set(A())
      .send({ holdId: `hc-${++seq}`, ...body });
  const balance = async (customerId: number, featureId: number) =>
    (await one.post(`${P}/entitlements/check`).set(A()).send({ customerId, featureId })).body.data.balance;
  const expiredEvents = async (customerId: number) =>
    (await one.get(`${P}/events?type=usage.hold_expired&customerId=${customerId}&limit=100`).set(A())).body
      .data.data as any[];

  it('N concurrent holds of 1 against a limit L: exactly L succeed, across replicas', async () => {
    const L = 17;
    const { f, c } = await limited(L);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => hold(i, { customerId: c.id, featureId: f.id, amount: 1 })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(L);
    expect(statuses.filter((s) => s === 409)).toHaveLength(50 - L);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('QUOTA_EXCEEDED');
    expect(await balance(c.id, f.id)).toEqual({ limit: L, used: 0, held: L, remaining: 0, overage: 0 });
  });

  it('holds and consumes mixed never exceed L used plus held, across replicas', async () => {
    const L = 20;
    const { f, c } = await limited(L);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        i % 3 === 0
          ? agent(i)
              .post(`${P}/usage`)
              .set(A())
              .send({ customerId: c.id, featureId: f.id, amount: 1, eventId: `hcu-${++seq}` })
          : hold(i, { customerId: c.id, featureId: f.id, amount: i % 2 === 0 ? 1 : 2 }),
      ),
    );
    const taken = results.reduce((sum, r, i) => {
      if (r.status !== 201) {
        expect(r.body.error.code).toBe('QUOTA_EXCEEDED');
        return sum;
      }
      return sum + (i % 3 === 0 ? 1 : i % 2 === 0 ? 1 : 2);
    }, 0);
    const now = await balance(c.id, f.id);
    expect(now.used + now.held).toBe(taken);
    expect(taken).toBeLessThanOrEqual(L);
    // every place that could be taken was: what is left is less than the largest amount asked
    expect(L - taken).toBeLessThan(2);
    // committing all the holds at once on both replicas keeps it so
    const held = results.filter((r, i) => i % 3 !== 0 && r.status === 201).map((r) => r.body.data.hold.id);
    const commits = await Promise.all(
      held.map((id, i) => agent(i).post(`${P}/usage/holds/${id}/commit`).set(A()).send({})),
    );
    expect(commits.map((r) => r.status)).toEqual(held.map(() => 201));
    expect(await balance(c.id, f.id)).toMatchObject({
      used: taken,
      held: 0,
      remaining: L - taken,
      overage: 0,
    });
  });

  it('a commit racing the expiry is either recorded or 410 HOLD_EXPIRED, never both', async () => {
    const { f, c } = await limited(1000);
    const start = new Date();
    const setBoth = (at: Date) => {
      clockSetter(t.app.get(Clock))(at);
      clockSetter(replica.get(Clock))(at);
    };
    setBoth(start);
    const holds = [];
    for (let i = 0; i < 24; i++)
      holds.push(
        (await hold(i, { customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT10S' })).body.data.hold,
      );
    const expiry = new Date(start.getTime() + 10_000);
    // the commits' instant just before the expiry (odd ones) or at it (even ones); the other
    // replica's scheduler runs at the expiry, again and again, meanwhile
    clockSetter(t.app.get(Clock))(new Date(expiry.getTime() - 1));
    clockSetter(replica.get(Clock))(expiry);
    const scheduler = replica.get(HoldExpiryScheduler);
    const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // the sweeps start once a few commits have answered, and run while the rest are decided: some
    // commits come first, some after, some at once
    let answered = 0;
    let sweeping = true;
    const sweeps = (async () => {
      while (answered < 4) await pause(2);
      while (sweeping) await Promise.all([scheduler.runOnce(expiry), scheduler.runOnce(expiry)]);
    })();
    const commits = await Promise.all(
      holds.map(async (h, i) => {
        await pause((i * 150) / holds.length);
        // the late ones on the replica, whose clock is at the expiry
        const res = await (i % 2 === 0 ? two : one).post(`${P}/usage/holds/${h.id}/commit`).set(A()).send({});
        answered++;
        return res;
      }),
    );
    sweeping = false;
    await sweeps;
    await scheduler.runOnce(expiry);
    const told = new Set((await expiredEvents(c.id)).map((e) => e.data.hold.id));
    const records: any[] = await t.dataSource.query(
      `SELECT event_id FROM usage_records WHERE customer_id = $1`,
      [c.id],
    );
    const recorded = new Set(records.map((r) => r.event_id));
    for (const [i, h] of holds.entries()) {
      const res = commits[i];
      expect([201, 410]).toContain(res.status);
      if (i % 2 === 0) expect(res.status).toBe(410);
      const wasRecorded = recorded.has(h.holdId);
      expect([h.id, res.status === 201]).toEqual([h.id, wasRecorded]);
      // exactly one of the two: a record, or the expiry's event
      expect([h.id, wasRecorded !== told.has(h.id)]).toEqual([h.id, true]);
    }
    const events = await expiredEvents(c.id);
    expect(events.length).toBe(told.size);
    // both outcomes happened
    const early = commits.filter((_, k) => k % 2 === 1).map((r) => r.status);
    expect(early).toContain(201);
    expect(early).toContain(410);
  });

  it('a commit racing a release: exactly one of them wins', async () => {
    const { f, c } = await limited(1000);
    const holds = [];
    for (let i = 0; i < 20; i++)
      holds.push((await hold(i, { customerId: c.id, featureId: f.id, amount: 1 })).body.data.hold);
    const outcomes = await Promise.all(
      holds.map((h, i) =>
        Promise.all([
          agent(i).post(`${P}/usage/holds/${h.id}/commit`).set(A()).send({}),
          agent(i + 1)
            .post(`${P}/usage/holds/${h.id}/release`)
            .set(A()),
        ]),
      ),
    );
    for (const [committed, released] of outcomes) {
      const commitWon = committed.status === 201;
      const releaseWon = released.status === 200 && released.body.data.hold.status === 'released';
      expect(commitWon !== releaseWon).toBe(true);
      const loser = commitWon ? released : committed;
      expect([loser.status, loser.body.error.code]).toEqual([409, 'HOLD_FINALIZED']);
    }
    const recorded = Number(
      (await t.dataSource.query(`SELECT count(*) AS n FROM usage_records WHERE customer_id = $1`, [c.id]))[0]
        .n,
    );
    expect(recorded).toBe(outcomes.filter(([x]) => x.status === 201).length);
    expect(await balance(c.id, f.id)).toMatchObject({ used: recorded, held: 0 });
  });

  it("with their timers, every replica's scheduler: each expired hold is announced once, within 5 s of its expiresAt", async () => {
    const { f, c } = await limited(1000);
    // two more instances with their schedulers' timers on (closed with the others after the file)
    for (let i = 0; i < 2; i++)
      await t.startReplica({ EVENTS_SCHEDULER_ENABLED: 'true', EVENTS_SCHEDULER_INTERVAL_MS: '200' });
    const holds = [];
    for (let i = 0; i < 12; i++)
      holds.push(
        (await hold(i, { customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' })).body.data.hold,
      );
    const last = Math.max(...holds.map((h) => Date.parse(h.expiresAt)));
    let events: any[] = [];
    while (Date.now() < last + 5000) {
      events = await expiredEvents(c.id);
      if (events.length >= holds.length) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await new Promise((resolve) => setTimeout(resolve, 600)); // a duplicate would have come by now
    events = await expiredEvents(c.id);
    expect(events.map((e) => e.data.hold.id).sort((x, y) => x - y)).toEqual(holds.map((h) => h.id));
    for (const e of events) {
      const hold = holds.find((h) => h.id === e.data.hold.id);
      expect(Date.parse(e.createdAt) - Date.parse(hold.expiresAt)).toBeLessThan(5000);
      expect(e.data.hold).toMatchObject({ status: 'expired', endedAt: hold.expiresAt });
    }
  });
});
