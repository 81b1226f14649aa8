import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';
import { insertPlan as insertPlanRow } from './support/fixtures';

const DAY = 86_400_000;
const ms = (iso: string) => new Date(iso).getTime();

describe('redemption, activation and the chain', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  const A = () => bearer(a.privateKey);
  let seq = 0;
  const next = () => ++seq;
  let plans: { free: number; basic: number; pro: number; max: number };

  const insertPlan = (projectId: string, name: string, value: number, group: string) =>
    insertPlanRow(t.dataSource, { projectId, name, value, group });

  async function codes(planId: number, duration: string | null, count = 1, auth = A()): Promise<string[]> {
    const res = await t.http.post('/api/private/v1/codes').set(auth).send({ planId, duration, count });
    expect(res.status).toBe(201);
    return res.body.data.codes;
  }
  const code = async (planId: number, duration: string | null, auth = A()) =>
    (await codes(planId, duration, 1, auth))[0];

  async function customer(auth = A()): Promise<{ id: number; username: string }> {
    const res = await t.http
      .post('/api/private/v1/customers')
      .set(auth)
      .send({ username: `cust${String(next()).padStart(8, '0')}` });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  const redeem = (body: Record<string, unknown>, auth = A(), path = '/api/private/v1/redemptions') =>
    t.http.post(path).set(auth).send(body);
  const forUser = (c: { username: string }) => ({ type: 'username', value: c.username });

  async function chain(customerId: number, history = false) {
    const res = await t.http
      .get(`/api/private/v1/customers/${customerId}/subscriptions${history ? '?history=true' : ''}`)
      .set(A())
      .expect(200);
    return res.body.data as Array<{
      id: number;
      planId: number;
      validFrom: string;
      validTo: string | null;
      status: string;
      source: string;
      codeId: number | null;
    }>;
  }

  async function codeStatus(raw: string): Promise<string> {
    const [row] = await t.dataSource.query('SELECT status FROM codes WHERE code = $1', [
      raw.replace(/-/g, ''),
    ]);
    return row.status;
  }

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'A', autoCreateCustomerAtRedemption: true });
    b = await t.createProject({ name: 'B', autoCreateCustomerAtRedemption: true });
    plans = {
      free: await insertPlan(a.id, 'Free', 0, 'tier'),
      basic: await insertPlan(a.id, 'Basic', 10, 'tier'),
      pro: await insertPlan(a.id, 'Pro', 20, 'tier'),
      max: await insertPlan(a.id, 'Max', 40, 'tier'),
    };
  });
  afterAll(() => t.close());

  describe('the chain through HTTP (docs/api-guide.md#worked-examples)', () => {
    it('Free permanent + Pro 30 days: Pro now to +30d, Free again from +30d', async () => {
      const c = await customer();
      const res = await redeem({ code: await code(plans.pro, 'P30D'), customer: forUser(c) }).expect(200);
      const [pro, free] = res.body.data.subscriptions;
      expect(res.body.data.customer).toEqual({ id: c.id, username: c.username, created: false });
      expect(pro).toEqual({
        id: expect.any(Number),
        planId: plans.pro,
        planName: 'Pro',
        validFrom: expect.any(String),
        validTo: expect.any(String),
        trial: false,
      });
      expect(ms(pro.validTo) - ms(pro.validFrom)).toBe(30 * DAY);
      expect(free).toMatchObject({
        planId: plans.free,
        planName: 'Free',
        validFrom: pro.validTo,
        validTo: null,
      });
      const live = await chain(c.id);
      expect(live.map((w) => [w.planId, w.source])).toEqual([
        [plans.pro, 'code'],
        [plans.free, 'signup'],
      ]);
      const history = await chain(c.id, true);
      expect(history.map((w) => [w.planId, w.status])).toEqual([
        [plans.pro, 'active'],
        [plans.free, 'active'],
        [plans.free, 'active'],
      ]);
      expect(history[2].validTo).toBe(pro.validFrom); // the sign-up window ended when Pro started
    });

    it('the same plan again extends it; a better plan converts the remaining time; a lesser one waits', async () => {
      const c = await customer();
      const first = (await redeem({ code: await code(plans.pro, 'P30D'), customer: forUser(c) }).expect(200))
        .body.data.subscriptions[0];
      const again = (await redeem({ code: await code(plans.pro, 'P30D'), customer: forUser(c) }).expect(200))
        .body.data.subscriptions[0];
      expect(again.validFrom).toBe(first.validTo);
      expect(ms(again.validTo) - ms(first.validTo)).toBe(30 * DAY);

      const max = (await redeem({ code: await code(plans.max, 'P30D'), customer: forUser(c) }).expect(200))
        .body.data.subscriptions[0];
      const remaining = ms(again.validTo) - ms(max.validFrom); // both Pro windows: the current and the next
      expect(ms(max.validTo)).toBe(
        ms(max.validFrom) + 30 * DAY + Math.floor((remaining * 20) / 40 / 1000) * 1000,
      );

      const basic = (
        await redeem({ code: await code(plans.basic, 'P30D'), customer: forUser(c) }).expect(200)
      ).body.data.subscriptions[0];
      expect(basic.validFrom).toBe(max.validTo);
      const history = await chain(c.id, true);
      expect(history.filter((w) => w.status === 'cancelled').map((w) => w.id)).toEqual([again.id]);
    });

    it('permanent grants: REDUNDANT_PERMANENT_PURCHASE and PERMANENT_TAIL_CONFLICT, nothing changed', async () => {
      const c = await customer();
      await redeem({ code: await code(plans.pro, null), customer: forUser(c) }).expect(200);
      const before = await chain(c.id, true);
      const again = await code(plans.pro, null);
      expectError(await redeem({ code: again, customer: forUser(c) }), 409, 'REDUNDANT_PERMANENT_PURCHASE');
      const lesser = await code(plans.basic, 'P30D');
      expectError(await redeem({ code: lesser, customer: forUser(c) }), 409, 'PERMANENT_TAIL_CONFLICT');
      expect(await chain(c.id, true)).toEqual(before);
      expect(await codeStatus(again)).toBe('available');
      expect(await codeStatus(lesser)).toBe('available');
      // a better timed plan runs first, then the permanent tail comes back
      const max = (await redeem({ code: await code(plans.max, 'P30D'), customer: forUser(c) }).expect(200))
        .body.data.subscriptions;
      expect(
        max.map((w: { planId: number; validTo: string | null }) => [w.planId, w.validTo === null]),
      ).toEqual([
        [plans.max, false],
        [plans.pro, true],
      ]);
    });
  });

  describe('errors, in the order of checks', () => {
    it('CODE_NOT_FOUND for an unknown or malformed code; normalises what a person types', async () => {
      const c = await customer();
      expectError(await redeem({ code: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ', customer: forUser(c) }), 404, 'CODE_NOT_FOUND');
      expectError(await redeem({ code: 'not a code', customer: forUser(c) }), 404, 'CODE_NOT_FOUND');
      const raw = await code(plans.basic, 'P1D');
      const typed = ` ${raw.toLowerCase().replace(/-/g, ' ').replace(/0/g, 'o').replace(/1/g, 'l')} `;
      await redeem({ code: typed, customer: forUser(c) }).expect(200);
    });

    it('CODE_REVOKED and CODE_EXPIRED come before the customer check', async () => {
      const revoked = await code(plans.basic, 'P1D');
      const [{ id }] = await t.dataSource.query('SELECT id FROM codes WHERE code = $1', [
        revoked.replace(/-/g, ''),
      ]);
      await t.http.post(`/api/private/v1/codes/${id}/revoke`).set(A()).expect(200);
      const nobody = { type: 'email', value: 'nobody@example.com' };
      expectError(await redeem({ code: revoked, customer: nobody }), 409, 'CODE_REVOKED');
      const expired = await code(plans.basic, 'P1D');
      await t.dataSource.query(`UPDATE codes SET expires_at = now() - interval '1 second' WHERE code = $1`, [
        expired.replace(/-/g, ''),
      ]);
      expectError(await redeem({ code: expired, customer: nobody }), 409, 'CODE_EXPIRED');
      expectError(
        await redeem({ code: await code(plans.basic, 'P1D'), customer: nobody }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
    });

    it('CODE_ALREADY_REDEEMED on the second use; CODE_EXPIRED first once the code has expired', async () => {
      const c = await customer();
      const raw = await code(plans.basic, 'P1D');
      await redeem({ code: raw, customer: forUser(c) }).expect(200);
      expectError(await redeem({ code: raw, customer: forUser(c) }), 409, 'CODE_ALREADY_REDEEMED');
      await t.dataSource.query(`UPDATE codes SET expires_at = now() - interval '1 second' WHERE code = $1`, [
        raw.replace(/-/g, ''),
      ]);
      expectError(await redeem({ code: raw, customer: forUser(c) }), 409, 'CODE_EXPIRED');
      expect(await codeStatus(raw)).toBe('redeemed');
      const [row] = await t.dataSource.query(
        'SELECT status, redeemed_by_customer_id, redeemed_at FROM codes WHERE code = $1',
        [raw.replace(/-/g, '')],
      );
      expect(row).toMatchObject({ status: 'redeemed', redeemed_by_customer_id: c.id });
      expect(row.redeemed_at).toBeInstanceOf(Date);
    });

    it('CUSTOMER_PROJECT_MISMATCH for a code whose plan belongs to another project (defensive)', async () => {
      const c = await customer();
      const raw = await code(plans.basic, 'P1D');
      const foreignPlan = await insertPlan(b.id, 'Foreign', 5, 'other');
      await t.dataSource.query('UPDATE codes SET plan_id = $1 WHERE code = $2', [
        foreignPlan,
        raw.replace(/-/g, ''),
      ]);
      expectError(await redeem({ code: raw, customer: forUser(c) }), 403, 'CUSTOMER_PROJECT_MISMATCH');
      expect(await codeStatus(raw)).toBe('available');
    });

    it('INVALID_PLAN_VALUE and INVALID_SUBSCRIPTION_CHAIN for bad data in the chain, nothing changed', async () => {
      const group = `bad${next()}`;
      const broken = await insertPlan(a.id, 'Broken', 5, group);
      const good = await insertPlan(a.id, 'Good', 10, group);
      const c = await customer();
      const raw = await code(good, 'P1D');
      await t.dataSource.query(
        `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
         VALUES ($1, $2, $3, $4, now() - interval '1 day', now() + interval '1 day', 'activation')`,
        [a.id, c.id, broken, group],
      );
      await t.dataSource.query('UPDATE plans SET value = -1 WHERE id = $1', [broken]);
      expectError(await redeem({ code: raw, customer: forUser(c) }), 400, 'INVALID_PLAN_VALUE');
      await t.dataSource.query('UPDATE plans SET value = 5 WHERE id = $1', [broken]);
      // two overlapping live windows
      await t.dataSource.query(
        `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
         VALUES ($1, $2, $3, $4, now(), now() + interval '2 days', 'activation')`,
        [a.id, c.id, broken, group],
      );
      const before = await chain(c.id, true);
      expectError(await redeem({ code: raw, customer: forUser(c) }), 400, 'INVALID_SUBSCRIPTION_CHAIN');
      expect(await chain(c.id, true)).toEqual(before);
      expect(await codeStatus(raw)).toBe('available');
    });

    it('400 VALIDATION_FAILED with details for bad bodies', async () => {
      const res = await redeem({
        code: '',
        customer: { type: 'email', value: 'v'.repeat(129) },
        autoCreate: 'yes',
      });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
        'autoCreate',
        'code',
        'customer.value',
      ]);
      expectError(await redeem({ code: 'X' }), 400, 'VALIDATION_FAILED');
    });
  });

  describe('autoCreate', () => {
    it.each([
      [false, false],
      [true, false],
      [false, true],
    ])('request %s with project setting %s: CUSTOMER_NOT_FOUND, nothing created', async (flag, setting) => {
      const p = await t.createProject({ autoCreateCustomerAtRedemption: setting });
      const plan = await insertPlan(p.id, 'Paid', 10, 'tier');
      const raw = await code(plan, 'P1D', bearer(p.privateKey));
      const email = `new${next()}@example.com`;
      expectError(
        await redeem(
          { code: raw, customer: { type: 'email', value: email }, autoCreate: flag },
          bearer(p.privateKey),
        ),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM customers WHERE project_id = $1',
        [p.id],
      );
      expect(n).toBe(0);
      expect(await codeStatus(raw)).toBe('available');
    });

    it('both on, by email: a temporary customer with a generated username and the identifier, free plans first', async () => {
      const email = `auto${next()}@example.com`;
      const res = await redeem({
        code: await code(plans.pro, 'P7D'),
        customer: { type: 'email', value: email },
        autoCreate: true,
      }).expect(200);
      const { customer: created, subscriptions } = res.body.data;
      expect(created).toEqual({
        id: expect.any(Number),
        username: expect.stringMatching(/^u_[a-z2-7]{10}$/),
        created: true,
      });
      expect(subscriptions.map((s: { planId: number }) => s.planId)).toEqual([plans.pro, plans.free]);
      const record = await t.http.get(`/api/private/v1/customers/${created.id}`).set(A()).expect(200);
      expect(record.body.data.temporary).toBe(true);
      expect(
        record.body.data.identifiers.map((i: { type: string; value: string }) => `${i.type}:${i.value}`),
      ).toEqual([`username:${created.username}`, `email:${email}`]);
      // no empty sign-up window was left behind
      expect(
        (await chain(created.id, true)).every((w) => w.validTo === null || ms(w.validTo) > ms(w.validFrom)),
      ).toBe(true);
      // the second redemption finds the same customer
      const again = await redeem({
        code: await code(plans.pro, 'P7D'),
        customer: { type: 'email', value: email },
        autoCreate: true,
      }).expect(200);
      expect(again.body.data.customer).toEqual({ ...created, created: false });
    });

    it('both on, by username: the username is the value, not temporary', async () => {
      const name = `named${String(next()).padStart(5, '0')}`;
      const res = await redeem({
        code: await code(plans.basic, 'P1D'),
        customer: { type: 'username', value: name },
        autoCreate: true,
      }).expect(200);
      expect(res.body.data.customer).toMatchObject({ username: name, created: true });
      const record = await t.http
        .get(`/api/private/v1/customers/${res.body.data.customer.id}`)
        .set(A())
        .expect(200);
      expect(record.body.data.temporary).toBe(false);
      expectError(
        await redeem({
          code: await code(plans.basic, 'P1D'),
          customer: { type: 'username', value: 'short' },
          autoCreate: true,
        }),
        400,
        'VALIDATION_FAILED',
      );
    });

    it('a failure after the implicit creation creates no customer and leaves the code available', async () => {
      const email = `rollback${next()}@example.com`;
      const raw = await code(plans.free, null); // the sign-up already grants Free permanently: redundant
      expectError(
        await redeem({ code: raw, customer: { type: 'email', value: email }, autoCreate: true }),
        409,
        'REDUNDANT_PERMANENT_PURCHASE',
      );
      expectError(
        await t.http
          .post('/api/private/v1/customers/resolve')
          .set(A())
          .send({ customer: { type: 'email', value: email } }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expect(await codeStatus(raw)).toBe('available');
    });
  });

  describe('alias, dry run, activation', () => {
    it('POST /codes/redeem answers exactly like POST /redemptions', async () => {
      const c = await customer();
      const raw = await code(plans.pro, 'P10D');
      const one = await redeem(
        { code: raw, customer: forUser(c) },
        A(),
        '/api/private/v1/redemptions?dryRun=true',
      ).expect(200);
      const two = await redeem(
        { code: raw, customer: forUser(c) },
        A(),
        '/api/private/v1/codes/redeem?dryRun=true',
      ).expect(200);
      const strip = (d: any) => JSON.parse(JSON.stringify(d).replace(/"\d{4}-\d\d-\d\dT[^"]+"/g, '"T"'));
      expect(strip(two.body.data)).toEqual(strip(one.body.data));
      const real = await redeem(
        { code: raw, customer: forUser(c) },
        A(),
        '/api/private/v1/codes/redeem',
      ).expect(200);
      expect(real.body.data.subscriptions.map((s: { planId: number }) => s.planId)).toEqual([
        plans.pro,
        plans.free,
      ]);
      expectError(
        await redeem({ code: raw, customer: forUser(c) }, A(), '/api/private/v1/codes/redeem'),
        409,
        'CODE_ALREADY_REDEEMED',
      );
    });

    it('a dry run reports every change and changes nothing', async () => {
      const c = await customer();
      await redeem({ code: await code(plans.pro, 'P30D'), customer: forUser(c) }).expect(200);
      const before = await chain(c.id, true);
      const raw = await code(plans.max, 'P30D');
      const dry = await redeem(
        { code: raw, customer: forUser(c) },
        A(),
        '/api/private/v1/redemptions?dryRun=true',
      ).expect(200);
      const d = dry.body.data;
      expect(d.dryRun).toBe(true);
      expect(d.changes.ended.map((w: { planId: number }) => w.planId)).toEqual([plans.pro]);
      expect(d.changes.ended[0].id).toBe(before.find((w) => w.planId === plans.pro)!.id);
      expect(
        d.changes.created.map((w: { planId: number; validTo: string | null }) => [
          w.planId,
          w.validTo === null,
        ]),
      ).toEqual([[plans.max, false]]);
      expect(d.changes.moved).toEqual([
        {
          id: before.find((w) => w.planId === plans.free)!.id,
          planId: plans.free,
          validFrom: d.changes.created[0].validTo,
          validTo: null,
          trial: false,
        },
      ]);
      expect(d.changes.cancelled).toEqual([]);
      expect(d.subscriptions.every((s: { id: number | null }) => s.id === null)).toBe(true);
      expect(await chain(c.id, true)).toEqual(before);
      expect(await codeStatus(raw)).toBe('available');
      // errors are reported by the dry run too
      const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
      const plan = await insertPlan(p.id, 'Paid', 10, 'tier');
      const pc = await code(plan, 'P1D', bearer(p.privateKey));
      const dryNew = await redeem(
        { code: pc, customer: { type: 'email', value: 'dry@example.com' }, autoCreate: true },
        bearer(p.privateKey),
        '/api/private/v1/redemptions?dryRun=true',
      ).expect(200);
      expect(dryNew.body.data.customer).toEqual({
        id: null,
        username: expect.stringMatching(/^u_/),
        created: true,
      });
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM customers WHERE project_id = $1',
        [p.id],
      );
      expect(n).toBe(0);
    });

    it('a dry run that would create the customer shows no id of its windows (sign-up ones included)', async () => {
      const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
      await insertPlan(p.id, 'Free', 0, 'tier');
      const paid = await insertPlan(p.id, 'Paid', 10, 'tier');
      const body = {
        code: await code(paid, 'P1D', bearer(p.privateKey)),
        customer: { type: 'email', value: 'signup-dry@example.com' },
        autoCreate: true,
      };
      const dry = await redeem(body, bearer(p.privateKey), '/api/private/v1/redemptions?dryRun=true').expect(
        200,
      );
      const changes = dry.body.data.changes;
      // the sign-up window of the free plan starts at the call: the grant moves it behind the paid one
      expect(changes.moved).toHaveLength(1);
      const all = [...changes.ended, ...changes.cancelled, ...changes.moved, ...changes.created];
      expect(all.map((w: { id: number | null }) => w.id)).toEqual(all.map(() => null));
      const real = await redeem(body, bearer(p.privateKey)).expect(200);
      expect(real.body.data.subscriptions.map((w: { id: number }) => typeof w.id)).toEqual([
        'number',
        'number',
      ]);
    });

    it("a dry run's entitlementsAfter shows no id of a window it would create; existing windows keep theirs", async () => {
      const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
      const P = bearer(p.privateKey);
      const f = (
        await t.http
          .post('/api/private/v1/features')
          .set(P)
          .send({ slug: 'dry-calls', name: 'Calls', metered: true, unit: 'call' })
          .expect(201)
      ).body.data;
      const newPlan = async (slug: string, value: number, group: string, limit: number) =>
        (
          await t.http
            .post('/api/private/v1/plans')
            .set(P)
            .send({ slug, name: slug, value, group, quotas: [{ featureId: f.id, limit }] })
            .expect(201)
        ).body.data.id as number;
      const free = await newPlan('dry-free', 0, 'tier', 1);
      const addon = await newPlan('dry-addon', 10, 'extra', 3);
      const c = await customer(P);
      const [signup] = (
        await t.http.get(`/api/private/v1/customers/${c.id}/subscriptions`).set(P).expect(200)
      ).body.data;
      type Bucket = { planId: number; windowId: number | null };
      const bucketsOf = (data: {
        entitlementsAfter: Array<{ feature: { id: number }; buckets: Bucket[] }>;
      }) =>
        data.entitlementsAfter
          .find((e) => e.feature.id === f.id)!
          .buckets.map((b) => ({ planId: b.planId, windowId: b.windowId }))
          .sort((x, y) => x.planId - y.planId);

      // an existing customer: its sign-up window keeps its id, the window the call would create has none
      const raw = await code(addon, 'P10D', P);
      const dry = await redeem(
        { code: raw, customer: forUser(c) },
        P,
        '/api/private/v1/redemptions?dryRun=true',
      );
      expect(dry.status).toBe(200);
      expect(bucketsOf(dry.body.data)).toEqual([
        { planId: free, windowId: signup.id },
        { planId: addon, windowId: null },
      ]);
      // the same through activation
      const act = await t.http
        .post('/api/private/v1/subscriptions/activate?dryRun=true')
        .set(P)
        .send({ customer: forUser(c), planId: addon, duration: 'P10D' })
        .expect(200);
      expect(bucketsOf(act.body.data)).toEqual([
        { planId: free, windowId: signup.id },
        { planId: addon, windowId: null },
      ]);

      // a customer the call would create: none of its windows exists, sign-up ones included
      const dryNew = await redeem(
        { code: raw, customer: { type: 'email', value: 'dry-buckets@example.com' }, autoCreate: true },
        P,
        '/api/private/v1/redemptions?dryRun=true',
      ).expect(200);
      expect(bucketsOf(dryNew.body.data)).toEqual([
        { planId: free, windowId: null },
        { planId: addon, windowId: null },
      ]);

      // the real call creates the window, with an id of its own
      const real = await redeem({ code: raw, customer: forUser(c) }, P).expect(200);
      const [granted] = real.body.data.subscriptions;
      expect(typeof granted.id).toBe('number');
      const after = (await t.http.get(`/api/private/v1/customers/${c.id}/entitlements`).set(P).expect(200))
        .body.data;
      expect(bucketsOf({ entitlementsAfter: after })).toEqual([
        { planId: free, windowId: signup.id },
        { planId: addon, windowId: granted.id },
      ]);
    });

    it('activation grants a plan with the same rules', async () => {
      const c = await customer();
      const timed = await t.http
        .post('/api/private/v1/subscriptions/activate')
        .set(A())
        .send({ customer: forUser(c), planId: plans.pro, duration: 'P1M' })
        .expect(200);
      const pro = timed.body.data.subscriptions[0];
      const from = new Date(pro.validFrom);
      const expected = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
      expected.setUTCDate(
        Math.min(
          from.getUTCDate(),
          new Date(Date.UTC(expected.getUTCFullYear(), expected.getUTCMonth() + 1, 0)).getUTCDate(),
        ),
      );
      expected.setUTCHours(
        from.getUTCHours(),
        from.getUTCMinutes(),
        from.getUTCSeconds(),
        from.getUTCMilliseconds(),
      );
      expect(pro.validTo).toBe(expected.toISOString());
      const live = await chain(c.id);
      expect(live.find((w) => w.id === pro.id)!.source).toBe('activation');
      await t.http
        .post('/api/private/v1/subscriptions/activate')
        .set(A())
        .send({ customer: forUser(c), planId: plans.max, duration: null })
        .expect(200);
      expectError(
        await t.http
          .post('/api/private/v1/subscriptions/activate')
          .set(A())
          .send({ customer: forUser(c), planId: plans.max, duration: null }),
        409,
        'REDUNDANT_PERMANENT_PURCHASE',
      );
      expectError(
        await t.http
          .post('/api/private/v1/subscriptions/activate')
          .set(A())
          .send({ customer: forUser(c), planId: plans.basic, duration: 'P1X' }),
        400,
        'VALIDATION_FAILED',
      );
      expectError(
        await t.http
          .post('/api/private/v1/subscriptions/activate')
          .set(A())
          .send({ customer: forUser(c), planId: 99999999, duration: 'P1D' }),
        404,
        'PLAN_NOT_FOUND',
      );
      // beyond a PostgreSQL integer: refused by the validation (it was a 500)
      expectError(
        await t.http
          .post('/api/private/v1/subscriptions/activate')
          .set(A())
          .send({ customer: forUser(c), planId: 2 ** 31, duration: 'P1D' }),
        400,
        'VALIDATION_FAILED',
      );
    });

    it('activation creates a missing customer only with autoCreate and the project setting, as a redemption does', async () => {
      const activate = (project: TestProject, body: Record<string, unknown>) =>
        t.http.post('/api/private/v1/subscriptions/activate').set(bearer(project.privateKey)).send(body);
      const off = await t.createProject({ autoCreateCustomerAtRedemption: false });
      const offPlan = await insertPlan(off.id, 'Paid', 10, 'tier');
      const email = { type: 'email', value: `activated${next()}@example.com` };
      expectError(
        await activate(off, { customer: email, planId: offPlan, duration: 'P1D', autoCreate: true }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await activate(a, { customer: email, planId: plans.pro, duration: 'P1D' }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      const res = await activate(a, {
        customer: email,
        planId: plans.pro,
        duration: 'P1D',
        autoCreate: true,
      }).expect(200);
      expect(res.body.data.customer).toEqual({
        id: expect.any(Number),
        username: expect.stringMatching(/^u_/),
        created: true,
      });
      // the sign-up grant (Free, permanent) and the activated window
      expect(res.body.data.subscriptions.map((s: { planId: number }) => s.planId).sort()).toEqual(
        [plans.free, plans.pro].sort(),
      );
      const made = await t.http
        .get(`/api/private/v1/customers/${res.body.data.customer.id}`)
        .set(A())
        .expect(200);
      expect(made.body.data).toMatchObject({
        temporary: true,
        identifiers: expect.arrayContaining([expect.objectContaining(email)]),
      });
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM customers WHERE project_id = $1',
        [off.id],
      );
      expect(n).toBe(0);
    });
  });

  describe('exactly once under concurrency', () => {
    it('50 concurrent redemptions of one code: one success, 49 CODE_ALREADY_REDEEMED, one subscription', async () => {
      const raw = await code(plans.basic, 'P1D');
      const people = await Promise.all(Array.from({ length: 5 }, () => customer()));
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => redeem({ code: raw, customer: forUser(people[i % 5]) })),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(
        results.filter((r) => r.status === 409 && r.body.error.code === 'CODE_ALREADY_REDEEMED'),
      ).toHaveLength(49);
      const [{ id }] = await t.dataSource.query('SELECT id FROM codes WHERE code = $1', [
        raw.replace(/-/g, ''),
      ]);
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM subscriptions WHERE code_id = $1',
        [id],
      );
      expect(n).toBe(1);
    });

    it("a redemption that waited for the customer's lock grants as of a time after a grant committed meanwhile", async () => {
      const c = await customer(); // holds the permanent Free window of sign-up
      const raw = await code(plans.pro, 'P1D');
      const holder = t.dataSource.createQueryRunner();
      await holder.connect();
      await holder.startTransaction();
      try {
        await holder.query('SELECT id FROM customers WHERE id = $1 FOR UPDATE', [c.id]);
        const waiting = redeem({ code: raw, customer: forUser(c) }).then((r) => r);
        await new Promise((r) => setTimeout(r, 300)); // the call has started and waits for the lock
        // meanwhile a grant of Pro for a day commits, made later than the waiting call started
        const at = new Date();
        const dayAfter = new Date(at.getTime() + DAY);
        await holder.query(
          `UPDATE subscriptions SET valid_to = $2 WHERE customer_id = $1 AND valid_to IS NULL`,
          [c.id, at],
        );
        await holder.query(
          `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
           VALUES ($1, $2, $3, 'tier', $4, $5, 'activation'), ($1, $2, $6, 'tier', $5, NULL, 'signup')`,
          [a.id, c.id, plans.pro, at, dayAfter, plans.free],
        );
        await holder.commitTransaction();
        const res = await waiting;
        expect(res.status).toBe(200);
        const live = (await chain(c.id)).map((w) => [w.planId, w.validFrom, w.validTo]);
        const twoDays = new Date(at.getTime() + 2 * DAY).toISOString();
        expect(live).toEqual([
          [plans.pro, at.toISOString(), dayAfter.toISOString()],
          [plans.pro, dayAfter.toISOString(), twoDays],
          [plans.free, twoDays, null],
        ]);
      } finally {
        if (holder.isTransactionActive) await holder.rollbackTransaction();
        await holder.release();
      }
    });

    it('20 concurrent redemptions of different codes for one customer, for three customers at once: each a valid chain holding all the time', async () => {
      // Many calls wait for one customer's lock: each must grant as of a time after the grants
      // committed meanwhile, or it would read their ended windows as live (INVALID_SUBSCRIPTION_CHAIN).
      const three = [await customer(), await customer(), await customer()];
      const batches = await Promise.all(three.map(() => codes(plans.pro, 'P1D', 20)));
      const results = await Promise.all(
        three.flatMap((c, k) => batches[k].map((raw) => redeem({ code: raw, customer: forUser(c) }))),
      );
      expect(results.map((r) => (r.status === 200 ? 200 : `${r.status} ${r.body.error?.code}`))).toEqual(
        Array(60).fill(200),
      );
      for (const c of three) {
        const pro = (await chain(c.id))
          .filter((w) => w.planId === plans.pro)
          .sort((x, y) => ms(x.validFrom) - ms(y.validFrom));
        expect(pro).toHaveLength(20);
        for (let i = 1; i < pro.length; i++) expect(pro[i].validFrom).toBe(pro[i - 1].validTo);
        expect(ms(pro[19].validTo!) - ms(pro[0].validFrom)).toBe(20 * DAY);
      }
    });
  });

  describe('tenancy', () => {
    it("project B's key cannot redeem A's codes, grant A's plans or reach A's customers", async () => {
      const c = await customer();
      const raw = await code(plans.pro, 'P1D');
      const B = bearer(b.privateKey);
      expectError(await redeem({ code: raw, customer: forUser(c) }, B), 404, 'CODE_NOT_FOUND');
      expectError(
        await redeem({ code: raw, customer: forUser(c) }, B, '/api/private/v1/codes/redeem'),
        404,
        'CODE_NOT_FOUND',
      );
      expectError(
        await t.http
          .post('/api/private/v1/subscriptions/activate')
          .set(B)
          .send({ customer: forUser(c), planId: plans.pro, duration: 'P1D' }),
        404,
        'PLAN_NOT_FOUND',
      );
      const bPlan = await insertPlan(b.id, 'BPlan', 5, 'tier');
      const bCode = await code(bPlan, 'P1D', B);
      expectError(await redeem({ code: bCode, customer: forUser(c) }, B), 404, 'CUSTOMER_NOT_FOUND');
      expect(await codeStatus(raw)).toBe('available');
    });
  });
});

describe('with DB_PREPARED_STATEMENTS=false (behind PgBouncer before 1.21)', () => {
  let t: TestApp;
  afterAll(() => t.close());

  it('redeems, reads the customer back and refuses a second redemption the same way, with unnamed statements', async () => {
    t = await createTestApp({ DB_PREPARED_STATEMENTS: 'false' });
    const p = await t.createProject({ name: 'unprepared' });
    const auth = bearer(p.privateKey);
    const planId = await insertPlanRow(t.dataSource, {
      projectId: p.id,
      name: 'Pro',
      value: 20,
      group: 'tier',
    });
    const raw = (
      await t.http
        .post('/api/private/v1/codes')
        .set(auth)
        .send({ planId, duration: 'P30D', count: 1 })
        .expect(201)
    ).body.data.codes[0];
    const c = (
      await t.http.post('/api/private/v1/customers').set(auth).send({ username: 'unprepared1' }).expect(201)
    ).body.data;
    const res = await t.http
      .post('/api/private/v1/redemptions')
      .set(auth)
      .send({ code: raw, customer: { type: 'username', value: c.username } })
      .expect(200);
    expect(res.body.data.subscriptions).toEqual([expect.objectContaining({ planId, planName: 'Pro' })]);
    expect(
      (await t.http.get(`/api/private/v1/customers/${c.id}`).set(auth).expect(200)).body.data.username,
    ).toBe('unprepared1');
    expectError(
      await t.http
        .post('/api/private/v1/redemptions')
        .set(auth)
        .send({ code: raw, customer: { type: 'username', value: c.username } }),
      409,
      'CODE_ALREADY_REDEEMED',
    );
  });
});
