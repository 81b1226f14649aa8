import request from 'supertest';
import { Clock } from '../src/common/clock';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { CALENDAR_EXAMPLES, exampleInstant } from './support/calendar-examples';
import { catalog, clockSetter } from './support/catalog';

const P = '/api/private/v1';

/**
 * Calendar periods through HTTP (docs/entitlements.md#calendar-periods): quotas that reset at local
 * calendar units in the quota's zone, else the customer's, else the project's, each as it was when
 * the period started. Windows at exact instants are written straight into `subscriptions`; the
 * application's `Clock` is set to the instant under test.
 */
describe('calendar periods', () => {
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
    setup = catalog(t, 'pc');
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const setNow = (at: string) => clockSetter(clock)(at);
  const meteredFeature = () => setup.feature(A());

  /** A plan of a group of its own with one quota. */
  async function planWith(quota: Record<string, unknown>): Promise<{ id: number; group: string }> {
    const group = `g-${++seq}`;
    return { id: (await setup.plan(A(), group, [quota])).id, group };
  }

  /** A customer holding a permanent window of the plan from `from`. */
  async function customerOn(
    planId: number,
    group: string,
    from: string,
    extra: Record<string, unknown> = {},
  ) {
    const c = await setup.customer(A(), extra);
    await setup.windowOf(a.id, { customerId: c.id, planId, group, validFrom: from });
    return c;
  }

  const bucket = async (customerId: number, featureId: number) => {
    const res = await t.http.post(`${P}/entitlements/check`).set(A()).send({ customerId, featureId });
    expect(res.status).toBe(200);
    return res.body.data.buckets[0];
  };
  const use = (customerId: number, featureId: number, amount: number) =>
    t.http
      .post(`${P}/usage`)
      .set(A())
      .send({ eventId: `pe-${++seq}`, customerId, featureId, amount });

  it("a calendar P1D quota in the quota's zone: a 23-hour day in New York, and usage of the day before does not count", async () => {
    const f = await meteredFeature();
    const p = await planWith({
      featureId: f.id,
      limit: 10,
      resetInterval: 'P1D',
      resetAnchor: 'calendar',
      resetTimeZone: 'America/New_York',
    });
    const c = await customerOn(p.id, p.group, '2027-01-01T00:00:00.000Z');
    setNow('2027-03-14T04:30:00.000Z'); // 23:30 on the 13th in New York
    await use(c.id, f.id, 4).expect(201);
    setNow('2027-03-14T12:00:00.000Z');
    expect(await bucket(c.id, f.id)).toMatchObject({
      resetAnchor: 'calendar',
      timeZone: 'America/New_York',
      periodStart: '2027-03-14T05:00:00.000Z',
      periodEnd: '2027-03-15T04:00:00.000Z',
      used: 0,
      remaining: 10,
    });
  });

  it('a run-anchored quota says so: resetAnchor run, timeZone UTC', async () => {
    const f = await meteredFeature();
    const p = await planWith({ featureId: f.id, limit: 10, resetInterval: 'P1D' });
    const c = await customerOn(p.id, p.group, '2027-01-01T10:00:00.000Z');
    setNow('2027-03-14T12:00:00.000Z');
    expect(await bucket(c.id, f.id)).toMatchObject({
      resetAnchor: 'run',
      timeZone: 'UTC',
      periodStart: '2027-03-14T10:00:00.000Z',
      periodEnd: '2027-03-15T10:00:00.000Z',
    });
  });

  it('a calendar period never reaches back before the run: the first is [run start, first boundary)', async () => {
    const f = await meteredFeature();
    const p = await planWith({ featureId: f.id, limit: 10, resetInterval: 'P1M', resetAnchor: 'calendar' });
    const c = await customerOn(p.id, p.group, '2027-05-17T10:00:00.000Z');
    setNow('2027-05-20T00:00:00.000Z');
    expect(await bucket(c.id, f.id)).toMatchObject({
      timeZone: 'UTC',
      periodStart: '2027-05-17T10:00:00.000Z',
      periodEnd: '2027-06-01T00:00:00.000Z',
    });
  });

  it("without a zone of its own a quota follows the customer's zone, and a change applies from the next boundary", async () => {
    const f = await meteredFeature();
    const p = await planWith({ featureId: f.id, limit: 10, resetInterval: 'P1D', resetAnchor: 'calendar' });
    const c = await customerOn(p.id, p.group, '2027-01-01T00:00:00.000Z', { timeZone: 'Asia/Tokyo' });
    setNow('2027-05-10T03:00:00.000Z');
    expect(await bucket(c.id, f.id)).toMatchObject({
      timeZone: 'Asia/Tokyo',
      periodStart: '2027-05-09T15:00:00.000Z',
      periodEnd: '2027-05-10T15:00:00.000Z',
    });
    const patched = await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ timeZone: 'UTC' });
    expect(patched.status).toBe(200);
    // the period in progress keeps its bounds
    setNow('2027-05-10T05:00:00.000Z');
    expect(await bucket(c.id, f.id)).toMatchObject({
      timeZone: 'Asia/Tokyo',
      periodStart: '2027-05-09T15:00:00.000Z',
      periodEnd: '2027-05-10T15:00:00.000Z',
    });
    // the next one ends at the first UTC midnight: a short day
    setNow('2027-05-10T20:00:00.000Z');
    expect(await bucket(c.id, f.id)).toMatchObject({
      timeZone: 'UTC',
      periodStart: '2027-05-10T15:00:00.000Z',
      periodEnd: '2027-05-11T00:00:00.000Z',
    });
  });

  it("a customer without a zone follows the project's, as it was when the period started", async () => {
    const project = await t.createProject();
    const auth = bearer(project.privateKey);
    const f = (
      await t.http
        .post(`${P}/features`)
        .set(auth)
        .send({ slug: 'calls', name: 'Calls', metered: true, unit: 'call' })
    ).body.data;
    const plan = (
      await t.http
        .post(`${P}/plans`)
        .set(auth)
        .send({
          slug: 'daily',
          name: 'Daily',
          value: 10,
          group: 'tier',
          quotas: [{ featureId: f.id, limit: 5, resetInterval: 'P1D', resetAnchor: 'calendar' }],
        })
    ).body.data;
    const created = await t.http.post(`${P}/customers`).set(auth).send({ username: 'zoned_customer' });
    expect(created.status).toBe(201);
    const c = created.body.data;
    await t.dataSource.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, status)
       VALUES ($1, $2, $3, 'tier', '2027-01-01T00:00:00Z', NULL, 'activation', 'active')`,
      [project.id, c.id, plan.id],
    );
    setNow('2027-05-10T03:00:00.000Z');
    const changed = await t.http
      .patch(`/api/admin/v1/projects/${project.id}`)
      .set({ Authorization: `Bearer ${t.env.ADMIN_TOKEN}` })
      .send({ timeZone: 'Asia/Kolkata' });
    expect(changed.status).toBe(200);
    const check = async () =>
      (await t.http.post(`${P}/entitlements/check`).set(auth).send({ customerId: c.id, featureId: f.id }))
        .body.data.buckets[0];
    // the UTC day in progress keeps its bounds, the next ends at Kolkata's midnight
    expect(await check()).toMatchObject({
      timeZone: 'UTC',
      periodStart: '2027-05-10T00:00:00.000Z',
      periodEnd: '2027-05-11T00:00:00.000Z',
    });
    setNow('2027-05-11T06:00:00.000Z');
    expect(await check()).toMatchObject({
      timeZone: 'Asia/Kolkata',
      periodStart: '2027-05-11T00:00:00.000Z',
      periodEnd: '2027-05-11T18:30:00.000Z',
    });
  });

  describe('thresholds', () => {
    const events = async (customerId: number) => {
      const res = await t.http.get(`${P}/events?customerId=${customerId}&limit=100`).set(A());
      expect(res.status).toBe(200);
      return (res.body.data.data as Array<{ type: string; data: any }>)
        .filter((e) => e.type === 'usage.threshold_crossed' || e.type === 'usage.limit_reached')
        .sort((x, y) => x.data.customerSeq - y.data.customerSeq);
    };

    it('a consume crossing several records each once, ascending, then usage.limit_reached; a reversal does not re-arm, the next period does', async () => {
      const f = await meteredFeature();
      const p = await planWith({
        featureId: f.id,
        limit: 10,
        resetInterval: 'P1D',
        resetAnchor: 'calendar',
        thresholds: [80, 50],
      });
      const c = await customerOn(p.id, p.group, '2027-01-01T00:00:00.000Z');
      setNow('2027-03-01T10:00:00.000Z');
      await use(c.id, f.id, 4).expect(201); // 40%: nothing
      expect(await events(c.id)).toEqual([]);
      const crossing = await use(c.id, f.id, 6).expect(201); // 40% → 100%: 50, 80, then the limit
      const got = await events(c.id);
      expect(got.map((e) => [e.type, e.data.threshold ?? null])).toEqual([
        ['usage.threshold_crossed', 50],
        ['usage.threshold_crossed', 80],
        ['usage.limit_reached', null],
      ]);
      expect(got[0].data).toMatchObject({
        customer: { id: c.id },
        feature: { id: f.id, slug: f.slug },
        usageId: crossing.body.data.usage.id,
        bucket: { used: 10, remaining: 0, periodStart: '2027-03-01T00:00:00.000Z' },
      });
      expect(got[0].data.customerSeq).toBeLessThan(got[1].data.customerSeq);
      // given back and taken again in the same period: not again
      await t.http.post(`${P}/usage/${crossing.body.data.usage.id}/reverse`).set(A()).expect(200);
      await use(c.id, f.id, 6).expect(201);
      expect(await events(c.id)).toHaveLength(3);
      // a check and a refused consume record none
      await t.http
        .post(`${P}/entitlements/check`)
        .set(A())
        .send({ customerId: c.id, featureId: f.id, amount: 5 })
        .expect(200);
      await use(c.id, f.id, 5).expect(409);
      expect(await events(c.id)).toHaveLength(3);
      // the next day's period arms them again
      setNow('2027-03-02T10:00:00.000Z');
      await use(c.id, f.id, 5).expect(201);
      expect((await events(c.id)).slice(3).map((e) => [e.data.threshold, e.data.bucket.periodStart])).toEqual(
        [[50, '2027-03-02T00:00:00.000Z']],
      );
    });
  });

  it('every worked example, asked through ?at= of a quota in its zone', async () => {
    const f = await meteredFeature();
    // a customer on a plan of each zone, interval and day, in a run started long before
    const customers = new Map<string, number>();
    for (const [, zone, interval, day] of CALENDAR_EXAMPLES) {
      const key = `${zone}|${interval}|${day}`;
      if (customers.has(key)) continue;
      const p = await planWith({
        featureId: f.id,
        limit: 10,
        resetInterval: interval,
        resetAnchor: 'calendar',
        resetDayOfMonth: day,
        resetTimeZone: zone,
      });
      customers.set(key, (await customerOn(p.id, p.group, '2026-01-01T00:00:00.000Z')).id);
    }
    const answers = [];
    for (const [rule, zone, interval, day, at] of CALENDAR_EXAMPLES) {
      const res = await t.http
        .post(`${P}/entitlements/check?at=${exampleInstant(at)}`)
        .set(A())
        .send({ customerId: customers.get(`${zone}|${interval}|${day}`), featureId: f.id });
      expect(res.status).toBe(200);
      const [b] = res.body.data.buckets;
      answers.push([rule, b.timeZone, b.periodStart, b.periodEnd]);
    }
    expect(answers).toEqual(
      CALENDAR_EXAMPLES.map(([rule, zone, , , , start, end]) => [
        rule,
        zone,
        exampleInstant(start),
        exampleInstant(end),
      ]),
    );
  });

  it('a threshold is crossed once on two replicas consuming at once', async () => {
    const replica = await t.startReplica();
    try {
      const f = await meteredFeature();
      const p = await planWith({ featureId: f.id, limit: 20, resetInterval: 'P1D', thresholds: [50] });
      const c = await customerOn(p.id, p.group, new Date(Date.now() - 3_600_000).toISOString());
      const servers = [t.app.getHttpServer(), replica.getHttpServer()];
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          request(servers[i % 2])
            .post(`${P}/usage`)
            .set(A())
            .send({ eventId: `rep-${c.id}-${i}`, customerId: c.id, featureId: f.id, amount: 1 }),
        ),
      );
      expect(answers.every((r) => r.status === 201)).toBe(true);
      const events = await t.http.get(`${P}/events?type=usage.threshold_crossed&customerId=${c.id}`).set(A());
      expect(events.body.data.data.map((e: any) => e.data.threshold)).toEqual([50]);
      expect(events.body.data.data[0].data.bucket).toMatchObject({ used: 10 });
    } finally {
      await replica.close();
    }
  });

  describe('?at=', () => {
    it('answers as of another instant: the usage of that period, 0 for one to come, at normalised on every answer', async () => {
      const f = await meteredFeature();
      const p = await planWith({ featureId: f.id, limit: 10, resetInterval: 'P1D', resetAnchor: 'calendar' });
      const c = await customerOn(p.id, p.group, '2027-01-01T00:00:00.000Z');
      setNow('2027-03-08T12:00:00.000Z');
      await use(c.id, f.id, 3).expect(201);
      setNow('2027-03-10T12:00:00.000Z');
      await use(c.id, f.id, 1).expect(201);
      const asOf = async (at: string) => {
        const res = await t.http
          .post(`${P}/entitlements/check?at=${encodeURIComponent(at)}`)
          .set(A())
          .send({ customerId: c.id, featureId: f.id });
        expect(res.status).toBe(200);
        return res.body.data;
      };
      expect(await asOf('2027-03-08T07:00:00-05:00')).toMatchObject({
        at: '2027-03-08T12:00:00.000Z',
        balance: { used: 3, remaining: 7 },
        buckets: [{ periodStart: '2027-03-08T00:00:00.000Z', periodEnd: '2027-03-09T00:00:00.000Z' }],
        resetsAt: '2027-03-09T00:00:00.000Z',
      });
      expect((await asOf('2027-03-12T00:00:00Z')).balance).toMatchObject({ used: 0, remaining: 10 });
      // without ?at= the answer says the request's time
      const now = await t.http
        .post(`${P}/entitlements/check`)
        .set(A())
        .send({ customerId: c.id, featureId: f.id });
      expect(now.body.data).toMatchObject({ at: '2027-03-10T12:00:00.000Z', balance: { used: 1 } });
      const list = await t.http
        .get(`${P}/customers/${c.id}/entitlements?at=2027-03-08T12:00:00.000Z`)
        .set(A());
      expect(list.status).toBe(200);
      const mine = list.body.data.find((e: any) => e.feature.id === f.id);
      expect(mine).toMatchObject({ at: '2027-03-08T12:00:00.000Z', balance: { used: 3 } });
    });

    it('refuses a malformed at, one past 2 years from now (before CUSTOMER_NOT_FOUND) and one before the customer existed (before FEATURE_NOT_FOUND)', async () => {
      const f = await meteredFeature();
      const p = await planWith({ featureId: f.id, limit: 10, resetInterval: 'P1D' });
      const c = await customerOn(p.id, p.group, '2027-01-01T00:00:00.000Z');
      setNow('2027-03-10T12:00:00.000Z');
      const check = (at: string, body: Record<string, unknown>) =>
        t.http
          .post(`${P}/entitlements/check?at=${encodeURIComponent(at)}`)
          .set(A())
          .send(body);
      for (const bad of [
        '2027-03-10',
        '2027-02-30T00:00:00Z',
        '2027-03-10T12:00:00',
        '2027-03-10T12:00:00.1234Z',
      ])
        expectAt(await check(bad, { customerId: c.id, featureId: f.id }));
      expectAt(await check('2029-03-10T12:00:00.001Z', { customerId: 999_999_999, featureId: f.id }));
      expect((await check('2029-03-10T12:00:00.000Z', { customerId: c.id, featureId: f.id })).status).toBe(
        200,
      );
      expectAt(await check('2020-01-01T00:00:00Z', { customerId: c.id, featureId: 999_999_999 }));
    });

    it('a grant voided after the instant counts then; an override set after it does not', async () => {
      const f = await meteredFeature();
      const created = await t.http
        .post(`${P}/customers`)
        .set(A())
        .send({ username: `pat${String(++seq).padStart(8, '0')}` });
      const c = created.body.data;
      setNow('2027-03-10T12:00:00.000Z');
      const grant = (
        await t.http.post(`${P}/customers/${c.id}/grants`).set(A()).send({ featureId: f.id, amount: 5 })
      ).body.data.grant;
      setNow('2027-03-11T12:00:00.000Z');
      await t.http.post(`${P}/grants/${grant.id}/void`).set(A()).send({}).expect(200);
      await t.http
        .put(`${P}/customers/${c.id}/overrides/${f.id}`)
        .set(A())
        .send({ mode: 'deny' })
        .expect(200);
      const asOf = async (at: string) =>
        (
          await t.http
            .post(`${P}/entitlements/check?at=${at}`)
            .set(A())
            .send({ customerId: c.id, featureId: f.id })
        ).body.data;
      expect(await asOf('2027-03-10T18:00:00.000Z')).toMatchObject({
        allowed: true,
        override: null,
        buckets: [{ source: 'grant', grantId: grant.id, remaining: 5 }],
      });
      expect(await asOf('2027-03-11T13:00:00.000Z')).toMatchObject({ allowed: false, reason: 'NOT_GRANTED' });
    });
  });
});

function expectAt(res: { status: number; body: any }): void {
  expect(res.status).toBe(400);
  expect(res.body.error.code).toBe('VALIDATION_FAILED');
  expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain('at');
}
