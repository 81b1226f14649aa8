import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';

/**
 * Reset anchors, time zones and thresholds as fields (docs/api-guide.md#features-plans-and-quotas,
 * docs/api-guide.md#customers-and-identifiers, docs/api-guide.md#projects-and-keys): what plan,
 * project and customer writes take and refuse, in which order, what they answer, and the zone
 * histories their changes leave. The periods themselves are tested in test/periods.e2e-spec.ts.
 */
const FEATURES = '/api/private/v1/features';
const PLANS = '/api/private/v1/plans';
const CUSTOMERS = '/api/private/v1/customers';
const PROJECTS = '/api/admin/v1/projects';
const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('time zones, reset anchors and thresholds as fields', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);
  let seq = 0;
  const next = () => ++seq;
  let feature: number;
  let other: number;

  const planBody = (quotas: unknown[]) => ({
    slug: `p-${next()}`,
    name: 'Plan',
    value: 0,
    group: 'g',
    quotas,
  });
  const quota = (fields: Record<string, unknown> = {}) => ({ featureId: feature, limit: 100, ...fields });

  async function createPlan(quotas: unknown[]) {
    const res = await t.http.post(PLANS).set(A()).send(planBody(quotas));
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function createCustomer(body: Record<string, unknown> = {}, auth = A()) {
    const res = await t.http
      .post(CUSTOMERS)
      .set(auth)
      .send({ username: `tz${String(next()).padStart(8, '0')}`, ...body });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  const count = async (sql: string, params: unknown[]) =>
    Number((await t.dataSource.query(sql, params))[0].n);
  const planCount = () => count('SELECT count(*) AS n FROM plans WHERE project_id = $1', [a.id]);
  const projectChanges = (projectId: string) =>
    t.dataSource.query(
      'SELECT from_zone, to_zone, changed_at FROM project_time_zone_changes WHERE project_id = $1 ORDER BY id',
      [projectId],
    );
  const customerChanges = (customerId: number) =>
    t.dataSource.query(
      'SELECT project_id, from_zone, to_zone, changed_at FROM customer_time_zone_changes WHERE customer_id = $1 ORDER BY id',
      [customerId],
    );

  /** 400 with `code`, its details naming exactly `fields`. */
  function expectRefused(
    res: { status: number; body: any; headers: Record<string, string> },
    code: string,
    fields: string[],
  ) {
    expectError(res, 400, code);
    expect([...new Set(res.body.error.details.map((d: { field: string }) => d.field))]).toEqual(fields);
  }

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'A' });
    b = await t.createProject({ name: 'B' });
    feature = (await t.http.post(FEATURES).set(A()).send({ slug: 'calls', name: 'Calls' }).expect(201)).body
      .data.id;
    other = (await t.http.post(FEATURES).set(A()).send({ slug: 'seats', name: 'Seats' }).expect(201)).body
      .data.id;
  });
  afterAll(() => t.close());

  describe('quota fields on plan writes', () => {
    it('answers the defaults on a quota that names none: run, no day, no zone, no thresholds', async () => {
      const plan = await createPlan([quota({ resetInterval: 'P1M' })]);
      expect(plan.quotas[0]).toMatchObject({
        resetInterval: 'P1M',
        resetAnchor: 'run',
        resetDayOfMonth: null,
        resetTimeZone: null,
        thresholds: [],
      });
      const read = await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200);
      expect(read.body.data).toEqual(plan);
    });

    it.each(['PT1M', 'PT1H', 'P1D', 'P1W', 'P1M', 'P3M', 'P6M', 'P1Y'])(
      'takes a calendar quota with the interval %s',
      async (resetInterval) => {
        const plan = await createPlan([quota({ resetAnchor: 'calendar', resetInterval })]);
        expect(plan.quotas[0]).toMatchObject({ resetAnchor: 'calendar', resetInterval, resetTimeZone: null });
      },
    );

    it.each(['P1M', 'P3M', 'P6M'])(
      'takes resetDayOfMonth 1 to 31 with calendar %s',
      async (resetInterval) => {
        for (const day of [1, 15, 31]) {
          const plan = await createPlan([
            quota({ resetAnchor: 'calendar', resetInterval, resetDayOfMonth: day }),
          ]);
          expect(plan.quotas[0].resetDayOfMonth).toBe(day);
        }
      },
    );

    it('stores and answers a zone name as sent, in any letter case', async () => {
      const plan = await createPlan([
        quota({ resetAnchor: 'calendar', resetInterval: 'P1D', resetTimeZone: 'america/NEW_york' }),
        {
          featureId: other,
          limit: 5,
          resetAnchor: 'calendar',
          resetInterval: 'P1D',
          resetTimeZone: 'Etc/GMT+5',
        },
      ]);
      expect(plan.quotas.map((q: { resetTimeZone: string }) => q.resetTimeZone)).toEqual([
        'america/NEW_york',
        'Etc/GMT+5',
      ]);
      const read = await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200);
      expect(read.body.data.quotas[0].resetTimeZone).toBe('america/NEW_york');
    });

    it('answers thresholds in ascending order, and takes explicit nulls where null is allowed', async () => {
      const plan = await createPlan([
        quota({ thresholds: [100, 50, 1, 80], resetDayOfMonth: null, resetTimeZone: null }),
      ]);
      expect(plan.quotas[0]).toMatchObject({ thresholds: [1, 50, 80, 100], resetDayOfMonth: null });
      const ten = await createPlan([quota({ thresholds: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100] })]);
      expect(ten.quotas[0].thresholds).toHaveLength(10);
      const unlimited = await createPlan([quota({ limit: null, thresholds: [] })]);
      expect(unlimited.quotas[0]).toMatchObject({ limit: null, thresholds: [] });
    });

    it.each<[string, Record<string, unknown>]>([
      ['resetAnchor', { resetAnchor: null }],
      ['resetAnchor', { resetAnchor: 'monthly' }],
      ['resetAnchor', { resetAnchor: 'CALENDAR' }],
      ['resetAnchor', { resetAnchor: 1 }],
      ['resetDayOfMonth', { resetDayOfMonth: 0 }],
      ['resetDayOfMonth', { resetDayOfMonth: 32 }],
      ['resetDayOfMonth', { resetDayOfMonth: 1.5 }],
      ['resetDayOfMonth', { resetDayOfMonth: '5' }],
      ['resetTimeZone', { resetTimeZone: 'Mars/Olympus_Mons' }],
      ['resetTimeZone', { resetTimeZone: '+05:00' }],
      ['resetTimeZone', { resetTimeZone: '-05:00' }],
      ['resetTimeZone', { resetTimeZone: '+0530' }],
      ['resetTimeZone', { resetTimeZone: '' }],
      ['resetTimeZone', { resetTimeZone: 'A'.repeat(65) }],
      ['resetTimeZone', { resetTimeZone: 5 }],
      ['thresholds', { thresholds: null }],
      ['thresholds', { thresholds: [0] }],
      ['thresholds', { thresholds: [101] }],
      ['thresholds', { thresholds: [50, 50] }],
      ['thresholds', { thresholds: [1.5] }],
      ['thresholds', { thresholds: ['50'] }],
      ['thresholds', { thresholds: 50 }],
      ['thresholds', { thresholds: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] }],
      ['thresholds', { limit: null, thresholds: [80] }],
    ])('400 VALIDATION_FAILED naming quotas.N.%s (%j), on create and update', async (field, fields) => {
      const plan = await createPlan([quota()]);
      const before = await planCount();
      const body = planBody([{ featureId: other, limit: 1 }, quota(fields)]);
      expectRefused(await t.http.post(PLANS).set(A()).send(body), 'VALIDATION_FAILED', [`quotas.1.${field}`]);
      expect(await planCount()).toBe(before);
      expectRefused(
        await t.http
          .patch(`${PLANS}/${plan.id}`)
          .set(A())
          .send({ quotas: [quota(fields)] }),
        'VALIDATION_FAILED',
        [`quotas.0.${field}`],
      );
      expect((await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200)).body.data).toEqual(plan);
    });

    it.each<[string, Record<string, unknown>]>([
      ['resetInterval', { resetAnchor: 'calendar' }],
      ['resetInterval', { resetAnchor: 'calendar', resetInterval: null }],
      ['resetInterval', { resetAnchor: 'calendar', resetInterval: 'P7D' }],
      ['resetInterval', { resetAnchor: 'calendar', resetInterval: 'P12M' }],
      ['resetInterval', { resetAnchor: 'calendar', resetInterval: 'PT2S' }],
      ['resetInterval', { resetAnchor: 'calendar', resetInterval: 'P1DT12H' }],
      ['resetInterval', { resetAnchor: 'calendar', resetInterval: 'PT60M' }],
      ['resetDayOfMonth', { resetDayOfMonth: 15 }],
      ['resetDayOfMonth', { resetAnchor: 'run', resetInterval: 'P1M', resetDayOfMonth: 15 }],
      ['resetDayOfMonth', { resetAnchor: 'calendar', resetInterval: 'P1D', resetDayOfMonth: 15 }],
      ['resetDayOfMonth', { resetAnchor: 'calendar', resetInterval: 'P1W', resetDayOfMonth: 1 }],
      ['resetDayOfMonth', { resetAnchor: 'calendar', resetInterval: 'P1Y', resetDayOfMonth: 1 }],
      ['resetTimeZone', { resetTimeZone: 'UTC' }],
      ['resetTimeZone', { resetAnchor: 'run', resetInterval: 'P1D', resetTimeZone: 'Europe/Berlin' }],
    ])('400 INVALID_RESET_ANCHOR naming quotas.N.%s (%j), on create and update', async (field, fields) => {
      const plan = await createPlan([quota()]);
      const before = await planCount();
      const body = planBody([{ featureId: other, limit: 1 }, quota(fields)]);
      expectRefused(await t.http.post(PLANS).set(A()).send(body), 'INVALID_RESET_ANCHOR', [
        `quotas.1.${field}`,
      ]);
      expect(await planCount()).toBe(before);
      expectRefused(
        await t.http
          .patch(`${PLANS}/${plan.id}`)
          .set(A())
          .send({ quotas: [quota(fields)] }),
        'INVALID_RESET_ANCHOR',
        [`quotas.0.${field}`],
      );
      expect((await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200)).body.data).toEqual(plan);
    });

    it('INVALID_RESET_ANCHOR names every field of every quota at fault', async () => {
      const res = await t.http
        .post(PLANS)
        .set(A())
        .send(
          planBody([
            quota({ resetAnchor: 'calendar', resetInterval: 'P2D', resetDayOfMonth: 3 }),
            { featureId: other, limit: 1, resetTimeZone: 'UTC' },
          ]),
        );
      expectRefused(res, 'INVALID_RESET_ANCHOR', [
        'quotas.0.resetInterval',
        'quotas.0.resetDayOfMonth',
        'quotas.1.resetTimeZone',
      ]);
    });

    it('refuses in order: VALIDATION_FAILED, then INVALID_RESET_ANCHOR, then the plan and feature checks', async () => {
      const plan = await createPlan([quota()]);
      const badAnchor = quota({ resetTimeZone: 'UTC' });
      // a field error wins over a reset anchor error
      expectRefused(
        await t.http
          .post(PLANS)
          .set(A())
          .send(planBody([badAnchor, { featureId: other, limit: 1, thresholds: [0] }])),
        'VALIDATION_FAILED',
        ['quotas.1.thresholds'],
      );
      // the reset anchor error wins over an unknown feature (create) and an unknown plan (update)
      expectRefused(
        await t.http
          .post(PLANS)
          .set(A())
          .send(planBody([{ ...badAnchor, featureId: 999_999 }])),
        'INVALID_RESET_ANCHOR',
        ['quotas.0.resetTimeZone'],
      );
      expectRefused(
        await t.http
          .patch(`${PLANS}/999999`)
          .set(A())
          .send({ quotas: [badAnchor] }),
        'INVALID_RESET_ANCHOR',
        ['quotas.0.resetTimeZone'],
      );
      expectRefused(
        await t.http
          .patch(`${PLANS}/999999`)
          .set(A())
          .send({ quotas: [quota({ resetAnchor: null })] }),
        'VALIDATION_FAILED',
        ['quotas.0.resetAnchor'],
      );
      // ... and over PLAN_FIELD_IMMUTABLE
      expectRefused(
        await t.http
          .patch(`${PLANS}/${plan.id}`)
          .set(A())
          .send({ group: 'another', quotas: [badAnchor] }),
        'INVALID_RESET_ANCHOR',
        ['quotas.0.resetTimeZone'],
      );
      // with the reset fields right, the checks of today answer
      expectError(
        await t.http
          .patch(`${PLANS}/999999`)
          .set(A())
          .send({ quotas: [quota()] }),
        404,
        'PLAN_NOT_FOUND',
      );
      expectError(
        await t.http
          .post(PLANS)
          .set(A())
          .send(planBody([{ featureId: 999_999, limit: 1, resetAnchor: 'calendar', resetInterval: 'P1D' }])),
        404,
        'FEATURE_NOT_FOUND',
      );
    });

    it('a plan edit changes the reset fields in place: the quota keeps its id, its updatedAt moves', async () => {
      const plan = await createPlan([quota({ resetInterval: 'P1D' })]);
      await new Promise((r) => setTimeout(r, 5));
      const fields = {
        resetAnchor: 'calendar',
        resetInterval: 'P1M',
        resetDayOfMonth: 31,
        resetTimeZone: 'Asia/Kolkata',
        thresholds: [90, 75],
      };
      const res = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({ quotas: [quota(fields)] })
        .expect(200);
      const [q] = res.body.data.quotas;
      expect(q).toMatchObject({ ...fields, id: plan.quotas[0].id, thresholds: [75, 90] });
      expect(q.createdAt).toBe(plan.quotas[0].createdAt);
      expect(new Date(q.updatedAt).getTime()).toBeGreaterThan(new Date(plan.quotas[0].updatedAt).getTime());

      // the same fields again (thresholds in another order) change nothing
      await new Promise((r) => setTimeout(r, 5));
      const same = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({ quotas: [quota({ ...fields, thresholds: [75, 90] })] })
        .expect(200);
      expect(same.body.data).toEqual(res.body.data);

      // back to run: the fields that only go with calendar are cleared by leaving them out
      const back = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({ quotas: [quota({ resetInterval: 'P1D' })] })
        .expect(200);
      expect(back.body.data.quotas[0]).toMatchObject({
        resetAnchor: 'run',
        resetDayOfMonth: null,
        resetTimeZone: null,
        thresholds: [],
      });
    });

    it("another project's key cannot edit the plan: 404 PLAN_NOT_FOUND, nothing written", async () => {
      const plan = await createPlan([quota()]);
      expectError(
        await t.http
          .patch(`${PLANS}/${plan.id}`)
          .set(B())
          .send({
            quotas: [{ featureId: feature, limit: 1, resetAnchor: 'calendar', resetInterval: 'P1D' }],
          }),
        404,
        'PLAN_NOT_FOUND',
      );
      expect((await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200)).body.data).toEqual(plan);
    });
  });

  describe('project timeZone', () => {
    it('defaults to UTC on the project, its list and both info endpoints; no history at creation', async () => {
      const p = await t.createProject({ name: 'Defaults' });
      const read = await t.http.get(`${PROJECTS}/${p.id}`).set(admin).expect(200);
      expect(read.body.data.timeZone).toBe('UTC');
      const info = await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200);
      expect(info.body.data.project.timeZone).toBe('UTC');
      const pub = await t.http.get('/api/public/v1/info').set('X-Service-Key', p.publicKey).expect(200);
      expect(pub.body.data.project.timeZone).toBe('UTC');
      expect(await projectChanges(p.id)).toEqual([]);
    });

    it('takes a zone at creation, stored and answered as sent', async () => {
      const res = await t.http
        .post(PROJECTS)
        .set(admin)
        .send({ name: 'Berlin', timeZone: 'EUROPE/berlin' })
        .expect(201);
      expect(res.body.data.timeZone).toBe('EUROPE/berlin');
      const list = await t.http.get(`${PROJECTS}?search=Berlin`).set(admin).expect(200);
      expect(list.body.data.data.map((p: { timeZone: string }) => p.timeZone)).toEqual(['EUROPE/berlin']);
      expect(await projectChanges(res.body.data.id)).toEqual([]);
    });

    it('a PATCH that changes the zone answers it, shows it on both info endpoints and records the change', async () => {
      const p = await t.createProject({ name: 'Changing' });
      const patched = await t.http
        .patch(`${PROJECTS}/${p.id}`)
        .set(admin)
        .send({ timeZone: 'Asia/Tokyo' })
        .expect(200);
      expect(patched.body.data.timeZone).toBe('Asia/Tokyo');
      const info = await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200);
      expect(info.body.data.project.timeZone).toBe('Asia/Tokyo');
      const pub = await t.http.get('/api/public/v1/info').set('X-Service-Key', p.publicKey).expect(200);
      expect(pub.body.data.project.timeZone).toBe('Asia/Tokyo');
      const [change] = await projectChanges(p.id);
      expect(change).toEqual({ from_zone: 'UTC', to_zone: 'Asia/Tokyo', changed_at: expect.any(Date) });
      expect(Math.abs(change.changed_at.getTime() - Date.now())).toBeLessThan(60_000);

      // unchanged zone, or no zone in the PATCH: no row
      await t.http.patch(`${PROJECTS}/${p.id}`).set(admin).send({ timeZone: 'Asia/Tokyo' }).expect(200);
      await t.http.patch(`${PROJECTS}/${p.id}`).set(admin).send({ name: 'Renamed' }).expect(200);
      expect(await projectChanges(p.id)).toHaveLength(1);

      await t.http.patch(`${PROJECTS}/${p.id}`).set(admin).send({ timeZone: 'utc' }).expect(200);
      expect(
        (await projectChanges(p.id)).map((c: { from_zone: string; to_zone: string }) => [
          c.from_zone,
          c.to_zone,
        ]),
      ).toEqual([
        ['UTC', 'Asia/Tokyo'],
        ['Asia/Tokyo', 'utc'],
      ]);
    });

    it.each<[unknown]>([[null], ['Nowhere/Special'], ['+05:00'], ['-03:30'], [''], ['A'.repeat(65)], [5]])(
      '400 VALIDATION_FAILED naming timeZone for %j on create and update, nothing written',
      async (timeZone) => {
        const p = await t.createProject({ name: `Refused ${next()}` });
        expectRefused(
          await t.http.post(PROJECTS).set(admin).send({ name: 'Refused', timeZone }),
          'VALIDATION_FAILED',
          ['timeZone'],
        );
        expectRefused(
          await t.http.patch(`${PROJECTS}/${p.id}`).set(admin).send({ timeZone }),
          'VALIDATION_FAILED',
          ['timeZone'],
        );
        expect((await t.http.get(`${PROJECTS}/${p.id}`).set(admin).expect(200)).body.data.timeZone).toBe(
          'UTC',
        );
        expect(await projectChanges(p.id)).toEqual([]);
      },
    );
  });

  describe('customer timeZone', () => {
    it('is null unless sent, in the create answer, the record, the list and resolve', async () => {
      const c = await createCustomer();
      expect(c.timeZone).toBeNull();
      const record = await t.http.get(`${CUSTOMERS}/${c.id}`).set(A()).expect(200);
      expect(record.body.data.timeZone).toBeNull();
      expect(await customerChanges(c.id)).toEqual([]);
    });

    it('stores a zone sent at creation as sent, shown in every representation, with no history row', async () => {
      const c = await createCustomer({ timeZone: 'asia/KOLKATA' });
      expect(c.timeZone).toBe('asia/KOLKATA');
      const record = await t.http.get(`${CUSTOMERS}/${c.id}`).set(A()).expect(200);
      expect(record.body.data.timeZone).toBe('asia/KOLKATA');
      const resolved = await t.http
        .post(`${CUSTOMERS}/resolve`)
        .set(A())
        .send({ customer: { type: 'username', value: c.username } })
        .expect(200);
      expect(resolved.body.data.timeZone).toBe('asia/KOLKATA');
      const list = await t.http.get(`${CUSTOMERS}?search=${c.username}`).set(A()).expect(200);
      expect(list.body.data.data.map((i: { timeZone: string }) => i.timeZone)).toEqual(['asia/KOLKATA']);
      const created = await t.http.get('/api/private/v1/events?type=customer.created').set(A()).expect(200);
      const event = created.body.data.data.find(
        (e: { data: { customer: { id: number } } }) => e.data.customer.id === c.id,
      );
      expect(event.data.customer.timeZone).toBe('asia/KOLKATA');
      expect(await customerChanges(c.id)).toEqual([]);
      // null at creation is the default
      expect((await createCustomer({ timeZone: null })).timeZone).toBeNull();
    });

    it('a PATCH sets, changes and clears the zone (null), each change recorded; no row when unchanged', async () => {
      const c = await createCustomer();
      const set = await t.http.patch(`${CUSTOMERS}/${c.id}`).set(A()).send({ timeZone: 'America/Havana' });
      expect(set.status).toBe(200);
      expect(set.body.data.timeZone).toBe('America/Havana');
      await t.http.patch(`${CUSTOMERS}/${c.id}`).set(A()).send({ timeZone: 'America/Havana' }).expect(200);
      await t.http.patch(`${CUSTOMERS}/${c.id}`).set(A()).send({ enabled: true }).expect(200);
      const changed = await t.http
        .patch(`${CUSTOMERS}/${c.id}`)
        .set(A())
        .send({ timeZone: 'Asia/Kathmandu' })
        .expect(200);
      expect(changed.body.data.timeZone).toBe('Asia/Kathmandu');
      const cleared = await t.http
        .patch(`${CUSTOMERS}/${c.id}`)
        .set(A())
        .send({ timeZone: null })
        .expect(200);
      expect(cleared.body.data.timeZone).toBeNull();
      await t.http.patch(`${CUSTOMERS}/${c.id}`).set(A()).send({ timeZone: null }).expect(200);

      const changes = await customerChanges(c.id);
      expect(changes.map((r: { from_zone: string; to_zone: string }) => [r.from_zone, r.to_zone])).toEqual([
        [null, 'America/Havana'],
        ['America/Havana', 'Asia/Kathmandu'],
        ['Asia/Kathmandu', null],
      ]);
      expect(changes.every((r: { project_id: string }) => r.project_id === a.id)).toBe(true);
      const times = changes.map((r: { changed_at: Date }) => r.changed_at.getTime());
      expect([...times].sort((x, y) => x - y)).toEqual(times);

      // customer.updated carries the zone as changed
      const events = await t.http.get('/api/private/v1/events?type=customer.updated').set(A()).expect(200);
      const zones = events.body.data.data
        .filter((e: { data: { customer: { id: number } } }) => e.data.customer.id === c.id)
        .map((e: { data: { customer: { timeZone: string | null } } }) => e.data.customer.timeZone);
      expect(zones).toEqual(expect.arrayContaining(['America/Havana', 'Asia/Kathmandu', null]));
    });

    it.each<[unknown]>([['Nowhere/Special'], ['+05:00'], ['-05:00'], [''], ['A'.repeat(65)], [5], [['UTC']]])(
      '400 VALIDATION_FAILED naming timeZone for %j on create and update, nothing written',
      async (timeZone) => {
        const c = await createCustomer({ timeZone: 'UTC' });
        const username = `tz${String(next()).padStart(8, '0')}`;
        expectRefused(
          await t.http.post(CUSTOMERS).set(A()).send({ username, timeZone }),
          'VALIDATION_FAILED',
          ['timeZone'],
        );
        expect(
          await count('SELECT count(*) AS n FROM customers WHERE project_id = $1 AND username = $2', [
            a.id,
            username,
          ]),
        ).toBe(0);
        expectRefused(
          await t.http.patch(`${CUSTOMERS}/${c.id}`).set(A()).send({ timeZone }),
          'VALIDATION_FAILED',
          ['timeZone'],
        );
        expect((await t.http.get(`${CUSTOMERS}/${c.id}`).set(A()).expect(200)).body.data.timeZone).toBe(
          'UTC',
        );
        expect(await customerChanges(c.id)).toEqual([]);
      },
    );

    it('is null for a customer created implicitly by a redemption', async () => {
      const p = await t.createProject({ name: 'Implicit', autoCreateCustomerAtRedemption: true });
      const P = bearer(p.privateKey);
      const plan = await t.http
        .post(PLANS)
        .set(P)
        .send({ slug: 'pro', name: 'Pro', value: 10, group: 'g' })
        .expect(201);
      const codes = await t.http
        .post('/api/private/v1/codes')
        .set(P)
        .send({ planId: plan.body.data.id, duration: 'P7D', count: 1 })
        .expect(201);
      const res = await t.http
        .post('/api/private/v1/redemptions')
        .set(P)
        .send({
          code: codes.body.data.codes[0],
          customer: { type: 'email', value: 'implicit@example.com' },
          autoCreate: true,
        })
        .expect(200);
      expect(res.body.data.customer.created).toBe(true);
      const record = await t.http.get(`${CUSTOMERS}/${res.body.data.customer.id}`).set(P).expect(200);
      expect(record.body.data.timeZone).toBeNull();
    });

    it("another project's key cannot change the zone: 404 CUSTOMER_NOT_FOUND, nothing written", async () => {
      const c = await createCustomer({ timeZone: 'Asia/Tokyo' });
      expectError(
        await t.http.patch(`${CUSTOMERS}/${c.id}`).set(B()).send({ timeZone: 'UTC' }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expect((await t.http.get(`${CUSTOMERS}/${c.id}`).set(A()).expect(200)).body.data.timeZone).toBe(
        'Asia/Tokyo',
      );
      expect(await customerChanges(c.id)).toEqual([]);
    });
  });
});
