import fc from 'fast-check';
import { Clock } from '../src/common/clock';
import { HoldExpiryScheduler } from '../src/entitlements/hold-expiry.scheduler';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog, clockSetter } from './support/catalog';
import { expectError, ISO_MS } from './support/expect';

const P = '/api/private/v1';
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 86_400_000;

/**
 * Usage holds (docs/entitlements.md#holds) through HTTP on a real PostgreSQL: what a hold takes and
 * from which buckets, `held` in every balance, commit, release, expiry computed when read and the
 * scheduler's `usage.hold_expired`, replays, the limit of live holds, errors and their order, bad
 * input, tenancy, the list, audit records, and a property over random sequences. The application's
 * `Clock` is set to the instant under test; the expiry scheduler runs only when a test calls it.
 * Concurrency across replicas: test/holds-concurrency.e2e-spec.ts.
 */
describe('usage holds', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  let clock: Clock;
  let scheduler: HoldExpiryScheduler;
  let setup: ReturnType<typeof catalog>;
  let seq = 0;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);

  beforeAll(async () => {
    t = await createTestApp({ EVENTS_SCHEDULER_ENABLED: 'false', HOLDS_MAX_LIVE: '3' });
    a = await t.createProject();
    b = await t.createProject();
    clock = t.app.get(Clock);
    scheduler = t.app.get(HoldExpiryScheduler);
    setup = catalog(t, 'hd');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const setNow = (at: string | Date) => clockSetter(clock)(at);
  const at = (iso: string, ms: number) => new Date(new Date(iso).getTime() + ms).toISOString();
  const feature = (metered = true, auth = A()) => setup.feature(auth, metered);
  const plan = (group: string, quotas: Array<Record<string, unknown>>, auth = A()) =>
    setup.plan(auth, group, quotas);
  const customer = (extra: Record<string, unknown> = {}, auth = A()) => setup.customer(auth, extra);
  const windowOf = (customerId: number, planId: number, group: string, validFrom: string, project = a) =>
    setup.windowOf(project.id, { customerId, planId, group, validFrom, validTo: null });

  /** A metered feature with a plan of `limit` per `interval`, and a customer holding it since `since`. */
  async function metered(
    limit: number | null,
    interval: string | null = 'P1M',
    since = '2025-03-01T00:00:00.000Z',
  ) {
    const f = await feature();
    const p = await plan('tier', [{ featureId: f.id, limit, resetInterval: interval }]);
    const c = await customer();
    await windowOf(c.id, p.id, 'tier', since);
    return { f, p, c };
  }

  const hold = (body: Record<string, unknown>, auth = A()) =>
    t.http
      .post(`${P}/usage/holds`)
      .set(auth)
      .send({ holdId: `h-${++seq}`, ...body });
  async function held(body: Record<string, unknown>): Promise<any> {
    const res = await hold(body);
    expect(res.status).toBe(201);
    return res.body.data.hold;
  }
  const commit = (id: number | string, body?: Record<string, unknown>, auth = A()) => {
    const req = t.http.post(`${P}/usage/holds/${id}/commit`).set(auth);
    return body === undefined ? req : req.send(body);
  };
  const release = (id: number | string, auth = A()) =>
    t.http.post(`${P}/usage/holds/${id}/release`).set(auth);
  const getHold = async (id: number) => {
    const res = await t.http.get(`${P}/usage/holds/${id}`).set(A());
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const use = (body: Record<string, unknown>, auth = A()) =>
    t.http
      .post(`${P}/usage`)
      .set(auth)
      .send({ eventId: `u-${++seq}`, ...body });
  const check = async (body: Record<string, unknown>) => {
    const res = await t.http.post(`${P}/entitlements/check`).set(A()).send(body);
    expect(res.status).toBe(200);
    return res.body.data;
  };
  const grant = async (customerId: number, body: Record<string, unknown>) => {
    const res = await t.http.post(`${P}/customers/${customerId}/grants`).set(A()).send(body);
    expect(res.status).toBe(201);
    return res.body.data.grant;
  };
  const events = async (type: string, customerId: number, auth = A()) => {
    const res = await t.http.get(`${P}/events?type=${type}&customerId=${customerId}&limit=100`).set(auth);
    expect(res.status).toBe(200);
    return res.body.data.data as any[];
  };
  /** The rows of `table` of the customer, or of project A. */
  const count = async (table: string, customerId?: number) => {
    const [column, value] = customerId === undefined ? ['project_id', a.id] : ['customer_id', customerId];
    return Number(
      (await t.dataSource.query(`SELECT count(*) AS n FROM ${table} WHERE ${column} = $1`, [value]))[0].n,
    );
  };
  const list = (customerId: number | string, query = '', auth = A()) =>
    t.http.get(`${P}/customers/${customerId}/holds${query}`).set(auth);
  const bucketsOf = (view: any) =>
    view.buckets.map((x: any) => [x.source, x.grantId ?? x.group, x.used, x.held, x.remaining]);

  describe('holding', () => {
    it('takes from the buckets in the order of consumption, plan, override and grant alike; amount = allocations + overage; nothing enters the ledger', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const promo = await grant(c.id, { featureId: f.id, amount: 5, expiresAt: '2025-03-11T00:00:00.000Z' });
      const topUp = await grant(c.id, { featureId: f.id, amount: 20 });
      const res = await hold({ customerId: c.id, featureId: f.id, amount: 17, holdId: 'render-1' });
      expect(res.status).toBe(201);
      const h = res.body.data.hold;
      expect(h).toEqual({
        id: expect.any(Number),
        holdId: 'render-1',
        customerId: c.id,
        featureId: f.id,
        amount: 17,
        overage: 0,
        allowOverage: false,
        allocations: [
          { source: 'grant', group: null, periodStart: null, grantId: promo.id, amount: 5 },
          {
            source: 'plan',
            group: 'tier',
            periodStart: '2025-03-01T00:00:00.000Z',
            grantId: null,
            amount: 10,
          },
          { source: 'grant', group: null, periodStart: null, grantId: topUp.id, amount: 2 },
        ],
        status: 'held',
        expiresAt: '2025-03-10T00:15:00.000Z',
        createdAt: '2025-03-10T00:00:00.000Z',
        endedAt: null,
        usageId: null,
      });
      expect(res.body.data).toEqual({
        hold: h,
        balance: { limit: 35, used: 0, held: 17, remaining: 18, overage: 0 },
      });
      expect(await count('usage_records', c.id)).toBe(0);
      expect(await getHold(h.id)).toEqual(h);
      // a grant counts records, not holds: its own figures are unchanged
      const g = await t.http.get(`${P}/grants/${promo.id}`).set(A());
      expect(g.body.data).toMatchObject({ used: 0, remaining: 5, status: 'active' });

      // an override bucket holds too (its allocations not to a grant); what the plan bucket held
      // counts against it, as the plan's usage would: released first
      await release(h.id).expect(200);
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'set', limit: 4 })
        .expect(200);
      const o = await held({ customerId: c.id, featureId: f.id, amount: 20 });
      expect(o.allocations).toEqual([
        { source: 'grant', group: null, periodStart: null, grantId: promo.id, amount: 5 },
        {
          source: 'override',
          group: null,
          periodStart: '2025-03-01T00:00:00.000Z',
          grantId: null,
          amount: 4,
        },
        { source: 'grant', group: null, periodStart: null, grantId: topUp.id, amount: 11 },
      ]);
    });

    it('short of room: 409 QUOTA_EXCEEDED with remaining and resetsAt and nothing held; allowOverage holds what remains and the rest as overage', async () => {
      const { f, c } = await metered(5, 'P1M');
      setNow('2025-03-10T00:00:00.000Z');
      await held({ customerId: c.id, featureId: f.id, amount: 2 });
      const refused = await hold({ customerId: c.id, featureId: f.id, amount: 4 });
      expectError(refused, 409, 'QUOTA_EXCEEDED');
      expect(refused.body.error.details).toEqual([
        {
          field: 'amount',
          message: expect.any(String),
          remaining: 3,
          resetsAt: '2025-04-01T00:00:00.000Z',
        },
      ]);
      expect(await count('usage_holds', c.id)).toBe(1);
      const over = await hold({ customerId: c.id, featureId: f.id, amount: 4, allowOverage: true });
      expect(over.status).toBe(201);
      expect(over.body.data.hold).toMatchObject({ amount: 4, overage: 1, allowOverage: true });
      expect(over.body.data.hold.allocations.map((x: any) => x.amount)).toEqual([3]);
      expect(over.body.data.balance).toEqual({ limit: 5, used: 0, held: 5, remaining: 0, overage: 0 });
    });

    it('held is unavailable to consumes, batches, checks and other holds; allowOverage on a consume never takes it', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      await held({ customerId: c.id, featureId: f.id, amount: 7 });
      expect(await check({ customerId: c.id, featureId: f.id, amount: 4 })).toMatchObject({
        allowed: false,
        reason: 'LIMIT_REACHED',
        balance: { limit: 10, used: 0, held: 7, remaining: 3, overage: 0 },
      });
      expectError(await use({ customerId: c.id, featureId: f.id, amount: 4 }), 409, 'QUOTA_EXCEEDED');
      const batch = await t.http
        .post(`${P}/usage/batch`)
        .set(A())
        .send({ events: [{ customerId: c.id, featureId: f.id, amount: 4, eventId: 'b-1' }] });
      expect(batch.body.data.results[0]).toMatchObject({ status: 409, error: { code: 'QUOTA_EXCEEDED' } });
      expectError(await hold({ customerId: c.id, featureId: f.id, amount: 4 }), 409, 'QUOTA_EXCEEDED');
      const over = await use({ customerId: c.id, featureId: f.id, amount: 5, allowOverage: true });
      expect(over.status).toBe(201);
      expect(over.body.data.usage).toMatchObject({ amount: 5, overage: 2 });
      expect(over.body.data.balance).toEqual({ limit: 10, used: 3, held: 7, remaining: 0, overage: 2 });
    });

    it('held shows in every balance and bucket view: check, entitlements, the public ones, usage answers, entitlementsAfter', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 10, resetInterval: 'P1M' }]);
      const me = await customer({ password: 'correct horse' });
      const now = new Date();
      await windowOf(me.id, p.id, 'tier', new Date(now.getTime() - DAY).toISOString());
      await held({ customerId: me.id, featureId: f.id, amount: 3 });
      const checked = await check({ customerId: me.id, featureId: f.id });
      expect(checked.balance).toEqual({ limit: 10, used: 0, held: 3, remaining: 7, overage: 0 });
      expect(bucketsOf(checked)).toEqual([['plan', 'tier', 0, 3, 7]]);
      const listed = (await t.http.get(`${P}/customers/${me.id}/entitlements`).set(A())).body.data.find(
        (e: any) => e.feature.id === f.id,
      );
      expect(listed.balance).toEqual(checked.balance);
      expect(listed.buckets).toEqual(checked.buckets);
      const used = await use({ customerId: me.id, featureId: f.id, amount: 1 });
      expect(used.body.data.balance).toEqual({ limit: 10, used: 1, held: 3, remaining: 6, overage: 0 });

      const key = { 'X-Service-Key': a.publicKey };
      const login = await t.http
        .post('/api/public/v1/auth/login')
        .set(key)
        .send({ identifier: { type: 'username', value: me.username }, password: 'correct horse' });
      expect(login.status).toBe(200);
      const auth = { ...key, Authorization: `Bearer ${login.body.data.token}` };
      const mine = (await t.http.get('/api/public/v1/me/entitlements').set(auth)).body.data.find(
        (e: any) => e.feature.id === f.id,
      );
      expect(mine.balance).toEqual({ limit: 10, used: 1, held: 3, remaining: 6, overage: 0 });
      expect(mine.buckets[0]).toMatchObject({ used: 1, held: 3, remaining: 6 });
      const publicCheck = await t.http
        .post('/api/public/v1/me/entitlements/check')
        .set(auth)
        .send({ feature: f.slug, amount: 7 });
      expect(publicCheck.body.data).toMatchObject({ allowed: false, reason: 'LIMIT_REACHED' });
      // no public route creates, commits, releases or lists holds
      for (const path of ['/api/public/v1/usage/holds', '/api/public/v1/me/holds'])
        expect((await t.http.post(path).set(auth).send({})).status).toBe(404);

      // a dry run's entitlementsAfter counts held as well
      const dry = await t.http
        .post(`${P}/customers/${me.id}/grants?dryRun=true`)
        .set(A())
        .send({ featureId: f.id, amount: 2 });
      expect(dry.status).toBe(200);
      expect(dry.body.data.entitlementsAfter.find((e: any) => e.feature.id === f.id).balance).toEqual({
        limit: 12,
        used: 1,
        held: 3,
        remaining: 8,
        overage: 0,
      });
    });

    it('ttl: default PT15M, expiresAt = createdAt + ttl, at most PT24H (P1D and PT86400S accepted)', async () => {
      const { f, c } = await metered(null);
      setNow('2025-03-10T00:00:00.000Z');
      const cases: Array<[string, string]> = [
        ['PT30S', '2025-03-10T00:00:30.000Z'],
        ['PT1H30M', '2025-03-10T01:30:00.000Z'],
        ['P1D', '2025-03-11T00:00:00.000Z'],
        ['PT86400S', '2025-03-11T00:00:00.000Z'],
        ['P0DT2M', '2025-03-10T00:02:00.000Z'],
      ];
      for (const [ttl, expiresAt] of cases) {
        const h = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl });
        expect(h).toMatchObject({ createdAt: '2025-03-10T00:00:00.000Z', expiresAt });
        await release(h.id).expect(200);
      }
      expect((await held({ customerId: c.id, featureId: f.id, amount: 1.5 })).expiresAt).toBe(
        '2025-03-10T00:15:00.000Z',
      );
      // unlimited: nothing remains to count, and held still shows
      expect((await check({ customerId: c.id, featureId: f.id })).balance).toEqual({
        limit: null,
        used: 0,
        held: 1.5,
        remaining: null,
        overage: 0,
      });
    });

    it('a hold counts in the period it was made: once that period ends it holds nothing there, though it stays held (the PT2S example)', async () => {
      const { f, c } = await metered(3, 'PT2S', '2025-05-01T00:00:00.000Z');
      const t0 = '2025-05-01T00:00:00.000Z';
      setNow(at(t0, 300));
      const h = await held({ customerId: c.id, featureId: f.id, amount: 2, ttl: 'PT1M' });
      expect(await check({ customerId: c.id, featureId: f.id })).toMatchObject({
        balance: { used: 0, held: 2, remaining: 1 },
      });
      setNow(at(t0, 2200));
      const next = await check({ customerId: c.id, featureId: f.id });
      expect(next.balance).toMatchObject({ used: 0, held: 0, remaining: 3 });
      expect((await getHold(h.id)).status).toBe('held');
      setNow(at(t0, 2400));
      expect((await use({ customerId: c.id, featureId: f.id, amount: 2 })).body.data.balance).toMatchObject({
        used: 2,
        remaining: 1,
      });
      setNow(at(t0, 2600));
      const done = await commit(h.id);
      expect(done.status).toBe(201);
      expect(done.body.data.usage).toMatchObject({
        amount: 2,
        overage: 1,
        eventId: h.holdId,
        recordedAt: at(t0, 2600),
        allocations: [
          {
            source: 'plan',
            group: 'tier',
            periodStart: at(t0, 2000),
            grantId: null,
            amount: 1,
            restored: null,
          },
        ],
      });
      expect(done.body.data.balance).toEqual({ limit: 3, used: 3, held: 0, remaining: 0, overage: 1 });
    });

    it('an upgrade that keeps the period keeps the hold counted', async () => {
      const f = await feature();
      const small = await plan('tier', [{ featureId: f.id, limit: 5, resetInterval: 'P1M' }]);
      const big = await plan('tier', [{ featureId: f.id, limit: 50, resetInterval: 'P1M' }]);
      const c = await customer();
      await setup.windowOf(a.id, {
        customerId: c.id,
        planId: small.id,
        group: 'tier',
        validFrom: '2025-03-01T00:00:00.000Z',
        validTo: '2025-03-10T00:00:00.000Z',
      });
      await windowOf(c.id, big.id, 'tier', '2025-03-10T00:00:00.000Z');
      setNow('2025-03-09T23:50:00.000Z');
      await held({ customerId: c.id, featureId: f.id, amount: 4, ttl: 'PT1H' });
      setNow('2025-03-10T00:10:00.000Z');
      expect((await check({ customerId: c.id, featureId: f.id })).balance).toMatchObject({
        limit: 50,
        held: 4,
        remaining: 46,
      });
    });
  });

  describe('replays and conflicts', () => {
    it('the same holdId again answers the hold as it is now with replayed: true and holds nothing; ttl and allowOverage play no part', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const first = await hold({ customerId: c.id, featureId: f.id, amount: 4, holdId: 'once' });
      const again = await hold({
        customer: { type: 'username', value: c.username },
        feature: f.slug,
        amount: 4,
        holdId: 'once',
        ttl: 'PT1H',
        allowOverage: true,
      });
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual({
        hold: first.body.data.hold,
        balance: { limit: 10, used: 0, held: 4, remaining: 6, overage: 0 },
        replayed: true,
      });
      expect(await count('usage_holds', c.id)).toBe(1);
      // as it is now: committed since
      await commit(first.body.data.hold.id, { amount: 3 }).expect(201);
      const later = await hold({ customerId: c.id, featureId: f.id, amount: 4, holdId: 'once' });
      expect(later.status).toBe(200);
      expect(later.body.data.hold).toMatchObject({ status: 'committed', usageId: expect.any(Number) });
      expect(later.body.data.balance).toMatchObject({ used: 3, held: 0 });
      // another amount or feature: HOLD_CONFLICT
      expectError(
        await hold({ customerId: c.id, featureId: f.id, amount: 5, holdId: 'once' }),
        409,
        'HOLD_CONFLICT',
      );
      const other = await feature();
      const conflict = await hold({ customerId: c.id, featureId: other.id, amount: 4, holdId: 'once' });
      expectError(conflict, 409, 'HOLD_CONFLICT');
      expect(conflict.body.error.details).toEqual([{ field: 'holdId', message: expect.any(String) }]);
    });

    it('a refused hold holds nothing, so its holdId may be sent again; a replay answers for a customer disabled since', async () => {
      const { f, c } = await metered(2);
      setNow('2025-03-10T00:00:00.000Z');
      expectError(
        await hold({ customerId: c.id, featureId: f.id, amount: 3, holdId: 'again' }),
        409,
        'QUOTA_EXCEEDED',
      );
      const ok = await hold({ customerId: c.id, featureId: f.id, amount: 2, holdId: 'again' });
      expect(ok.status).toBe(201);
      await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ enabled: false }).expect(200);
      const replay = await hold({ customerId: c.id, featureId: f.id, amount: 2, holdId: 'again' });
      expect(replay.status).toBe(200);
      expect(replay.body.data.replayed).toBe(true);
      expectError(await hold({ customerId: c.id, featureId: f.id, amount: 1 }), 403, 'CUSTOMER_DISABLED');
    });
  });

  describe('commit', () => {
    it('equal to the hold: one record of its allocations, eventId the holdId; the record is ordinary (reversible, replayed by POST /usage)', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const h = await held({ customerId: c.id, featureId: f.id, amount: 6, holdId: 'call-1' });
      setNow('2025-03-10T00:01:00.000Z');
      const res = await commit(h.id);
      expect(res.status).toBe(201);
      const { hold: done, usage, balance } = res.body.data;
      expect(res.body.data.replayed).toBeUndefined();
      expect(usage).toEqual({
        id: expect.any(Number),
        eventId: 'call-1',
        customerId: c.id,
        featureId: f.id,
        amount: 6,
        overage: 0,
        allocations: [
          {
            source: 'plan',
            group: 'tier',
            periodStart: '2025-03-01T00:00:00.000Z',
            grantId: null,
            amount: 6,
            restored: null,
          },
        ],
        recordedAt: '2025-03-10T00:01:00.000Z',
        reversedAt: null,
      });
      expect(done).toEqual({
        ...h,
        status: 'committed',
        endedAt: '2025-03-10T00:01:00.000Z',
        usageId: usage.id,
      });
      expect(balance).toEqual({ limit: 10, used: 6, held: 0, remaining: 4, overage: 0 });
      expect(await getHold(h.id)).toEqual(done);
      const replay = await use({ customerId: c.id, featureId: f.id, amount: 6, eventId: 'call-1' });
      expect(replay.status).toBe(200);
      expect(replay.body.data).toMatchObject({ usage, replayed: true });
      const reversed = await t.http.post(`${P}/usage/${usage.id}/reverse`).set(A());
      expect(reversed.status).toBe(200);
      expect(reversed.body.data.balance).toEqual({ limit: 10, used: 0, held: 0, remaining: 10, overage: 0 });
    });

    it('less than held frees the rest; more takes the excess if it fits, else 409 QUOTA_EXCEEDED (remaining: what the buckets can take with the hold given back) and the hold stays held', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const less = await held({ customerId: c.id, featureId: f.id, amount: 4 });
      const res = await commit(less.id, { amount: 1.5 });
      expect(res.body.data.usage).toMatchObject({ amount: 1.5, overage: 0 });
      expect(res.body.data.balance).toEqual({ limit: 10, used: 1.5, held: 0, remaining: 8.5, overage: 0 });

      const more = await held({ customerId: c.id, featureId: f.id, amount: 2 });
      await held({ customerId: c.id, featureId: f.id, amount: 5 });
      // with the hold given back 3.5 can be taken: 3 fits
      const fits = await commit(more.id, { amount: 3 });
      expect(fits.status).toBe(201);
      expect(fits.body.data.usage).toMatchObject({ amount: 3, overage: 0 });
      expect(fits.body.data.balance).toEqual({ limit: 10, used: 4.5, held: 5, remaining: 0.5, overage: 0 });

      const third = await held({ customerId: c.id, featureId: f.id, amount: 0.5 });
      const refused = await commit(third.id, { amount: 2 });
      expectError(refused, 409, 'QUOTA_EXCEEDED');
      expect(refused.body.error.details).toEqual([
        {
          field: 'amount',
          message: expect.any(String),
          remaining: 0.5,
          resetsAt: '2025-04-01T00:00:00.000Z',
        },
      ]);
      expect((await getHold(third.id)).status).toBe('held');
      // the commit's allowOverage applies: the excess no bucket takes is overage
      const over = await commit(third.id, { amount: 2, allowOverage: true });
      expect(over.status).toBe(201);
      expect(over.body.data.usage).toMatchObject({ amount: 2, overage: 1.5 });
    });

    it("the hold's allowOverage applies when the commit names none, and the commit's wins when it does", async () => {
      const { f, c } = await metered(4);
      setNow('2025-03-10T00:00:00.000Z');
      const lenient = await held({ customerId: c.id, featureId: f.id, amount: 1, allowOverage: true });
      const strict = await held({ customerId: c.id, featureId: f.id, amount: 1 });
      await held({ customerId: c.id, featureId: f.id, amount: 2 });
      expect((await commit(lenient.id, { amount: 3 })).body.data.usage).toMatchObject({
        amount: 3,
        overage: 2,
      });
      expectError(await commit(strict.id, { amount: 3, allowOverage: false }), 409, 'QUOTA_EXCEEDED');
      expect((await commit(strict.id, { amount: 3, allowOverage: true })).body.data.usage).toMatchObject({
        overage: 2,
      });
    });

    it('up to the held amount a commit is never refused for quota: a plan that ended, a grant voided, a deny override (all of it overage, grants included), a disabled customer', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 5, resetInterval: 'P1M' }]);
      const c = await customer();
      await setup.windowOf(a.id, {
        customerId: c.id,
        planId: p.id,
        group: 'tier',
        validFrom: '2025-03-01T00:00:00.000Z',
        validTo: '2025-03-10T01:00:00.000Z',
      });
      setNow('2025-03-10T00:00:00.000Z');
      const g = await grant(c.id, { featureId: f.id, amount: 3, priority: 1 });
      const planHold = await held({ customerId: c.id, featureId: f.id, amount: 6, ttl: 'PT2H' });
      expect(planHold.allocations.map((x: any) => [x.source, x.amount])).toEqual([
        ['grant', 3],
        ['plan', 3],
      ]);
      // the plan ended meanwhile: the grant takes what it can, the rest is overage
      setNow('2025-03-10T01:30:00.000Z');
      const afterPlan = await commit(planHold.id);
      expect(afterPlan.status).toBe(201);
      expect(afterPlan.body.data.usage).toMatchObject({ amount: 6, overage: 3 });
      expect(afterPlan.body.data.usage.allocations).toEqual([
        { source: 'grant', group: null, periodStart: null, grantId: g.id, amount: 3, restored: null },
      ]);

      // a deny override: nothing from any bucket, grants included
      const g2 = await grant(c.id, { featureId: f.id, amount: 4 });
      const denyHold = await held({ customerId: c.id, featureId: f.id, amount: 2 });
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'deny' })
        .expect(200);
      // the customer disabled since does not refuse it either
      await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ enabled: false }).expect(200);
      const denied = await commit(denyHold.id);
      expect(denied.status).toBe(201);
      expect(denied.body.data.usage).toMatchObject({ amount: 2, overage: 2, allocations: [] });
      // more than held with nothing to take from: refused unless overage is allowed
      expectError(await hold({ customerId: c.id, featureId: f.id, amount: 1 }), 403, 'CUSTOMER_DISABLED');
      const g2now = await t.http.get(`${P}/grants/${g2.id}`).set(A());
      expect(g2now.body.data).toMatchObject({ used: 0, remaining: 4 });
    });

    it('a voided grant forfeits what it held with the rest; the commit then takes from other buckets or overage', async () => {
      const { f, c } = await metered(2);
      setNow('2025-03-10T00:00:00.000Z');
      const g = await grant(c.id, { featureId: f.id, amount: 5, priority: 1 });
      const h = await held({ customerId: c.id, featureId: f.id, amount: 4 });
      expect(h.allocations).toEqual([
        { source: 'grant', group: null, periodStart: null, grantId: g.id, amount: 4 },
      ]);
      const voided = await t.http.post(`${P}/grants/${g.id}/void`).set(A()).send({});
      expect(voided.body.data.grant).toMatchObject({ used: 0, remaining: 0, forfeited: 5 });
      const res = await commit(h.id);
      expect(res.body.data.usage).toMatchObject({ amount: 4, overage: 2 });
      expect(res.body.data.usage.allocations).toEqual([
        {
          source: 'plan',
          group: 'tier',
          periodStart: '2025-03-01T00:00:00.000Z',
          grantId: null,
          amount: 2,
          restored: null,
        },
      ]);
    });

    it('a commit of a committed hold answers the same hold and record with replayed: true, whatever its body', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const h = await held({ customerId: c.id, featureId: f.id, amount: 2 });
      const first = await commit(h.id, { amount: 1 });
      await use({ customerId: c.id, featureId: f.id, amount: 3 }).expect(201);
      const again = await commit(h.id, { amount: 9, eventId: 'whatever' });
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual({
        hold: first.body.data.hold,
        usage: first.body.data.usage,
        balance: { limit: 10, used: 4, held: 0, remaining: 6, overage: 0 },
        replayed: true,
      });
    });

    it('a commit at or after expiresAt is 410 HOLD_EXPIRED and records nothing; before it, it records', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const late = await held({ customerId: c.id, featureId: f.id, amount: 2, ttl: 'PT10S' });
      const inTime = await held({ customerId: c.id, featureId: f.id, amount: 2, ttl: 'PT10S' });
      setNow('2025-03-10T00:00:09.999Z');
      expect((await commit(inTime.id)).status).toBe(201);
      setNow('2025-03-10T00:00:10.000Z');
      const res = await commit(late.id);
      expectError(res, 410, 'HOLD_EXPIRED');
      expect(res.body.error.details).toEqual([
        { field: 'status', message: expect.any(String), status: 'expired' },
      ]);
      expect(await count('usage_records', c.id)).toBe(1);
      expect(await getHold(late.id)).toMatchObject({
        status: 'expired',
        endedAt: '2025-03-10T00:00:10.000Z',
      });
    });

    it('an eventId that already names a record of the customer is 409 USAGE_EVENT_CONFLICT and the hold stays held', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      await use({ customerId: c.id, featureId: f.id, amount: 1, eventId: 'taken' }).expect(201);
      const h = await held({ customerId: c.id, featureId: f.id, amount: 1, holdId: 'taken' });
      expectError(await commit(h.id), 409, 'USAGE_EVENT_CONFLICT');
      expectError(await commit(h.id, { eventId: 'taken' }), 409, 'USAGE_EVENT_CONFLICT');
      expect((await getHold(h.id)).status).toBe('held');
      const done = await commit(h.id, { eventId: 'fresh' });
      expect(done.body.data.usage.eventId).toBe('fresh');
    });

    it('events follow recorded usage only: a hold that leaves nothing remaining records no usage.limit_reached or threshold; its commit does', async () => {
      const f = await feature();
      const p = await plan('tier', [{ featureId: f.id, limit: 4, resetInterval: 'P1M', thresholds: [50] }]);
      const c = await customer();
      await windowOf(c.id, p.id, 'tier', '2025-03-01T00:00:00.000Z');
      setNow('2025-03-10T00:00:00.000Z');
      const g = await grant(c.id, { featureId: f.id, amount: 1, priority: 1 });
      const h = await held({ customerId: c.id, featureId: f.id, amount: 5 });
      expect((await check({ customerId: c.id, featureId: f.id })).balance.remaining).toBe(0);
      for (const type of ['usage.limit_reached', 'usage.threshold_crossed', 'grant.exhausted'])
        expect(await events(type, c.id)).toHaveLength(0);
      const done = await commit(h.id);
      expect(done.status).toBe(201);
      expect((await events('usage.threshold_crossed', c.id)).map((e) => e.data.threshold)).toEqual([50]);
      expect(await events('usage.limit_reached', c.id)).toHaveLength(1);
      const exhausted = await events('grant.exhausted', c.id);
      expect(exhausted.map((e) => e.data.grant.id)).toEqual([g.id]);
      expect((await events('usage.limit_reached', c.id))[0].data.bucket).toMatchObject({
        used: 4,
        held: 0,
        remaining: 0,
      });
    });
  });

  describe('release and expiry', () => {
    it('release ends the hold and records nothing; a released or expired hold answers 200 unchanged; a committed one is 409 HOLD_FINALIZED', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const h = await held({ customerId: c.id, featureId: f.id, amount: 3 });
      setNow('2025-03-10T00:01:00.000Z');
      const res = await release(h.id);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        hold: { ...h, status: 'released', endedAt: '2025-03-10T00:01:00.000Z' },
        balance: { limit: 10, used: 0, held: 0, remaining: 10, overage: 0 },
      });
      setNow('2025-03-10T00:02:00.000Z');
      const again = await release(h.id).send({});
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual(res.body.data);
      const fin = await commit(h.id);
      expectError(fin, 409, 'HOLD_FINALIZED');
      expect(fin.body.error.details).toEqual([
        { field: 'status', message: expect.any(String), status: 'released' },
      ]);

      const expiring = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' });
      setNow('2025-03-10T00:03:00.000Z');
      const expired = await release(expiring.id);
      expect(expired.status).toBe(200);
      expect(expired.body.data.hold).toEqual({ ...expiring, status: 'expired', endedAt: expiring.expiresAt });

      const committed = await held({ customerId: c.id, featureId: f.id, amount: 1 });
      await commit(committed.id).expect(201);
      const refused = await release(committed.id);
      expectError(refused, 409, 'HOLD_FINALIZED');
      expect(refused.body.error.details).toEqual([
        { field: 'status', message: expect.any(String), status: 'committed' },
      ]);
      expect(await count('usage_records', c.id)).toBe(1);
    });

    it('expiry needs no job: an expired hold stops counting when read, and the scheduler records usage.hold_expired once per hold (committed and released holds never)', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const expiring = await held({ customerId: c.id, featureId: f.id, amount: 4, ttl: 'PT5S' });
      const committed = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT5S' });
      const released = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT5S' });
      await commit(committed.id).expect(201);
      await release(released.id).expect(200);
      setNow('2025-03-10T00:00:05.000Z');
      expect((await check({ customerId: c.id, featureId: f.id })).balance).toMatchObject({
        used: 1,
        held: 0,
        remaining: 9,
      });
      expect(await events('usage.hold_expired', c.id)).toHaveLength(0);
      await scheduler.runOnce(new Date('2025-03-10T00:00:05.000Z'));
      await scheduler.runOnce(new Date('2025-03-10T00:00:06.000Z'));
      const told = await events('usage.hold_expired', c.id);
      expect(told).toHaveLength(1);
      expect(told[0].data).toEqual({
        customer: { id: c.id, username: c.username },
        feature: { id: f.id, slug: f.slug },
        hold: { ...expiring, status: 'expired', endedAt: expiring.expiresAt },
        customerSeq: expect.any(Number),
      });
      expect(await getHold(expiring.id)).toEqual(told[0].data.hold);
      // marked: released again it answers unchanged, committed it is 410
      expect((await release(expiring.id)).body.data.hold.status).toBe('expired');
      expectError(await commit(expiring.id), 410, 'HOLD_EXPIRED');
      expect(await events('usage.hold_expired', c.id)).toHaveLength(1);
    });

    it('the scheduler announces at its next start the holds that expired meanwhile, within the last 30 days', async () => {
      const { f, c } = await metered(null, null, '2024-12-01T00:00:00.000Z');
      setNow('2025-01-01T00:00:00.000Z');
      const old = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1M' });
      setNow('2025-01-20T00:00:00.000Z');
      const recent = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1M' });
      await scheduler.runOnce(new Date('2025-02-10T00:00:00.000Z'));
      const told = await events('usage.hold_expired', c.id);
      expect(told.map((e) => e.data.hold.id)).toEqual([recent.id]);
      // the old one is marked too, without an event
      setNow('2025-02-10T00:00:00.000Z');
      expect((await getHold(old.id)).status).toBe('expired');
      expect(
        (await t.dataSource.query(`SELECT status FROM usage_holds WHERE id = $1`, [old.id]))[0].status,
      ).toBe('expired');
    });

    it('HOLDS_MAX_LIVE live holds per customer and feature: one more is 409 HOLD_LIMIT_REACHED; a replay is not refused; ended holds free places', async () => {
      const { f, c } = await metered(null);
      const other = await feature();
      setNow('2025-03-10T00:00:00.000Z');
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${other.id}`)
        .set(A())
        .send({ mode: 'set', limit: null })
        .expect(200);
      const hs = [];
      for (let i = 0; i < 3; i++)
        hs.push(await held({ customerId: c.id, featureId: f.id, amount: 1, holdId: `lim-${i}` }));
      expectError(await hold({ customerId: c.id, featureId: f.id, amount: 1 }), 409, 'HOLD_LIMIT_REACHED');
      expect((await hold({ customerId: c.id, featureId: f.id, amount: 1, holdId: 'lim-0' })).status).toBe(
        200,
      );
      // another feature has places of its own
      expect((await hold({ customerId: c.id, featureId: other.id, amount: 1 })).status).toBe(201);
      await release(hs[0].id).expect(200);
      expect((await hold({ customerId: c.id, featureId: f.id, amount: 1 })).status).toBe(201);
      await commit(hs[1].id).expect(201);
      expect((await hold({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' })).status).toBe(201);
      expectError(await hold({ customerId: c.id, featureId: f.id, amount: 1 }), 409, 'HOLD_LIMIT_REACHED');
      setNow('2025-03-10T00:00:01.000Z');
      // the one of PT1S expired: a place again, with no job run
      expect((await hold({ customerId: c.id, featureId: f.id, amount: 1 })).status).toBe(201);
      expect((await getHold(hs[2].id)).status).toBe('held');
    });
  });

  describe('errors and their order', () => {
    it('hold: validation, CUSTOMER_NOT_FOUND, FEATURE_NOT_FOUND, replay or HOLD_CONFLICT, CUSTOMER_DISABLED, FEATURE_NOT_METERED, FEATURE_NOT_GRANTED, HOLD_LIMIT_REACHED, QUOTA_EXCEEDED', async () => {
      const { f, c } = await metered(1);
      const bool = await feature(false);
      const ungranted = await feature();
      setNow('2025-03-10T00:00:00.000Z');
      // validation before anything else (an unknown customer and a bad amount)
      const bad = await hold({ customerId: 999_999, featureId: f.id, amount: 0 });
      expectError(bad, 400, 'VALIDATION_FAILED');
      expect(bad.body.error.details.map((d: any) => d.field)).toEqual(['amount']);
      expectError(
        await hold({ customerId: 999_999, featureId: 999_999, amount: 1 }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      // ids beyond the columns' range up to 2^53 - 1 are not found, in the same order
      expectError(
        await hold({ customerId: 2 ** 53 - 1, featureId: f.id, amount: 1 }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(await hold({ customerId: c.id, featureId: 2 ** 40, amount: 1 }), 404, 'FEATURE_NOT_FOUND');
      expectError(
        await hold({ customerId: c.id, feature: 'no-such-feature', amount: 1 }),
        404,
        'FEATURE_NOT_FOUND',
      );
      // a replay and a conflict come before the customer's state
      await held({ customerId: c.id, featureId: f.id, amount: 1, holdId: 'first' });
      await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ enabled: false }).expect(200);
      expect((await hold({ customerId: c.id, featureId: f.id, amount: 1, holdId: 'first' })).status).toBe(
        200,
      );
      expectError(
        await hold({ customerId: c.id, featureId: bool.id, amount: 1, holdId: 'first' }),
        409,
        'HOLD_CONFLICT',
      );
      expectError(await hold({ customerId: c.id, featureId: bool.id, amount: 1 }), 403, 'CUSTOMER_DISABLED');
      await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ enabled: true }).expect(200);
      expectError(
        await hold({ customerId: c.id, featureId: bool.id, amount: 1 }),
        400,
        'FEATURE_NOT_METERED',
      );
      expectError(
        await hold({ customerId: c.id, featureId: ungranted.id, amount: 1 }),
        403,
        'FEATURE_NOT_GRANTED',
      );
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${ungranted.id}`)
        .set(A())
        .send({ mode: 'deny' })
        .expect(200);
      expectError(
        await hold({ customerId: c.id, featureId: ungranted.id, amount: 1 }),
        403,
        'FEATURE_NOT_GRANTED',
      );
      // the limit of live holds before quota: two more fill the places (allowOverage), then both apply
      await held({ customerId: c.id, featureId: f.id, amount: 1, allowOverage: true });
      await held({ customerId: c.id, featureId: f.id, amount: 1, allowOverage: true });
      expectError(await hold({ customerId: c.id, featureId: f.id, amount: 5 }), 409, 'HOLD_LIMIT_REACHED');
    });

    it('commit: validation, HOLD_NOT_FOUND, the replay of a committed hold, HOLD_FINALIZED, HOLD_EXPIRED, USAGE_EVENT_CONFLICT, QUOTA_EXCEEDED; release: validation, HOLD_NOT_FOUND, HOLD_FINALIZED', async () => {
      const { f, c } = await metered(3);
      setNow('2025-03-10T00:00:00.000Z');
      await use({ customerId: c.id, featureId: f.id, amount: 1, eventId: 'used' }).expect(201);
      expectError(await commit(999_999, { amount: -1 }), 400, 'VALIDATION_FAILED');
      expectError(await commit('abc'), 400, 'VALIDATION_FAILED');
      expectError(await commit(999_999, { amount: 1 }), 404, 'HOLD_NOT_FOUND');
      expectError(await commit(2 ** 53 - 1), 404, 'HOLD_NOT_FOUND');
      expectError(await commit(2 ** 53), 400, 'VALIDATION_FAILED');
      // a committed hold replays even past its expiry and whatever the body names
      const done = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' });
      await commit(done.id).expect(201);
      // released past its expiry: HOLD_FINALIZED before HOLD_EXPIRED
      const released = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' });
      await release(released.id).expect(200);
      // expired, with an eventId taken and an amount that does not fit: HOLD_EXPIRED first
      const expiring = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' });
      setNow('2025-03-10T00:00:02.000Z');
      expect((await commit(done.id, { amount: 99, eventId: 'used' })).status).toBe(200);
      expectError(await commit(released.id, { eventId: 'used' }), 409, 'HOLD_FINALIZED');
      expectError(await commit(expiring.id, { amount: 99, eventId: 'used' }), 410, 'HOLD_EXPIRED');
      const live = await held({ customerId: c.id, featureId: f.id, amount: 1 });
      expectError(await commit(live.id, { amount: 99, eventId: 'used' }), 409, 'USAGE_EVENT_CONFLICT');
      expectError(await commit(live.id, { amount: 99 }), 409, 'QUOTA_EXCEEDED');
      // release
      expectError(await release(999_999).send({ reason: 'x' }), 400, 'VALIDATION_FAILED');
      expectError(await release('0'), 400, 'VALIDATION_FAILED');
      expectError(await release(999_999), 404, 'HOLD_NOT_FOUND');
      expectError(await release(done.id), 409, 'HOLD_FINALIZED');
      // list
      expectError(await list(999_999, '?status=gone'), 400, 'VALIDATION_FAILED');
      expectError(await list(999_999), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await list(2 ** 40), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await t.http.get(`${P}/usage/holds/999999`).set(A()), 404, 'HOLD_NOT_FOUND');
      expectError(await t.http.get(`${P}/usage/holds/1.5`).set(A()), 400, 'VALIDATION_FAILED');
    });

    it('bad input is 400 VALIDATION_FAILED naming the field, and nothing is written', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const h = await held({ customerId: c.id, featureId: f.id, amount: 1 });
      const valid = { customerId: c.id, featureId: f.id, amount: 1, holdId: 'bad-input' };
      const before = await Promise.all(
        ['usage_holds', 'usage_records', 'audit_events', 'events'].map((x) => count(x)),
      );
      const badHolds: Array<[Record<string, unknown>, string]> = [
        [{ ...valid, extra: 1 }, 'extra'],
        [{ ...valid, amount: 0 }, 'amount'],
        [{ ...valid, amount: -1 }, 'amount'],
        [{ ...valid, amount: 0.0000001 }, 'amount'],
        [{ ...valid, amount: 1_000_000_000_001 }, 'amount'],
        [{ ...valid, amount: '1' }, 'amount'],
        [{ ...valid, amount: null }, 'amount'],
        [{ ...valid, holdId: '' }, 'holdId'],
        [{ ...valid, holdId: 'x'.repeat(256) }, 'holdId'],
        [{ ...valid, holdId: 'naïve' }, 'holdId'],
        [{ ...valid, holdId: null }, 'holdId'],
        [{ ...valid, holdId: 7 }, 'holdId'],
        [{ ...valid, ttl: null }, 'ttl'],
        [{ ...valid, ttl: 'PT0S' }, 'ttl'],
        [{ ...valid, ttl: 'PT24H1S' }, 'ttl'],
        [{ ...valid, ttl: 'P2D' }, 'ttl'],
        [{ ...valid, ttl: 'P1W' }, 'ttl'],
        [{ ...valid, ttl: 'P1M' }, 'ttl'],
        [{ ...valid, ttl: 'P1Y' }, 'ttl'],
        [{ ...valid, ttl: 'PT1.5M' }, 'ttl'],
        [{ ...valid, ttl: 'pt1m' }, 'ttl'],
        [{ ...valid, ttl: 'PT-1M' }, 'ttl'],
        [{ ...valid, ttl: 'PT' }, 'ttl'],
        [{ ...valid, ttl: 'P' }, 'ttl'],
        [{ ...valid, ttl: 'P1DT' }, 'ttl'],
        [{ ...valid, ttl: 900 }, 'ttl'],
        [{ ...valid, allowOverage: 'yes' }, 'allowOverage'],
        [{ ...valid, allowOverage: null }, 'allowOverage'],
        [{ ...valid, customerId: 0 }, 'customerId'],
        [{ ...valid, customerId: 2 ** 53 }, 'customerId'],
        [{ ...valid, customerId: 1.5 }, 'customerId'],
        [{ ...valid, customerId: null }, 'customerId'],
        [{ ...valid, featureId: -3 }, 'featureId'],
        [{ ...valid, featureId: '3' }, 'featureId'],
        [{ ...valid, featureId: null }, 'featureId'],
        [{ ...valid, feature: f.slug }, 'feature'],
      ];
      for (const [body, field] of badHolds) {
        const res = await t.http.post(`${P}/usage/holds`).set(A()).send(body);
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
      }
      const badCommits: Array<[Record<string, unknown>, string]> = [
        [{ amount: null }, 'amount'],
        [{ amount: 0 }, 'amount'],
        [{ eventId: null }, 'eventId'],
        [{ eventId: '' }, 'eventId'],
        [{ allowOverage: null }, 'allowOverage'],
        [{ extra: true }, 'extra'],
      ];
      for (const [body, field] of badCommits) {
        const res = await commit(h.id, body);
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
      }
      for (const body of [{ amount: 1 }, { anything: null }]) {
        const res = await release(h.id).send(body);
        expectError(res, 400, 'VALIDATION_FAILED');
      }
      for (const q of [
        '?page=0',
        '?pageSize=101',
        '?pageSize=0',
        '?featureId=0',
        '?featureId=9007199254740992',
        '?status=HELD',
        '?search=x',
      ])
        expectError(await list(c.id, q), 400, 'VALIDATION_FAILED');
      const after = await Promise.all(
        ['usage_holds', 'usage_records', 'audit_events', 'events'].map((x) => count(x)),
      );
      expect(after).toEqual(before);
      expect((await getHold(h.id)).status).toBe('held');
    });
  });

  describe('tenancy, list and records', () => {
    it("another project's customer, feature or hold is not found; no list shows it; one holdId in two projects or for two customers names two holds", async () => {
      const { f, c } = await metered(10);
      const fb = await feature(true, B());
      const pb = await plan('tier', [{ featureId: fb.id, limit: 10, resetInterval: 'P1M' }], B());
      const cb = await customer({}, B());
      await windowOf(cb.id, pb.id, 'tier', '2025-03-01T00:00:00.000Z', b);
      setNow('2025-03-10T00:00:00.000Z');
      const mine = await held({ customerId: c.id, featureId: f.id, amount: 1, holdId: 'shared' });
      const theirs = await hold({ customerId: cb.id, featureId: fb.id, amount: 1, holdId: 'shared' }, B());
      expect(theirs.status).toBe(201);
      expect(theirs.body.data.hold.id).not.toBe(mine.id);
      const c2 = await customer();
      await windowOf(
        c2.id,
        (await plan('tier', [{ featureId: f.id, limit: 1, resetInterval: null }])).id,
        'tier',
        '2025-03-01T00:00:00.000Z',
      );
      expect((await hold({ customerId: c2.id, featureId: f.id, amount: 1, holdId: 'shared' })).status).toBe(
        201,
      );

      expectError(await hold({ customerId: cb.id, featureId: f.id, amount: 1 }), 404, 'CUSTOMER_NOT_FOUND');
      expectError(
        await hold({ customer: { type: 'username', value: cb.username }, featureId: f.id, amount: 1 }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(await hold({ customerId: c.id, featureId: fb.id, amount: 1 }), 404, 'FEATURE_NOT_FOUND');
      expectError(await hold({ customerId: c.id, feature: fb.slug, amount: 1 }), 404, 'FEATURE_NOT_FOUND');
      const other = theirs.body.data.hold.id;
      expectError(await t.http.get(`${P}/usage/holds/${other}`).set(A()), 404, 'HOLD_NOT_FOUND');
      expectError(await commit(other), 404, 'HOLD_NOT_FOUND');
      expectError(await release(other), 404, 'HOLD_NOT_FOUND');
      expectError(await list(cb.id), 404, 'CUSTOMER_NOT_FOUND');
      const page = await list(c.id, `?featureId=${fb.id}`);
      expect(page.body.data).toMatchObject({ data: [], total: 0 });
      expect((await t.http.get(`${P}/usage/holds/${other}`).set(B())).body.data.status).toBe('held');
    });

    it('the list: newest first as a page object, filtered by status as derived now and by featureId', async () => {
      const { f, c } = await metered(null);
      const g = await feature();
      setNow('2025-03-10T00:00:00.000Z');
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${g.id}`)
        .set(A())
        .send({ mode: 'set', limit: null })
        .expect(200);
      const h1 = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' });
      const h2 = await held({ customerId: c.id, featureId: f.id, amount: 2 });
      const h3 = await held({ customerId: c.id, featureId: g.id, amount: 3 });
      await commit(h2.id).expect(201);
      setNow('2025-03-10T00:00:01.000Z');
      const h4 = await held({ customerId: c.id, featureId: f.id, amount: 4 });
      await release(h4.id).expect(200);
      const page = await list(c.id);
      expect(page.status).toBe(200);
      expect(page.body.data).toMatchObject({ page: 1, pageSize: 10, total: 4 });
      expect(page.body.data.data.map((h: any) => [h.id, h.status])).toEqual([
        [h4.id, 'released'],
        [h3.id, 'held'],
        [h2.id, 'committed'],
        [h1.id, 'expired'],
      ]);
      const ids = async (q: string) => {
        const res = await list(c.id, q);
        expect(res.status).toBe(200);
        return res.body.data.data.map((h: any) => h.id);
      };
      expect(await ids('?status=expired')).toEqual([h1.id]);
      expect(await ids('?status=held')).toEqual([h3.id]);
      expect(await ids('?status=committed')).toEqual([h2.id]);
      expect(await ids('?status=released')).toEqual([h4.id]);
      expect(await ids(`?featureId=${f.id}`)).toEqual([h4.id, h2.id, h1.id]);
      expect(await ids(`?featureId=${g.id}&status=held`)).toEqual([h3.id]);
      expect(await ids('?featureId=9007199254740991')).toEqual([]);
      const second = await list(c.id, '?page=2&pageSize=3');
      expect(second.body.data).toMatchObject({
        page: 2,
        pageSize: 3,
        total: 4,
        data: [expect.objectContaining({ id: h1.id })],
      });
    });

    it('audit records: hold.created, hold.committed after its usage.recorded, hold.released; expiries and replays record nothing', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const before = (
        await t.dataSource.query(`SELECT count(*) AS n FROM audit_events WHERE project_id = $1`, [a.id])
      )[0].n;
      const h = await held({ customerId: c.id, featureId: f.id, amount: 3, holdId: 'audited', ttl: 'PT1M' });
      await hold({ customerId: c.id, featureId: f.id, amount: 3, holdId: 'audited' }).expect(200);
      const done = (await commit(h.id, { amount: 2 })).body.data;
      await commit(h.id).expect(200);
      const r = await held({ customerId: c.id, featureId: f.id, amount: 1, holdId: 'to-release' });
      setNow('2025-03-10T00:00:30.000Z');
      await release(r.id).expect(200);
      await release(r.id).expect(200);
      const e = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' });
      await scheduler.runOnce(new Date('2025-03-10T00:01:00.000Z'));
      await release(e.id).expect(200);
      const rows: any[] = await t.dataSource.query(
        `SELECT * FROM audit_events WHERE project_id = $1 ORDER BY position OFFSET $2`,
        [a.id, Number(before)],
      );
      expect(rows.map((x) => [x.action, x.resource_type, x.resource_id])).toEqual([
        ['hold.created', 'hold', String(h.id)],
        ['usage.recorded', 'usage', String(done.usage.id)],
        ['hold.committed', 'hold', String(h.id)],
        ['hold.created', 'hold', String(r.id)],
        ['hold.released', 'hold', String(r.id)],
        ['hold.created', 'hold', String(e.id)],
      ]);
      expect(rows[0].changes).toEqual({
        customerId: { from: null, to: c.id },
        featureId: { from: null, to: f.id },
        holdId: { from: null, to: 'audited' },
        amount: { from: null, to: 3 },
        overage: { from: null, to: 0 },
        allowOverage: { from: null, to: false },
        expiresAt: { from: null, to: '2025-03-10T00:01:00.000Z' },
        status: { from: null, to: 'held' },
      });
      expect(rows[2].changes).toEqual({
        status: { from: 'held', to: 'committed' },
        usageId: { from: null, to: done.usage.id },
      });
      expect(rows[4].changes).toEqual({ status: { from: 'held', to: 'released' } });
      expect(rows.every((x) => x.actor_type === 'private_key')).toBe(true);
    });

    it('Idempotency-Key is taken by the three POSTs', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const key = { 'Idempotency-Key': `hold-key-${++seq}` };
      const body = { customerId: c.id, featureId: f.id, amount: 1, holdId: 'idem' };
      const first = await t.http.post(`${P}/usage/holds`).set(A()).set(key).send(body);
      const again = await t.http.post(`${P}/usage/holds`).set(A()).set(key).send(body);
      expect([first.status, again.status]).toEqual([201, 201]);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      const id = first.body.data.hold.id;
      const ckey = { 'Idempotency-Key': `commit-key-${seq}` };
      const c1 = await commit(id).set(ckey).send({});
      const c2 = await commit(id).set(ckey).send({});
      expect([c1.status, c2.status]).toEqual([201, 201]);
      expect(c2.body.data).toEqual(c1.body.data);
      const other = await held({ customerId: c.id, featureId: f.id, amount: 1 });
      const rkey = { 'Idempotency-Key': `release-key-${seq}` };
      const r1 = await release(other.id).set(rkey);
      const r2 = await release(other.id).set(rkey);
      expect(r2.headers['idempotent-replayed']).toBe('true');
      expect(r2.body.data).toEqual(r1.body.data);
    });

    it('deleting a customer deletes its holds, with no event', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const h = await held({ customerId: c.id, featureId: f.id, amount: 1, ttl: 'PT1S' });
      await t.http.delete(`${P}/customers/${c.id}`).set(A()).expect(200);
      expectError(await t.http.get(`${P}/usage/holds/${h.id}`).set(A()), 404, 'HOLD_NOT_FOUND');
      await scheduler.runOnce(new Date('2025-03-10T00:01:00.000Z'));
      const told = await t.dataSource.query(
        `SELECT 1 FROM events WHERE type = 'usage.hold_expired' AND data->'hold'->>'id' = $1`,
        [String(h.id)],
      );
      expect(told).toHaveLength(0);
    });

    it('a key with usage:read reads holds but cannot place, commit or release them', async () => {
      const { f, c } = await metered(10);
      setNow('2025-03-10T00:00:00.000Z');
      const h = await held({ customerId: c.id, featureId: f.id, amount: 1 });
      const key = await t.http
        .post(`/api/admin/v1/projects/${a.id}/keys`)
        .set({ Authorization: 'Bearer test-admin-token-0123456789abcdef' })
        .send({ kind: 'private', scopes: ['usage:read'] });
      expect(key.status).toBe(201);
      const R = bearer(key.body.data.key);
      expect((await t.http.get(`${P}/usage/holds/${h.id}`).set(R)).status).toBe(200);
      expect((await list(c.id, '', R)).status).toBe(200);
      expectError(await hold({ customerId: c.id, featureId: f.id, amount: 1 }, R), 403, 'INSUFFICIENT_SCOPE');
      expectError(await commit(h.id, {}, R), 403, 'INSUFFICIENT_SCOPE');
      expectError(await release(h.id, R), 403, 'INSUFFICIENT_SCOPE');
    });
  });

  it('property: after any sequence of holds, commits, releases, expiries, consumes and reversals, used + held + remaining = limit in every bucket and period', async () => {
    const f = await feature();
    const p = await plan('tier', [{ featureId: f.id, limit: 12, resetInterval: 'PT1H' }]);
    const addon = await plan('addon', [{ featureId: f.id, limit: 5, priority: 1, resetInterval: 'P1D' }]);
    type Step =
      | { kind: 'hold'; amount: number; ttlS: number; over: boolean }
      | { kind: 'commit'; pick: number; ratio: number; over: boolean }
      | { kind: 'release'; pick: number }
      | { kind: 'consume'; amount: number; over: boolean }
      | { kind: 'reverse'; pick: number }
      | { kind: 'wait'; s: number };
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('hold' as const),
        amount: fc.integer({ min: 1, max: 8 }),
        ttlS: fc.integer({ min: 1, max: 3000 }),
        over: fc.boolean(),
      }),
      fc.record({
        kind: fc.constant('commit' as const),
        pick: fc.nat(),
        ratio: fc.constantFrom(0.5, 1, 1.5, 3),
        over: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
      fc.record({
        kind: fc.constant('consume' as const),
        amount: fc.integer({ min: 1, max: 6 }),
        over: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('reverse' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('wait' as const), s: fc.integer({ min: 1, max: 2400 }) }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 4, maxLength: 14 }), async (steps: Step[]) => {
        const c = await customer();
        const start = Date.UTC(2025, 5, 1) + ++run * 10 * DAY;
        await windowOf(c.id, p.id, 'tier', new Date(start).toISOString());
        await windowOf(c.id, addon.id, 'addon', new Date(start).toISOString());
        setNow(new Date(start));
        const g = await grant(c.id, {
          featureId: f.id,
          amount: 4,
          expiresAt: new Date(start + DAY).toISOString(),
        });
        expect(g.id).toEqual(expect.any(Number));
        let now = start + 10 * MINUTE;
        setNow(new Date(now));
        const holds: number[] = [];
        const records: number[] = [];
        for (const s of steps) {
          const base = { customerId: c.id, featureId: f.id };
          if (s.kind === 'hold') {
            const res = await hold({ ...base, amount: s.amount, ttl: `PT${s.ttlS}S`, allowOverage: s.over });
            expect([201, 409]).toContain(res.status);
            if (res.status === 201) holds.push(res.body.data.hold.id);
          } else if (s.kind === 'commit' && holds.length) {
            const id = holds[s.pick % holds.length];
            const h = await getHold(id);
            const res = await commit(id, { amount: h.amount * s.ratio, allowOverage: s.over });
            expect([200, 201, 409, 410]).toContain(res.status);
            if (res.status === 201) records.push(res.body.data.usage.id);
            // never refused for quota up to the held amount
            if (s.ratio <= 1 && h.status === 'held') expect(res.status).toBe(201);
          } else if (s.kind === 'release' && holds.length) {
            expect([200, 409]).toContain((await release(holds[s.pick % holds.length])).status);
          } else if (s.kind === 'consume') {
            const res = await use({ ...base, amount: s.amount, allowOverage: s.over });
            expect([201, 409]).toContain(res.status);
            if (res.status === 201) records.push(res.body.data.usage.id);
          } else if (s.kind === 'reverse' && records.length) {
            expect(
              (await t.http.post(`${P}/usage/${records[s.pick % records.length]}/reverse`).set(A())).status,
            ).toBe(200);
          } else if (s.kind === 'wait') {
            now += s.s * SECOND;
            setNow(new Date(now));
            if (s.s % 3 === 0) await scheduler.runOnce(new Date(now));
          }
          const view = await check({ ...base, amount: 0 });
          let used = 0;
          let heldSum = 0;
          for (const x of view.buckets) {
            expect(x.used + x.held + x.remaining).toBeCloseTo(x.limit, 6);
            used += x.used;
            heldSum += x.held;
          }
          expect(view.balance.held).toBeCloseTo(heldSum, 6);
          expect(view.balance.used).toBeCloseTo(used, 6);
          // what live holds hold in this instant's buckets is at most what they took
          const live = await Promise.all(holds.map((id) => getHold(id)));
          const liveTaken = live
            .filter((h) => h.status === 'held')
            .reduce((sum, h) => sum + h.amount - h.overage, 0);
          expect(view.balance.held).toBeLessThanOrEqual(liveTaken + 1e-6);
        }
      }),
      { numRuns: 12, seed: 3401, endOnFailure: true },
    );
  });

  it('answers times as ISO 8601 with milliseconds', async () => {
    const { f, c } = await metered(10);
    const h = await held({ customerId: c.id, featureId: f.id, amount: 1 });
    expect(h.createdAt).toMatch(ISO_MS);
    expect(h.expiresAt).toMatch(ISO_MS);
  });
});
