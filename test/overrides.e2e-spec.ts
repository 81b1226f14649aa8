import { Clock } from '../src/common/clock';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog, clockSetter } from './support/catalog';
import { expectError } from './support/expect';

const P = '/api/private/v1';
const DAY = 24 * 3_600_000;

/**
 * Per-customer overrides (docs/entitlements.md): their private interface through HTTP on a real
 * PostgreSQL: set (and what it copies from the plans), read, list, remove, expiry, refusals and
 * their order, tenancy, `Idempotency-Key`, dry runs and events. How an override changes the
 * buckets is tested with the entitlements.
 */
describe('overrides', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  let clock: Clock;
  let setup: ReturnType<typeof catalog>;
  let seq = 0;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);
  const NOW = new Date('2026-03-10T12:00:00.000Z');

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject();
    b = await t.createProject();
    clock = t.app.get(Clock);
    setup = catalog(t, 'over');
  });
  afterAll(() => t.close());
  beforeEach(() => setNow(NOW));
  afterEach(() => jest.restoreAllMocks());

  const setNow = (at: string | Date) => clockSetter(clock)(at);
  const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString();

  const feature = (metered = true, auth = A()) => setup.feature(auth, metered);
  const customer = (auth = A()) => setup.customer(auth);

  /** A paid plan of one quota, and a window of it for the customer written straight into the chain. */
  async function planWindow(
    customerId: number,
    quota: {
      featureId: number;
      limit: number | null;
      priority?: number;
      resetInterval?: string | null;
    } & Record<string, unknown>,
    validFrom: string,
  ): Promise<void> {
    const slug = `p-${++seq}`;
    const group = `g-${seq}`;
    const plan = await t.http
      .post(`${P}/plans`)
      .set(A())
      .send({ slug, name: slug, value: 10, group, quotas: [quota] });
    expect(plan.status).toBe(201);
    await t.dataSource.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, status)
       VALUES ($1, $2, $3, $4, $5, NULL, 'activation', 'active')`,
      [a.id, customerId, plan.body.data.id, group, validFrom],
    );
  }

  const path = (customerId: number | string, featureId: number | string, query = '') =>
    `${P}/customers/${customerId}/overrides/${featureId}${query}`;
  const put = (
    customerId: number | string,
    featureId: number | string,
    body: object,
    auth = A(),
    query = '',
  ) =>
    t.http
      .put(path(customerId, featureId, query))
      .set(auth)
      .send(body);
  const get = (customerId: number | string, featureId: number | string, auth = A()) =>
    t.http.get(path(customerId, featureId)).set(auth);
  const del = (customerId: number | string, featureId: number | string, auth = A(), query = '') =>
    t.http.delete(path(customerId, featureId, query)).set(auth);
  const list = (customerId: number | string, auth = A()) =>
    t.http.get(`${P}/customers/${customerId}/overrides`).set(auth);
  const rows = async (customerId: number) =>
    (
      await t.dataSource.query('SELECT count(*)::int AS n FROM customer_overrides WHERE customer_id = $1', [
        customerId,
      ])
    )[0].n as number;
  const events = async (type: string, customerId: number) => {
    const res = await t.http.get(`${P}/events?type=${type}&customerId=${customerId}`).set(A());
    expect(res.status).toBe(200);
    // newest first: oldest first here
    return (res.body.data.data as Array<{ type: string; data: any }>).reverse();
  };

  describe('set', () => {
    it('a metered set with no plan bucket: anchor now, resetInterval null, priority 0; 200 { override }', async () => {
      const f = await feature();
      const c = await customer();
      const res = await put(c.id, f.id, { mode: 'set', limit: 5000 });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        override: {
          customerId: c.id,
          featureId: f.id,
          mode: 'set',
          limit: 5000,
          priority: 0,
          resetInterval: null,
          resetAnchor: 'run',
          resetDayOfMonth: null,
          resetTimeZone: null,
          anchor: NOW.toISOString(),
          expiresAt: null,
          reason: null,
          createdAt: NOW.toISOString(),
        },
      });
      expect((await get(c.id, f.id)).body.data).toEqual(res.body.data.override);
    });

    it("copies the first plan bucket's run anchor, reset interval and priority unless named", async () => {
      const f = await feature();
      const c = await customer();
      await planWindow(
        c.id,
        { featureId: f.id, limit: 100, priority: 5, resetInterval: 'P1M' },
        '2026-01-15T00:00:00.000Z',
      );
      const copied = await put(c.id, f.id, { mode: 'set', limit: null, reason: 'enterprise trial' });
      expect(copied.body.data.override).toMatchObject({
        limit: null,
        anchor: '2026-01-15T00:00:00.000Z',
        resetInterval: 'P1M',
        resetAnchor: 'run',
        resetDayOfMonth: null,
        resetTimeZone: null,
        priority: 5,
        reason: 'enterprise trial',
      });
      const named = await put(c.id, f.id, { mode: 'set', limit: 1.5, resetInterval: 'P1D', priority: -3 });
      expect(named.body.data.override).toMatchObject({
        limit: 1.5,
        anchor: '2026-01-15T00:00:00.000Z',
        resetInterval: 'P1D',
        priority: -3,
        reason: null,
      });
      const never = await put(c.id, f.id, { mode: 'set', limit: 0, resetInterval: null });
      expect(never.body.data.override).toMatchObject({ limit: 0, resetInterval: null, priority: 5 });
      expect(await rows(c.id)).toBe(1);
    });

    it('deny: limit, priority, resetInterval and anchor null; the entitlements after it say not granted', async () => {
      const f = await feature();
      const c = await customer();
      await planWindow(c.id, { featureId: f.id, limit: 100 }, '2026-01-01T00:00:00.000Z');
      const res = await put(c.id, f.id, { mode: 'deny', expiresAt: at(DAY) }, A(), '?dryRun=true');
      expect(res.status).toBe(200);
      expect(res.body.data.override).toMatchObject({
        mode: 'deny',
        limit: null,
        priority: null,
        resetInterval: null,
        resetAnchor: null,
        resetDayOfMonth: null,
        resetTimeZone: null,
        anchor: null,
        expiresAt: at(DAY),
      });
      const after = res.body.data.entitlementsAfter.find((e: any) => e.feature.id === f.id);
      expect(after.granted).toBe(false);
    });

    it('set on a boolean feature: granted, every period field null', async () => {
      const f = await feature(false);
      const c = await customer();
      const res = await put(c.id, f.id, { mode: 'set' });
      expect(res.status).toBe(200);
      expect(res.body.data.override).toMatchObject({
        mode: 'set',
        limit: null,
        priority: null,
        resetInterval: null,
        resetAnchor: null,
        resetDayOfMonth: null,
        resetTimeZone: null,
        anchor: null,
      });
    });

    it('a disabled customer may receive an override', async () => {
      const f = await feature();
      const c = await customer();
      await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ enabled: false }).expect(200);
      expect((await put(c.id, f.id, { mode: 'deny' })).status).toBe(200);
    });
  });

  describe('values: 400 VALIDATION_FAILED naming the field, nothing written', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['mode missing', { limit: 1 }, 'mode'],
      ['mode unknown', { mode: 'grant', limit: 1 }, 'mode'],
      ['limit negative', { mode: 'set', limit: -1 }, 'limit'],
      ['limit 7 decimals', { mode: 'set', limit: 0.0000001 }, 'limit'],
      ['limit above 10^12', { mode: 'set', limit: 1_000_000_000_001 }, 'limit'],
      ['limit a string', { mode: 'set', limit: '5' }, 'limit'],
      ['resetInterval not a duration', { mode: 'set', limit: 1, resetInterval: 'monthly' }, 'resetInterval'],
      ['resetInterval with a fraction', { mode: 'set', limit: 1, resetInterval: 'P1.5D' }, 'resetInterval'],
      ['priority beyond int32', { mode: 'set', limit: 1, priority: -2147483649 }, 'priority'],
      ['priority null', { mode: 'set', limit: 1, priority: null }, 'priority'],
      ['expiresAt now', { mode: 'set', limit: 1, expiresAt: NOW.toISOString() }, 'expiresAt'],
      ['expiresAt without a zone', { mode: 'set', limit: 1, expiresAt: '2027-01-01T00:00:00' }, 'expiresAt'],
      ['reason empty', { mode: 'deny', reason: '' }, 'reason'],
      ['reason of 501 characters', { mode: 'deny', reason: 'x'.repeat(501) }, 'reason'],
      ['deny with a limit', { mode: 'deny', limit: 5 }, 'limit'],
      ['deny with a null limit', { mode: 'deny', limit: null }, 'limit'],
      ['deny with a null resetInterval', { mode: 'deny', resetInterval: null }, 'resetInterval'],
      ['deny with a priority', { mode: 'deny', priority: 0 }, 'priority'],
      ['set on a metered feature without limit', { mode: 'set' }, 'limit'],
      ['an unknown field', { mode: 'deny', colour: 'red' }, 'colour'],
    ];
    it.each(cases)('%s', async (_, body, field) => {
      const f = await feature();
      const c = await customer();
      const res = await put(c.id, f.id, body);
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(await rows(c.id)).toBe(0);
    });

    it.each(['limit', 'resetInterval', 'priority'])(
      'on a boolean feature %s is refused, even as null',
      async (field) => {
        const f = await feature(false);
        const c = await customer();
        for (const value of [null, field === 'resetInterval' ? 'P1M' : 1]) {
          const res = await put(c.id, f.id, { mode: 'set', [field]: value });
          expectError(res, 400, 'VALIDATION_FAILED');
          expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
        }
        expect(await rows(c.id)).toBe(0);
      },
    );
  });

  describe('order of refusals', () => {
    it('PUT: body, CUSTOMER_NOT_FOUND, FEATURE_NOT_FOUND, then the rules of the kind', async () => {
      const boolean = await feature(false);
      const c = await customer();
      expectError(await put(999999, 999999, { mode: 'deny', limit: 1 }), 400, 'VALIDATION_FAILED');
      expectError(await put(999999, boolean.id, { mode: 'set', limit: 1 }), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await put(c.id, 999999, { mode: 'set', limit: 1 }), 404, 'FEATURE_NOT_FOUND');
      expectError(await put(c.id, boolean.id, { mode: 'set', limit: 1 }), 400, 'VALIDATION_FAILED');
      expectError(await put(c.id, 'x', { mode: 'deny' }), 400, 'VALIDATION_FAILED');
    });

    it('GET and DELETE: CUSTOMER_NOT_FOUND, FEATURE_NOT_FOUND, OVERRIDE_NOT_FOUND', async () => {
      const f = await feature();
      const c = await customer();
      for (const call of [get, del]) {
        expectError(await call(999999, 999999), 404, 'CUSTOMER_NOT_FOUND');
        expectError(await call(c.id, 999999), 404, 'FEATURE_NOT_FOUND');
        expectError(await call(c.id, f.id), 404, 'OVERRIDE_NOT_FOUND');
        expectError(await call(c.id, 0), 400, 'VALIDATION_FAILED');
      }
      expectError(await list(999999), 404, 'CUSTOMER_NOT_FOUND');
    });
  });

  describe('one per customer and feature; expiry', () => {
    it('a PUT replaces the override; the list is a plain array of those in effect by feature id', async () => {
      const f1 = await feature();
      const f2 = await feature(false);
      const f3 = await feature();
      const c = await customer();
      await put(c.id, f3.id, { mode: 'deny' });
      await put(c.id, f1.id, { mode: 'set', limit: 1 });
      await put(c.id, f2.id, { mode: 'set', expiresAt: at(DAY) });
      await put(c.id, f1.id, { mode: 'set', limit: 2 });
      const res = await list(c.id);
      expect(res.status).toBe(200);
      expect(res.body.data.map((o: any) => [o.featureId, o.mode, o.limit])).toEqual([
        [f1.id, 'set', 2],
        [f2.id, 'set', null],
        [f3.id, 'deny', null],
      ]);
      setNow(at(DAY));
      expect((await list(c.id)).body.data.map((o: any) => o.featureId)).toEqual([f1.id, f3.id]);
    });

    it('an expired override counts as none: GET and DELETE 404, and a new PUT replaces it with previous null', async () => {
      const f = await feature();
      const c = await customer();
      await put(c.id, f.id, { mode: 'set', limit: 3, expiresAt: at(DAY) });
      setNow(at(DAY - 1));
      expect((await get(c.id, f.id)).status).toBe(200);
      setNow(at(DAY));
      expectError(await get(c.id, f.id), 404, 'OVERRIDE_NOT_FOUND');
      expectError(await del(c.id, f.id), 404, 'OVERRIDE_NOT_FOUND');
      expect(await events('override.removed', c.id)).toHaveLength(0);
      const again = await put(c.id, f.id, { mode: 'deny' });
      expect(again.body.data.override).toMatchObject({ mode: 'deny', createdAt: at(DAY) });
      const sets = await events('override.set', c.id);
      expect(sets).toHaveLength(2);
      expect(sets[1].data.previous).toBeNull();
      expect(await rows(c.id)).toBe(1);
    });
  });

  describe('calendar reset rules (copied with resetInterval)', () => {
    const check = async (customerId: number, featureId: number) => {
      const res = await t.http.post(`${P}/entitlements/check`).set(A()).send({ customerId, featureId });
      expect(res.status).toBe(200);
      return res.body.data;
    };
    const period = (bucket: any) => ({
      source: bucket.source,
      periodStart: bucket.periodStart,
      periodEnd: bucket.periodEnd,
      resetAnchor: bucket.resetAnchor,
      timeZone: bucket.timeZone,
    });

    it("a set copies a calendar P1D quota's anchor, day and zone; its periods are New York days from its anchor", async () => {
      const f = await feature();
      const c = await customer();
      const quota = {
        featureId: f.id,
        limit: 100,
        resetInterval: 'P1D',
        resetAnchor: 'calendar',
        resetTimeZone: 'America/New_York',
      };
      await planWindow(c.id, quota, '2026-03-01T00:00:00.000Z');
      const res = await put(c.id, f.id, { mode: 'set', limit: 7 });
      expect(res.status).toBe(200);
      expect(res.body.data.override).toMatchObject({
        anchor: '2026-03-01T00:00:00.000Z',
        resetInterval: 'P1D',
        resetAnchor: 'calendar',
        resetDayOfMonth: null,
        resetTimeZone: 'America/New_York',
      });
      expect((await get(c.id, f.id)).body.data).toEqual(res.body.data.override);

      // 2026-03-10 is after the switch to EDT (March 8): the New York day starts at 04:00Z
      const now = await check(c.id, f.id);
      expect(now.override).toEqual(res.body.data.override);
      expect(now.buckets.map(period)).toEqual([
        {
          source: 'override',
          periodStart: '2026-03-10T04:00:00.000Z',
          periodEnd: '2026-03-11T04:00:00.000Z',
          resetAnchor: 'calendar',
          timeZone: 'America/New_York',
        },
      ]);
      // EST again after November 1: 05:00Z
      setNow('2026-11-02T12:00:00.000Z');
      expect((await check(c.id, f.id)).buckets.map(period)).toEqual([
        {
          source: 'override',
          periodStart: '2026-11-02T05:00:00.000Z',
          periodEnd: '2026-11-03T05:00:00.000Z',
          resetAnchor: 'calendar',
          timeZone: 'America/New_York',
        },
      ]);
    });

    it("copies resetDayOfMonth; a quota without its own zone follows the customer's, and the first period starts at the anchor", async () => {
      const f = await feature();
      const c = await setup.customer(A(), { timeZone: 'Asia/Tokyo' });
      await planWindow(
        c.id,
        { featureId: f.id, limit: 100, resetInterval: 'P1M', resetAnchor: 'calendar', resetDayOfMonth: 15 },
        '2026-03-01T00:00:00.000Z',
      );
      const res = await put(c.id, f.id, { mode: 'set', limit: 7 });
      expect(res.body.data.override).toMatchObject({
        anchor: '2026-03-01T00:00:00.000Z',
        resetInterval: 'P1M',
        resetAnchor: 'calendar',
        resetDayOfMonth: 15,
        resetTimeZone: null,
      });
      // the first boundary after the anchor is March 15, 00:00 in Tokyo
      expect((await check(c.id, f.id)).buckets.map(period)).toEqual([
        {
          source: 'override',
          periodStart: '2026-03-01T00:00:00.000Z',
          periodEnd: '2026-03-14T15:00:00.000Z',
          resetAnchor: 'calendar',
          timeZone: 'Asia/Tokyo',
        },
      ]);
    });

    it('a PUT naming resetInterval gets run, null, null: UTC periods from the anchor', async () => {
      const f = await feature();
      const c = await customer();
      await planWindow(
        c.id,
        {
          featureId: f.id,
          limit: 100,
          resetInterval: 'P1M',
          resetAnchor: 'calendar',
          resetDayOfMonth: 15,
          resetTimeZone: 'America/New_York',
        },
        '2026-03-01T00:00:00.000Z',
      );
      const res = await put(c.id, f.id, { mode: 'set', limit: 7, resetInterval: 'P1D' });
      expect(res.body.data.override).toMatchObject({
        anchor: '2026-03-01T00:00:00.000Z',
        resetInterval: 'P1D',
        resetAnchor: 'run',
        resetDayOfMonth: null,
        resetTimeZone: null,
      });
      expect((await check(c.id, f.id)).buckets.map(period)).toEqual([
        {
          source: 'override',
          periodStart: '2026-03-10T00:00:00.000Z',
          periodEnd: '2026-03-11T00:00:00.000Z',
          resetAnchor: 'run',
          timeZone: 'UTC',
        },
      ]);
      const never = await put(c.id, f.id, { mode: 'set', limit: 7, resetInterval: null });
      expect(never.body.data.override).toMatchObject({
        resetInterval: null,
        resetAnchor: 'run',
        resetDayOfMonth: null,
        resetTimeZone: null,
      });
    });

    it('deny and a set on a boolean feature show the three null, whatever the plan', async () => {
      const f = await feature();
      const c = await customer();
      await planWindow(
        c.id,
        { featureId: f.id, limit: 100, resetInterval: 'P1D', resetAnchor: 'calendar', resetTimeZone: 'UTC' },
        '2026-03-01T00:00:00.000Z',
      );
      const nulls = { resetAnchor: null, resetDayOfMonth: null, resetTimeZone: null };
      expect((await put(c.id, f.id, { mode: 'deny' })).body.data.override).toMatchObject(nulls);
      const flag = await feature(false);
      expect((await put(c.id, flag.id, { mode: 'set' })).body.data.override).toMatchObject(nulls);
    });
  });

  describe('delete', () => {
    it('answers the override as it was, removes it and records override.removed (deleted) once', async () => {
      const f = await feature();
      const c = await customer();
      const set = (await put(c.id, f.id, { mode: 'set', limit: 10, reason: 'r' })).body.data.override;
      setNow(at(60_000));
      const res = await del(c.id, f.id);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ override: set });
      expectError(await get(c.id, f.id), 404, 'OVERRIDE_NOT_FOUND');
      expectError(await del(c.id, f.id), 404, 'OVERRIDE_NOT_FOUND');
      expect(await rows(c.id)).toBe(0);
      const removed = await events('override.removed', c.id);
      expect(removed).toHaveLength(1);
      expect(removed[0].data).toEqual({
        customer: { id: c.id, username: c.username },
        customerSeq: expect.any(Number),
        override: set,
        reason: 'deleted',
      });
    });
  });

  describe('events', () => {
    it('every committed PUT records override.set with previous: the one replaced, or null', async () => {
      const f = await feature();
      const c = await customer();
      const first = (await put(c.id, f.id, { mode: 'set', limit: 1 })).body.data.override;
      setNow(at(1000));
      const second = (await put(c.id, f.id, { mode: 'set', limit: 1 })).body.data.override;
      const sets = await events('override.set', c.id);
      expect(sets.map((e) => e.data)).toEqual([
        {
          customer: { id: c.id, username: c.username },
          customerSeq: expect.any(Number),
          override: first,
          previous: null,
        },
        {
          customer: { id: c.id, username: c.username },
          customerSeq: expect.any(Number),
          override: second,
          previous: first,
        },
      ]);
    });

    it('a refused PUT records none', async () => {
      const f = await feature();
      const c = await customer();
      await put(c.id, f.id, { mode: 'set' });
      expect(await events('override.set', c.id)).toHaveLength(0);
    });
  });

  describe('tenancy', () => {
    it("another project's customer or feature is 404 on every route, and never listed", async () => {
      const f = await feature();
      const c = await customer();
      await put(c.id, f.id, { mode: 'deny' });
      const cb = await customer(B());
      expectError(await put(c.id, f.id, { mode: 'deny' }, B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await get(c.id, f.id, B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await del(c.id, f.id, B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await list(c.id, B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await put(cb.id, f.id, { mode: 'deny' }, B()), 404, 'FEATURE_NOT_FOUND');
      expectError(await get(cb.id, f.id, B()), 404, 'FEATURE_NOT_FOUND');
      expectError(await del(cb.id, f.id, B()), 404, 'FEATURE_NOT_FOUND');
      expect((await list(cb.id, B())).body.data).toEqual([]);
      expect((await get(c.id, f.id)).status).toBe(200);
    });
  });

  describe('Idempotency-Key', () => {
    it('a PUT and a DELETE replayed with their keys answer the first, recording one event each', async () => {
      const f = await feature();
      const c = await customer();
      const putKeyed = () =>
        t.http
          .put(path(c.id, f.id))
          .set({ ...A(), 'Idempotency-Key': `put-${c.id}` })
          .send({ mode: 'set', limit: 4 });
      const first = await putKeyed();
      setNow(at(1000));
      const second = await putKeyed();
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
      expect(await events('override.set', c.id)).toHaveLength(1);

      const delKeyed = () =>
        t.http.delete(path(c.id, f.id)).set({ ...A(), 'Idempotency-Key': `del-${c.id}` });
      const d1 = await delKeyed();
      const d2 = await delKeyed();
      expect(d1.status).toBe(200);
      expect(d2.status).toBe(200);
      expect(d2.headers['idempotent-replayed']).toBe('true');
      expect(d2.body).toEqual(d1.body);
      expect(await events('override.removed', c.id)).toHaveLength(1);
    });
  });

  describe('dry run', () => {
    it('PUT and DELETE answer with dryRun and entitlementsAfter, change nothing and record no event', async () => {
      const f = await feature();
      const c = await customer();
      const dry = await put(c.id, f.id, { mode: 'set', limit: 8 }, A(), '?dryRun=true');
      expect(dry.status).toBe(200);
      expect(dry.body.data).toMatchObject({ override: { mode: 'set', limit: 8 }, dryRun: true });
      expect(Array.isArray(dry.body.data.entitlementsAfter)).toBe(true);
      expect(await rows(c.id)).toBe(0);
      expect(await events('override.set', c.id)).toHaveLength(0);

      const real = (await put(c.id, f.id, { mode: 'set', limit: 8 })).body.data.override;
      const dryDel = await del(c.id, f.id, A(), '?dryRun=true');
      expect(dryDel.status).toBe(200);
      expect(dryDel.body.data).toMatchObject({ override: real, dryRun: true });
      const after = dryDel.body.data.entitlementsAfter.find((e: any) => e.feature.id === f.id);
      expect(after.granted).toBe(false);
      expect((await get(c.id, f.id)).body.data).toEqual(real);
      expect(await events('override.removed', c.id)).toHaveLength(0);
    });

    it('refuses as the real call would', async () => {
      const f = await feature();
      const c = await customer();
      expectError(await put(c.id, f.id, { mode: 'set' }, A(), '?dryRun=true'), 400, 'VALIDATION_FAILED');
      expectError(await del(c.id, f.id, A(), '?dryRun=true'), 404, 'OVERRIDE_NOT_FOUND');
      expectError(await put(999999, f.id, { mode: 'deny' }, A(), '?dryRun=true'), 404, 'CUSTOMER_NOT_FOUND');
    });
  });

  describe('deleting', () => {
    it('a feature an override names, in effect or not, is 409 FEATURE_IN_USE; without one it goes', async () => {
      const f = await feature();
      const c = await customer();
      await put(c.id, f.id, { mode: 'deny', expiresAt: at(DAY) });
      const delFeature = () => t.http.delete(`${P}/features/${f.id}`).set(A());
      expectError(await delFeature(), 409, 'FEATURE_IN_USE');
      setNow(at(DAY));
      expectError(await delFeature(), 409, 'FEATURE_IN_USE');
      await put(c.id, f.id, { mode: 'deny' });
      await del(c.id, f.id);
      expect((await delFeature()).status).toBe(200);
    });

    it("a customer's deletion deletes its overrides, with no override event", async () => {
      const f = await feature();
      const c = await customer();
      await put(c.id, f.id, { mode: 'deny' });
      await t.http.delete(`${P}/customers/${c.id}`).set(A()).expect(200);
      expect(await rows(c.id)).toBe(0);
      const types = (
        await t.dataSource.query('SELECT type FROM events WHERE customer_id = $1 ORDER BY customer_seq', [
          c.id,
        ])
      ).map((r: { type: string }) => r.type);
      expect(types).toEqual(['customer.created', 'override.set', 'customer.deleted']);
    });
  });
});
