import request from 'supertest';
import { Clock } from '../src/common/clock';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError, ISO_MS } from './support/expect';

const P = '/api/private/v1';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Entitlements and metered usage (docs/entitlements.md), through HTTP on a real PostgreSQL. Windows
 * at exact instants are written straight into `subscriptions` (the API grants only from "now"),
 * and the application's `Clock` is set to the instant under test.
 */
describe('entitlements and metered usage', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  let clock: Clock;
  let seq = 0;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ autoCreateCustomerAtRedemption: true });
    b = await t.createProject();
    clock = t.app.get(Clock);
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const setNow = (iso: string | Date) => {
    const d = new Date(iso);
    jest.spyOn(clock, 'now').mockImplementation(() => new Date(d));
  };

  async function feature(metered = true, auth = A()): Promise<{ id: number; slug: string }> {
    const slug = `f-${++seq}`;
    const res = await t.http
      .post(`${P}/features`)
      .set(auth)
      .send({ slug, name: slug, metered, unit: metered ? 'call' : '' });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function plan(
    group: string,
    quotas: Array<{
      featureId: number;
      limit: number | null;
      priority?: number;
      resetInterval?: string | null;
    }>,
    value = 10,
    auth = A(),
  ): Promise<{ id: number; slug: string }> {
    const slug = `p-${++seq}`;
    const res = await t.http.post(`${P}/plans`).set(auth).send({ slug, name: slug, value, group, quotas });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function customer(
    auth = A(),
    extra: Record<string, unknown> = {},
  ): Promise<{ id: number; username: string }> {
    const res = await t.http
      .post(`${P}/customers`)
      .set(auth)
      .send({ username: `ent${String(++seq).padStart(8, '0')}`, ...extra });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  /** A window written straight into the chain (validTo null: permanent). */
  async function windowOf(
    projectId: string,
    customerId: number,
    planId: number,
    group: string,
    validFrom: string,
    validTo: string | null,
    status = 'active',
  ): Promise<number> {
    const [row] = await t.dataSource.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, status)
       VALUES ($1, $2, $3, $4, $5, $6, 'activation', $7) RETURNING id`,
      [projectId, customerId, planId, group, validFrom, validTo, status],
    );
    return row.id;
  }

  const use = (body: Record<string, unknown>, auth = A()) =>
    t.http
      .post(`${P}/usage`)
      .set(auth)
      .send({ eventId: `e-${++seq}`, ...body });
  const check = (body: Record<string, unknown>, auth = A()) =>
    t.http.post(`${P}/entitlements/check`).set(auth).send(body);
  const entitlements = async (customerId: number, auth = A()) => {
    const res = await t.http.get(`${P}/customers/${customerId}/entitlements`).set(auth);
    expect(res.status).toBe(200);
    return res.body.data as any[];
  };
  const records = async (customerId: number) =>
    (
      await t.dataSource.query('SELECT count(*)::int AS n FROM usage_records WHERE customer_id = $1', [
        customerId,
      ])
    )[0].n as number;

  describe('quota sources', () => {
    it('two groups add up: tier 100 (P1M) + addon 50 (never resets) = limit 150; consuming 120 takes 100 then 20', async () => {
      const f = await feature();
      const tier = await plan('tier', [{ featureId: f.id, limit: 100, resetInterval: 'P1M' }]);
      const addon = await plan('addon', [{ featureId: f.id, limit: 50, resetInterval: null }]);
      const c = await customer();
      await windowOf(a.id, c.id, tier.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      await windowOf(a.id, c.id, addon.id, 'addon', '2025-03-05T00:00:00.000Z', null);
      setNow('2025-03-10T12:00:00.000Z');

      const res = await check({ customerId: c.id, feature: f.slug, amount: 150 });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        allowed: true,
        reason: null,
        requested: 150,
        balance: { limit: 150, used: 0, held: 0, remaining: 150, overage: 0 },
        resetsAt: '2025-04-01T00:00:00.000Z',
        accessEndsAt: null,
      });
      // the period that ends first is consumed first (tier resets, addon never does)
      expect(res.body.data.buckets.map((x: any) => [x.group, x.periodStart, x.periodEnd])).toEqual([
        ['tier', '2025-03-01T00:00:00.000Z', '2025-04-01T00:00:00.000Z'],
        ['addon', '2025-03-05T00:00:00.000Z', null],
      ]);

      const used = await use({ customerId: c.id, feature: f.slug, amount: 120 });
      expect(used.status).toBe(201);
      expect(used.body.data.usage).toMatchObject({
        amount: 120,
        overage: 0,
        customerId: c.id,
        featureId: f.id,
        reversedAt: null,
        allocations: [
          { group: 'tier', periodStart: '2025-03-01T00:00:00.000Z', amount: 100 },
          { group: 'addon', periodStart: '2025-03-05T00:00:00.000Z', amount: 20 },
        ],
      });
      expect(used.body.data.usage.recordedAt).toBe('2025-03-10T12:00:00.000Z');
      expect(used.body.data.balance).toEqual({ limit: 150, used: 120, held: 0, remaining: 30, overage: 0 });
      expect((await check({ customerId: c.id, feature: f.slug, amount: 31 })).body.data).toMatchObject({
        allowed: false,
        reason: 'LIMIT_REACHED',
      });
    });

    it('priority order: the priority 5 bucket (addon) is consumed before the priority 0 one (tier) whose period ends first', async () => {
      const f = await feature();
      const tier = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1D' }]);
      const addon = await plan('addon', [{ featureId: f.id, limit: 10, priority: 5, resetInterval: 'P1M' }]);
      const c = await customer();
      await windowOf(a.id, c.id, tier.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      await windowOf(a.id, c.id, addon.id, 'addon', '2025-03-01T00:00:00.000Z', null);
      setNow('2025-03-02T06:00:00.000Z');
      const res = await use({ customerId: c.id, featureId: f.id, amount: 12 });
      expect(res.status).toBe(201);
      expect(res.body.data.usage.allocations).toEqual([
        {
          source: 'plan',
          grantId: null,
          restored: null,
          group: 'addon',
          periodStart: '2025-03-01T00:00:00.000Z',
          amount: 10,
        },
        {
          source: 'plan',
          grantId: null,
          restored: null,
          group: 'tier',
          periodStart: '2025-03-02T00:00:00.000Z',
          amount: 2,
        },
      ]);
    });

    it('a window starting tomorrow grants nothing yet: NOT_GRANTED, 403 FEATURE_NOT_GRANTED, nothing recorded', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10 }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-05-02T00:00:00.000Z', null);
      setNow('2025-05-01T00:00:00.000Z');
      expect((await check({ customerId: c.id, feature: f.slug })).body.data).toMatchObject({
        allowed: false,
        reason: 'NOT_GRANTED',
        balance: { limit: 0, used: 0, held: 0, remaining: 0, overage: 0 },
        buckets: [],
        resetsAt: null,
        accessEndsAt: null,
      });
      expectError(await use({ customerId: c.id, feature: f.slug, amount: 1 }), 403, 'FEATURE_NOT_GRANTED');
      expect(await records(c.id)).toBe(0);
      // at its first instant it grants
      setNow('2025-05-02T00:00:00.000Z');
      expect((await check({ customerId: c.id, feature: f.slug })).body.data.allowed).toBe(true);
    });

    it('a boolean feature is granted by any plan in effect (limit ignored, balance null); POST /usage is 400 FEATURE_NOT_METERED', async () => {
      const flag = await feature(false);
      const p = await plan('tier', [{ featureId: flag.id, limit: 0 }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-01T00:00:00.000Z', '2025-02-01T00:00:00.000Z');
      setNow('2025-01-15T00:00:00.000Z');
      const res = await check({ customerId: c.id, feature: flag.slug, amount: 5 });
      expect(res.body.data).toMatchObject({
        allowed: true,
        reason: null,
        requested: null,
        balance: null,
        accessEndsAt: '2025-02-01T00:00:00.000Z',
      });
      const list = await entitlements(c.id);
      expect(list.find((e) => e.feature.id === flag.id)).toMatchObject({ granted: true, balance: null });
      expectError(await use({ customerId: c.id, feature: flag.slug, amount: 1 }), 400, 'FEATURE_NOT_METERED');
    });

    it('unlimited (limit: null): remaining null, any amount is taken, the plan shows limit null', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: null, resetInterval: 'P1D' }]);
      const shown = await t.http.get(`${P}/plans/${p.id}`).set(A());
      expect(shown.body.data.quotas[0].limit).toBeNull();
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-01T00:00:00.000Z', null);
      setNow('2025-01-01T10:00:00.000Z');
      const res = await use({ customerId: c.id, feature: f.slug, amount: 1_000_000 });
      expect(res.status).toBe(201);
      expect(res.body.data.balance).toEqual({
        limit: null,
        used: 1_000_000,
        held: 0,
        remaining: null,
        overage: 0,
      });
      expect(res.body.data.usage.allocations).toEqual([
        {
          source: 'plan',
          grantId: null,
          restored: null,
          group: 'tier',
          periodStart: '2025-01-01T00:00:00.000Z',
          amount: 1_000_000,
        },
      ]);
    });
  });

  describe('periods', () => {
    it('anchor on Jan 31 with P1M: periods end Feb 28 then Mar 31 (Feb 29 in 2024); boundaries are half-open at the exact instant', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-31T00:00:00.000Z', null);
      setNow('2025-02-27T23:59:59.999Z');
      expect((await use({ customerId: c.id, feature: f.slug, amount: 10 })).status).toBe(201);
      let res = await check({ customerId: c.id, feature: f.slug });
      expect(res.body.data).toMatchObject({
        allowed: false,
        reason: 'LIMIT_REACHED',
        resetsAt: '2025-02-28T00:00:00.000Z',
      });
      expect(res.body.data.buckets[0]).toMatchObject({
        periodStart: '2025-01-31T00:00:00.000Z',
        periodEnd: '2025-02-28T00:00:00.000Z',
        used: 10,
      });
      setNow('2025-02-28T00:00:00.000Z');
      res = await check({ customerId: c.id, feature: f.slug });
      expect(res.body.data).toMatchObject({ allowed: true, balance: { used: 0, remaining: 10 } });
      expect(res.body.data.buckets[0]).toMatchObject({
        periodStart: '2025-02-28T00:00:00.000Z',
        periodEnd: '2025-03-31T00:00:00.000Z',
      });

      const leap = await customer();
      await windowOf(a.id, leap.id, p.id, 'tier', '2024-01-31T00:00:00.000Z', null);
      setNow('2024-02-29T12:00:00.000Z');
      expect((await check({ customerId: leap.id, feature: f.slug })).body.data.buckets[0]).toMatchObject({
        periodStart: '2024-02-29T00:00:00.000Z',
        periodEnd: '2024-03-31T00:00:00.000Z',
      });
    });

    it('PT1H grid from an anchor at 10:15: at 12:15:00.000 the period is [12:15, 13:15) and the 12:14:59.999 usage no longer counts', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 5, resetInterval: 'PT1H' }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-06-01T10:15:00.000Z', null);
      setNow('2025-06-01T12:14:59.999Z');
      expect(
        (await use({ customerId: c.id, feature: f.slug, amount: 5 })).body.data.usage.allocations[0],
      ).toEqual({
        source: 'plan',
        grantId: null,
        restored: null,
        group: 'tier',
        periodStart: '2025-06-01T11:15:00.000Z',
        amount: 5,
      });
      setNow('2025-06-01T12:15:00.000Z');
      const res = await check({ customerId: c.id, feature: f.slug, amount: 5 });
      expect(res.body.data).toMatchObject({ allowed: true, balance: { used: 0, remaining: 5 } });
      expect(res.body.data.buckets[0]).toMatchObject({
        periodStart: '2025-06-01T12:15:00.000Z',
        periodEnd: '2025-06-01T13:15:00.000Z',
      });
    });

    it('a renewal (Jan 10-Feb 10, then Feb 10-Mar 10) keeps the anchor Jan 10 and the usage of the current period', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 100, resetInterval: 'P1W' }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-10T00:00:00.000Z', '2025-02-10T00:00:00.000Z');
      await windowOf(a.id, c.id, p.id, 'tier', '2025-02-10T00:00:00.000Z', '2025-03-10T00:00:00.000Z');
      // Jan 10 + 4 weeks = Feb 7: the period [Feb 7, Feb 14) spans the renewal
      setNow('2025-02-09T00:00:00.000Z');
      expect((await use({ customerId: c.id, feature: f.slug, amount: 30 })).status).toBe(201);
      setNow('2025-02-11T00:00:00.000Z');
      const res = await check({ customerId: c.id, feature: f.slug });
      expect(res.body.data.buckets[0]).toMatchObject({
        periodStart: '2025-02-07T00:00:00.000Z',
        periodEnd: '2025-02-14T00:00:00.000Z',
        used: 30,
        windowValidTo: '2025-03-10T00:00:00.000Z',
      });
      expect(res.body.data.accessEndsAt).toBe('2025-03-10T00:00:00.000Z');
    });

    it('an upgrade mid-period (Basic 10 cut at Jan 20, Max 100 from Jan 20) applies the new limit at once and keeps the usage and the anchor', async () => {
      const f = await feature();
      const basic = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }], 10);
      const max = await plan('tier', [{ featureId: f.id, limit: 100, resetInterval: 'P1M' }], 40);
      const c = await customer();
      await windowOf(a.id, c.id, basic.id, 'tier', '2025-01-10T00:00:00.000Z', '2025-01-20T00:00:00.000Z');
      await windowOf(a.id, c.id, max.id, 'tier', '2025-01-20T00:00:00.000Z', '2025-03-01T00:00:00.000Z');
      setNow('2025-01-15T00:00:00.000Z');
      expect((await use({ customerId: c.id, feature: f.slug, amount: 8 })).status).toBe(201);
      setNow('2025-01-20T00:00:00.000Z');
      const res = await check({ customerId: c.id, feature: f.slug });
      expect(res.body.data.balance).toEqual({ limit: 100, used: 8, held: 0, remaining: 92, overage: 0 });
      expect(res.body.data.buckets[0]).toMatchObject({
        planId: max.id,
        periodStart: '2025-01-10T00:00:00.000Z',
        periodEnd: '2025-02-10T00:00:00.000Z',
      });
    });

    it('a downgrade (Pro 100 then Basic 10 from Jan 20) applies the lower limit at once: used 30 of 10, remaining 0, 409 QUOTA_EXCEEDED', async () => {
      const f = await feature();
      const pro = await plan('tier', [{ featureId: f.id, limit: 100, resetInterval: 'P1M' }], 20);
      const basic = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }], 10);
      const c = await customer();
      await windowOf(a.id, c.id, pro.id, 'tier', '2025-01-01T00:00:00.000Z', '2025-01-20T00:00:00.000Z');
      await windowOf(a.id, c.id, basic.id, 'tier', '2025-01-20T00:00:00.000Z', null);
      setNow('2025-01-19T00:00:00.000Z');
      expect((await use({ customerId: c.id, feature: f.slug, amount: 30 })).status).toBe(201);
      setNow('2025-01-21T00:00:00.000Z');
      expect((await check({ customerId: c.id, feature: f.slug })).body.data).toMatchObject({
        allowed: false,
        reason: 'LIMIT_REACHED',
        balance: { limit: 10, used: 30, remaining: 0 },
      });
      const refused = await use({ customerId: c.id, feature: f.slug, amount: 1 });
      expectError(refused, 409, 'QUOTA_EXCEEDED');
      expect(refused.body.error.details).toEqual([
        expect.objectContaining({ field: 'amount', remaining: 0, resetsAt: '2025-02-01T00:00:00.000Z' }),
      ]);
      expect(await records(c.id)).toBe(1);
    });

    it('a gap starts a new run: Jan 1-10, then from Jan 15 → anchor Jan 15, usage before the gap not counted', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-01T00:00:00.000Z', '2025-01-10T00:00:00.000Z');
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-15T00:00:00.000Z', null);
      setNow('2025-01-05T00:00:00.000Z');
      expect((await use({ customerId: c.id, feature: f.slug, amount: 10 })).status).toBe(201);
      setNow('2025-01-16T00:00:00.000Z');
      const res = await check({ customerId: c.id, feature: f.slug });
      expect(res.body.data.buckets[0]).toMatchObject({
        periodStart: '2025-01-15T00:00:00.000Z',
        periodEnd: '2025-02-15T00:00:00.000Z',
        used: 0,
      });
    });
  });

  describe('consuming', () => {
    it('allowOverage: 15 against 10 remaining records 10 allocated and 5 overage, which does not carry into the next period', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1D' }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-01T00:00:00.000Z', null);
      setNow('2025-01-01T05:00:00.000Z');
      const res = await use({ customerId: c.id, feature: f.slug, amount: 15, allowOverage: true });
      expect(res.status).toBe(201);
      expect(res.body.data.usage).toMatchObject({ amount: 15, overage: 5 });
      expect(res.body.data.balance).toEqual({ limit: 10, used: 10, held: 0, remaining: 0, overage: 5 });
      setNow('2025-01-02T00:00:00.000Z');
      expect((await check({ customerId: c.id, feature: f.slug })).body.data.balance).toEqual({
        limit: 10,
        used: 0,
        held: 0,
        remaining: 10,
        overage: 0,
      });
    });

    it('a reversal gives back exactly its allocations (tier 10 + addon 2; a later 1.5 went to addon), and a second call answers the same record', async () => {
      const f = await feature();
      const tier = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }]);
      const addon = await plan('addon', [{ featureId: f.id, limit: 5 }]);
      const c = await customer();
      await windowOf(a.id, c.id, tier.id, 'tier', '2025-01-01T00:00:00.000Z', null);
      await windowOf(a.id, c.id, addon.id, 'addon', '2025-01-01T00:00:00.000Z', null);
      setNow('2025-01-03T00:00:00.000Z');
      const first = await use({ customerId: c.id, feature: f.slug, amount: 12 });
      await use({ customerId: c.id, feature: f.slug, amount: 1.5 });
      expect((await check({ customerId: c.id, feature: f.slug })).body.data.balance.used).toBe(13.5);
      setNow('2025-01-04T00:00:00.000Z');
      const reversed = await t.http.post(`${P}/usage/${first.body.data.usage.id}/reverse`).set(A());
      expect(reversed.status).toBe(200);
      expect(reversed.body.data.usage).toMatchObject({
        id: first.body.data.usage.id,
        reversedAt: '2025-01-04T00:00:00.000Z',
        // a plan bucket's allocation always comes back
        allocations: first.body.data.usage.allocations.map((x: object) => ({ ...x, restored: true })),
      });
      expect(reversed.body.data.balance).toEqual({
        limit: 15,
        used: 1.5,
        held: 0,
        remaining: 13.5,
        overage: 0,
      });
      expect(reversed.body.data.forfeited).toBe(0);
      const again = await t.http.post(`${P}/usage/${first.body.data.usage.id}/reverse`).set(A());
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual(reversed.body.data);
      const buckets = (await check({ customerId: c.id, feature: f.slug })).body.data.buckets;
      expect(buckets.map((x: any) => [x.group, x.used])).toEqual([
        ['tier', 0],
        ['addon', 1.5],
      ]);
      expectError(await t.http.post(`${P}/usage/999999999/reverse`).set(A()), 404, 'USAGE_NOT_FOUND');
      expectError(await t.http.post(`${P}/usage/abc/reverse`).set(A()), 400, 'VALIDATION_FAILED');
    });

    it('period sums by running totals: reversals before and inside the period, an overage reversed, the ledger pruned before the period, a clock set back (P1D, limit 100)', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 100, resetInterval: 'P1D' }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z', null);
      const balance = async () => (await check({ customerId: c.id, feature: f.slug })).body.data.balance;
      const reverse = (id: string) => t.http.post(`${P}/usage/${id}/reverse`).set(A()).expect(200);
      setNow('2025-03-01T09:00:00.000Z');
      const early = await use({ customerId: c.id, feature: f.slug, amount: 30 });
      await use({ customerId: c.id, feature: f.slug, amount: 20 });
      await reverse(early.body.data.usage.id);
      expect(await balance()).toEqual({ limit: 100, used: 20, held: 0, remaining: 80, overage: 0 });

      setNow('2025-03-02T00:00:00.000Z');
      await use({ customerId: c.id, feature: f.slug, amount: 5 });
      setNow('2025-03-02T12:00:00.000Z');
      const seven = await use({ customerId: c.id, feature: f.slug, amount: 7 });
      expect(await balance()).toEqual({ limit: 100, used: 12, held: 0, remaining: 88, overage: 0 });
      setNow('2025-03-02T13:00:00.000Z');
      const over = await use({ customerId: c.id, feature: f.slug, amount: 100, allowOverage: true });
      expect(over.body.data.balance).toEqual({ limit: 100, used: 100, held: 0, remaining: 0, overage: 12 });
      await reverse(seven.body.data.usage.id);
      expect(await balance()).toEqual({ limit: 100, used: 93, held: 0, remaining: 7, overage: 12 });
      await reverse(over.body.data.usage.id);
      expect(await balance()).toEqual({ limit: 100, used: 5, held: 0, remaining: 95, overage: 0 });
      // the ledger pruned of what was recorded before the period: nothing changes
      // (docs/entitlements.md#retention-of-the-ledger)
      await t.dataSource.query(`DELETE FROM usage_records WHERE customer_id = $1 AND recorded_at < $2`, [
        c.id,
        '2025-03-02T00:00:00.000Z',
      ]);
      expect(await balance()).toEqual({ limit: 100, used: 5, held: 0, remaining: 95, overage: 0 });

      // a replica whose clock lags: the record joins the customer's series at its end, not before it
      setNow('2025-03-02T12:30:00.000Z');
      const late = await use({ customerId: c.id, feature: f.slug, amount: 1 });
      expect(late.status).toBe(201);
      expect(late.body.data.usage.recordedAt).toBe('2025-03-02T13:00:00.000Z');
      expect(late.body.data.balance).toEqual({ limit: 100, used: 6, held: 0, remaining: 94, overage: 0 });
      setNow('2025-03-03T00:00:00.000Z');
      expect(await balance()).toEqual({ limit: 100, used: 0, held: 0, remaining: 100, overage: 0 });
    });

    it('the same eventId answers the first record with replayed: true (even for a customer disabled since); another amount or feature is 409 USAGE_EVENT_CONFLICT', async () => {
      const f = await feature();
      const g = await feature();
      const p = await plan('tier', [
        { featureId: f.id, limit: 10 },
        { featureId: g.id, limit: 10 },
      ]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-01T00:00:00.000Z', null);
      setNow('2025-01-02T00:00:00.000Z');
      const body = {
        customer: { type: 'username', value: c.username },
        feature: f.slug,
        amount: 2,
        eventId: 'evt 1',
      };
      const first = await t.http.post(`${P}/usage`).set(A()).send(body);
      expect(first.status).toBe(201);
      await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ enabled: false }).expect(200);
      setNow('2025-06-02T00:00:00.000Z');
      const again = await t.http
        .post(`${P}/usage`)
        .set(A())
        .send({ ...body, allowOverage: true });
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual({
        usage: first.body.data.usage,
        balance: first.body.data.balance,
        replayed: true,
      });
      expectError(
        await t.http
          .post(`${P}/usage`)
          .set(A())
          .send({ ...body, amount: 3 }),
        409,
        'USAGE_EVENT_CONFLICT',
      );
      expectError(
        await t.http
          .post(`${P}/usage`)
          .set(A())
          .send({ ...body, feature: g.slug }),
        409,
        'USAGE_EVENT_CONFLICT',
      );
      // a new event of the disabled customer
      expectError(
        await t.http
          .post(`${P}/usage`)
          .set(A())
          .send({ ...body, eventId: 'evt 2' }),
        403,
        'CUSTOMER_DISABLED',
      );
      expect((await check({ customerId: c.id, feature: f.slug })).body.data).toMatchObject({
        allowed: false,
        reason: 'CUSTOMER_DISABLED',
      });
      expect((await entitlements(c.id)).find((e) => e.feature.id === f.id).granted).toBe(true);
      expect(await records(c.id)).toBe(1);
    });

    it('order of refusals: CUSTOMER_NOT_FOUND before FEATURE_NOT_FOUND', async () => {
      expectError(
        await use({ customerId: 999999, feature: 'nope-nope', amount: 1 }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      const c = await customer();
      expectError(await use({ customerId: c.id, feature: 'nope-nope', amount: 1 }), 404, 'FEATURE_NOT_FOUND');
      expectError(await check({ customerId: c.id, featureId: 999999 }), 404, 'FEATURE_NOT_FOUND');
    });

    it('a batch decides each event on its own, in order: 201, 409 QUOTA_EXCEEDED, 200 replay, 404', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 3 }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-01T00:00:00.000Z', null);
      setNow('2025-01-02T00:00:00.000Z');
      const ev = (eventId: string, amount: number, extra = {}) => ({
        customerId: c.id,
        feature: f.slug,
        eventId,
        amount,
        ...extra,
      });
      const res = await t.http
        .post(`${P}/usage/batch`)
        .set(A())
        .send({
          events: [
            ev('b1', 2),
            ev('b2', 2),
            ev('b1', 2),
            ev('b3', 1, { feature: 'no-such-feature' }),
            ev('b4', 1),
          ],
        });
      expect(res.status).toBe(200);
      expect(
        res.body.data.results.map((r: any) => [r.status, r.error?.code ?? null, r.replayed ?? false]),
      ).toEqual([
        [201, null, false],
        [409, 'QUOTA_EXCEEDED', false],
        [200, null, true],
        [404, 'FEATURE_NOT_FOUND', false],
        [201, null, false],
      ]);
      expect(res.body.data.results[4].balance).toEqual({
        limit: 3,
        used: 3,
        held: 0,
        remaining: 0,
        overage: 0,
      });
      expect(await records(c.id)).toBe(2);
    });

    /** A customer with unlimited quotas of two features from 2025-01-01, for the ledger's pages. */
    async function ledgerOfTwoFeatures() {
      const f = await feature();
      const g = await feature();
      const p = await plan('tier', [
        { featureId: f.id, limit: null },
        { featureId: g.id, limit: null },
      ]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', '2025-01-01T00:00:00.000Z', null);
      return { f, g, c };
    }

    it('the ledger: newest first, paged, filtered by featureId, from (inclusive) and to (exclusive)', async () => {
      const { f, g, c } = await ledgerOfTwoFeatures();
      for (const [i, day] of ['02', '03', '04'].entries()) {
        setNow(`2025-01-${day}T00:00:00.000Z`);
        await use({ customerId: c.id, feature: f.slug, amount: i + 1 }).expect(201);
      }
      await use({ customerId: c.id, feature: g.slug, amount: 9 }).expect(201);
      const page = await t.http.get(`${P}/customers/${c.id}/usage?pageSize=2`).set(A());
      expect(page.status).toBe(200);
      expect(page.body.data).toMatchObject({ total: 4, page: 1, pageSize: 2, totalPages: 2 });
      expect(page.body.data.data.map((u: any) => u.amount)).toEqual([9, 3]);
      const filtered = await t.http
        .get(
          `${P}/customers/${c.id}/usage?featureId=${f.id}&from=2025-01-03T00:00:00.000Z&to=2025-01-04T00:00:00.000Z`,
        )
        .set(A());
      expect(filtered.body.data.data.map((u: any) => u.amount)).toEqual([2]);
      expect(filtered.body.data.data[0].recordedAt).toMatch(ISO_MS);
      expectError(
        await t.http.get(`${P}/customers/${c.id}/usage?from=yesterday`).set(A()),
        400,
        'VALIDATION_FAILED',
      );
    });
    it("the ledger's total counts records by their places: equal to a count for every filter, after a batch, a hand-written record and a pruned start", async () => {
      const { f, g, c } = await ledgerOfTwoFeatures();
      for (const day of ['02', '03', '04', '05']) {
        setNow(`2025-01-${day}T00:00:00.000Z`);
        await use({ customerId: c.id, feature: f.slug, amount: 1 }).expect(201);
        if (day !== '03') await use({ customerId: c.id, feature: g.slug, amount: 1 }).expect(201);
      }
      // one customer's records of one batch, at one instant
      setNow('2025-01-06T00:00:00.000Z');
      const batch = await t.http
        .post(`${P}/usage/batch`)
        .set(A())
        .send({
          events: ['x1', 'x2', 'x3', 'x4'].map((eventId, i) => ({
            customerId: c.id,
            feature: i === 3 ? g.slug : f.slug,
            eventId: `${eventId}-${seq}`,
            amount: 1,
          })),
        });
      expect(batch.status).toBe(200);
      // a record written by hand, without its place: the insert trigger numbers it
      await t.dataSource.query(
        `INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, recorded_at)
         VALUES ($1, $2, $3, 'by-hand', 1, '2025-01-07T00:00:00.000Z')`,
        [a.id, c.id, f.id],
      );
      const places = await t.dataSource.query(
        `SELECT feature_id, array_agg(feature_seq::int ORDER BY recorded_at, id) AS places
           FROM usage_records WHERE customer_id = $1 GROUP BY feature_id ORDER BY feature_id`,
        [c.id],
      );
      expect(places).toEqual([
        { feature_id: f.id, places: [1, 2, 3, 4, 5, 6, 7, 8] },
        { feature_id: g.id, places: [1, 2, 3, 4] },
      ]);

      const filters: Array<{ featureId?: number; from?: string; to?: string }> = [
        {},
        { featureId: f.id },
        { featureId: g.id },
        { from: '2025-01-03T00:00:00.000Z' },
        { to: '2025-01-05T00:00:00.000Z' },
        { from: '2025-01-03T00:00:00.000Z', to: '2025-01-06T00:00:00.000Z' },
        { featureId: g.id, from: '2025-01-03T00:00:00.000Z', to: '2025-01-05T00:00:00.000Z' },
        { featureId: f.id, from: '2025-01-06T00:00:00.000Z', to: '2025-01-06T00:00:00.001Z' },
        { from: '2025-01-08T00:00:00.000Z' },
        { to: '2025-01-02T00:00:00.000Z' },
        { from: '2025-01-04T12:00:00.000Z', to: '2025-01-04T13:00:00.000Z' },
      ];
      const expectTotalsToBeCounts = async () => {
        for (const filter of filters) {
          const query = new URLSearchParams(
            Object.entries(filter).map(([k, v]) => [k, String(v)] as [string, string]),
          );
          const page = await t.http.get(`${P}/customers/${c.id}/usage?${query}`).set(A());
          expect(page.status).toBe(200);
          const [{ n }] = await t.dataSource.query(
            `SELECT count(*)::int AS n FROM usage_records
              WHERE customer_id = $1 AND ($2::int IS NULL OR feature_id = $2)
                AND ($3::timestamptz IS NULL OR recorded_at >= $3) AND ($4::timestamptz IS NULL OR recorded_at < $4)`,
            [c.id, filter.featureId ?? null, filter.from ?? null, filter.to ?? null],
          );
          expect({ filter, total: page.body.data.total }).toEqual({ filter, total: n });
        }
      };
      await expectTotalsToBeCounts();
      // the oldest records pruned (docs/entitlements.md#pruning-or-partitioning-the-ledger)
      await t.dataSource.query(`DELETE FROM usage_records WHERE customer_id = $1 AND recorded_at < $2`, [
        c.id,
        '2025-01-04T00:00:00.000Z',
      ]);
      await expectTotalsToBeCounts();
    });
  });

  describe('concurrency (the customer row lock), across two replicas', () => {
    it('50 concurrent consumes of 1 against a limit of 20: exactly 20 records (201) and 30 409 QUOTA_EXCEEDED', async () => {
      const replica = await t.startReplica();
      const other = request(replica.getHttpServer());
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 20 }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', new Date(Date.now() - DAY).toISOString(), null);
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 ? other : t.http)
            .post(`${P}/usage`)
            .set(A())
            .send({ customerId: c.id, feature: f.slug, amount: 1, eventId: `c-${i}` }),
        ),
      );
      const statuses = answers.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(20);
      expect(statuses.filter((s) => s === 409)).toHaveLength(30);
      for (const r of answers.filter((x) => x.status === 409))
        expect(r.body.error.code).toBe('QUOTA_EXCEEDED');
      expect(await records(c.id)).toBe(20);
    });

    it('a consume that waited for the lock sees the grant that held it: a window added under the lock grants the feature (201, not 403)', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 5 }]);
      const c = await customer();
      const runner = t.dataSource.createQueryRunner();
      await runner.connect();
      try {
        await runner.startTransaction();
        await runner.query('SELECT id FROM customers WHERE id = $1 FOR UPDATE', [c.id]);
        const pending = use({ customerId: c.id, feature: f.slug, amount: 1 }).then((r) => r);
        // the consume is now waiting for the row lock, with nothing granted yet
        await new Promise((resolve) => setTimeout(resolve, 500));
        await runner.query(
          `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
           VALUES ($1, $2, $3, 'tier', now() - interval '1 hour', NULL, 'activation')`,
          [a.id, c.id, p.id],
        );
        await runner.commitTransaction();
        const res = await pending;
        expect(res.status).toBe(201);
        expect(res.body.data.balance).toEqual({ limit: 5, used: 1, held: 0, remaining: 4, overage: 0 });
      } finally {
        await runner.release();
      }
    });

    it('Idempotency-Key on POST /usage: the same key and body replays the 201 with Idempotent-Replayed', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 5 }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', new Date(Date.now() - DAY).toISOString(), null);
      const body = { customerId: c.id, feature: f.slug, amount: 1, eventId: 'idem-1' };
      const first = await t.http.post(`${P}/usage`).set(A()).set('Idempotency-Key', 'k-usage-1').send(body);
      expect(first.status).toBe(201);
      const again = await t.http.post(`${P}/usage`).set(A()).set('Idempotency-Key', 'k-usage-1').send(body);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(await records(c.id)).toBe(1);
    });

    it('the same eventId sent 20 times at once: one record, 19 answers replayed: true with the same usage', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 100 }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', new Date(Date.now() - DAY).toISOString(), null);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          t.http
            .post(`${P}/usage`)
            .set(A())
            .send({ customerId: c.id, feature: f.slug, amount: 1, eventId: 'same' }),
        ),
      );
      expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
      const replays = answers.filter((r) => r.status === 200);
      expect(replays).toHaveLength(19);
      const id = answers.find((r) => r.status === 201)!.body.data.usage.id;
      for (const r of replays) expect(r.body.data).toMatchObject({ replayed: true, usage: { id } });
      expect(await records(c.id)).toBe(1);
    });

    it('redemptions and consumes for one customer interleaved: the counters match the ledger afterwards', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 5, resetInterval: 'P1M' }], 20);
      const c = await customer();
      const codes = (
        await t.http.post(`${P}/codes`).set(A()).send({ planId: p.id, duration: 'P1D', count: 4 })
      ).body.data.codes as string[];
      const calls = [
        ...codes.map((code) =>
          t.http
            .post(`${P}/redemptions`)
            .set(A())
            .send({ code, customer: { type: 'username', value: c.username } }),
        ),
        ...Array.from({ length: 12 }, (_, i) =>
          t.http
            .post(`${P}/usage`)
            .set(A())
            .send({ customerId: c.id, feature: f.slug, amount: 1, eventId: `r-${i}` }),
        ),
      ];
      const answers = await Promise.all(calls);
      expect(answers.slice(0, 4).map((r) => r.status)).toEqual([200, 200, 200, 200]);
      const ok = answers.slice(4).filter((r) => r.status === 201).length;
      const [{ sum }] = await t.dataSource.query(
        `SELECT coalesce(sum(a.amount), 0)::float AS sum FROM usage_allocations a WHERE a.customer_id = $1 AND NOT a.reversed`,
        [c.id],
      );
      const res = await check({ customerId: c.id, feature: f.slug, amount: 0 });
      expect(res.body.data.balance.used).toBe(sum);
      expect(res.body.data.balance.used).toBe(ok);
      expect(ok).toBeLessThanOrEqual(5);
      expect(await records(c.id)).toBe(ok);
    });
  });

  describe('dry runs: entitlementsAfter', () => {
    it('an activation dry run answers the entitlements right after the grant; nothing changes', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 7, resetInterval: 'P1M' }]);
      const c = await customer();
      const res = await t.http
        .post(`${P}/subscriptions/activate?dryRun=true`)
        .set(A())
        .send({ customer: { type: 'username', value: c.username }, planId: p.id, duration: 'P30D' });
      expect(res.status).toBe(200);
      const after = res.body.data.entitlementsAfter.find((e: any) => e.feature.id === f.id);
      expect(after).toMatchObject({ granted: true, balance: { limit: 7, used: 0, remaining: 7 } });
      expect(after.accessEndsAt).toMatch(ISO_MS);
      const now = (await entitlements(c.id)).find((e) => e.feature.id === f.id);
      expect(now).toMatchObject({ granted: false, buckets: [] });
      // a real activation has no entitlementsAfter
      const real = await t.http
        .post(`${P}/subscriptions/activate`)
        .set(A())
        .send({ customer: { type: 'username', value: c.username }, planId: p.id, duration: 'P30D' });
      expect(real.body.data.entitlementsAfter).toBeUndefined();
    });
  });

  describe('tenancy', () => {
    it("another project's customer, feature and usage id are not found on every route", async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10 }]);
      const c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', new Date(Date.now() - DAY).toISOString(), null);
      const u = await use({ customerId: c.id, feature: f.slug, amount: 1 });
      expect(u.status).toBe(201);
      const theirs = await customer(B());

      expectError(
        await t.http.get(`${P}/customers/${c.id}/entitlements`).set(B()),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(await t.http.get(`${P}/customers/${c.id}/usage`).set(B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await check({ customerId: c.id, feature: f.slug }, B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(
        await check({ customer: { type: 'username', value: c.username }, feature: f.slug }, B()),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(await check({ customerId: theirs.id, feature: f.slug }, B()), 404, 'FEATURE_NOT_FOUND');
      expectError(await check({ customerId: theirs.id, featureId: f.id }, B()), 404, 'FEATURE_NOT_FOUND');
      expectError(
        await use({ customerId: c.id, feature: f.slug, amount: 1 }, B()),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await use({ customerId: theirs.id, feature: f.slug, amount: 1 }, B()),
        404,
        'FEATURE_NOT_FOUND',
      );
      const batch = await t.http
        .post(`${P}/usage/batch`)
        .set(B())
        .send({ events: [{ customerId: c.id, feature: f.slug, amount: 1, eventId: 'x' }] });
      expect(batch.body.data.results[0]).toMatchObject({
        status: 404,
        error: { code: 'CUSTOMER_NOT_FOUND' },
      });
      expectError(
        await t.http.post(`${P}/usage/${u.body.data.usage.id}/reverse`).set(B()),
        404,
        'USAGE_NOT_FOUND',
      );
      expect(await records(c.id)).toBe(1);
      expect(
        (
          await t.dataSource.query('SELECT reversed_at FROM usage_records WHERE id = $1', [
            u.body.data.usage.id,
          ])
        )[0].reversed_at,
      ).toBeNull();
      // B's own entitlements list shows only B's features
      expect((await entitlements(theirs.id, B())).map((e) => e.feature.id)).not.toContain(f.id);
    });

    it('the public routes show only the logged-in customer; a customer in the public check body is 400', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1D' }]);
      const me = await customer(A(), { password: 'correct horse' });
      const other = await customer();
      await windowOf(a.id, me.id, p.id, 'tier', new Date(Date.now() - DAY).toISOString(), null);
      await windowOf(a.id, other.id, p.id, 'tier', new Date(Date.now() - DAY).toISOString(), null);
      await use({ customerId: other.id, feature: f.slug, amount: 4 }).expect(201);
      await use({ customerId: me.id, feature: f.slug, amount: 1 }).expect(201);
      const key = { 'X-Service-Key': a.publicKey };
      const login = await t.http
        .post('/api/public/v1/auth/login')
        .set(key)
        .send({ identifier: { type: 'username', value: me.username }, password: 'correct horse' });
      expect(login.status).toBe(200);
      const auth = { ...key, Authorization: `Bearer ${login.body.data.token}` };
      const list = await t.http.get('/api/public/v1/me/entitlements').set(auth);
      expect(list.status).toBe(200);
      expect(list.body.data.find((e: any) => e.feature.id === f.id).balance).toEqual({
        limit: 10,
        used: 1,
        held: 0,
        remaining: 9,
        overage: 0,
      });
      const checked = await t.http
        .post('/api/public/v1/me/entitlements/check')
        .set(auth)
        .send({ feature: f.slug, amount: 9 });
      expect(checked.status).toBe(200);
      expect(checked.body.data).toMatchObject({ allowed: true, balance: { used: 1 } });
      const refused = await t.http
        .post('/api/public/v1/me/entitlements/check')
        .set(auth)
        .send({ feature: f.slug, customerId: other.id });
      expectError(refused, 400, 'VALIDATION_FAILED');
      expect(refused.body.error.details.map((d: any) => d.field)).toContain('customerId');
      // another project's feature is not found for this customer
      const bf = await feature(true, B());
      expectError(
        await t.http.post('/api/public/v1/me/entitlements/check').set(auth).send({ featureId: bf.id }),
        404,
        'FEATURE_NOT_FOUND',
      );
      // the public redemption takes dryRun and answers entitlementsAfter
      const g = await feature();
      const extra = await plan('extra', [{ featureId: g.id, limit: 3 }]);
      const code = (await t.http.post(`${P}/codes`).set(A()).send({ planId: extra.id, duration: 'P1D' })).body
        .data.codes[0];
      const dry = await t.http.post('/api/public/v1/me/redemptions?dryRun=true').set(auth).send({ code });
      expect(dry.status).toBe(200);
      expect(dry.body.data.entitlementsAfter.find((e: any) => e.feature.id === g.id)).toMatchObject({
        granted: true,
        balance: { limit: 3, used: 0, held: 0, remaining: 3, overage: 0 },
      });
      expect(
        (await t.http.get('/api/public/v1/me/entitlements').set(auth)).body.data.find(
          (e: any) => e.feature.id === g.id,
        ).granted,
      ).toBe(false);
    });
  });

  describe('bad input: a 4xx envelope naming the field, nothing recorded', () => {
    let c: { id: number; username: string };
    let f: { id: number; slug: string };
    beforeAll(async () => {
      f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 1000 }]);
      c = await customer();
      await windowOf(a.id, c.id, p.id, 'tier', new Date(Date.now() - DAY).toISOString(), null);
    });

    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['amount 0', { amount: 0 }, 'amount'],
      ['a negative amount', { amount: -1 }, 'amount'],
      ['amount NaN (a string)', { amount: 'NaN' }, 'amount'],
      ['more than 6 decimals', { amount: 0.0000001 }, 'amount'],
      ['a 256-character eventId', { eventId: 'x'.repeat(256) }, 'eventId'],
      ['an eventId with a control character', { eventId: 'a\tb' }, 'eventId'],
      ['no customer', { customerId: undefined }, 'customer'],
      ['customer and customerId both', { customer: { type: 'username', value: 'someone1' } }, 'customer'],
      ['feature and featureId both', { featureId: 1 }, 'feature'],
    ];
    it.each(cases)('%s → 400 VALIDATION_FAILED naming %s', async (_, change, field) => {
      const body = { customerId: c.id, feature: f.slug, amount: 1, eventId: `bad-${++seq}`, ...change };
      const res = await t.http.post(`${P}/usage`).set(A()).send(body);
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
      expect(await records(c.id)).toBe(0);
    });

    it('a feature slug of another project → 404 FEATURE_NOT_FOUND; a batch of 101 → 400 naming events', async () => {
      const theirs = await feature(true, B());
      expectError(await use({ customerId: c.id, feature: theirs.slug, amount: 1 }), 404, 'FEATURE_NOT_FOUND');
      const events = Array.from({ length: 101 }, (_, i) => ({
        customerId: c.id,
        feature: f.slug,
        amount: 1,
        eventId: `x${i}`,
      }));
      const res = await t.http.post(`${P}/usage/batch`).set(A()).send({ events });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: any) => d.field)).toContain('events');
      expectError(
        await t.http.post(`${P}/usage/batch`).set(A()).send({ events: [] }),
        400,
        'VALIDATION_FAILED',
      );
      expect(await records(c.id)).toBe(0);
    });

    it('check: amount 0 is allowed ("granted at all"), a negative amount is 400; a quota limit -1 or a fractional resetInterval is 400', async () => {
      expect((await check({ customerId: c.id, feature: f.slug, amount: 0 })).body.data.allowed).toBe(true);
      expectError(await check({ customerId: c.id, feature: f.slug, amount: -1 }), 400, 'VALIDATION_FAILED');
      const bad = await t.http
        .post(`${P}/plans`)
        .set(A())
        .send({
          slug: 'bad-q',
          name: 'x',
          value: 1,
          group: 'g',
          quotas: [{ featureId: f.id, limit: 1, resetInterval: 'PT1.5H' }],
        });
      expectError(bad, 400, 'VALIDATION_FAILED');
      expect(bad.body.error.details[0].field).toBe('quotas.0.resetInterval');
    });
  });
});
