import { get as httpGet } from 'node:http';
import { validateEnv } from '../src/config/env';
import { MetricsServer } from '../src/metrics/metrics-server';
import { bearer, createTestApp, startApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';
import { insertPlan } from './support/fixtures';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[key] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

describe('GET /metrics', () => {
  let t: TestApp;
  let a: TestProject;
  let planId: number;

  const scrape = async () => {
    const res = await t.http.get('/metrics').expect(200);
    return { res, samples: parseMetrics(res.text) };
  };

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'Metrics' });
    planId = await insertPlan(t.dataSource, { projectId: a.id, name: 'Pro', value: 20, group: 'tier' });
  });
  afterAll(() => t.close());

  it('answers the Prometheus text format without a key, without the envelope, with the process metrics', async () => {
    const { res, samples } = await scrape();
    expect(res.headers['content-type']).toMatch(/^text\/plain;/);
    expect(res.headers['content-type']).toContain('version=0.0.4');
    expect(res.text).not.toContain('"ok"');
    expect(res.text).toContain('# TYPE http_requests_total counter');
    expect(res.text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(res.text).toContain('# TYPE redemptions_total counter');
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_seconds',
    ]) {
      expect(find(samples, name)).toHaveLength(1);
    }
  });

  it('exposes the database pool gauges', async () => {
    const { samples } = await scrape();
    const value = (name: string) => find(samples, name)[0]?.value;
    expect(value('db_pool_connections')).toBeGreaterThanOrEqual(1);
    expect(value('db_pool_idle_connections')).toBeGreaterThanOrEqual(0);
    expect(value('db_pool_waiting_requests')).toBe(0);
    expect(value('db_pool_max_connections')).toBe(10);
  });

  it('counts and times requests by route template, never by raw path', async () => {
    await t.http.get('/api/private/v1/customers/424242').set(bearer(a.privateKey)).expect(404);
    await t.http.get('/api/private/v1/customers/434343').set(bearer(a.privateKey)).expect(404);
    await t.http.get('/api/private/v1/customers/not-a-number').set(bearer(a.privateKey)).expect(400);
    await t.http.get('/api/private/v1/info').set(bearer(a.privateKey)).expect(200);
    await t.http.get('/no/such/route/31337').expect(404);
    // refused by the body parser before routing: still labelled with its route
    await t.http
      .post('/api/private/v1/customers')
      .set(bearer(a.privateKey))
      .set('Content-Type', 'text/plain')
      .send('x')
      .expect(415);

    const { res, samples } = await scrape();
    expect(res.text).not.toMatch(/424242|434343|not-a-number|31337/);
    const route = '/api/private/v1/customers/:customerId';
    expect(find(samples, 'http_requests_total', { method: 'GET', route, status: '404' })[0]?.value).toBe(2);
    expect(find(samples, 'http_requests_total', { method: 'GET', route, status: '400' })[0]?.value).toBe(1);
    expect(
      find(samples, 'http_requests_total', { method: 'GET', route: '/api/private/v1/info', status: '200' })[0]
        ?.value,
    ).toBe(1);
    expect(
      find(samples, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })[0]?.value,
    ).toBe(1);
    expect(
      find(samples, 'http_requests_total', {
        method: 'POST',
        route: '/api/private/v1/customers',
        status: '415',
      })[0]?.value,
    ).toBe(1);
    expect(
      find(samples, 'http_requests_total', {
        method: 'POST',
        route: '/api/admin/v1/projects',
        status: '201',
      })[0]?.value,
    ).toBe(1);

    expect(
      find(samples, 'http_request_duration_seconds_count', { method: 'GET', route, status: '404' })[0]?.value,
    ).toBe(2);
    const buckets = find(samples, 'http_request_duration_seconds_bucket', {
      method: 'GET',
      route,
      status: '404',
    });
    expect(buckets.find((b) => b.labels.le === '+Inf')?.value).toBe(2);
    expect(
      find(samples, 'http_request_duration_seconds_sum', { method: 'GET', route, status: '404' })[0]?.value,
    ).toBeGreaterThan(0);

    // every route label is a template or "unmatched"
    const routes = new Set(find(samples, 'http_requests_total').map((s) => s.labels.route));
    for (const r of routes) expect(r === 'unmatched' || r.startsWith('/')).toBe(true);
  });

  it('counts redemptions by outcome: success or the error code (dry runs and replays left out)', async () => {
    const auth = bearer(a.privateKey);
    const customer = (
      await t.http.post('/api/private/v1/customers').set(auth).send({ username: 'metrics01' }).expect(201)
    ).body.data;
    const [code] = (
      await t.http
        .post('/api/private/v1/codes')
        .set(auth)
        .send({ planId, duration: 'P30D', count: 1 })
        .expect(201)
    ).body.data.codes;
    const body = { code, customer: { type: 'username', value: customer.username } };

    await t.http.post('/api/private/v1/redemptions?dryRun=true').set(auth).send(body).expect(200);
    const ok = await t.http
      .post('/api/private/v1/redemptions')
      .set(auth)
      .set('Idempotency-Key', 'metrics-redeem-1')
      .send(body)
      .expect(200);
    const replay = await t.http
      .post('/api/private/v1/redemptions')
      .set(auth)
      .set('Idempotency-Key', 'metrics-redeem-1')
      .send(body)
      .expect(200);
    expect(replay.body.data).toEqual(ok.body.data);
    expectError(
      await t.http
        .post('/api/private/v1/codes/redeem')
        .set(auth)
        .send({ code: 'AAAA-BBBB-CCCC-DDDD', customer: body.customer }),
      404,
      'CODE_NOT_FOUND',
    );
    expectError(
      await t.http.post('/api/private/v1/redemptions').set(auth).send(body),
      409,
      'CODE_ALREADY_REDEEMED',
    );
    // a refused key is not a redemption attempt
    expectError(await t.http.post('/api/private/v1/redemptions').send(body), 401, 'INVALID_API_KEY');

    const { samples } = await scrape();
    const outcomes = Object.fromEntries(
      find(samples, 'redemptions_total').map((s) => [s.labels.outcome, s.value]),
    );
    expect(outcomes).toEqual({ success: 1, CODE_NOT_FOUND: 1, CODE_ALREADY_REDEEMED: 1 });
  });

  it('is outside the API: not in the OpenAPI document, no rate-limit headers', async () => {
    const doc = await t.http.get('/docs-json').expect(200);
    expect(Object.keys(doc.body.paths).filter((p) => p.includes('metrics'))).toEqual([]);
    const { res } = await scrape();
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });
});

describe('METRICS_ENABLED=false', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ METRICS_ENABLED: 'false' });
  });
  afterAll(() => t.close());

  it('GET /metrics is 404 ROUTE_NOT_FOUND', async () => {
    expectError(await t.http.get('/metrics'), 404, 'ROUTE_NOT_FOUND');
  });
});

/** One plain GET to 127.0.0.1:port (the metrics server is not the app's HTTP server). */
const getLocal = (port: number, path: string) =>
  new Promise<{ status?: number; type?: string; text?: string; error?: string }>((resolve) => {
    const req = httpGet({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode, type: res.headers['content-type'], text }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });

describe('METRICS_PORT: /metrics on a port of its own', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    // 0: any free port (the real one is read back from the server)
    t = await createTestApp({ METRICS_PORT: '0' });
    port = t.app.get(MetricsServer).port!;
  });
  afterAll(() => t.close());

  it('is refused as a setting unless it is an integer port other than PORT', () => {
    const base = {
      DATABASE_URL: 'postgres://u:p@localhost:5432/db',
      SECRET_ENCRYPTION_KEY: 'A'.repeat(43) + '=',
    };
    expect(validateEnv({ ...base, METRICS_PORT: '9464' }).METRICS_PORT).toBe(9464);
    expect(validateEnv({ ...base }).METRICS_PORT).toBeUndefined();
    for (const bad of ['abc', '9464.5', '-1', '70000'])
      expect(() => validateEnv({ ...base, METRICS_PORT: bad })).toThrow(/METRICS_PORT: .*integer port/);
    expect(() => validateEnv({ ...base, PORT: '3000', METRICS_PORT: '3000' })).toThrow(
      /METRICS_PORT: must differ from PORT/,
    );
  });

  it('the API port answers /metrics 404 ROUTE_NOT_FOUND; the metrics port serves it, counting the API port’s requests', async () => {
    expect(port).toBeGreaterThan(0);
    expectError(await t.http.get('/metrics'), 404, 'ROUTE_NOT_FOUND');
    await t.http.get('/healthz').expect(200);
    const res = await getLocal(port, '/metrics');
    if (res.error) throw new Error(`the metrics port did not answer: ${res.error}`);
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/plain;.*version=0\.0\.4/);
    const samples = parseMetrics(res.text!);
    expect(
      find(samples, 'http_requests_total', { method: 'GET', route: '/healthz', status: '200' })[0]?.value,
    ).toBe(1);
    expect(find(samples, 'process_resident_memory_bytes')).toHaveLength(1);
    // only /metrics there: the API is not served on the metrics port
    expect(await getLocal(port, '/healthz')).toMatchObject({ status: 404 });
    expect(await getLocal(port, '/api/private/v1/info')).toMatchObject({ status: 404 });
  });

  it('closes the metrics port when the application stops', async () => {
    const other = await startApp({ ...t.env, METRICS_PORT: '0' });
    const otherPort = other.get(MetricsServer).port!;
    expect(await getLocal(otherPort, '/metrics')).toMatchObject({ status: 200 });
    await other.close();
    expect(await getLocal(otherPort, '/metrics')).toEqual({ error: 'ECONNREFUSED' });
  });
});
