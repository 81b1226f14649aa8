import { NestExpressApplication } from '@nestjs/platform-express';
import request, { Response } from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { Statement, Statements } from '../src/database/statements';
import { EntitlementsRepository } from '../src/entitlements/entitlements.repository';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';

const P = '/api/private/v1';
const PUBLIC_CHECK = '/api/public/v1/me/entitlements/check';
const PASSWORD = 'correct horse';
/** The same slug in both projects, so that only the project tells two requests apart. */
const CALLS = 'api-calls';
const SSO = 'sso';

type Customer = { id: number; username: string };
type Role = 'basic' | 'stacked' | 'none' | 'disabled' | 'over';
const ROLES: Role[] = ['basic', 'stacked', 'none', 'disabled', 'over'];

/** One project's features, customers (by role) and what the tests need to name them. */
interface World {
  project: TestProject;
  calls: { id: number; slug: string };
  sso: { id: number; slug: string };
  customers: Record<Role, Customer>;
  /** The email identifier of the `over` customer. */
  email: string;
  /** The public headers of the logged-in `basic` customer. */
  session: Record<string, string>;
}

/** One check as sent: a route, its headers and body. */
interface Call {
  label: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** What batching must not change: the status and `data`, or the error's code (not the request id). */
type Answer = { status: number; data?: unknown; code?: string };

const withoutAt = (data: unknown): unknown => {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return data;
  const { at: _at, ...rest } = data as Record<string, unknown>;
  return rest;
};

const answerOf = (res: Response): Answer =>
  res.status < 300
    ? // the instant answered for is the request's own, so it differs between two calls
      { status: res.status, data: withoutAt(res.body.data) }
    : { status: res.status, code: res.body?.error?.code };

/**
 * Concurrent checks are gathered into one statement (`EntitlementsRepository.loadBatched`, one
 * loader per shape, requests of several projects in one batch, each request's state read by its
 * ordinality): through HTTP on a real PostgreSQL, the same checks sent one at a time and all at
 * once must answer alike, in both projects, without and with the periods guessed from the last
 * read, and with 404s (an unknown customer, feature, or another project's customer) inside a batch.
 */
describe('entitlement checks gathered into one statement answer as one at a time', () => {
  let t: TestApp;
  let a: World;
  let b: World;
  let seq = 0;

  beforeAll(async () => {
    t = await createTestApp();
    a = await world(
      await t.createProject(),
      { basic: 10, pro: 100, boost: 50 },
      { basic: 3, stacked: 5, disabled: 1, over: 2 },
    );
    b = await world(
      await t.createProject(),
      { basic: 20, pro: 200, boost: 30 },
      { basic: 4, stacked: 7, disabled: 2, over: 5 },
    );
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  /**
   * A project with a metered feature `api-calls` and a boolean `sso` (the same slugs in every
   * project), plans tier basic (`limits.basic` per month, sso), tier pro (`limits.pro` per day) and
   * addon boost (`limits.boost`, never resets), and one customer per role:
   * - basic: basic by redemption, `used.basic` used, a password (logged in);
   * - stacked: pro and boost by activation, pro used up and `used.stacked` of boost (two buckets);
   * - none: nothing granted;
   * - disabled: basic by activation, `used.disabled` used, then disabled;
   * - over: basic redeemed by its email identifier, used up with `used.over` of overage.
   * Its usage goes through the main instance (whose guesses it sets, not those of the replicas).
   */
  async function world(
    project: TestProject,
    limits: { basic: number; pro: number; boost: number },
    used: { basic: number; stacked: number; disabled: number; over: number },
  ): Promise<World> {
    const auth = bearer(project.privateKey);
    const post = async (path: string, body: Record<string, unknown>, status: number) => {
      const res = await t.http.post(`${P}${path}`).set(auth).send(body);
      expect({ path, status: res.status, error: res.body?.error }).toEqual({
        path,
        status,
        error: undefined,
      });
      return res.body.data;
    };
    const calls = await post(
      '/features',
      { slug: CALLS, name: 'API calls', metered: true, unit: 'call' },
      201,
    );
    const sso = await post('/features', { slug: SSO, name: 'SSO', metered: false, unit: '' }, 201);
    const plan = (group: string, quotas: Array<Record<string, unknown>>, value: number) =>
      post('/plans', { slug: `p-${++seq}`, name: `Plan ${seq}`, value, group, quotas }, 201);
    const basic = await plan(
      'tier',
      [
        { featureId: calls.id, limit: limits.basic, resetInterval: 'P1M' },
        { featureId: sso.id, limit: 0 },
      ],
      10,
    );
    const pro = await plan('tier', [{ featureId: calls.id, limit: limits.pro, resetInterval: 'P1D' }], 20);
    const boost = await plan('addon', [{ featureId: calls.id, limit: limits.boost, resetInterval: null }], 5);

    const email = `over-${++seq}@example.com`;
    const customer = (extra: Record<string, unknown> = {}): Promise<Customer> =>
      post('/customers', { username: `batch${String(++seq).padStart(6, '0')}`, ...extra }, 201);
    const customers: Record<Role, Customer> = {
      basic: await customer({ password: PASSWORD }),
      stacked: await customer({ password: PASSWORD }),
      none: await customer(),
      disabled: await customer(),
      over: await customer({ identifiers: [{ type: 'email', value: email }] }),
    };
    const byName = (c: Customer) => ({ type: 'username', value: c.username });
    const redeem = async (planId: number, ref: { type: string; value: string }) => {
      const { codes } = await post('/codes', { planId, duration: 'P30D' }, 201);
      await post('/redemptions', { code: codes[0], customer: ref }, 200);
    };
    const activate = (planId: number, c: Customer) =>
      post('/subscriptions/activate', { customer: byName(c), planId, duration: 'P30D' }, 200);
    const use = (c: Customer, amount: number, allowOverage = false) =>
      post('/usage', { customerId: c.id, feature: CALLS, amount, eventId: `u-${++seq}`, allowOverage }, 201);

    await redeem(basic.id, byName(customers.basic));
    await use(customers.basic, used.basic);
    await activate(pro.id, customers.stacked);
    await activate(boost.id, customers.stacked);
    await use(customers.stacked, limits.pro + used.stacked);
    await activate(basic.id, customers.disabled);
    await use(customers.disabled, used.disabled);
    const disabled = await t.http
      .patch(`${P}/customers/${customers.disabled.id}`)
      .set(auth)
      .send({ enabled: false });
    expect(disabled.status).toBe(200);
    await redeem(basic.id, { type: 'email', value: email });
    await use(customers.over, limits.basic + used.over, true);

    const key = { 'X-Service-Key': project.publicKey };
    const login = await t.http
      .post('/api/public/v1/auth/login')
      .set(key)
      .send({ identifier: byName(customers.basic), password: PASSWORD });
    expect(login.status).toBe(200);
    return {
      project,
      calls,
      sso,
      customers,
      email,
      session: { ...key, Authorization: `Bearer ${login.body.data.token}` },
    };
  }

  /**
   * The checks of `w` through its own private key (every customer by id, by username and the
   * `over` one by email; the feature by slug and by id; amounts 0, 1, 2 and one far past any
   * limit), its 404s (an unknown customer id or email, an unknown slug, `other`'s customer by id
   * and by username, `other`'s feature id) and its public checks.
   */
  function callsOf(w: World, other: World): Call[] {
    const name = w === a ? 'A' : 'B';
    const auth = bearer(w.project.privateKey);
    const check = (label: string, body: Record<string, unknown>): Call => ({
      label: `${name} ${label}`,
      path: `${P}/entitlements/check`,
      headers: auth,
      body,
    });
    const out: Call[] = [];
    for (const role of ROLES) {
      const c = w.customers[role];
      out.push(
        check(`${role} by id, slug, 1`, { customerId: c.id, feature: CALLS, amount: 1 }),
        check(`${role} by username, featureId, 0`, {
          customer: { type: 'username', value: c.username },
          featureId: w.calls.id,
          amount: 0,
        }),
        check(`${role} by id, featureId, 10^9`, { customerId: c.id, featureId: w.calls.id, amount: 1e9 }),
        check(`${role} by USERNAME, sso`, {
          customer: { type: 'username', value: c.username.toUpperCase() },
          feature: SSO,
        }),
      );
    }
    const email = { type: 'email', value: w.email };
    out.push(
      check('over by email, slug, 2', { customer: email, feature: CALLS, amount: 2 }),
      check('over by email, sso by id', { customer: email, featureId: w.sso.id }),
      check('unknown customer id', { customerId: 2_000_000_000, feature: CALLS }),
      check('unknown email', { customer: { type: 'email', value: 'nobody@example.com' }, feature: CALLS }),
      check('unknown slug', { customerId: w.customers.basic.id, feature: 'no-such-feature' }),
      check("other project's customer by id", { customerId: other.customers.basic.id, feature: CALLS }),
      check("other project's customer by username", {
        customer: { type: 'username', value: other.customers.stacked.username },
        featureId: w.calls.id,
      }),
      check("other project's feature id", { customerId: w.customers.basic.id, featureId: other.calls.id }),
      {
        label: `${name} public basic, slug, 1`,
        path: PUBLIC_CHECK,
        headers: w.session,
        body: { feature: CALLS, amount: 1 },
      },
      {
        label: `${name} public basic, sso by id`,
        path: PUBLIC_CHECK,
        headers: w.session,
        body: { featureId: w.sso.id },
      },
    );
    return out;
  }

  /** A's and B's checks interleaved, so that the requests of both projects reach each loader together. */
  const allCalls = (): Call[] => {
    const [xs, ys] = [callsOf(a, b), callsOf(b, a)];
    return xs.flatMap((x, k) => [x, ys[k]]);
  };

  const send = (http: TestAgent, call: Call) => http.post(call.path).set(call.headers).send(call.body);

  /** Every answer labelled, so that a difference names its check. */
  const labelled = (calls: Call[], answers: Answer[]) =>
    calls.map((c, k) => ({ check: c.label, ...answers[k] }));

  /** The loader a check goes to (`EntitlementsRepository.loadBatched`): how it names the customer and the feature. */
  const shapeOf = (call: Call): string => {
    const { customer, featureId } = call.body as { customer?: { type: string }; featureId?: number };
    const lock = customer ? (customer.type === 'username' ? 'username' : 'identifier') : 'id';
    return `${lock}:${featureId === undefined ? 'slug' : 'id'}`;
  };

  /**
   * One instance of the service, to send checks one at a time or all at once. Requests sent
   * together through supertest reach the service over several turns of the event loop (each
   * waits for its connection, its body, its key), so most would make batches of one: `allAtOnce`
   * holds each check at `loadBatched` until all of them are there, then lets them in within one
   * turn, as a busy instance sees them, so that every loader gathers its whole share. `batches`:
   * each batched check statement sent to PostgreSQL: its shape and its requests' projects.
   */
  function instance(app: NestExpressApplication) {
    const http = request(app.getHttpServer());
    const batches: Array<{ shape: string; projects: string[] }> = [];
    const statements = app.get(Statements);
    const rows = statements.rows.bind(statements);
    jest.spyOn(statements, 'rows').mockImplementation((em, statement: Statement, values: unknown[]) => {
      // a check's batch statement (not a consume's, `-event`), named with the month it reads
      const check = /^entitlements\.state-batch-(\w+)-(\w+)-\d{4}-\d{2}$/.exec(statement.name);
      if (check) batches.push({ shape: `${check[1]}:${check[2]}`, projects: [...(values[0] as string[])] });
      return rows(em, statement, values);
    });
    const repository = app.get(EntitlementsRepository);
    const load = repository.loadBatched.bind(repository);
    let gate: { count: number; held: Array<() => void> } | undefined;
    const release = () => {
      const held = gate?.held ?? [];
      gate = undefined;
      for (const go of held) go();
    };
    jest.spyOn(repository, 'loadBatched').mockImplementation((projectId, lock, feature, at) => {
      if (!gate) return load(projectId, lock, feature, at);
      const { held, count } = gate;
      return new Promise((resolve, reject) => {
        held.push(() => void load(projectId, lock, feature, at).then(resolve, reject));
        if (held.length === count) release();
      });
    });
    return {
      http,
      batches,
      async oneAtATime(calls: Call[]): Promise<Answer[]> {
        const out: Answer[] = [];
        for (const call of calls) out.push(answerOf(await send(http, call)));
        return out;
      },
      async allAtOnce(calls: Call[]): Promise<Answer[]> {
        gate = { count: calls.length, held: [] };
        // should a check never reach the loader, the others go on (and the batch counts below tell)
        const timer = setTimeout(release, 5_000);
        try {
          return (await Promise.all(calls.map((call) => send(http, call)))).map(answerOf);
        } finally {
          clearTimeout(timer);
        }
      },
      /** All at once as they come, not held: mostly batches of one or two. */
      async asTheyCome(calls: Call[]): Promise<Answer[]> {
        return (await Promise.all(calls.map((call) => send(http, call)))).map(answerOf);
      },
    };
  }

  /**
   * `calls` all at once on `on`: labelled answers, and expects them gathered into one statement per
   * shape and batch of at most 64 checks (each with requests of both projects when the shape has
   * both); a statement reads each customer and feature of its batch once, so it may have fewer
   * requests than its batch has checks.
   */
  async function gathered(on: ReturnType<typeof instance>, calls: Call[]) {
    const before = on.batches.length;
    const answers = labelled(calls, await on.allAtOnce(calls));
    const sent = on.batches.slice(before);
    const shapes = new Map<string, { count: number; projects: Set<string> }>();
    for (const call of calls) {
      const shape = shapes.get(shapeOf(call)) ?? { count: 0, projects: new Set<string>() };
      shape.count++;
      shape.projects.add(call.label.startsWith('A ') ? a.project.id : b.project.id);
      shapes.set(shapeOf(call), shape);
    }
    // per shape, one statement per batch of 64 checks at most
    expect(new Set(sent.map((x) => x.shape))).toEqual(new Set(shapes.keys()));
    for (const [shape, { count, projects }] of shapes) {
      const mine = sent.filter((x) => x.shape === shape);
      expect({ shape, statements: mine.length }).toEqual({ shape, statements: Math.ceil(count / 64) });
      for (const x of mine) expect(x.projects.length).toBeLessThanOrEqual(64);
      expect(mine.reduce((n, x) => n + x.projects.length, 0)).toBeLessThanOrEqual(count);
      expect(new Set(mine.flatMap((x) => x.projects))).toEqual(projects);
      // requests of both projects in one statement
      if (projects.size === 2) expect(mine.some((x) => new Set(x.projects).size === 2)).toBe(true);
    }
    return answers;
  }

  it('about 60 checks of two projects at once answer exactly as one at a time, without then with guessed periods', async () => {
    const calls = allCalls();
    expect(calls.length).toBeGreaterThanOrEqual(40);
    // each replica has guesses of its own: `serial` gives the reference, `batched` starts with none
    const serial = instance(await t.startReplica());
    const batched = instance(await t.startReplica());

    const expected = labelled(calls, await serial.oneAtATime(calls));
    const at = (label: string) => expected.find((e) => e.check === label)!;

    // the reference is what the spec says (so that equal answers are right answers)
    expect(at('A basic by id, slug, 1')).toMatchObject({
      status: 200,
      data: {
        allowed: true,
        reason: null,
        requested: 1,
        feature: { id: a.calls.id, slug: CALLS },
        balance: { limit: 10, used: 3, held: 0, remaining: 7, overage: 0 },
      },
    });
    expect(at('B basic by id, slug, 1').data).toMatchObject({
      feature: { id: b.calls.id },
      balance: { limit: 20, used: 4, held: 0, remaining: 16, overage: 0 },
    });
    expect(at('A stacked by id, slug, 1').data).toMatchObject({
      allowed: true,
      balance: { limit: 150, used: 105, held: 0, remaining: 45, overage: 0 },
    });
    expect((at('A stacked by id, slug, 1').data as any).buckets.map((x: any) => [x.group, x.used])).toEqual([
      ['tier', 100],
      ['addon', 5],
    ]);
    expect(at('B stacked by id, featureId, 10^9').data).toMatchObject({
      allowed: false,
      reason: 'LIMIT_REACHED',
      balance: { limit: 230, used: 207, held: 0, remaining: 23, overage: 0 },
    });
    expect(at('B over by email, slug, 2').data).toMatchObject({
      allowed: false,
      reason: 'LIMIT_REACHED',
      balance: { limit: 20, used: 20, held: 0, remaining: 0, overage: 5 },
    });
    expect(at('A none by username, featureId, 0').data).toMatchObject({
      allowed: false,
      reason: 'NOT_GRANTED',
    });
    expect(at('B disabled by id, slug, 1').data).toMatchObject({
      allowed: false,
      reason: 'CUSTOMER_DISABLED',
      balance: { used: 2 },
    });
    expect(at('A basic by USERNAME, sso').data).toMatchObject({
      allowed: true,
      requested: null,
      balance: null,
    });
    expect(at('B public basic, slug, 1').data).toEqual(at('B basic by id, slug, 1').data);
    for (const name of ['A', 'B']) {
      expect(at(`${name} unknown customer id`)).toEqual({
        check: `${name} unknown customer id`,
        status: 404,
        code: 'CUSTOMER_NOT_FOUND',
      });
      expect(at(`${name} unknown email`).code).toBe('CUSTOMER_NOT_FOUND');
      expect(at(`${name} unknown slug`).code).toBe('FEATURE_NOT_FOUND');
      expect(at(`${name} other project's customer by id`).code).toBe('CUSTOMER_NOT_FOUND');
      expect(at(`${name} other project's customer by username`).code).toBe('CUSTOMER_NOT_FOUND');
      expect(at(`${name} other project's feature id`).code).toBe('FEATURE_NOT_FOUND');
    }
    // no two customers' answers alike: a row given to another request would show
    const metered = expected
      .filter((e) => / by id, slug, 1$/.test(e.check))
      .map((e) => JSON.stringify(e.data));
    expect(new Set(metered).size).toBe(metered.length);

    // all at once, with no guess yet (every request's sums computed after its state), then again
    // with the periods each check guessed last time (summed in the same statement as the state)
    expect(await gathered(batched, calls)).toEqual(expected);
    expect(await gathered(batched, calls)).toEqual(expected);
    // the main instance, whose guesses come from the usage recorded: some requests of a batch guess, others not
    expect(await gathered(instance(t.app), calls)).toEqual(expected);
    // all at once, not held: however they happen to be gathered
    expect(labelled(calls, await batched.asTheyCome(calls))).toEqual(expected);
    // the reference again, one at a time with guesses of its own: batches of one
    const before = serial.batches.length;
    expect(labelled(calls, await serial.oneAtATime(calls))).toEqual(expected);
    expect(serial.batches.slice(before).map((x) => x.projects.length)).toEqual(calls.map(() => 1));
  });

  it('80 checks of one shape at once (two batches, 64 and 16), the same check several times in a batch, answer alike', async () => {
    const calls: Call[] = Array.from({ length: 80 }, (_, k) => {
      const w = k % 2 ? b : a;
      const role = ROLES[k % ROLES.length];
      // k and k + 30 are the same check
      return {
        label: `${w === a ? 'A' : 'B'} ${k}: ${role} by id, slug, ${k % 3}`,
        path: `${P}/entitlements/check`,
        headers: bearer(w.project.privateKey),
        body: { customerId: w.customers[role].id, feature: CALLS, amount: k % 3 },
      };
    });
    const expected = labelled(calls, await instance(await t.startReplica()).oneAtATime(calls));
    expect(expected[0]).toEqual({ ...expected[30], check: expected[0].check });
    const batched = instance(await t.startReplica());
    expect(await gathered(batched, calls)).toEqual(expected);
    // the same check, or the same customer and feature with another amount, read once a batch
    const read = batched.batches.reduce((n, x) => n + x.projects.length, 0);
    expect(read).toBeLessThan(calls.length);
    expect(await gathered(batched, calls)).toEqual(expected);
  });
});
