import fc from 'fast-check';
import request from 'supertest';
import { Clock } from '../src/common/clock';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog, clockSetter } from './support/catalog';
import { expectError } from './support/expect';

const P = '/api/private/v1';
const DAY = 86_400_000;

/**
 * Grants and overrides as buckets of the entitlement engine (docs/entitlements.md#grants-and-overrides),
 * through HTTP on a real PostgreSQL: how they combine with plans, the order of consumption,
 * reversal after a grant ended, the events a consume records, and two replicas consuming one
 * grant. Windows at exact instants are written straight into `subscriptions`; the application's
 * `Clock` is set to the instant under test.
 */
describe('grants and overrides in the entitlement engine', () => {
  let t: TestApp;
  let a: TestProject;
  let clock: Clock;
  let setup: ReturnType<typeof catalog>;
  let seq = 0;
  const A = () => bearer(a.privateKey);

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject();
    clock = t.app.get(Clock);
    setup = catalog(t, 'gc');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const setNow = (at: string | Date) => clockSetter(clock)(at);
  const feature = (metered = true) => setup.feature(A(), metered);
  const plan = (group: string, quotas: Array<Record<string, unknown>>) => setup.plan(A(), group, quotas);
  const customer = (extra: Record<string, unknown> = {}) => setup.customer(A(), extra);
  const windowOf = (
    customerId: number,
    planId: number,
    group: string,
    validFrom: string,
    validTo: string | null,
  ) => setup.windowOf(a.id, { customerId, planId, group, validFrom, validTo });

  async function grant(customerId: number, body: Record<string, unknown>): Promise<any> {
    const res = await t.http.post(`${P}/customers/${customerId}/grants`).set(A()).send(body);
    expect(res.status).toBe(201);
    return res.body.data.grant;
  }

  const getGrant = async (id: number) => {
    const res = await t.http.get(`${P}/grants/${id}`).set(A());
    expect(res.status).toBe(200);
    return res.body.data;
  };

  const use = (body: Record<string, unknown>) =>
    t.http
      .post(`${P}/usage`)
      .set(A())
      .send({ eventId: `ge-${++seq}`, ...body });
  const check = async (body: Record<string, unknown>) => {
    const res = await t.http.post(`${P}/entitlements/check`).set(A()).send(body);
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const reverse = (usageId: number) => t.http.post(`${P}/usage/${usageId}/reverse`).set(A());
  const events = async (type: string, customerId: number) => {
    const res = await t.http.get(`${P}/events?type=${type}&customerId=${customerId}&limit=100`).set(A());
    expect(res.status).toBe(200);
    return res.body.data.data as any[];
  };
  const bucketsOf = (view: any) =>
    view.buckets.map((b: any) => [b.source, b.source === 'grant' ? b.grantId : b.group, b.used, b.remaining]);

  describe('how plans, overrides and grants combine', () => {
    it('order of consumption at equal priority: a grant lapsing before the period end first, then the plan, then a top-up that never expires', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }]);
      const c = await customer();
      await windowOf(c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      setNow('2025-03-10T00:00:00.000Z');
      const promo = await grant(c.id, { featureId: f.id, amount: 5, expiresAt: '2025-03-11T00:00:00.000Z' });
      const topUp = await grant(c.id, { feature: f.slug, amount: 20 });
      const before = await check({ customerId: c.id, featureId: f.id });
      expect(bucketsOf(before)).toEqual([
        ['grant', promo.id, 0, 5],
        ['plan', 'tier', 0, 10],
        ['grant', topUp.id, 0, 20],
      ]);
      expect(before.balance).toEqual({ limit: 35, used: 0, held: 0, remaining: 35, overage: 0 });
      // a grant's bucket: its amount as limit, its effectiveAt as period start, no period end
      expect(before.buckets[0]).toMatchObject({
        source: 'grant',
        grantId: promo.id,
        limit: 5,
        periodStart: promo.effectiveAt,
        periodEnd: null,
        expiresAt: '2025-03-11T00:00:00.000Z',
        group: null,
        planId: null,
        quotaId: null,
        windowId: null,
        windowValidTo: null,
      });
      expect(before.resetsAt).toBe('2025-04-01T00:00:00.000Z');

      const res = await use({ customerId: c.id, featureId: f.id, amount: 17 });
      expect(res.status).toBe(201);
      expect(res.body.data.usage.allocations).toEqual([
        { source: 'grant', group: null, periodStart: null, grantId: promo.id, amount: 5, restored: null },
        {
          source: 'plan',
          group: 'tier',
          periodStart: '2025-03-01T00:00:00.000Z',
          grantId: null,
          amount: 10,
          restored: null,
        },
        { source: 'grant', group: null, periodStart: null, grantId: topUp.id, amount: 2, restored: null },
      ]);
      expect(res.body.data.balance).toEqual({ limit: 35, used: 17, held: 0, remaining: 18, overage: 0 });
      expect(await getGrant(promo.id)).toMatchObject({
        used: 5,
        remaining: 0,
        forfeited: 0,
        status: 'exhausted',
      });
      expect(await getGrant(topUp.id)).toMatchObject({
        used: 2,
        remaining: 18,
        forfeited: 0,
        status: 'active',
      });
    });

    it('order of consumption: a higher-priority grant is spent before the plan; a scheduled grant is no bucket until its effectiveAt', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }]);
      const c = await customer();
      await windowOf(c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      setNow('2025-03-10T00:00:00.000Z');
      const first = await grant(c.id, { featureId: f.id, amount: 3, priority: 5 });
      const later = await grant(c.id, {
        featureId: f.id,
        amount: 4,
        effectiveAt: '2025-03-12T00:00:00.000Z',
      });
      expect(later.status).toBe('scheduled');
      expect(bucketsOf(await check({ customerId: c.id, featureId: f.id }))).toEqual([
        ['grant', first.id, 0, 3],
        ['plan', 'tier', 0, 10],
      ]);
      setNow('2025-03-12T00:00:00.000Z');
      expect(bucketsOf(await check({ customerId: c.id, featureId: f.id }))).toEqual([
        ['grant', first.id, 0, 3],
        ['plan', 'tier', 0, 10],
        ['grant', later.id, 0, 4],
      ]);
      expect((await getGrant(later.id)).status).toBe('active');
    });

    it('a grant alone grants a metered feature (granted with nothing left); accessEndsAt is the latest end, null when one never ends', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: null }]);
      const c = await customer();
      await windowOf(c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z', '2025-03-20T00:00:00.000Z');
      setNow('2025-03-10T00:00:00.000Z');
      expect((await check({ customerId: c.id, featureId: f.id })).accessEndsAt).toBe(
        '2025-03-20T00:00:00.000Z',
      );
      await grant(c.id, { featureId: f.id, amount: 2, expiresAt: '2025-03-25T00:00:00.000Z' });
      expect((await check({ customerId: c.id, featureId: f.id })).accessEndsAt).toBe(
        '2025-03-25T00:00:00.000Z',
      );
      // after the window: the grant alone
      setNow('2025-03-21T00:00:00.000Z');
      await use({ customerId: c.id, featureId: f.id, amount: 2 }).expect(201);
      const emptied = await check({ customerId: c.id, featureId: f.id, amount: 1 });
      expect(emptied).toMatchObject({
        allowed: false,
        reason: 'LIMIT_REACHED',
        accessEndsAt: '2025-03-25T00:00:00.000Z',
      });
      expect(emptied.buckets).toHaveLength(1);
      // a grant that never expires: access never ends
      await grant(c.id, { featureId: f.id, amount: 1 });
      expect((await check({ customerId: c.id, featureId: f.id })).accessEndsAt).toBeNull();
      // once every grant has ended and the window too: not granted
      const other = await customer();
      await grant(other.id, { featureId: f.id, amount: 1, expiresAt: '2025-03-22T00:00:00.000Z' });
      setNow('2025-03-22T00:00:00.000Z');
      expect(await check({ customerId: other.id, featureId: f.id })).toMatchObject({
        allowed: false,
        reason: 'NOT_GRANTED',
        accessEndsAt: null,
        buckets: [],
      });
    });

    it('a set override replaces the plan buckets, grants still add; usage earlier in the period counts against it; once removed the plan counts only its own', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 100, priority: 2, resetInterval: 'P1M' }]);
      const c = await customer();
      await windowOf(c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      setNow('2025-03-05T00:00:00.000Z');
      await use({ customerId: c.id, featureId: f.id, amount: 30 }).expect(201);
      const topUp = await grant(c.id, { featureId: f.id, amount: 10 });
      setNow('2025-03-10T00:00:00.000Z');
      const put = await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'set', limit: 50 });
      expect(put.status).toBe(200);
      // the period, reset interval and priority are copied from the plan bucket first in the order
      expect(put.body.data.override).toMatchObject({
        mode: 'set',
        limit: 50,
        priority: 2,
        resetInterval: 'P1M',
        anchor: '2025-03-01T00:00:00.000Z',
      });
      const during = await check({ customerId: c.id, featureId: f.id });
      expect(bucketsOf(during)).toEqual([
        ['override', null, 30, 20],
        ['grant', topUp.id, 0, 10],
      ]);
      expect(during.override).toMatchObject({ mode: 'set', limit: 50 });
      expect(during.buckets[0]).toMatchObject({
        periodStart: '2025-03-01T00:00:00.000Z',
        periodEnd: '2025-04-01T00:00:00.000Z',
        priority: 2,
        planId: null,
        grantId: null,
        expiresAt: null,
      });
      const res = await use({ customerId: c.id, featureId: f.id, amount: 25 });
      expect(res.status).toBe(201);
      expect(
        res.body.data.usage.allocations.map((x: any) => [x.source, x.group, x.grantId, x.amount]),
      ).toEqual([
        ['override', null, null, 20],
        ['grant', null, topUp.id, 5],
      ]);
      expect(res.body.data.usage.allocations[0].periodStart).toBe('2025-03-01T00:00:00.000Z');
      const removed = await t.http.delete(`${P}/customers/${c.id}/overrides/${f.id}`).set(A());
      expect(removed.status).toBe(200);
      // the plan again: only its own group's 30; what the override took is not charged to it
      const after = await check({ customerId: c.id, featureId: f.id });
      expect(after.override).toBeNull();
      expect(bucketsOf(after)).toEqual([
        ['plan', 'tier', 30, 70],
        ['grant', topUp.id, 5, 5],
      ]);
      // the next period: the override's usage does not carry
      setNow('2025-04-02T00:00:00.000Z');
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'set', limit: null })
        .expect(200);
      const unlimited = await check({ customerId: c.id, featureId: f.id, amount: 1_000_000 });
      expect(unlimited).toMatchObject({ allowed: true, balance: { limit: null, remaining: null } });
      expect(bucketsOf(unlimited)[0]).toEqual(['override', null, 0, null]);
    });

    it('an override bucket emptied records usage.limit_reached once per customer and period, under its own key', async () => {
      const f = await feature();
      const c = await customer();
      setNow('2025-05-01T00:00:00.000Z');
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'set', limit: 3, resetInterval: 'P1D' })
        .expect(200);
      await use({ customerId: c.id, featureId: f.id, amount: 3 }).expect(201);
      await use({ customerId: c.id, featureId: f.id, amount: 1, allowOverage: true }).expect(201);
      const reached = await events('usage.limit_reached', c.id);
      expect(reached).toHaveLength(1);
      expect(reached[0].data.bucket).toMatchObject({ source: 'override', limit: 3, used: 3, remaining: 0 });
      const [row] = await t.dataSource.query('SELECT unique_key FROM events WHERE id = $1', [reached[0].id]);
      expect(row.unique_key).toBe(
        `usage.limit_reached:${c.id}:o${f.id}:${Date.parse('2025-05-01T00:00:00.000Z')}`,
      );
    });

    it('deny: not granted whatever plans and grants say, grants untouched; set on a boolean feature grants it, deny refuses it', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10 }]);
      const c = await customer();
      await windowOf(c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      setNow('2025-03-10T00:00:00.000Z');
      const g = await grant(c.id, { featureId: f.id, amount: 5 });
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'deny' })
        .expect(200);
      expect(await check({ customerId: c.id, featureId: f.id })).toMatchObject({
        allowed: false,
        reason: 'NOT_GRANTED',
        buckets: [],
        accessEndsAt: null,
        override: { mode: 'deny', limit: null, priority: null, resetInterval: null, anchor: null },
      });
      expectError(await use({ customerId: c.id, featureId: f.id, amount: 1 }), 403, 'FEATURE_NOT_GRANTED');
      expect(await getGrant(g.id)).toMatchObject({ used: 0, remaining: 5, status: 'active' });
      await t.http.delete(`${P}/customers/${c.id}/overrides/${f.id}`).set(A()).expect(200);
      expect((await check({ customerId: c.id, featureId: f.id })).allowed).toBe(true);

      const flag = await feature(false);
      const none = await customer();
      expect((await check({ customerId: none.id, featureId: flag.id })).allowed).toBe(false);
      await t.http
        .put(`${P}/customers/${none.id}/overrides/${flag.id}`)
        .set(A())
        .send({ mode: 'set' })
        .expect(200);
      expect(await check({ customerId: none.id, featureId: flag.id })).toMatchObject({
        allowed: true,
        balance: null,
        buckets: [],
        accessEndsAt: null,
      });
      const flagPlan = await plan('flags', [{ featureId: flag.id, limit: null }]);
      const granted = await customer();
      await windowOf(granted.id, flagPlan.id, 'flags', '2025-03-01T00:00:00.000Z', null);
      expect((await check({ customerId: granted.id, featureId: flag.id })).allowed).toBe(true);
      await t.http
        .put(`${P}/customers/${granted.id}/overrides/${flag.id}`)
        .set(A())
        .send({ mode: 'deny' })
        .expect(200);
      expect((await check({ customerId: granted.id, featureId: flag.id })).reason).toBe('NOT_GRANTED');
    });

    it('an override with an expiresAt ends at that instant: the plans answer again with nothing to run', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10 }]);
      const c = await customer();
      await windowOf(c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      setNow('2025-03-10T00:00:00.000Z');
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'deny', expiresAt: '2025-03-10T01:00:00.000Z' })
        .expect(200);
      expect((await check({ customerId: c.id, featureId: f.id })).allowed).toBe(false);
      setNow('2025-03-10T01:00:00.000Z');
      expect(await check({ customerId: c.id, featureId: f.id })).toMatchObject({
        allowed: true,
        override: null,
      });
    });
  });

  describe('reversal after a grant ended', () => {
    it('restored: true while the grant is in effect; after its expiry or void nothing comes back (restored: false, forfeited)', async () => {
      const f = await feature();
      const c = await customer();
      setNow('2025-03-10T00:00:00.000Z');
      const g = await grant(c.id, { featureId: f.id, amount: 10, expiresAt: '2025-03-12T00:00:00.000Z' });
      const first = (await use({ customerId: c.id, featureId: f.id, amount: 4 })).body.data.usage;
      setNow('2025-03-11T00:00:00.000Z');
      const back = await reverse(first.id);
      expect(back.status).toBe(200);
      expect(back.body.data.usage.allocations).toEqual([
        { source: 'grant', group: null, periodStart: null, grantId: g.id, amount: 4, restored: true },
      ]);
      expect(back.body.data.forfeited).toBe(0);
      expect(await getGrant(g.id)).toMatchObject({ used: 0, remaining: 10 });
      const second = (await use({ customerId: c.id, featureId: f.id, amount: 6 })).body.data.usage;
      setNow('2025-03-13T00:00:00.000Z');
      const late = await reverse(second.id);
      expect(late.status).toBe(200);
      expect(late.body.data.usage.allocations[0]).toMatchObject({
        grantId: g.id,
        amount: 6,
        restored: false,
      });
      expect(late.body.data.forfeited).toBe(6);
      // the amount stays in the grant's used: amount = used + remaining + forfeited
      expect(await getGrant(g.id)).toMatchObject({
        amount: 10,
        used: 6,
        remaining: 0,
        forfeited: 4,
        status: 'expired',
      });
      // a second call answers the same
      expect((await reverse(second.id)).body.data).toEqual(late.body.data);

      const voided = await grant(c.id, { featureId: f.id, amount: 5 });
      const taken = (await use({ customerId: c.id, featureId: f.id, amount: 2 })).body.data.usage;
      await t.http.post(`${P}/grants/${voided.id}/void`).set(A()).send({}).expect(200);
      const afterVoid = await reverse(taken.id);
      expect(afterVoid.body.data.forfeited).toBe(2);
      expect(await getGrant(voided.id)).toMatchObject({
        used: 2,
        remaining: 0,
        forfeited: 3,
        status: 'voided',
      });
    });

    it('a reversal can make an exhausted grant active again; grant.exhausted is recorded once per grant, ever, and never usage.limit_reached', async () => {
      const f = await feature();
      const c = await customer();
      setNow('2025-03-10T00:00:00.000Z');
      const g = await grant(c.id, { featureId: f.id, amount: 2 });
      const u = (await use({ customerId: c.id, featureId: f.id, amount: 2 })).body.data.usage;
      expect((await getGrant(g.id)).status).toBe('exhausted');
      await reverse(u.id).expect(200);
      expect((await getGrant(g.id)).status).toBe('active');
      await use({ customerId: c.id, featureId: f.id, amount: 2 }).expect(201);
      const exhausted = await events('grant.exhausted', c.id);
      expect(exhausted).toHaveLength(1);
      expect(exhausted[0].data.grant).toMatchObject({ id: g.id, used: 2, remaining: 0, status: 'exhausted' });
      expect(exhausted[0].data.customer).toEqual({ id: c.id, username: c.username });
      expect(await events('usage.limit_reached', c.id)).toHaveLength(0);
    });
  });

  it('usage.limit_reached names the customer: two customers whose periods start at the same instant are both announced', async () => {
    const f = await feature();
    const p = await plan('tier', [{ featureId: f.id, limit: 1, resetInterval: 'P1D' }]);
    const [c1, c2] = [await customer(), await customer()];
    for (const c of [c1, c2]) await windowOf(c.id, p.id, 'tier', '2025-06-01T00:00:00.000Z', null);
    setNow('2025-06-01T12:00:00.000Z');
    for (const c of [c1, c2]) await use({ customerId: c.id, featureId: f.id, amount: 1 }).expect(201);
    for (const c of [c1, c2]) expect(await events('usage.limit_reached', c.id)).toHaveLength(1);
  });

  it('the public views show and count grants and overrides as the private ones do', async () => {
    const f = await feature();
    const me = await customer({ password: 'correct horse' });
    const g = await grant(me.id, { featureId: f.id, amount: 3 });
    const key = { 'X-Service-Key': a.publicKey };
    const login = await t.http
      .post('/api/public/v1/auth/login')
      .set(key)
      .send({ identifier: { type: 'username', value: me.username }, password: 'correct horse' });
    expect(login.status).toBe(200);
    const auth = { ...key, Authorization: `Bearer ${login.body.data.token}` };
    const list = await t.http.get('/api/public/v1/me/entitlements').set(auth);
    expect(list.status).toBe(200);
    const mine = list.body.data.find((e: any) => e.feature.id === f.id);
    expect(mine).toMatchObject({ granted: true, balance: { limit: 3, remaining: 3 }, override: null });
    expect(mine.buckets).toEqual([expect.objectContaining({ source: 'grant', grantId: g.id })]);
    const private_ = await t.http.get(`${P}/customers/${me.id}/entitlements`).set(A());
    expect(private_.body.data.find((e: any) => e.feature.id === f.id)).toEqual({
      ...mine,
      at: expect.any(String),
    });
    const checked = await t.http
      .post('/api/public/v1/me/entitlements/check')
      .set(auth)
      .send({ feature: f.slug, amount: 4 });
    expect(checked.body.data).toMatchObject({ allowed: false, reason: 'LIMIT_REACHED' });
    await t.http.put(`${P}/customers/${me.id}/overrides/${f.id}`).set(A()).send({ mode: 'deny' }).expect(200);
    const denied = await t.http
      .post('/api/public/v1/me/entitlements/check')
      .set(auth)
      .send({ feature: f.slug });
    expect(denied.body.data).toMatchObject({
      allowed: false,
      reason: 'NOT_GRANTED',
      override: { mode: 'deny' },
    });
  });

  it('property: amount = used + remaining + forfeited after any sequence of consumes, reversals, voids and expiries', async () => {
    const f = await feature();
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            fc.record({ kind: fc.constant('use' as const), amount: fc.integer({ min: 1, max: 6 }) }),
            fc.record({ kind: fc.constant('reverse' as const), pick: fc.nat() }),
            fc.record({ kind: fc.constant('void' as const), pick: fc.nat() }),
            fc.record({ kind: fc.constant('advance' as const), hours: fc.integer({ min: 1, max: 30 }) }),
          ),
          { minLength: 3, maxLength: 10 },
        ),
        async (steps) => {
          const c = await customer();
          let now = Date.parse('2025-08-01T00:00:00.000Z');
          setNow(new Date(now));
          const grants = [
            await grant(c.id, { featureId: f.id, amount: 5, expiresAt: new Date(now + DAY).toISOString() }),
            await grant(c.id, {
              featureId: f.id,
              amount: 7,
              priority: 1,
              expiresAt: new Date(now + 2 * DAY).toISOString(),
            }),
            await grant(c.id, { featureId: f.id, amount: 4 }),
          ];
          const usages: number[] = [];
          for (const step of steps) {
            if (step.kind === 'advance') {
              now += step.hours * 3_600_000;
              setNow(new Date(now));
            } else if (step.kind === 'use') {
              const res = await use({ customerId: c.id, featureId: f.id, amount: step.amount });
              expect([201, 409, 403]).toContain(res.status);
              if (res.status === 201) usages.push(res.body.data.usage.id);
            } else if (step.kind === 'reverse' && usages.length > 0) {
              expect((await reverse(usages[step.pick % usages.length])).status).toBe(200);
            } else if (step.kind === 'void') {
              const res = await t.http
                .post(`${P}/grants/${grants[step.pick % 3].id}/void`)
                .set(A())
                .send({});
              expect([200, 409]).toContain(res.status);
            }
          }
          // each grant's used is what its live allocations and its forfeited reversals hold
          for (const { id } of grants) {
            const view = await getGrant(id);
            expect(view.used + view.remaining + view.forfeited).toBeCloseTo(view.amount, 6);
            const [{ held }] = await t.dataSource.query(
              `SELECT coalesce(sum(amount), 0)::float8 AS held FROM usage_allocations
                WHERE grant_id = $1 AND (NOT reversed OR restored = false)`,
              [id],
            );
            expect(view.used).toBeCloseTo(held, 6);
          }
        },
      ),
      { numRuns: 12 },
    );
  });

  describe('two replicas', () => {
    it('consumes never take more than a grant holds, however many replicas consume it at once', async () => {
      const replica = await t.startReplica();
      try {
        const f = await feature();
        const c = await customer();
        const g = await grant(c.id, { featureId: f.id, amount: 10 });
        const servers = [t.app.getHttpServer(), replica.getHttpServer()];
        const answers = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            request(servers[i % 2])
              .post(`${P}/usage`)
              .set(A())
              .send({ eventId: `race-${c.id}-${i}`, customerId: c.id, featureId: f.id, amount: 1 }),
          ),
        );
        expect(answers.filter((r) => r.status === 201)).toHaveLength(10);
        expect(answers.filter((r) => r.status === 409)).toHaveLength(30);
        expect(await getGrant(g.id)).toMatchObject({ used: 10, remaining: 0, status: 'exhausted' });
        expect(await events('grant.exhausted', c.id)).toHaveLength(1);
      } finally {
        await replica.close();
      }
    });

    it('a void racing consumes: no record takes from the grant after its voidedAt', async () => {
      const replica = await t.startReplica();
      try {
        const f = await feature();
        const c = await customer();
        const g = await grant(c.id, { featureId: f.id, amount: 1000 });
        const servers = [t.app.getHttpServer(), replica.getHttpServer()];
        const consumes = Array.from({ length: 30 }, (_, i) =>
          request(servers[i % 2])
            .post(`${P}/usage`)
            .set(A())
            .send({ eventId: `void-race-${c.id}-${i}`, customerId: c.id, featureId: f.id, amount: 1 }),
        );
        const voiding = request(servers[1])
          .post(`${P}/grants/${g.id}/void`)
          .set(A())
          .send({ reason: 'race' });
        const [voidAnswer, ...answers] = await Promise.all([voiding, ...consumes]);
        expect(voidAnswer.status).toBe(200);
        const voidedAt = Date.parse(voidAnswer.body.data.grant.voidedAt);
        const taken = await t.dataSource.query(
          `SELECT a.amount::float8 AS amount, (extract(epoch FROM u.recorded_at) * 1000)::bigint AS at
             FROM usage_allocations a JOIN usage_records u ON u.id = a.usage_id WHERE a.grant_id = $1`,
          [g.id],
        );
        for (const row of taken) expect(Number(row.at)).toBeLessThanOrEqual(voidedAt);
        const view = await getGrant(g.id);
        expect(view).toMatchObject({ status: 'voided', remaining: 0 });
        expect(view.used).toBe(taken.length);
        expect(view.used + view.forfeited).toBe(1000);
        // those after the void found nothing granted
        expect(answers.filter((r) => r.status === 201)).toHaveLength(taken.length);
        expect(answers.every((r) => r.status === 201 || r.status === 403)).toBe(true);
      } finally {
        await replica.close();
      }
    });
  });
});
