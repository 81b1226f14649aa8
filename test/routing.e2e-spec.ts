import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';
import { routeGroupOf } from '../src/common/http/envelope';

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

  it('groups API routes by their four literal leading segments, and nothing else', () => {
    expect(routeGroupOf('/api/private/v1/customers/:customerId')).toBe('/api/private/v1/customers');
    expect(routeGroupOf('/api/private/v1/customers')).toBe('/api/private/v1/customers');
    expect(routeGroupOf('/api/admin/v1/projects/:projectId/keys')).toBe('/api/admin/v1/projects');
    expect(routeGroupOf('/api/private/v1/:anything')).toBeUndefined();
    expect(routeGroupOf('/api/private/v1')).toBeUndefined();
    expect(routeGroupOf('/metrics')).toBeUndefined();
    expect(routeGroupOf('/docs/index.html')).toBeUndefined();
    expect(routeGroupOf(/^\/api\/x/)).toBeUndefined();
  });

  it('serves a grouped route, also with a trailing slash, another case and a query', async () => {
    for (const path of [
      `/api/private/v1/customers/${customerId}`,
      `/api/private/v1/customers/${customerId}/`,
      `/API/Private/v1/Customers/${customerId}`,
      `/api/private/v1/customers/${customerId}?x=1`,
    ]) {
      const res = await t.http.get(path).set(bearer(project.privateKey)).expect(200);
      expect(res.body.data.username).toBe('routing01');
    }
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
