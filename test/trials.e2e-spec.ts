import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';
import { insertPlan as insertPlanRow } from './support/fixtures';
import { BoundaryScheduler } from '../src/events/boundary.scheduler';

/**
 * Trials (docs/api-guide.md#trials): a campaign code with `trial: true` grants a window flagged
 * `trial`, once per customer and plan group ever, only to a customer without a live paid plan in
 * the group, placed on free windows only; in every later grant it is worth 0. Its events
 * (docs/events.md#event-types): `trial.started` with the redemption, `trial.ended` (`replaced`)
 * with the grant that ends it, `trial.ending` and `trial.ended` (`expired`) from the boundary
 * scheduler, run here with `runOnce(now)` (its own loop is off).
 */
const PRIVATE = '/api/private/v1';
const DAY = 86_400_000;
const LEAD = 3 * DAY; // TRIAL_ENDING_LEAD's default, P3D

interface Window {
  id: number;
  planId: number;
  planName: string;
  validFrom: string;
  validTo: string | null;
  trial: boolean;
  group?: string;
  status?: string;
  source?: string;
  codeId?: number | null;
}

describe('trials', () => {
  let t: TestApp;
  let a: TestProject;
  let scheduler: BoundaryScheduler;
  let free: number;
  let basic: number;
  let pro: number;
  let other: number;
  let seq = 0;

  const post = (path: string, body: object) =>
    t.http.post(`${PRIVATE}${path}`).set(bearer(a.privateKey)).send(body);
  const get = (path: string) => t.http.get(`${PRIVATE}${path}`).set(bearer(a.privateKey));
  const trialCode = async (body: object = {}) => {
    const res = await post('/codes', {
      kind: 'campaign',
      planId: pro,
      duration: 'P14D',
      trial: true,
      ...body,
    });
    expect(res.status).toBe(201);
    return res.body.data as { id: number; code: string };
  };
  const newCustomer = async () => {
    const name = `trial_${String(++seq).padStart(6, '0')}`;
    const res = await post('/customers', { username: name });
    expect(res.status).toBe(201);
    return { id: res.body.data.id as number, username: name };
  };
  const redeem = (code: string, username: string, query = '') =>
    post(`/redemptions${query}`, { code, customer: { type: 'username', value: username } });
  const activate = (username: string, planId: number, duration: string | null) =>
    post('/subscriptions/activate', { customer: { type: 'username', value: username }, planId, duration });
  const windows = async (customerId: number): Promise<Window[]> =>
    (await get(`/customers/${customerId}/subscriptions?history=true`).expect(200)).body.data;
  const eventsOf = async (customerId: number, type?: string) =>
    (
      await t.dataSource.query(
        `SELECT type, data, unique_key FROM events WHERE customer_id = $1 ${type ? 'AND type = $2' : ''}
          ORDER BY customer_seq`,
        type ? [customerId, type] : [customerId],
      )
    ).map((r: { type: string; data: Record<string, any>; unique_key: string | null }) => ({
      type: r.type,
      data: r.data,
      key: r.unique_key,
    }));
  const trialWindows = async (customerId: number) => (await windows(customerId)).filter((w) => w.trial);
  /** Where the scheduler's previous scan ended. */
  const cursorAt = (at: Date) =>
    t.dataSource.query(`UPDATE event_schedule_cursors SET scanned_to = $1 WHERE kind = 'windows'`, [at]);
  const ms = (iso: string | null) => Date.parse(iso!);

  beforeAll(async () => {
    t = await createTestApp({
      EVENTS_SCHEDULER_ENABLED: 'false',
      WEBHOOK_WORKER_ENABLED: 'false',
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    });
    a = await t.createProject({ name: 'Trials', autoCreateCustomerAtRedemption: true });
    scheduler = t.app.get(BoundaryScheduler);
    const insertPlan = (name: string, value: number, group: string) =>
      insertPlanRow(t.dataSource, { projectId: a.id, name, value, group });
    free = await insertPlan('Free', 0, 'tier');
    basic = await insertPlan('Basic', 10, 'tier');
    pro = await insertPlan('Pro', 20, 'tier');
    other = await insertPlan('Storage', 5, 'storage');
  }, 30_000);
  afterAll(() => t.close());

  it('placement: the trial starts now on free windows only, lasts exactly its duration, the free tail moves to its end', async () => {
    const code = await trialCode();
    const c = await newCustomer();
    const res = await redeem(code.code, c.username).expect(200);
    const [trial, tail] = res.body.data.subscriptions as Window[];
    expect(res.body.data.subscriptions).toHaveLength(2);
    expect(trial).toMatchObject({ planId: pro, planName: 'Pro', trial: true });
    expect(ms(trial.validTo) - ms(trial.validFrom)).toBe(14 * DAY);
    expect(Math.abs(ms(trial.validFrom) - Date.now())).toBeLessThan(10_000);
    expect(tail).toMatchObject({ planId: free, validFrom: trial.validTo, validTo: null, trial: false });
    expect(res.body.data.campaign).toMatchObject({ codeId: code.id, trial: true, redemptionCount: 1 });

    // every list shows the flag: the customer's windows, and the code's redemption records
    const listed = await windows(c.id);
    expect(listed.map((w) => [w.planId, w.trial, w.source])).toEqual([
      [pro, true, 'code'],
      [free, false, 'signup'],
      [free, false, 'signup'], // the sign-up window, ended now
    ]);
    const page = (await get(`/codes/${code.id}/redemptions`).expect(200)).body.data;
    expect(page.data[0].windows).toEqual([
      expect.objectContaining({ id: trial.id, trial: true }),
      expect.objectContaining({ id: tail.id, trial: false }),
    ]);
  });

  it('once per group, ever: the same code again, another trial code of the group; another group is fine', async () => {
    const first = await trialCode({ perCustomerLimit: 5 });
    const second = await trialCode();
    const storageTrial = await trialCode({ planId: other, duration: 'P7D' });
    const c = await newCustomer();
    await redeem(first.code, c.username).expect(200);
    expectError(await redeem(first.code, c.username), 409, 'TRIAL_ALREADY_USED');
    expectError(await redeem(second.code, c.username), 409, 'TRIAL_ALREADY_USED');
    // also once the trial has been ended by a paid grant (TRIAL_ALREADY_USED comes before eligibility)
    await activate(c.username, basic, 'P30D').expect(200);
    expectError(await redeem(second.code, c.username), 409, 'TRIAL_ALREADY_USED');
    // dry runs give the same answer
    expectError(await redeem(second.code, c.username, '?dryRun=true'), 409, 'TRIAL_ALREADY_USED');
    await redeem(storageTrial.code, c.username).expect(200);
    expect((await trialWindows(c.id)).map((w) => w.planId).sort()).toEqual([pro, other].sort());
    // the refusals counted nothing
    const shown = (await get(`/codes/${second.id}`).expect(200)).body.data;
    expect(shown.redemptionCount).toBe(0);
  });

  it('order of refusals: CODE_CUSTOMER_LIMIT_REACHED before TRIAL_ALREADY_USED', async () => {
    const code = await trialCode({ perCustomerLimit: 1 });
    const c = await newCustomer();
    await redeem(code.code, c.username).expect(200);
    expectError(await redeem(code.code, c.username), 409, 'CODE_CUSTOMER_LIMIT_REACHED');
  });

  it('TRIAL_ALREADY_USED under concurrent redemptions by one customer: exactly one trial', async () => {
    const codes = await Promise.all([1, 2, 3, 4, 5].map(() => trialCode({ perCustomerLimit: 3 })));
    const c = await newCustomer();
    const answers = await Promise.all([...codes, ...codes].map((code) => redeem(code.code, c.username)));
    const ok = answers.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of answers.filter((x) => x.status !== 200)) expectError(r, 409, 'TRIAL_ALREADY_USED');
    expect(await trialWindows(c.id)).toHaveLength(1);
    expect(await eventsOf(c.id, 'trial.started')).toHaveLength(1);
  }, 30_000);

  it('HOLDS_PAID_PLAN: a live paid window of the group, in effect or queued, refuses a trial; free and other groups do not', async () => {
    const code = await trialCode({ perCustomerLimit: 5 });
    const c = await newCustomer();
    await activate(c.username, basic, 'P30D').expect(200);
    const held = await redeem(code.code, c.username);
    expectError(held, 403, 'CODE_NOT_ELIGIBLE');
    expect(held.body.error.details).toEqual([
      { field: 'code', message: expect.any(String), reason: 'HOLDS_PAID_PLAN', group: 'tier' },
    ]);
    expectError(await redeem(code.code, c.username, '?dryRun=true'), 403, 'CODE_NOT_ELIGIBLE');

    // a queued paid window (nothing paid in effect yet) holds the group too
    const q = await newCustomer();
    const start = new Date(Date.now() + 10 * DAY);
    await t.dataSource.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
       VALUES ($1, $2, $3, 'tier', $4, $5, 'activation')`,
      [a.id, q.id, basic, start, new Date(start.getTime() + 30 * DAY)],
    );
    const queued = await redeem(code.code, q.username);
    expectError(queued, 403, 'CODE_NOT_ELIGIBLE');
    expect(queued.body.error.details[0]).toMatchObject({ reason: 'HOLDS_PAID_PLAN', group: 'tier' });

    // a paid plan of another group does not count
    const d = await newCustomer();
    await activate(d.username, other, 'P30D').expect(200);
    await redeem(code.code, d.username).expect(200);

    // eligibility reasons in their order: NOT_NEW_CUSTOMER before HOLDS_PAID_PLAN
    const forNew = await trialCode({ eligibility: { newCustomersOnly: true } });
    const e = await newCustomer();
    await activate(e.username, basic, 'P30D').expect(200);
    const notNew = await redeem(forNew.code, e.username);
    expectError(notNew, 403, 'CODE_NOT_ELIGIBLE');
    expect(notNew.body.error.details[0]).toMatchObject({ reason: 'NOT_NEW_CUSTOMER', group: 'tier' });
    // a customer created by the call is new, with no paid plan
    await post('/redemptions', {
      code: forNew.code,
      customer: { type: 'username', value: `trial_new_${++seq}` },
      autoCreate: true,
    }).expect(200);
  });

  it('a trial is no held group: NOT_NEW_CUSTOMER ignores it', async () => {
    const trial = await trialCode();
    const forNew = await post('/codes', {
      kind: 'campaign',
      planId: basic,
      duration: 'P30D',
      eligibility: { newCustomersOnly: true },
    }).expect(201);
    const c = await newCustomer();
    await redeem(trial.code, c.username).expect(200);
    await redeem(forNew.body.data.code, c.username).expect(200);
  });

  it('a paid grant ends the trial at now and converts none of its time; trial.ended replaced, converted', async () => {
    const code = await trialCode();
    const c = await newCustomer();
    const trial = (await redeem(code.code, c.username).expect(200)).body.data.subscriptions[0] as Window;
    const res = await activate(c.username, pro, 'P30D').expect(200);
    const [paid] = res.body.data.subscriptions as Window[];
    expect(paid.trial).toBe(false);
    expect(ms(paid.validTo) - ms(paid.validFrom)).toBe(30 * DAY); // not a second more
    const after = (await windows(c.id)).find((w) => w.id === trial.id)!;
    expect(after).toMatchObject({ trial: true, status: 'active', validTo: paid.validFrom });

    const types = (await eventsOf(c.id)).map((e: { type: string }) => e.type).slice(-7);
    expect(types).toEqual([
      // the trial's redemption: today's events, then trial.started, then code.redeemed
      'subscriptions.changed',
      'subscription.ended',
      'trial.started',
      'code.redeemed',
      // the paid grant: today's events, then trial.ended
      'subscriptions.changed',
      'subscription.ended',
      'trial.ended',
    ]);
    const [started] = await eventsOf(c.id, 'trial.started');
    expect(started.data).toEqual({
      customer: { id: c.id, username: c.username },
      window: {
        id: trial.id,
        planId: pro,
        planName: 'Pro',
        group: 'tier',
        validFrom: trial.validFrom,
        validTo: trial.validTo,
        status: 'active',
        source: 'code',
        codeId: code.id,
        trial: true,
      },
      codeId: code.id,
      customerSeq: expect.any(Number),
    });
    const [ended] = await eventsOf(c.id, 'trial.ended');
    expect(ended.key).toBe(`trial.ended:${trial.id}`);
    expect(ended.data).toEqual({
      customer: { id: c.id, username: c.username },
      window: { ...started.data.window, validTo: paid.validFrom },
      reason: 'replaced',
      converted: true,
      customerSeq: expect.any(Number),
    });
    const [endedSub] = (await eventsOf(c.id, 'subscription.ended')).slice(-1);
    expect(endedSub.data.window).toMatchObject({ id: trial.id, trial: true });

    // the scheduler tells neither trial.ending nor a second trial.ended for it
    await cursorAt(new Date());
    await scheduler.runOnce(new Date(ms(trial.validTo) + 1000));
    expect(await eventsOf(c.id, 'trial.ending')).toEqual([]);
    expect(await eventsOf(c.id, 'trial.ended')).toHaveLength(1);
  });

  it('a permanent paid grant by a code ends the trial too; the events come before code.redeemed', async () => {
    const code = await trialCode();
    const c = await newCustomer();
    const trial = (await redeem(code.code, c.username).expect(200)).body.data.subscriptions[0] as Window;
    const batch = (await post('/codes', { planId: basic, duration: null }).expect(201)).body.data;
    const res = await redeem(batch.codes[0], c.username).expect(200);
    expect(res.body.data.subscriptions).toEqual([
      expect.objectContaining({ planId: basic, validTo: null, trial: false }),
    ]);
    const types = (await eventsOf(c.id)).map((e: { type: string }) => e.type).slice(-5);
    expect(types).toEqual([
      'subscriptions.changed',
      'subscription.ended',
      'subscription.ended',
      'trial.ended',
      'code.redeemed',
    ]);
    const [ended] = await eventsOf(c.id, 'trial.ended');
    expect(ended.data).toMatchObject({ reason: 'replaced', converted: true, window: { id: trial.id } });
  });

  it('dry runs count nothing and show the trial flag in changes and subscriptions', async () => {
    const code = await trialCode({ maxRedemptions: 10 });
    const c = await newCustomer();
    const dry = await redeem(code.code, c.username, '?dryRun=true').expect(200);
    expect(dry.body.data.subscriptions).toEqual([
      expect.objectContaining({ id: null, planId: pro, trial: true }),
      expect.objectContaining({ id: null, planId: free, trial: false }),
    ]);
    expect(dry.body.data.changes.created).toEqual([
      expect.objectContaining({ id: null, planId: pro, trial: true }),
      expect.objectContaining({ id: null, planId: free, trial: false }),
    ]);
    expect(dry.body.data.changes.ended).toEqual([expect.objectContaining({ planId: free, trial: false })]);
    expect(dry.body.data.campaign).toMatchObject({ trial: true, redemptionCount: 1 });
    expect(await trialWindows(c.id)).toEqual([]);
    expect(await eventsOf(c.id, 'trial.started')).toEqual([]);
    expect((await get(`/codes/${code.id}`).expect(200)).body.data.redemptionCount).toBe(0);

    // the real redemption afterwards is the first trial; a dry run of a paid grant then shows the trial ending
    const real = await redeem(code.code, c.username).expect(200);
    const trial = real.body.data.subscriptions[0] as Window;
    const dryPaid = await post('/subscriptions/activate?dryRun=true', {
      customer: { type: 'username', value: c.username },
      planId: pro,
      duration: 'P30D',
    }).expect(200);
    expect(dryPaid.body.data.changes.ended).toEqual([
      expect.objectContaining({ id: trial.id, planId: pro, trial: true }),
    ]);
    expect(await eventsOf(c.id, 'trial.ended')).toEqual([]);
    expect((await trialWindows(c.id))[0].validTo).toBe(trial.validTo);
  });

  it('trial.ending at validTo - TRIAL_ENDING_LEAD and trial.ended (expired) at validTo, once each', async () => {
    const code = await trialCode({ duration: 'P10D' });
    const c = await newCustomer();
    const trial = (await redeem(code.code, c.username).expect(200)).body.data.subscriptions[0] as Window;
    const end = ms(trial.validTo);
    await cursorAt(new Date());

    await scheduler.runOnce(new Date(end - LEAD - 1));
    expect(await eventsOf(c.id, 'trial.ending')).toEqual([]);
    await scheduler.runOnce(new Date(end - LEAD));
    await scheduler.runOnce(new Date(end - LEAD + 1000));
    const ending = await eventsOf(c.id, 'trial.ending');
    expect(ending).toHaveLength(1);
    expect(ending[0].key).toBe(`trial.ending:${trial.id}`);
    expect(ending[0].data).toEqual({
      customer: { id: c.id, username: c.username },
      window: expect.objectContaining({ id: trial.id, validTo: trial.validTo, trial: true }),
      customerSeq: expect.any(Number),
    });

    await scheduler.runOnce(new Date(end - 1));
    expect(await eventsOf(c.id, 'trial.ended')).toEqual([]);
    await scheduler.runOnce(new Date(end));
    // a second replica's scan of the same time (its cursor put back) adds nothing
    await cursorAt(new Date(end - LEAD));
    await scheduler.runOnce(new Date(end + 2000));
    const ended = await eventsOf(c.id, 'trial.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0].data).toEqual({
      customer: { id: c.id, username: c.username },
      window: expect.objectContaining({ id: trial.id, validTo: trial.validTo, trial: true }),
      reason: 'expired',
      converted: false,
      customerSeq: expect.any(Number),
    });
    expect(await eventsOf(c.id, 'trial.ending')).toHaveLength(1);
    // subscription.ended is still told for it, before trial.ended
    const types = (await eventsOf(c.id)).map((e: { type: string }) => e.type).slice(-2);
    expect(types).toEqual(['subscription.ended', 'trial.ended']);

    // the pull interface finds the new types
    for (const type of ['trial.started', 'trial.ending', 'trial.ended']) {
      const page = (await get(`/events?type=${type}&customerId=${c.id}`).expect(200)).body.data;
      expect(page.data).toHaveLength(1);
    }
  });

  it('a trial that ended while no instance ran gets trial.ended (caught up) and no trial.ending', async () => {
    const code = await trialCode({ duration: 'P5D' });
    const c = await newCustomer();
    const trial = (await redeem(code.code, c.username).expect(200)).body.data.subscriptions[0] as Window;
    await cursorAt(new Date());
    await scheduler.runOnce(new Date(ms(trial.validTo) + 10 * DAY));
    expect(await eventsOf(c.id, 'trial.ending')).toEqual([]);
    expect(await eventsOf(c.id, 'trial.ended')).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ reason: 'expired', converted: false }) }),
    ]);
  });

  it('a trial shorter than the lead is told trial.ending at its start', async () => {
    const code = await trialCode({ duration: 'P1D' });
    const c = await newCustomer();
    const trial = (await redeem(code.code, c.username).expect(200)).body.data.subscriptions[0] as Window;
    await cursorAt(new Date(ms(trial.validFrom) - 1000));
    await scheduler.runOnce(new Date(ms(trial.validFrom) + 1000));
    expect(await eventsOf(c.id, 'trial.ending')).toHaveLength(1);
  });

  it('the public route: a trial once per group for the logged-in customer, and /me/subscriptions shows the flag', async () => {
    const code = await trialCode({ perCustomerLimit: 2 });
    const name = `trial_me_${++seq}`;
    await post('/customers', { username: name, password: 'correct horse battery' }).expect(201);
    const login = await t.http
      .post('/api/public/v1/auth/login')
      .set('X-Service-Key', a.publicKey)
      .send({ identifier: { type: 'username', value: name }, password: 'correct horse battery' })
      .expect(200);
    const me = () =>
      t.http
        .post('/api/public/v1/me/redemptions')
        .set('X-Service-Key', a.publicKey)
        .set('Authorization', `Bearer ${login.body.data.token}`)
        .send({ code: code.code });
    const res = await me().expect(200);
    expect(res.body.data.subscriptions[0]).toMatchObject({ planId: pro, trial: true });
    expectError(await me(), 409, 'TRIAL_ALREADY_USED');
    const listed = await t.http
      .get('/api/public/v1/me/subscriptions')
      .set('X-Service-Key', a.publicKey)
      .set('Authorization', `Bearer ${login.body.data.token}`)
      .expect(200);
    expect(listed.body.data.map((w: Window) => [w.planId, w.trial])).toEqual([
      [pro, true],
      [free, false],
    ]);
  });

  it('webhook endpoints take the trial event types', async () => {
    const res = await post('/webhook-endpoints', {
      url: 'http://127.0.0.1:9/hooks/trials',
      eventTypes: ['trial.started', 'trial.ending', 'trial.ended'],
    });
    expect(res.status).toBe(201);
    expect(res.body.data.eventTypes).toEqual(['trial.started', 'trial.ending', 'trial.ended']);
  });
});
