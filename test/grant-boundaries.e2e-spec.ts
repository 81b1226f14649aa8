import { NestExpressApplication } from '@nestjs/platform-express';
import { Clock } from '../src/common/clock';
import { GrantBoundariesScheduler } from '../src/entitlements/grant-boundaries.scheduler';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog, clockSetter } from './support/catalog';
import { expectError } from './support/expect';
import { eventually, sleep } from './support/webhook-receiver';

const P = '/api/private/v1';
const SECOND = 1000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * The time-boundary events of grants and overrides (docs/events.md#time-boundary-events):
 * `grant.expired` and `override.removed` with `reason: expired`, each once across replicas, after
 * a stop caught up over the last 30 days. Grants and overrides are made through the HTTP
 * interface with the application's `Clock` set to the instant of creation; the scheduler is run
 * with `runOnce(now)`, and each test first puts the scheduler's cursor where its story starts
 * (the instant the scheduler last ran).
 */
describe('grant and override boundaries', () => {
  let t: TestApp;
  let a: TestProject;
  let clock: Clock;
  let scheduler: GrantBoundariesScheduler;
  let setup: ReturnType<typeof catalog>;
  let seq = 0;
  // each test has a day of its own, later than the previous one's
  let day = 0;
  const base = Date.now() + DAY;
  const A = () => bearer(a.privateKey);

  beforeAll(async () => {
    t = await createTestApp({ EVENTS_SCHEDULER_ENABLED: 'false' });
    a = await t.createProject();
    clock = t.app.get(Clock);
    scheduler = t.app.get(GrantBoundariesScheduler);
    setup = catalog(t, 'bound');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const setNow = (at: Date) => clockSetter(clock)(at);
  /** A fresh instant for a test, with the scheduler's cursor on it. */
  async function start(): Promise<Date> {
    const now = new Date(base + ++day * DAY);
    setNow(now);
    await cursorAt(now);
    return now;
  }
  /** Where the scheduler's previous scan ended (a stop: far behind). */
  const cursorAt = (at: Date) =>
    t.dataSource.query(`UPDATE event_schedule_cursors SET scanned_to = $1 WHERE kind = 'grants'`, [at]);
  const later = (d: Date, ms: number) => new Date(d.getTime() + ms);

  const feature = () => setup.feature(A());
  const customer = () => setup.customer(A());
  async function grant(customerId: number, body: Record<string, unknown>) {
    const res = await t.http.post(`${P}/customers/${customerId}/grants`).set(A()).send(body);
    expect(res.status).toBe(201);
    return res.body.data.grant;
  }
  async function override(customerId: number, featureId: number, body: Record<string, unknown>) {
    const res = await t.http.put(`${P}/customers/${customerId}/overrides/${featureId}`).set(A()).send(body);
    expect(res.status).toBe(200);
    return res.body.data.override;
  }
  const events = async (type: string, customerId: number) => {
    const res = await t.http.get(`${P}/events?type=${type}&customerId=${customerId}&limit=100`).set(A());
    expect(res.status).toBe(200);
    return res.body.data.data as Array<{ id: string; type: string; data: any }>;
  };
  const keyed = async (key: string) =>
    (await t.dataSource.query(`SELECT count(*)::int AS n FROM events WHERE unique_key = $1`, [key]))[0]
      .n as number;

  it('a grant reaching expiresAt: one grant.expired with the grant as the API shows it then (expired, remaining 0, forfeited what remained)', async () => {
    const now = await start();
    const f = await feature();
    const c = await customer();
    const g = await grant(c.id, { featureId: f.id, amount: 100, expiresAt: later(now, HOUR).toISOString() });
    const used = await t.http
      .post(`${P}/usage`)
      .set(A())
      .send({ eventId: `gb-${++seq}`, customerId: c.id, featureId: f.id, amount: 30 });
    expect(used.status).toBe(201);

    // not yet: a millisecond before its end
    expect(await scheduler.runOnce(later(now, HOUR - 1))).toBe(false);
    expect(await events('grant.expired', c.id)).toEqual([]);

    // the end itself is the boundary (expiresAt <= t)
    const end = later(now, HOUR);
    await scheduler.runOnce(end);
    setNow(end);
    const shown = (await t.http.get(`${P}/grants/${g.id}`).set(A()).expect(200)).body.data;
    expect(shown).toMatchObject({ status: 'expired', used: 30, remaining: 0, forfeited: 70 });
    const got = await events('grant.expired', c.id);
    expect(got).toHaveLength(1);
    expect(got[0].data).toEqual({
      customer: { id: c.id, username: c.username },
      grant: shown,
      customerSeq: expect.any(Number),
    });

    // again, and later: still one
    await scheduler.runOnce(later(end, 10 * SECOND));
    await cursorAt(now);
    await scheduler.runOnce(later(end, 20 * SECOND));
    expect(await events('grant.expired', c.id)).toHaveLength(1);
    expect(await keyed(`grant.expired:${g.id}`)).toBe(1);

    // the pull interface finds it by type
    const all = await t.http.get(`${P}/events?type=grant.expired&limit=100`).set(A()).expect(200);
    expect(all.body.data.data.map((e: { id: string }) => e.id)).toContain(got[0].id);
  });

  it('a voided grant gets no grant.expired; one expiring later gets none yet', async () => {
    const now = await start();
    const f = await feature();
    const c = await customer();
    const voided = await grant(c.id, {
      featureId: f.id,
      amount: 5,
      expiresAt: later(now, HOUR).toISOString(),
    });
    await t.http.post(`${P}/grants/${voided.id}/void`).set(A()).send({}).expect(200);
    const future = await grant(c.id, {
      featureId: f.id,
      amount: 5,
      expiresAt: later(now, 3 * HOUR).toISOString(),
    });
    await scheduler.runOnce(later(now, 2 * HOUR));
    expect(await events('grant.voided', c.id)).toHaveLength(1);
    expect(await events('grant.expired', c.id)).toEqual([]);
    // the later one at its own end
    await scheduler.runOnce(later(now, 3 * HOUR + SECOND));
    const got = await events('grant.expired', c.id);
    expect(got.map((e) => e.data.grant.id)).toEqual([future.id]);
    expect(await keyed(`grant.expired:${voided.id}`)).toBe(0);
  });

  it('an override reaching expiresAt: one override.removed (reason expired); GET and DELETE then answer OVERRIDE_NOT_FOUND', async () => {
    const now = await start();
    const f = await feature();
    const c = await customer();
    const o = await override(c.id, f.id, {
      mode: 'set',
      limit: 50,
      expiresAt: later(now, HOUR).toISOString(),
    });

    await scheduler.runOnce(later(now, HOUR - 1));
    expect(await events('override.removed', c.id)).toEqual([]);

    const end = later(now, HOUR);
    await scheduler.runOnce(end);
    const got = await events('override.removed', c.id);
    expect(got).toHaveLength(1);
    expect(got[0].data).toEqual({
      customer: { id: c.id, username: c.username },
      override: o,
      reason: 'expired',
      customerSeq: expect.any(Number),
    });
    const key = `override.removed:${c.id}:${f.id}:${Date.parse(o.createdAt)}`;
    expect(await keyed(key)).toBe(1);

    setNow(later(end, SECOND));
    expectError(
      await t.http.get(`${P}/customers/${c.id}/overrides/${f.id}`).set(A()),
      404,
      'OVERRIDE_NOT_FOUND',
    );
    expectError(
      await t.http.delete(`${P}/customers/${c.id}/overrides/${f.id}`).set(A()),
      404,
      'OVERRIDE_NOT_FOUND',
    );
    await cursorAt(now);
    await scheduler.runOnce(later(end, 2 * SECOND));
    expect(await events('override.removed', c.id)).toHaveLength(1);
  });

  it('an override deleted or replaced before its end: no expired event for it', async () => {
    const now = await start();
    const [f1, f2] = [await feature(), await feature()];
    const c = await customer();
    await override(c.id, f1.id, { mode: 'deny', expiresAt: later(now, HOUR).toISOString() });
    const first = await override(c.id, f2.id, { mode: 'deny', expiresAt: later(now, HOUR).toISOString() });
    await t.http.delete(`${P}/customers/${c.id}/overrides/${f1.id}`).set(A()).expect(200);
    setNow(later(now, SECOND));
    const second = await override(c.id, f2.id, {
      mode: 'deny',
      expiresAt: later(now, 2 * HOUR).toISOString(),
    });
    await scheduler.runOnce(later(now, HOUR + SECOND));
    expect((await events('override.removed', c.id)).map((e) => e.data.reason)).toEqual(['deleted']);
    expect(await keyed(`override.removed:${c.id}:${f2.id}:${Date.parse(first.createdAt)}`)).toBe(0);
    // the replacing one at its own end
    await scheduler.runOnce(later(now, 2 * HOUR));
    const got = await events('override.removed', c.id);
    expect(got.map((e) => [e.data.reason, e.data.override.createdAt])).toEqual([
      ['expired', second.createdAt],
      ['deleted', expect.any(String)],
    ]);
  });

  it('an override that expired and is replaced before the next scan: its removal (expired) is told once, before the override.set', async () => {
    const now = await start();
    const f = await feature();
    const c = await customer();
    const first = await override(c.id, f.id, { mode: 'deny', expiresAt: later(now, HOUR).toISOString() });
    setNow(later(now, 2 * HOUR));
    const second = await override(c.id, f.id, { mode: 'set', limit: 5 });
    const removed = await events('override.removed', c.id);
    expect(removed.map((e) => [e.data.reason, e.data.override])).toEqual([['expired', first]]);
    const set = await events('override.set', c.id);
    expect(set[0].data).toMatchObject({ override: second, previous: null });
    // the removal comes first in the customer's order
    expect(removed[0].data.customerSeq).toBeLessThan(set[0].data.customerSeq);
    // the scheduler's scan over that hour finds it told already
    await scheduler.runOnce(later(now, 2 * HOUR + SECOND));
    expect(await keyed(`override.removed:${c.id}:${f.id}:${Date.parse(first.createdAt)}`)).toBe(1);
    expect(await events('override.removed', c.id)).toHaveLength(1);
  });

  it('after a stop: an end 2 days ago is announced at the next start, one 31 days ago is not', async () => {
    const now = await start();
    const stoppedAt = later(now, -40 * DAY);
    setNow(stoppedAt);
    const f = await feature();
    const c = await customer();
    const recent = await grant(c.id, {
      featureId: f.id,
      amount: 3,
      expiresAt: later(now, -2 * DAY).toISOString(),
    });
    const old = await grant(c.id, {
      featureId: f.id,
      amount: 3,
      expiresAt: later(now, -31 * DAY).toISOString(),
    });
    const o = await override(c.id, f.id, { mode: 'deny', expiresAt: later(now, -2 * DAY).toISOString() });
    await cursorAt(stoppedAt);

    await scheduler.runOnce(now);
    const expired = await events('grant.expired', c.id);
    expect(expired.map((e) => e.data.grant.id)).toEqual([recent.id]);
    expect(expired[0].data.grant).toMatchObject({ status: 'expired', remaining: 0, forfeited: 3 });
    expect(await keyed(`grant.expired:${old.id}`)).toBe(0);
    const removed = await events('override.removed', c.id);
    expect(removed.map((e) => [e.data.reason, e.data.override])).toEqual([['expired', o]]);
    // the cursor moved on: nothing more, the 31-day-old one never
    await scheduler.runOnce(later(now, SECOND));
    expect(await events('grant.expired', c.id)).toHaveLength(1);
  });

  it('a batch larger than one run: every end announced once over the runs that follow at once', async () => {
    const now = await start();
    const f = await feature();
    const c = await customer();
    // 450 grants ending at one instant, more than a run announces (the ties straddle its end)
    const end = later(now, HOUR);
    await t.dataSource.query(
      `INSERT INTO grants (project_id, customer_id, feature_id, amount, effective_at, expires_at, created_at)
       SELECT $1, $2, $3, 1, $4, $5, $4 FROM generate_series(1, 450)`,
      [a.id, c.id, f.id, now, end],
    );
    let runs = 1;
    while (await scheduler.runOnce(later(end, SECOND))) runs++;
    expect(runs).toBeGreaterThan(1);
    expect(
      (
        await t.dataSource.query(
          `SELECT count(*)::int AS n, count(DISTINCT unique_key)::int AS keys FROM events WHERE customer_id = $1 AND type = 'grant.expired'`,
          [c.id],
        )
      )[0],
    ).toEqual({ n: 450, keys: 450 });
    // customerSeq numbers are consecutive: no rescan took a number for a key already recorded
    const [seqs] = await t.dataSource.query(
      `SELECT max(customer_seq) - min(customer_seq) + 1 AS span FROM events WHERE customer_id = $1 AND type = 'grant.expired'`,
      [c.id],
    );
    expect(Number(seqs.span)).toBe(450);
  });

  describe('two instances on one database', () => {
    const replicas: NestExpressApplication[] = [];
    afterEach(async () => {
      while (replicas.length) await replicas.pop()!.close();
    });

    it('runs at once on two replicas, again and again: each end is one event', async () => {
      const now = await start();
      const other = await t.startReplica({ EVENTS_SCHEDULER_ENABLED: 'false' });
      replicas.push(other);
      const otherScheduler = other.get(GrantBoundariesScheduler);
      const f = await feature();
      const c = await customer();
      const grants = [];
      for (let i = 1; i <= 10; i++)
        grants.push(
          await grant(c.id, { featureId: f.id, amount: i, expiresAt: later(now, i * SECOND).toISOString() }),
        );
      const o = await override(c.id, f.id, { mode: 'deny', expiresAt: later(now, 5 * SECOND).toISOString() });
      for (let round = 1; round <= 12; round++) {
        const at = later(now, round * SECOND);
        await Promise.all([scheduler.runOnce(at), otherScheduler.runOnce(at), scheduler.runOnce(at)]);
        if (round % 4 === 0) await cursorAt(now); // as if both had scanned nothing yet
      }
      const expired = await events('grant.expired', c.id);
      expect(expired.map((e) => e.data.grant.id).sort((x, y) => x - y)).toEqual(grants.map((g) => g.id));
      const removed = await events('override.removed', c.id);
      expect(removed.map((e) => e.data.override)).toEqual([o]);
    });

    it('with their timers: grants and an override ending within seconds are each announced once, within 5 s', async () => {
      jest.restoreAllMocks(); // real time from here
      await cursorAt(new Date());
      replicas.push(
        await t.startReplica({ EVENTS_SCHEDULER_ENABLED: 'true', EVENTS_SCHEDULER_INTERVAL_MS: '200' }),
        await t.startReplica({ EVENTS_SCHEDULER_ENABLED: 'true', EVENTS_SCHEDULER_INTERVAL_MS: '200' }),
      );
      const f = await feature();
      const c = await customer();
      const end = new Date(Date.now() + 1500);
      const grants = [];
      for (let i = 0; i < 5; i++)
        grants.push(await grant(c.id, { featureId: f.id, amount: 1, expiresAt: end.toISOString() }));
      await override(c.id, f.id, { mode: 'deny', expiresAt: end.toISOString() });
      await eventually(
        'the ends announced',
        async () =>
          (await events('grant.expired', c.id)).length === 5 &&
          (await events('override.removed', c.id)).length === 1,
        10_000,
      );
      const rows: { created_at: Date }[] = await t.dataSource.query(
        `SELECT created_at FROM events WHERE customer_id = $1 AND type IN ('grant.expired', 'override.removed')`,
        [c.id],
      );
      for (const r of rows) expect(r.created_at.getTime() - end.getTime()).toBeLessThan(5 * SECOND);
      await sleep(1000); // room for a duplicate to show up
      expect(await events('grant.expired', c.id)).toHaveLength(5);
      expect(await events('override.removed', c.id)).toHaveLength(1);
    });
  });
});
