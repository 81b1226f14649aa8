import { Logger } from '@nestjs/common';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { sign } from '../src/auth/signature';
import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import {
  bodyValueArb,
  contentTypeArb,
  describeExchange,
  EXAMPLE_BODIES,
  EXAMPLE_PATH_SEGMENTS,
  EXAMPLE_QUERY_VALUES,
  exampleOf,
  GENERIC_QUERY_NAMES,
  headerValueArb,
  jsonText,
  JUNK_PATH_SEGMENTS,
  mutate,
  Mutation,
  mutationArb,
  Operation,
  operationsOf,
  pathsOf,
  queryValueArb,
  rawTextArb,
  Received,
  Sent,
  violations,
  WRONG_VALUES,
} from './support/fuzz';
import { RouteCatalog } from '../src/common/routes/route-catalog.service';

/**
 * The rule, on every operation of the OpenAPI document (admin, private and public): bad input
 * gets the error envelope with a 4xx status and a message, never a 5xx. Inputs come from
 * fast-check with a fixed seed per operation and kind of input, so a run is repeatable; a
 * failure names the request (method, URL, headers, body), the answer and what the server logged.
 */

/**
 * Random runs per operation for each kind of input, after the fixed examples. With every
 * operation passing, the file sends about 8,000 requests in about 25 s on two cores.
 */
const RUNS = { anyBody: 30, mutatedBody: 40, rawBody: 20, pathParams: 25, query: 30, headers: 40 };
const SEED = 20_260_101;
const PASSWORD = 'correct horse battery';

// A fixed number of cases per test, not a speed check: on a busy machine (or beside the other
// test files, which run in parallel) one of these can take longer than the default minute.
jest.setTimeout(300_000);

describe('fuzz: bad input always gets a 4xx error envelope, never a 5xx', () => {
  let t: TestApp;
  let p: TestProject; // the project whose keys make the requests; signatures optional
  let q: TestProject; // another project: its ids must be 404 to p
  let scratch: TestProject; // the admin operations' own project
  let ops: Operation[] = [];
  let requests = 0;

  // ids of p (valid paths), of q (another project's), and the logins
  const own: Record<string, string> = {};
  const foreign: Record<string, string[]> = {};
  const codes: string[] = [];
  let victim = { id: 0, username: '', email: '' };
  let loginUsername = '';
  let tokenUsername = '';
  let customerToken = '';
  let logoutToken = '';
  let otherCustomerToken = '';
  let counter = 0;
  const uniq = () => `${Date.now().toString(36)}${(++counter).toString(36)}`;

  /** What the server logged as an unhandled error while answering the current request. */
  const serverErrors: string[] = [];

  const admin = () => bearer(ADMIN_TOKEN);

  async function post(path: string, auth: Record<string, string>, body: unknown, status = 201) {
    const send = () =>
      t.http
        .post(path)
        .set(auth)
        .send(body as object);
    let res = await send();
    if (res.status === 429) {
      // the fuzzed wrong admin tokens used up this address's attempts: start its window afresh
      await t.dataSource.query('DELETE FROM login_failures');
      res = await send();
    }
    if (res.status !== status)
      throw new Error(`setup: POST ${path} answered ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  }

  /** Fixtures of one project: a feature, a plan, customers, a batch of codes; returns their ids. */
  async function seedProject(project: TestProject, codeCount: number) {
    const sk = bearer(project.privateKey);
    const feature = await post('/api/private/v1/features', sk, {
      slug: `feat-${uniq()}`,
      name: 'Feature',
      metered: true,
      unit: 'calls',
    });
    const plan = await post('/api/private/v1/plans', sk, {
      slug: `plan-${uniq()}`,
      name: 'Plan',
      value: 10,
      group: 'tier',
      quotas: [{ featureId: feature.id, limit: 100, priority: 1, resetInterval: 'P1M' }],
    });
    const customer = await post('/api/private/v1/customers', sk, {
      username: `cust${uniq()}`.slice(0, 16).padEnd(8, '0'),
      password: PASSWORD,
      identifiers: [{ type: 'email', value: `c${uniq()}@example.com` }],
    });
    const batch = await post('/api/private/v1/codes', sk, {
      planId: plan.id,
      duration: 'P1D',
      count: codeCount,
      note: 'fuzz',
    });
    const list = await t.http
      .get(`/api/private/v1/codes?batchId=${batch.batchId ?? batch.id}&pageSize=100`)
      .set(sk);
    return {
      feature,
      plan,
      customer,
      batch,
      codes: (list.body.data?.data ?? []) as { id: number; code: string }[],
    };
  }

  async function login(project: TestProject, username: string): Promise<string> {
    const send = () =>
      t.http
        .post('/api/public/v1/auth/login')
        .set('X-Service-Key', project.publicKey)
        .send({ identifier: { type: 'username', value: username }, password: PASSWORD });
    let res = await send();
    if (res.status === 429) {
      // the fuzzed logins used up this address's failures: start its window afresh
      await t.dataSource.query('DELETE FROM login_failures');
      res = await send();
    }
    if (res.status !== 200)
      throw new Error(`setup: login answered ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data.token;
  }

  beforeAll(async () => {
    // webhooks: any URL allowed (the endpoints below point at a closed local port), nothing
    // delivered in the background
    t = await createTestApp({
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_WORKER_ENABLED: 'false',
      EVENTS_SCHEDULER_ENABLED: 'false',
      WEBHOOK_TIMEOUT_MS: '500',
    });
    p = await t.createProject({ name: 'Fuzz', autoCreateCustomerAtRedemption: true });
    q = await t.createProject({ name: 'Other', autoCreateCustomerAtRedemption: true });
    scratch = await t.createProject({ name: 'Scratch' });

    const mine = await seedProject(p, 100);
    const theirs = await seedProject(q, 2);
    const sk = bearer(p.privateKey);
    const mk = async (prefix: string) => {
      const username = `${prefix}${uniq()}`.slice(0, 16).padEnd(8, '0');
      const email = `${prefix}${uniq()}@example.com`;
      const c = await post('/api/private/v1/customers', sk, {
        username,
        password: PASSWORD,
        identifiers: [{ type: 'email', value: email }],
      });
      return { id: c.id as number, username, email };
    };
    victim = await mk('victim');
    loginUsername = (await mk('login')).username;
    tokenUsername = (await mk('tokens')).username;
    codes.push(...mine.codes.map((c) => c.code));
    const revokable = await post('/api/private/v1/codes', sk, { planId: mine.plan.id, count: 1 });

    Object.assign(own, {
      customerId: String(victim.id),
      featureId: String(mine.feature.id),
      planId: String(mine.plan.id),
      codeId: String(
        (await t.http.get(`/api/private/v1/codes?batchId=${revokable.batchId ?? revokable.id}`).set(sk)).body
          .data.data[0].id,
      ),
      batchId: String(mine.batch.batchId ?? mine.batch.id),
      projectId: scratch.id,
      keyId: String(scratch.privateKeyId),
    });
    const hook = { url: 'http://127.0.0.1:9/hook' };
    const ownEndpoint = await post('/api/private/v1/webhook-endpoints', sk, hook);
    const theirEndpoint = await post('/api/private/v1/webhook-endpoints', bearer(q.privateKey), hook);
    const firstEvent = async (project: TestProject) =>
      (await t.http.get('/api/private/v1/events?limit=1').set(bearer(project.privateKey))).body.data.data[0]
        .id as string;
    Object.assign(own, { endpointId: ownEndpoint.id, eventId: await firstEvent(p) });
    const gone = await post('/api/admin/v1/projects', admin(), { name: 'Deleted' });
    await t.http
      .delete(`/api/admin/v1/projects/${gone.id}`)
      .set(admin())
      .expect((r) => expect(r.status).toBeLessThan(300));
    Object.assign(foreign, {
      customerId: [String(theirs.customer.id)],
      featureId: [String(theirs.feature.id)],
      planId: [String(theirs.plan.id)],
      codeId: theirs.codes.map((c) => String(c.id)),
      batchId: [String(theirs.batch.batchId ?? theirs.batch.id)],
      projectId: [gone.id, 'prj_' + 'x'.repeat(20)],
      keyId: [String(q.privateKeyId), String(q.publicKeyId), String(p.publicKeyId)],
      endpointId: [theirEndpoint.id],
      eventId: [await firstEvent(q)],
    });
    // an audit record of each project (the writer's, of the keys made above)
    const firstAuditRecord = async (project: TestProject) =>
      (await t.http.get('/api/private/v1/audit-events?limit=1').set(bearer(project.privateKey))).body.data
        .data[0].id as string;
    own.auditEventId = await firstAuditRecord(p);
    foreign.auditEventId = [await firstAuditRecord(q)];

    // a usage record of each project (its customer granted the plan, unlimited usage for the fuzz)
    const usageOf = async (
      project: TestProject,
      customerId: number,
      username: string,
      seeded: { plan: { id: number }; feature: { id: number } },
    ) => {
      const key = bearer(project.privateKey);
      await post(
        '/api/private/v1/subscriptions/activate',
        key,
        { customer: { type: 'username', value: username }, planId: seeded.plan.id, duration: 'P3650D' },
        200,
      );
      await t.dataSource.query('UPDATE quotas SET quota_limit = NULL WHERE plan_id = $1', [seeded.plan.id]);
      const u = await post('/api/private/v1/usage', key, {
        customerId,
        featureId: seeded.feature.id,
        amount: 1,
        eventId: `seed-${uniq()}`,
      });
      return String(u.usage.id);
    };
    own.usageId = await usageOf(p, victim.id, victim.username, mine);
    foreign.usageId = [await usageOf(q, theirs.customer.id, theirs.customer.username, theirs)];
    // a grant of each project's customer
    const grantOf = async (project: TestProject, customerId: number, featureId: number) =>
      String(
        (
          await post(`/api/private/v1/customers/${customerId}/grants`, bearer(project.privateKey), {
            featureId,
            amount: 5,
          })
        ).grant.id,
      );
    own.grantId = await grantOf(p, victim.id, mine.feature.id);
    foreign.grantId = [await grantOf(q, theirs.customer.id, theirs.feature.id)];
    // a usage hold of each project's customer (the hold routes' `id`)
    const holdOf = async (project: TestProject, customerId: number, featureId: number) =>
      String(
        (
          await post('/api/private/v1/usage/holds', bearer(project.privateKey), {
            customerId,
            featureId,
            amount: 1,
            holdId: `seed-${uniq()}`,
          })
        ).hold.id,
      );
    own.id = await holdOf(p, victim.id, mine.feature.id);
    foreign.id = [await holdOf(q, theirs.customer.id, theirs.feature.id)];

    customerToken = await login(p, loginUsername);
    logoutToken = await login(p, tokenUsername);
    otherCustomerToken = await login(q, theirs.customer.username);

    const docs = await t.http.get('/docs-json').expect(200);
    ops = operationsOf(docs.body);

    jest.spyOn(Logger.prototype, 'error').mockImplementation((...args: unknown[]) => {
      serverErrors.push(args.map((a) => (typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
    });
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    if (process.env.FUZZ_STATS)
      process.stderr.write(`fuzz: ${requests} requests on ${ops.length} operations\n`);
    await t?.close();
  });

  // ---------------------------------------------------------------------------------------------
  // Requests

  let codeIndex = 0;
  const nextCode = () => codes[codeIndex++ % codes.length];

  /** A valid body per operation (fresh unique values each time); the schema's example otherwise. */
  function validBody(op: Operation): unknown {
    const n = uniq();
    const recipes: Record<string, () => unknown> = {
      'POST /api/admin/v1/projects': () => ({
        name: `Fuzz ${n}`,
        autoCreateCustomerAtRedemption: true,
        requireSignature: false,
      }),
      'PATCH /api/admin/v1/projects/{projectId}': () => ({
        name: `Scratch ${n}`,
        autoCreateCustomerAtRedemption: false,
        requireSignature: false,
      }),
      'POST /api/admin/v1/projects/{projectId}/keys': () => ({ kind: 'public', name: 'fuzz' }),
      'PATCH /api/admin/v1/projects/{projectId}/keys/{keyId}': () => ({
        enabled: true,
        name: `renamed ${n}`,
      }),
      'POST /api/private/v1/features': () => ({
        slug: `f-${n}`,
        name: 'Feature',
        description: 'd',
        metered: true,
        unit: 'calls',
      }),
      'PATCH /api/private/v1/features/{featureId}': () => ({
        name: 'Feature 2',
        description: 'x',
        metered: true,
        unit: 'u',
      }),
      'POST /api/private/v1/plans': () => ({
        slug: `p-${n}`,
        name: 'Plan',
        value: 5.5,
        group: 'fuzz',
        quotas: [{ featureId: Number(own.featureId), limit: 10, priority: 1, resetInterval: 'P1M' }],
      }),
      'PATCH /api/private/v1/plans/{planId}': () => ({
        name: 'Plan 2',
        quotas: [{ featureId: Number(own.featureId), limit: 5.25, priority: 0, resetInterval: null }],
      }),
      'POST /api/private/v1/customers': () => ({
        username: `fz${n}`.slice(0, 16).padEnd(8, '0'),
        enabled: true,
        password: PASSWORD,
        identifiers: [{ type: 'email', value: `fz${n}@example.com` }],
      }),
      'POST /api/private/v1/customers/resolve': () => ({ customer: { type: 'email', value: victim.email } }),
      'PATCH /api/private/v1/customers/{customerId}': () => ({
        enabled: true,
        password: PASSWORD,
        identifiers: [{ type: 'email', value: victim.email }],
      }),
      'POST /api/private/v1/codes': () => ({
        planId: Number(own.planId),
        duration: 'P1D',
        count: 2,
        expiresAt: '2099-01-01T00:00:00Z',
        note: 'fuzz',
      }),
      'POST /api/private/v1/redemptions': () => ({
        code: nextCode(),
        customer: { type: 'email', value: victim.email },
        autoCreate: false,
      }),
      'POST /api/private/v1/codes/redeem': () => ({
        code: nextCode(),
        customer: { type: 'username', value: victim.username },
        autoCreate: false,
      }),
      'POST /api/private/v1/subscriptions/activate': () => ({
        customer: { type: 'username', value: victim.username },
        planId: Number(own.planId),
        duration: 'P1D',
        autoCreate: false,
      }),
      'POST /api/public/v1/auth/login': () => ({
        identifier: { type: 'username', value: loginUsername },
        password: PASSWORD,
      }),
      'POST /api/public/v1/me/redemptions': () => ({ code: nextCode() }),
      'POST /api/public/v1/me/password': () => ({ currentPassword: PASSWORD, newPassword: PASSWORD }),
      'POST /api/private/v1/entitlements/check': () => ({
        customerId: Number(own.customerId),
        featureId: Number(own.featureId),
        amount: 1,
      }),
      'POST /api/private/v1/usage': () => ({
        customerId: Number(own.customerId),
        featureId: Number(own.featureId),
        amount: 1,
        eventId: `fz-${n}`,
      }),
      'POST /api/private/v1/usage/batch': () => ({
        events: [
          {
            customerId: Number(own.customerId),
            featureId: Number(own.featureId),
            amount: 1,
            eventId: `fzb-${n}`,
          },
        ],
      }),
      'POST /api/private/v1/usage/holds': () => ({
        customerId: Number(own.customerId),
        featureId: Number(own.featureId),
        amount: 1,
        holdId: `fzh-${n}`,
      }),
      'POST /api/public/v1/me/entitlements/check': () => ({ featureId: Number(own.featureId), amount: 1 }),
      'POST /api/private/v1/customers/{customerId}/grants': () => ({
        featureId: Number(own.featureId),
        amount: 5,
      }),
      'PUT /api/private/v1/customers/{customerId}/overrides/{featureId}': () => ({ mode: 'set', limit: 10 }),
    };
    const recipe = recipes[op.key];
    if (recipe) return recipe();
    return op.bodySchema ? exampleOf(op.bodySchema) : undefined;
  }

  /** Ids a DELETE may use up: made afresh after each successful delete. */
  const disposable = new Map<string, Record<string, string>>();

  async function disposableParams(op: Operation): Promise<Record<string, string>> {
    const cached = disposable.get(op.key);
    if (cached) return cached;
    const params: Record<string, string> = { ...own };
    const sk = bearer(p.privateKey);
    const last = op.pathParams[op.pathParams.length - 1];
    if (op.iface === 'admin' && last === 'projectId')
      params.projectId = (await post('/api/admin/v1/projects', admin(), { name: `Disposable ${uniq()}` })).id;
    else if (op.iface === 'admin' && last === 'keyId')
      params.keyId = String(
        (await post(`/api/admin/v1/projects/${scratch.id}/keys`, admin(), { kind: 'private' })).id,
      );
    else if (last === 'customerId')
      params.customerId = String(
        (
          await post('/api/private/v1/customers', sk, {
            username: `del${uniq()}`.slice(0, 16).padEnd(8, '0'),
          })
        ).id,
      );
    else if (last === 'featureId')
      params.featureId = String(
        (await post('/api/private/v1/features', sk, { slug: `del-${uniq()}`, name: 'Disposable' })).id,
      );
    else if (last === 'planId')
      params.planId = String(
        (
          await post('/api/private/v1/plans', sk, {
            slug: `del-${uniq()}`,
            name: 'Disposable',
            value: 1,
            group: 'del',
          })
        ).id,
      );
    disposable.set(op.key, params);
    return params;
  }

  async function validParams(op: Operation): Promise<Record<string, string>> {
    return op.method === 'DELETE' ? disposableParams(op) : { ...own };
  }

  function pathOf(op: Operation, params: Record<string, string>): string {
    return op.template.replace(/\{(\w+)\}/g, (_, name: string) => params[name] ?? own[name] ?? '1');
  }

  function validQuery(op: Operation): string {
    const parts: string[] = [];
    for (const { name } of op.queryParams) {
      if (name === 'page') parts.push('page=1');
      else if (name === 'pageSize') parts.push('pageSize=10');
      else if (name === 'batchId') parts.push(`batchId=${own.batchId}`);
      else if (name === 'dryRun') parts.push('dryRun=true');
    }
    return parts.length ? `?${parts.join('&')}` : '';
  }

  /** Valid credentials for the operation's interface (a customer token for `/me` routes). */
  function credentials(op: Operation): Record<string, string> {
    if (op.iface === 'admin') return admin();
    if (op.iface === 'private') return bearer(p.privateKey);
    const headers: Record<string, string> = { 'X-Service-Key': p.publicKey };
    if (op.customer)
      headers.Authorization = `Bearer ${op.key === 'POST /api/public/v1/auth/logout' ? logoutToken : customerToken}`;
    return headers;
  }

  interface Input {
    params?: Record<string, string>;
    query?: string;
    headers?: Record<string, string | undefined>;
    /** The exact body text; `undefined`: none. */
    body?: string;
    contentType?: string;
  }

  async function build(op: Operation, input: Input): Promise<Sent> {
    const params = input.params ?? (await validParams(op));
    const url = pathOf(op, params) + (input.query ?? validQuery(op));
    const headers: Record<string, string> = {};
    const merged = {
      ...credentials(op),
      ...(input.body !== undefined ? { 'Content-Type': input.contentType ?? 'application/json' } : {}),
      ...input.headers,
    };
    for (const [k, v] of Object.entries(merged)) if (v !== undefined) headers[k] = v;
    return { method: op.method, url, headers, body: input.body };
  }

  async function exchange(sent: Sent): Promise<Received> {
    let req = (t.http as unknown as Record<string, (url: string) => request.Test>)[sent.method.toLowerCase()](
      sent.url,
    );
    for (const [k, v] of Object.entries(sent.headers)) req = req.set(k, v);
    if (sent.body !== undefined) req = req.send(sent.body);
    const res = await req.buffer(true).parse((response, done) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => done(null, text));
    });
    return { status: res.status, headers: res.headers, text: typeof res.body === 'string' ? res.body : '' };
  }

  /** One request and the rule; bookkeeping of what a success used up. */
  async function probe(op: Operation, sent: Sent): Promise<void> {
    serverErrors.length = 0;
    let res: Received | undefined;
    try {
      res = await exchange(sent);
    } catch (e) {
      throw new Error(
        `request failed: ${(e as Error).message}\n  ${describeExchange(sent, undefined, serverErrors)}`,
      );
    }
    requests++;
    if (res.status < 300) {
      if (op.method === 'DELETE') disposable.delete(op.key);
      if (
        op.key === 'POST /api/public/v1/auth/logout' &&
        sent.headers.Authorization === `Bearer ${logoutToken}`
      )
        logoutToken = await login(p, tokenUsername);
    }
    const problems = violations(op, res);
    if (problems.length)
      throw new Error(`${problems.join('; ')}\n  ${describeExchange(sent, res, serverErrors)}`);
  }

  /**
   * fc.assert per operation: the fixed examples first, then RUNS[kind] random inputs. Every
   * operation runs even when one fails, and all failures are reported.
   */
  async function forEachOperation<T>(
    kind: keyof typeof RUNS,
    select: (op: Operation) => boolean,
    arbitrary: (op: Operation) => fc.Arbitrary<T>,
    toInput: (op: Operation, value: T) => Input | Promise<Input>,
    examples: (op: Operation) => T[] = () => [],
  ) {
    const failures: string[] = [];
    const selected = ops.filter(select);
    expect(selected.length).toBeGreaterThan(0);
    for (const [i, op] of selected.entries()) {
      const property = fc.asyncProperty(arbitrary(op), async (value) =>
        probe(op, await build(op, await toInput(op, value))),
      );
      try {
        const fixed = examples(op).map((e) => [e] as [T]);
        // examples count towards numRuns: they all run, then RUNS[kind] random inputs
        const seed = SEED + i * 7919 + Object.keys(RUNS).indexOf(kind) * 104_729;
        await fc.assert(property, {
          seed,
          numRuns: fixed.length + RUNS[kind],
          examples: fixed,
          includeErrorInReport: true,
        });
      } catch (e) {
        failures.push(`${op.key} (${kind}):\n${(e as Error).message}`);
      }
    }
    if (failures.length)
      throw new Error(`${failures.length} operation(s) broke the rule:\n\n${failures.join('\n\n')}`);
  }

  // ---------------------------------------------------------------------------------------------

  it('enumerates every operation the app serves from its OpenAPI document', () => {
    const documented = ops.map((op) => `${op.method} ${op.template.replace(/\{(\w+)\}/g, ':$1')}`).sort();
    const served = t.app
      .get(RouteCatalog)
      .all()
      .filter((r) => r.access.length === 1 && r.access[0] !== 'unauthenticated')
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    expect(documented).toEqual(served);
    expect(new Set(ops.map((op) => op.iface))).toEqual(new Set(['admin', 'private', 'public']));
    expect(ops.length).toBeGreaterThanOrEqual(40);
  });

  it('any JSON value as the body (scalars, nesting, hostile keys, huge values)', async () => {
    await forEachOperation(
      'anyBody',
      () => true,
      () => bodyValueArb,
      (_op, value) => ({ body: jsonText(value) }),
      () => EXAMPLE_BODIES,
    );
  });

  it('a valid body with fields dropped, set to wrong types, out of range, too long, or unknown fields added', async () => {
    await forEachOperation(
      'mutatedBody',
      (op) => op.bodySchema !== undefined,
      () => fc.array(mutationArb, { minLength: 1, maxLength: 3 }),
      (op, mutations) => ({ body: jsonText(mutate(validBody(op), mutations)) }),
      // every field dropped, and set to a value of each wrong kind
      (op) =>
        pathsOf(validBody(op))
          .slice(1)
          .flatMap((_, i): Mutation[][] => [
            [{ kind: 'drop', at: i + 1 }],
            ...WRONG_VALUES.map((value): Mutation[] => [{ kind: 'set', at: i + 1, value }]),
          ]),
    );
  });

  it('bodies that are not JSON, or not declared as JSON', async () => {
    await forEachOperation(
      'rawBody',
      () => true,
      () =>
        fc.oneof(
          fc.record({ text: rawTextArb, type: fc.constant('application/json') }),
          fc.record({ text: fc.oneof(rawTextArb, fc.constant('{}')), type: contentTypeArb }),
        ),
      (op, { text, type }) => ({
        body: text === '{}' ? jsonText(validBody(op) ?? {}) : text,
        contentType: type,
      }),
    );
  });

  it("path parameters: junk, out of range, encoded, another project's ids", async () => {
    await forEachOperation(
      'pathParams',
      (op) => op.pathParams.length > 0,
      (op) =>
        fc.record(
          Object.fromEntries(
            op.pathParams.map((name) => [
              name,
              fc.oneof(
                fc.constantFrom(...JUNK_PATH_SEGMENTS),
                fc.constantFrom(...(foreign[name] ?? ['1'])),
                fc.constant(own[name] ?? '1'),
              ),
            ]),
          ),
        ),
      async (op, params) => {
        const body = validBody(op);
        return {
          params: { ...(await validParams(op)), ...params },
          body: body === undefined ? undefined : jsonText(body),
        };
      },
      (op) =>
        op.pathParams.flatMap((name) =>
          [...EXAMPLE_PATH_SEGMENTS, ...(foreign[name] ?? []).slice(0, 1)].map((value) => ({
            [name]: value,
          })),
        ),
    );
  });

  it("tenancy: another project's id with this project's key is 404 *_NOT_FOUND on every private and public operation that takes one", async () => {
    const failures: string[] = [];
    const checked = new Set<string>();
    for (const op of ops.filter((o) => o.iface !== 'admin')) {
      for (const name of op.pathParams.filter((n) => foreign[n] !== undefined)) {
        for (const value of foreign[name]) {
          const body = validBody(op);
          const sent = await build(op, {
            params: { ...(await validParams(op)), [name]: value },
            body: body === undefined ? undefined : jsonText(body),
          });
          const res = await exchange(sent);
          requests++;
          checked.add(op.key);
          let code: unknown;
          try {
            code = JSON.parse(res.text)?.error?.code;
          } catch {
            code = undefined;
          }
          if (res.status !== 404 || typeof code !== 'string' || !code.endsWith('_NOT_FOUND'))
            failures.push(describeExchange(sent, res, []));
        }
      }
    }
    // every private and public operation with an id in its path was tried
    expect([...checked].sort()).toEqual(
      ops
        .filter((o) => o.iface !== 'admin' && o.pathParams.length > 0)
        .map((o) => o.key)
        .sort(),
    );
    expect(failures).toEqual([]);
  });

  it('query parameters: junk values, repeated, unknown and very long', async () => {
    await forEachOperation(
      'query',
      () => true,
      (op) => {
        const names = fc.oneof(
          fc.constantFrom(...GENERIC_QUERY_NAMES),
          ...(op.queryParams.length ? [fc.constantFrom(...op.queryParams.map((q) => q.name))] : []),
        );
        return fc.array(fc.tuple(names, queryValueArb, fc.boolean()), { minLength: 1, maxLength: 5 });
      },
      (op, pairs) => {
        const body = validBody(op);
        const query =
          '?' +
          pairs
            .map(([name, value, bare]) =>
              bare && value === '' ? encodeURIComponent(name) : `${encodeURIComponent(name)}=${value}`,
            )
            .join('&');
        return { query, body: body === undefined ? undefined : jsonText(body) };
      },
      (op) =>
        op.queryParams.flatMap(({ name }): [string, string, boolean][][] => [
          ...EXAMPLE_QUERY_VALUES.map((value): [string, string, boolean][] => [[name, value, false]]),
          [
            [name, '1', false],
            [name, '2', false],
          ],
          [[name, '', true]],
        ]),
    );
  });

  it('headers: credentials of the wrong kind or project, junk, idempotency keys, signatures, request ids, encodings', async () => {
    const now = () => String(Math.floor(Date.now() / 1000));
    const validNonce = () => randomBytes(18).toString('base64url');
    await forEachOperation(
      'headers',
      () => true,
      (op) => {
        const credential = fc.oneof(
          headerValueArb,
          fc.constantFrom(
            `Bearer ${p.privateKey}`,
            `Bearer ${q.privateKey}`,
            `Bearer ${p.publicKey}`,
            `Bearer ${ADMIN_TOKEN}`,
            `Bearer ${customerToken}`,
            `Bearer ${otherCustomerToken}`,
            `Bearer ${p.privateKey}x`,
            `Bearer ${p.privateKey.slice(0, -1)}`,
            `Bearer ${p.privateKey.toUpperCase()}`,
            p.privateKey,
            `Bearer ${p.privateKey} ${p.privateKey}`,
            `Bearer\t${p.privateKey}`,
            `Token ${p.privateKey}`,
            `Bearer ${'sk_'.padEnd(300, 'a')}`,
            `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
          ),
        );
        const serviceKey = fc.oneof(
          headerValueArb,
          fc.constantFrom(
            q.publicKey,
            p.privateKey,
            p.publicKey + ' ',
            p.publicKey.toUpperCase(),
            `pk_${'a'.repeat(400)}`,
          ),
        );
        return fc.record(
          {
            authorization: credential,
            serviceKey: op.iface === 'public' ? serviceKey : fc.constant(undefined),
            idempotencyKey: fc.oneof(
              headerValueArb,
              fc.constantFrom('fuzz-key-1', 'fuzz-key-2', ' ', 'a'.repeat(255), 'a'.repeat(256), '\u00e9'),
            ),
            requestId: fc.oneof(
              headerValueArb,
              fc.constantFrom('req-1', 'a'.repeat(128), 'a'.repeat(129), 'a:b.c_d-e'),
            ),
            signature:
              op.iface === 'public'
                ? fc.record(
                    {
                      timestamp: fc.oneof(
                        headerValueArb,
                        fc.constantFrom('now', '0', '1', '999999999999', '9999999999999', '-1', '1e9'),
                      ),
                      nonce: fc.oneof(
                        headerValueArb,
                        fc.constantFrom('fresh', 'fuzz-nonce-000001', 'x'.repeat(64), 'x'.repeat(65)),
                      ),
                      signature: fc.oneof(
                        headerValueArb,
                        fc.constantFrom('valid', '0'.repeat(64), 'F'.repeat(64), 'g'.repeat(64)),
                      ),
                    },
                    { requiredKeys: [] },
                  )
                : fc.constant(undefined),
            contentEncoding: fc.constantFrom(
              'gzip',
              'deflate',
              'br',
              'identity',
              'x-unknown',
              'gzip, gzip',
              'GZIP',
            ),
          },
          { requiredKeys: [] },
        );
      },
      (op, h) => {
        const body = validBody(op);
        const text = body === undefined ? undefined : jsonText(body);
        const headers: Record<string, string | undefined> = {};
        if (h.authorization !== undefined) headers.Authorization = h.authorization;
        if (h.serviceKey !== undefined) headers['X-Service-Key'] = h.serviceKey;
        if (h.idempotencyKey !== undefined) headers['Idempotency-Key'] = h.idempotencyKey;
        if (h.requestId !== undefined) headers['X-Request-Id'] = h.requestId;
        if (h.contentEncoding !== undefined && text !== undefined)
          headers['Content-Encoding'] = h.contentEncoding;
        if (h.signature) {
          const timestamp = h.signature.timestamp === 'now' ? now() : h.signature.timestamp;
          const nonce = h.signature.nonce === 'fresh' ? validNonce() : h.signature.nonce;
          if (timestamp !== undefined) headers['X-Service-Timestamp'] = timestamp;
          if (nonce !== undefined) headers['X-Service-Nonce'] = nonce;
          if (h.signature.signature !== undefined) {
            headers['X-Service-Signature'] =
              h.signature.signature === 'valid'
                ? sign(
                    p.signingSecret,
                    op.method,
                    pathOf(op, own) + validQuery(op),
                    Number(timestamp ?? 0),
                    nonce ?? '',
                    text ?? '',
                  )
                : h.signature.signature;
          }
        }
        return { body: text, headers };
      },
    );
  });

  it('the same valid write sent 6 times at once, on every POST, PATCH and DELETE: each a 2xx or a 4xx envelope, never a 5xx', async () => {
    const failures: string[] = [];
    const writes = ops.filter((o) => o.method !== 'GET');
    expect(writes.length).toBeGreaterThanOrEqual(20);
    for (const op of writes) {
      const body = validBody(op);
      const sent = await build(op, { body: body === undefined ? undefined : jsonText(body) });
      serverErrors.length = 0;
      const answers = await Promise.all(Array.from({ length: 6 }, () => exchange(sent)));
      requests += answers.length;
      for (const res of answers) {
        const problems = violations(op, res);
        if (problems.length)
          failures.push(`${problems.join('; ')}\n  ${describeExchange(sent, res, serverErrors)}`);
      }
      // what a success used up
      if (op.method === 'DELETE') disposable.delete(op.key);
      if (op.key === 'POST /api/public/v1/auth/logout' && answers.some((r) => r.status < 300))
        logoutToken = await login(p, tokenUsername);
    }
    expect(failures).toEqual([]);
  });
});
