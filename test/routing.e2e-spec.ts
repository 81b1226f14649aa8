import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';
import request from 'supertest';
import { createHttpAdapter } from '../src/configure-app';
import { requestGroupOf, routeGroupOf } from '../src/common/http/envelope';

/**
 * The API routes sit in route groups (EnvelopeExpressAdapter): requests must be routed exactly as
 * by one flat Express router.
 */
describe('routing through route groups', () => {
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

  it('groups API routes by their four literal leading segments, other routes by their first', () => {
    expect(routeGroupOf('/api/private/v1/customers/:customerId')).toBe('/api/private/v1/customers');
    expect(routeGroupOf('/api/private/v1/customers')).toBe('/api/private/v1/customers');
    expect(routeGroupOf('/api/admin/v1/projects/:projectId/keys')).toBe('/api/admin/v1/projects');
    expect(routeGroupOf('/api/private/v1/:anything')).toBeUndefined();
    expect(routeGroupOf('/api/private/v1')).toBeUndefined();
    expect(routeGroupOf('/metrics')).toBe('/metrics');
    expect(routeGroupOf('/docs/index.html')).toBe('/docs');
    expect(routeGroupOf('/docs-json')).toBe('/docs-json');
    expect(routeGroupOf('/:anything')).toBeUndefined();
    expect(routeGroupOf('/')).toBeUndefined();
    expect(routeGroupOf(/^\/api\/x/)).toBeUndefined();
  });

  it('finds the group of a request by the same segments, whatever follows them', () => {
    expect(requestGroupOf('/api/private/v1/customers/12?x=1')).toBe('/api/private/v1/customers');
    expect(requestGroupOf('/api/private/v1/customers?x=1')).toBe('/api/private/v1/customers');
    expect(requestGroupOf('/API/Private/v1/Customers/12')).toBe('/api/private/v1/customers');
    expect(requestGroupOf('/api/private/v1/customersx')).toBe('/api/private/v1/customersx');
    expect(requestGroupOf('/api/private/v1')).toBeUndefined();
    expect(requestGroupOf('/api//v1/customers')).toBeUndefined();
    expect(requestGroupOf('/docs/index.html')).toBe('/docs');
    expect(requestGroupOf('/docs?x')).toBe('/docs');
    expect(requestGroupOf('/docs-json')).toBe('/docs-json');
    expect(requestGroupOf('/')).toBeUndefined();
    expect(requestGroupOf('/?x=1')).toBeUndefined();
  });

  it('puts the groups of consecutive routes behind one dispatcher, in the order the routes came', () => {
    const express = t.app.getHttpAdapter().getInstance() as {
      router: { stack: Array<{ handle: { routeGroups?: Map<string, unknown> } }> };
    };
    const dispatchers = express.router.stack.filter((layer) => layer.handle.routeGroups);
    const groups = dispatchers.map((layer) => [...layer.handle.routeGroups!.keys()]);
    // Swagger UI's routes come before its static files (a middleware), the controllers' after them
    expect(groups.length).toBeGreaterThanOrEqual(2);
    expect(groups[0]).toEqual(expect.arrayContaining(['/docs', '/docs-json', '/docs-yaml']));
    expect(groups.flat()).toEqual(
      expect.arrayContaining(['/api/private/v1/customers', '/api/private/v1/redemptions', '/readyz']),
    );
    // each group sits in one dispatcher only when its routes were registered together
    expect(new Set(groups.flat()).size).toBe(groups.flat().length);
  });

  it('serves a grouped route, also with a query; routing is strict and case-sensitive (issue 16)', async () => {
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

  it('answers 404 ROUTE_NOT_FOUND for a path or a method no route of the group has, and for OPTIONS', async () => {
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

  it('keeps literal routes before parameter routes of the same group', async () => {
    const res = await t.http
      .post('/api/private/v1/customers/resolve')
      .set(bearer(project.privateKey))
      .send({ customer: { type: 'username', value: 'routing01' } })
      .expect(200);
    expect(res.body.data.id).toBe(customerId);
  });
});

describe('route dispatchers of EnvelopeExpressAdapter', () => {
  /** Grouped routes, a route of no group that matches the same paths, then grouped routes again. */
  function app() {
    const adapter = createHttpAdapter();
    const answer = (name: string) => (_req: unknown, res: { json(body: unknown): void }) => res.json(name);
    adapter.get('/api/private/v1/things/:id', answer('first run'));
    adapter.get('/api/private/v1/:kind/special', answer('no group'));
    adapter.get('/api/private/v1/things/:id/special', answer('second run'));
    adapter.get('/api/private/v1/others/special', answer('second run, other group'));
    return adapter.getInstance();
  }

  it('keeps the order of one flat router: a route registered between grouped routes stays between them', async () => {
    const http = request(app());
    expect((await http.get('/api/private/v1/things/1')).body).toBe('first run');
    // both the route of no group and the later group's route match: the one registered first answers
    expect((await http.get('/api/private/v1/others/special')).body).toBe('no group');
    expect((await http.get('/api/private/v1/things/1/special')).body).toBe('second run');
    expect((await http.get('/api/private/v1/things/1/other')).status).toBe(404);
  });
});
