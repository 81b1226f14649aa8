import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';
import { expressRoutes } from './support/routes';

/**
 * Every route is served by Express's own router, as Nest registers it: one spelling per path
 * (strict and case-sensitive), 404 for anything else, the success envelope from Nest's
 * interceptor.
 */
describe('routing', () => {
  let t: TestApp;
  let project: TestProject;
  let customerId: number;

  beforeAll(async () => {
    t = await createTestApp();
    project = await t.createProject({ name: 'Routing' });
    const created = await t.http
      .post('/api/private/v1/customers')
      .set(bearer(project.privateKey))
      .send({ username: 'routing01' })
      .expect(201);
    customerId = created.body.data.id;
  });
  afterAll(() => t.close());

  it("serves the controllers' routes from Express's own router, as Nest registered them", () => {
    const routes = expressRoutes(t.app, '/api/private/v1/customers');
    expect(routes).toEqual(
      expect.arrayContaining([
        'GET /api/private/v1/customers/:customerId',
        'POST /api/private/v1/customers',
        'POST /api/private/v1/customers/resolve',
      ]),
    );
  });

  it('wraps a routed answer in { ok, requestId, data }, its requestId that of X-Request-Id', async () => {
    const res = await t.http
      .get(`/api/private/v1/customers/${customerId}`)
      .set(bearer(project.privateKey))
      .set('X-Request-Id', 'routing-trace-1')
      .expect(200);
    expect(res.headers['x-request-id']).toBe('routing-trace-1');
    expect(res.body).toEqual({
      ok: true,
      requestId: 'routing-trace-1',
      data: expect.objectContaining({ id: customerId }),
    });
    expect(Object.keys(res.body)).toEqual(['ok', 'requestId', 'data']);
  });

  it('gives a 404 of no route the security headers and the request id as well', async () => {
    const res = await t.http.get('/api/private/v1/nothing-here').set('X-Request-Id', 'routing-404');
    expectError(res, 404, 'ROUTE_NOT_FOUND');
    expect(res.body.requestId).toBe('routing-404');
    expect(res.headers['x-request-id']).toBe('routing-404');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });

  it('serves Swagger UI and its document beside the API routes, with the headers of Swagger UI', async () => {
    const ui = await t.http.get('/docs/').expect(200);
    expect(ui.headers['content-security-policy']).toContain("script-src 'self' 'unsafe-inline'");
    expect(ui.headers['x-request-id']).toBeDefined();
    const json = await t.http.get('/docs-json').expect(200);
    expect(json.body.openapi).toMatch(/^3\./);
  });

  it('serves a route, also with a query; routing is strict and case-sensitive (issue 16)', async () => {
    for (const path of [
      `/api/private/v1/customers/${customerId}`,
      `/api/private/v1/customers/${customerId}?x=1`,
    ]) {
      const res = await t.http.get(path).set(bearer(project.privateKey)).expect(200);
      expect(res.body.data.username).toBe('routing01');
    }
    // one canonical path for routing, rate limits, idempotency and metrics: another spelling is no route
    for (const path of [
      `/api/private/v1/customers/${customerId}/`,
      `/API/Private/v1/Customers/${customerId}`,
    ])
      expectError(await t.http.get(path).set(bearer(project.privateKey)), 404, 'ROUTE_NOT_FOUND');
  });

  it('takes a path id in decimal digits only: 1e1, 0x10, +12, 12.0 and a space are 400 VALIDATION_FAILED', async () => {
    for (const id of ['1e1', '0x10', '+12', '12.0', '%2012', '-1', '0'])
      expectError(
        await t.http.get(`/api/private/v1/customers/${id}`).set(bearer(project.privateKey)),
        400,
        'VALIDATION_FAILED',
      );
    const padded = await t.http
      .get(`/api/private/v1/customers/0${customerId}`)
      .set(bearer(project.privateKey))
      .expect(200);
    expect(padded.body.data.id).toBe(customerId);
  });

  it('answers HEAD through the GET route, with the headers of the GET', async () => {
    const res = await t.http
      .head(`/api/private/v1/customers/${customerId}`)
      .set(bearer(project.privateKey))
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['x-request-id']).toBeDefined();
  });

  it('answers 404 ROUTE_NOT_FOUND for a path or a method no route has, and for OPTIONS', async () => {
    expectError(
      await t.http.get('/api/private/v1/customers/1/nothing').set(bearer(project.privateKey)),
      404,
      'ROUTE_NOT_FOUND',
    );
    expectError(
      await t.http.put(`/api/private/v1/customers/${customerId}`).set(bearer(project.privateKey)).send({}),
      404,
      'ROUTE_NOT_FOUND',
    );
    expectError(
      await t.http.get('/api/private/v1/customersx').set(bearer(project.privateKey)),
      404,
      'ROUTE_NOT_FOUND',
    );
    expectError(
      await t.http.options('/api/private/v1/customers').set(bearer(project.privateKey)),
      404,
      'ROUTE_NOT_FOUND',
    );
  });

  it('keeps literal routes before parameter routes', async () => {
    const res = await t.http
      .post('/api/private/v1/customers/resolve')
      .set(bearer(project.privateKey))
      .send({ customer: { type: 'username', value: 'routing01' } })
      .expect(200);
    expect(res.body.data.id).toBe(customerId);
  });
});
