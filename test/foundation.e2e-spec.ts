import request from 'supertest';
import { ADMIN_TOKEN, bearer, createTestApp, startApp, TestApp, TestProject } from './support/app';
import { createEmptyDatabase } from './support/database';
import { expectError } from './support/expect';
import { inlineShared } from './support/openapi';
import { expressRoutes } from './support/routes';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

describe('foundation: envelope, errors, keys, info, admin', () => {
  let t: TestApp;
  let project: TestProject;

  beforeAll(async () => {
    t = await createTestApp();
    project = await t.createProject({ name: 'Acme', autoCreateCustomerAtRedemption: true });
  });
  afterAll(() => t.close());

  describe('private key guard', () => {
    it('answers the private info with the enveloped project summary', async () => {
      const res = await t.http.get('/api/private/v1/info').set(bearer(project.privateKey)).expect(200);
      expect(res.body.ok).toBe(true);
      expect(res.body.requestId).toBe(res.headers['x-request-id']);
      expect(res.body.data.project).toEqual({
        id: project.id,
        name: 'Acme',
        autoCreateCustomerAtRedemption: true,
        timeZone: 'UTC',
      });
      expect(res.body.data.api).toEqual({
        version: 'v1',
        baseUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/api\/private\/v1$/),
        authScheme: 'Bearer',
        authHeader: 'Authorization',
        requestIdHeader: 'X-Request-Id',
        idempotencyHeader: 'Idempotency-Key',
      });
    });

    it.each([
      ['missing', undefined],
      ['not a bearer', `Basic ${'x'.repeat(10)}`],
      ['malformed', 'Bearer sk_short'],
      ['unknown', `Bearer sk_${'A'.repeat(40)}`],
    ])('401 INVALID_API_KEY for a %s key', async (_, header) => {
      const req = t.http.get('/api/private/v1/info');
      if (header) req.set('Authorization', header);
      expectError(await req, 401, 'INVALID_API_KEY');
    });

    it('401 for a public key used as a private one', async () => {
      expectError(
        await t.http.get('/api/private/v1/info').set(bearer(project.publicKey)),
        401,
        'INVALID_API_KEY',
      );
    });

    it('403 API_KEY_DISABLED for a disabled key, and back to 200 once enabled', async () => {
      const p = await t.createProject();
      const path = `/api/admin/v1/projects/${p.id}/keys/${p.privateKeyId}`;
      await t.http.patch(path).set(admin).send({ enabled: false }).expect(200);
      expectError(
        await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)),
        403,
        'API_KEY_DISABLED',
      );
      await t.http.patch(path).set(admin).send({ enabled: true }).expect(200);
      await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200);
    });

    it('404 PROJECT_NOT_FOUND once the project is deleted', async () => {
      const p = await t.createProject();
      const deleted = await t.http.delete(`/api/admin/v1/projects/${p.id}`).set(admin).expect(200);
      expect(deleted.body.data).toEqual({ success: true });
      expectError(
        await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)),
        404,
        'PROJECT_NOT_FOUND',
      );
      expectError(
        await t.http.get('/api/public/v1/info').set('X-Service-Key', p.publicKey),
        404,
        'PROJECT_NOT_FOUND',
      );
      expectError(await t.http.get(`/api/admin/v1/projects/${p.id}`).set(admin), 404, 'PROJECT_NOT_FOUND');
    });
  });

  describe('public key guard and public info', () => {
    it('answers the public info', async () => {
      const res = await t.http.get('/api/public/v1/info').set('X-Service-Key', project.publicKey).expect(200);
      expect(res.body.data.project).toEqual({
        id: project.id,
        name: 'Acme',
        autoCreateCustomerAtRedemption: true,
        timeZone: 'UTC',
      });
      expect(res.body.data.api).toEqual({
        version: 'v1',
        baseUrl: expect.stringMatching(/\/api\/public\/v1$/),
        projectKeyHeader: 'X-Service-Key',
        customerAuthHeader: 'Authorization',
        requestIdHeader: 'X-Request-Id',
        signatureHeaders: {
          timestamp: 'X-Service-Timestamp',
          nonce: 'X-Service-Nonce',
          signature: 'X-Service-Signature',
        },
      });
    });

    it('401 for a missing, private or unknown public key', async () => {
      expectError(await t.http.get('/api/public/v1/info'), 401, 'INVALID_API_KEY');
      expectError(
        await t.http.get('/api/public/v1/info').set('X-Service-Key', project.privateKey),
        401,
        'INVALID_API_KEY',
      );
      expectError(
        await t.http.get('/api/public/v1/info').set('X-Service-Key', `pk_${'z'.repeat(40)}`),
        401,
        'INVALID_API_KEY',
      );
    });

    it('403 for a disabled public key', async () => {
      const p = await t.createProject();
      await t.http
        .patch(`/api/admin/v1/projects/${p.id}/keys/${p.publicKeyId}`)
        .set(admin)
        .send({ enabled: false })
        .expect(200);
      expectError(
        await t.http.get('/api/public/v1/info').set('X-Service-Key', p.publicKey),
        403,
        'API_KEY_DISABLED',
      );
    });
  });

  describe('endpoint lists', () => {
    it('list exactly the routes the application serves under each prefix', async () => {
      const priv = await t.http.get('/api/private/v1/info').set(bearer(project.privateKey)).expect(200);
      const pub = await t.http.get('/api/public/v1/info').set('X-Service-Key', project.publicKey).expect(200);
      expect([...priv.body.data.endpoints].sort()).toEqual(expressRoutes(t.app, '/api/private/v1'));
      expect([...pub.body.data.endpoints].sort()).toEqual(expressRoutes(t.app, '/api/public/v1'));
      expect(priv.body.data.endpoints).toContain('GET /api/private/v1/info');
      expect(pub.body.data.endpoints).toContain('GET /api/public/v1/info');
      expect(priv.body.data.endpoints.every((e: string) => /^[A-Z]+ \/api\/private\/v1(\/|$)/.test(e))).toBe(
        true,
      );
    });
  });

  describe('request id', () => {
    it('keeps an acceptable incoming id, on success and on error', async () => {
      const ok = await t.http
        .get('/api/private/v1/info')
        .set(bearer(project.privateKey))
        .set('X-Request-Id', 'trace:abc-1.2_3');
      expect(ok.headers['x-request-id']).toBe('trace:abc-1.2_3');
      expect(ok.body.requestId).toBe('trace:abc-1.2_3');
      const err = await t.http.get('/api/private/v1/info').set('X-Request-Id', 'client-42');
      expect(err.headers['x-request-id']).toBe('client-42');
      expect(err.body.requestId).toBe('client-42');
    });

    it.each([['with spaces'], ['x'.repeat(129)], ['bad/slash']])(
      'replaces an unacceptable id (%s)',
      async (id) => {
        const res = await t.http.get('/healthz').set('X-Request-Id', id);
        expect(res.headers['x-request-id']).toMatch(UUID);
        expect(res.body.requestId).toBe(res.headers['x-request-id']);
      },
    );

    it('generates one when none is sent', async () => {
      const res = await t.http.get('/healthz').expect(200);
      expect(res.headers['x-request-id']).toMatch(UUID);
    });
  });

  describe('error envelope for bad requests', () => {
    it('404 ROUTE_NOT_FOUND for an unknown path and for an unknown method', async () => {
      expectError(
        await t.http.get('/api/private/v1/nothing-here').set(bearer(project.privateKey)),
        404,
        'ROUTE_NOT_FOUND',
      );
      expectError(
        await t.http.delete('/api/private/v1/info').set(bearer(project.privateKey)),
        404,
        'ROUTE_NOT_FOUND',
      );
    });

    it('400 MALFORMED_JSON for a body that is not JSON', async () => {
      const res = await t.http
        .post('/api/admin/v1/projects')
        .set(admin)
        .set('Content-Type', 'application/json')
        .send('{"name": ');
      expectError(res, 400, 'MALFORMED_JSON');
    });

    it('415 UNSUPPORTED_MEDIA_TYPE for a body that is not application/json', async () => {
      const res = await t.http
        .post('/api/admin/v1/projects')
        .set(admin)
        .set('Content-Type', 'text/plain')
        .send('name=x');
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    });

    it('413 PAYLOAD_TOO_LARGE for a body over 1 MiB, and accepts one just under', async () => {
      const big = { name: 'x', pad: 'y'.repeat(1024 * 1024) };
      expectError(await t.http.post('/api/admin/v1/projects').set(admin).send(big), 413, 'PAYLOAD_TOO_LARGE');
      const small = await t.http
        .post('/api/admin/v1/projects')
        .set(admin)
        .send({ name: 'x', pad: 'y'.repeat(1000) });
      expectError(small, 400, 'VALIDATION_FAILED'); // parsed, then refused for the unknown field
      expect(small.body.error.details).toEqual([{ field: 'pad', message: 'pad is not a known field' }]);
    });

    it("400 VALIDATION_FAILED for a body nested deeper than 32 levels (it would exhaust the validator's stack), not a 500", async () => {
      const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
      for (const text of [nested(3000), `{"name":${nested(33)}}`]) {
        const res = await t.http
          .post('/api/admin/v1/projects')
          .set(admin)
          .set('Content-Type', 'application/json')
          .send(text);
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details).toEqual([
          { field: expect.any(String), message: 'nests deeper than 32 levels of arrays and objects' },
        ]);
      }
      // 32 levels are parsed, then judged by the validation as usual
      expectError(
        await t.http
          .post('/api/admin/v1/projects')
          .set(admin)
          .set('Content-Type', 'application/json')
          .send(`{"name":${nested(31)}}`),
        400,
        'VALIDATION_FAILED',
      );
    });

    it('400 VALIDATION_FAILED for U+0000 anywhere in a body or a URL (PostgreSQL text cannot hold it), naming where', async () => {
      const inBody = await t.http.post('/api/admin/v1/projects').set(admin).send({ name: 'a\u0000b' });
      expectError(inBody, 400, 'VALIDATION_FAILED');
      expect(inBody.body.error.details).toEqual([
        { field: 'name', message: expect.stringContaining('U+0000') },
      ]);
      const nestedKey = await t.http
        .post('/api/private/v1/customers/resolve')
        .set(bearer(project.privateKey))
        .send({ customer: { type: 'email', value: 'x\u0000' } });
      expect(nestedKey.body.error.details).toEqual([
        { field: 'customer.value', message: expect.stringContaining('U+0000') },
      ]);
      const inQuery = await t.http
        .get('/api/private/v1/customers?page=1&search=a%00b')
        .set(bearer(project.privateKey));
      expectError(inQuery, 400, 'VALIDATION_FAILED');
      expect(inQuery.body.error.details).toEqual([
        { field: 'search', message: expect.stringContaining('U+0000') },
      ]);
      const inPath = await t.http.get('/api/admin/v1/projects/prj_%00').set(admin);
      expectError(inPath, 400, 'VALIDATION_FAILED');
      expect(inPath.body.error.details).toEqual([
        { field: 'path', message: expect.stringContaining('U+0000') },
      ]);
    });

    it('400 VALIDATION_FAILED with details', async () => {
      const res = await t.http
        .post('/api/admin/v1/projects')
        .set(admin)
        .send({ name: '', requireSignature: 'yes' });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details).toEqual(
        expect.arrayContaining([
          { field: 'name', message: expect.any(String) },
          { field: 'requireSignature', message: expect.any(String) },
        ]),
      );
    });

    it('500 INTERNAL_ERROR without internals when something unexpected fails', async () => {
      const p = await t.createProject();
      // Break the data under the service: a NULL name violates what the code expects of a project.
      await t.dataSource.query('ALTER TABLE projects ALTER COLUMN name DROP NOT NULL');
      try {
        await t.dataSource.query('UPDATE projects SET name = NULL WHERE id = $1', [p.id]);
        await t.dataSource.query('ALTER TABLE api_keys RENAME COLUMN prefix TO prefix_gone');
        const res = await t.http.get(`/api/admin/v1/projects/${p.id}/keys`).set(admin);
        expectError(res, 500, 'INTERNAL_ERROR');
        expect(JSON.stringify(res.body)).not.toMatch(/prefix|column|SELECT|at \w+ \(/i);
      } finally {
        await t.dataSource.query('ALTER TABLE api_keys RENAME COLUMN prefix_gone TO prefix');
        await t.dataSource.query(`UPDATE projects SET name = 'restored' WHERE name IS NULL`);
        await t.dataSource.query('ALTER TABLE projects ALTER COLUMN name SET NOT NULL');
      }
    });
  });

  describe('admin interface', () => {
    it('401 INVALID_ADMIN_TOKEN without the token or with a wrong one, on every route', async () => {
      const routes: Array<[string, string]> = [
        ['post', '/api/admin/v1/projects'],
        ['get', '/api/admin/v1/projects'],
        ['get', `/api/admin/v1/projects/${project.id}`],
        ['patch', `/api/admin/v1/projects/${project.id}`],
        ['delete', `/api/admin/v1/projects/${project.id}`],
        ['post', `/api/admin/v1/projects/${project.id}/keys`],
        ['get', `/api/admin/v1/projects/${project.id}/keys`],
        ['patch', `/api/admin/v1/projects/${project.id}/keys/1`],
        ['delete', `/api/admin/v1/projects/${project.id}/keys/1`],
      ];
      for (const [method, path] of routes) {
        // wrong admin tokens are limited per address (10 in 15 minutes): start each route afresh
        await t.dataSource.query(`DELETE FROM login_failures WHERE key LIKE 'admin:%'`);
        const call = (t.http as any)[method](path);
        expectError(await call, 401, 'INVALID_ADMIN_TOKEN');
        expectError(
          await (t.http as any)[method](path).set('Authorization', 'Bearer wrong-token-xxxxxxxxxxxx'),
          401,
          'INVALID_ADMIN_TOKEN',
        );
        expectError(
          await (t.http as any)[method](path).set(bearer(project.privateKey)),
          401,
          'INVALID_ADMIN_TOKEN',
        );
      }
      // and nothing was changed by those calls
      await t.http.get(`/api/admin/v1/projects/${project.id}`).set(admin).expect(200);
      await t.dataSource.query(`DELETE FROM login_failures WHERE key LIKE 'admin:%'`);
    });

    it('creates, lists, reads and updates projects', async () => {
      const created = await t.http
        .post('/api/admin/v1/projects')
        .set(admin)
        .send({ name: 'Listed one', requireSignature: true })
        .expect(201);
      const p = created.body.data;
      expect(p).toEqual({
        id: expect.stringMatching(/^prj_[a-z2-7]{20}$/),
        name: 'Listed one',
        autoCreateCustomerAtRedemption: false,
        requireSignature: true,
        timeZone: 'UTC',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updatedAt: expect.any(String),
      });
      const list = await t.http.get('/api/admin/v1/projects?search=listed&pageSize=5').set(admin).expect(200);
      expect(list.body.data).toEqual({ data: [p], total: 1, page: 1, pageSize: 5, totalPages: 1 });
      const read = await t.http.get(`/api/admin/v1/projects/${p.id}`).set(admin).expect(200);
      expect(read.body.data).toEqual(p);
      const patched = await t.http
        .patch(`/api/admin/v1/projects/${p.id}`)
        .set(admin)
        .send({ name: 'Renamed', autoCreateCustomerAtRedemption: true })
        .expect(200);
      expect(patched.body.data).toMatchObject({
        name: 'Renamed',
        autoCreateCustomerAtRedemption: true,
        requireSignature: true,
      });
      expectError(
        await t.http.get('/api/admin/v1/projects/prj_doesnotexist').set(admin),
        404,
        'PROJECT_NOT_FOUND',
      );
      expectError(
        await t.http.patch(`/api/admin/v1/projects/${p.id}`).set(admin).send({ name: null }),
        400,
        'VALIDATION_FAILED',
      );
      expectError(
        await t.http.patch(`/api/admin/v1/projects/${p.id}`).set(admin).send({ requireSignature: null }),
        400,
        'VALIDATION_FAILED',
      );
    });

    it('creates keys shown once, lists them without secrets, and deletes them', async () => {
      const p = (await t.http.post('/api/admin/v1/projects').set(admin).send({ name: 'Keys' }).expect(201))
        .body.data;
      const sk = (
        await t.http
          .post(`/api/admin/v1/projects/${p.id}/keys`)
          .set(admin)
          .send({ kind: 'private', name: 'be' })
          .expect(201)
      ).body.data;
      const pk = (
        await t.http
          .post(`/api/admin/v1/projects/${p.id}/keys`)
          .set(admin)
          .send({ kind: 'public' })
          .expect(201)
      ).body.data;
      expect(sk).toEqual({
        id: expect.any(Number),
        kind: 'private',
        name: 'be',
        prefix: sk.key.slice(0, 8),
        enabled: true,
        scopes: ['*'],
        expiresAt: null,
        createdAt: expect.any(String),
        key: expect.stringMatching(/^sk_[A-Za-z0-9]{40}$/),
      });
      expect(pk.key).toMatch(/^pk_[A-Za-z0-9]{40}$/);
      expect(pk.signingSecret).toMatch(/^ss_[A-Za-z0-9]{40}$/);

      const list = await t.http.get(`/api/admin/v1/projects/${p.id}/keys`).set(admin).expect(200);
      expect(list.body.data).toHaveLength(2);
      const text = JSON.stringify(list.body);
      expect(text).not.toContain(sk.key);
      expect(text).not.toContain(pk.key);
      expect(text).not.toContain(pk.signingSecret);

      // stored as hashes and ciphertext only
      const rows = await t.dataSource.query(
        'SELECT key_hash, signing_secret_enc FROM api_keys WHERE project_id = $1',
        [p.id],
      );
      expect(JSON.stringify(rows)).not.toContain(sk.key.slice(3));
      expect(JSON.stringify(rows)).not.toContain(pk.signingSecret.slice(3));

      await t.http.delete(`/api/admin/v1/projects/${p.id}/keys/${sk.id}`).set(admin).expect(200);
      expectError(await t.http.get('/api/private/v1/info').set(bearer(sk.key)), 401, 'INVALID_API_KEY');
      expectError(
        await t.http.delete(`/api/admin/v1/projects/${p.id}/keys/${sk.id}`).set(admin),
        404,
        'API_KEY_NOT_FOUND',
      );
      // a key id of another project is not found through this project
      expectError(
        await t.http
          .patch(`/api/admin/v1/projects/${project.id}/keys/${pk.id}`)
          .set(admin)
          .send({ enabled: false }),
        404,
        'API_KEY_NOT_FOUND',
      );
      expectError(
        await t.http.post(`/api/admin/v1/projects/${p.id}/keys`).set(admin).send({ kind: 'secret' }),
        400,
        'VALIDATION_FAILED',
      );
      expectError(
        await t.http.patch(`/api/admin/v1/projects/${p.id}/keys/abc`).set(admin).send({}),
        400,
        'VALIDATION_FAILED',
      );
      expectError(
        await t.http.patch(`/api/admin/v1/projects/${p.id}/keys/${pk.id}`).set(admin).send({ enabled: null }),
        400,
        'VALIDATION_FAILED',
      );
    });

    it('a change that waited for a concurrent delete finds the project or key gone: 404, never a 500, a key for a deleted project, or a deleted key back', async () => {
      const p = (await t.http.post('/api/admin/v1/projects').set(admin).send({ name: 'Raced' }).expect(201))
        .body.data;
      const key = (
        await t.http
          .post(`/api/admin/v1/projects/${p.id}/keys`)
          .set(admin)
          .send({ kind: 'private' })
          .expect(201)
      ).body.data;
      /** Runs `statement` in a transaction held open while `calls` start (and wait for its locks), then commits. */
      const whileHeld = async (statement: string, params: unknown[], calls: () => request.Test[]) => {
        const holder = t.dataSource.createQueryRunner();
        await holder.connect();
        await holder.startTransaction();
        try {
          await holder.query(statement, params);
          const waiting = calls().map((call) => call.then((res) => res)); // sent now, not when awaited
          await new Promise((r) => setTimeout(r, 300)); // the calls have started and wait for the row
          await holder.commitTransaction();
          return await Promise.all(waiting);
        } finally {
          if (holder.isTransactionActive) await holder.rollbackTransaction();
          await holder.release();
        }
      };
      const [renamed, removed] = await whileHeld('DELETE FROM api_keys WHERE id = $1', [key.id], () => [
        t.http.patch(`/api/admin/v1/projects/${p.id}/keys/${key.id}`).set(admin).send({ name: 'renamed' }),
        t.http.delete(`/api/admin/v1/projects/${p.id}/keys/${key.id}`).set(admin),
      ]);
      expectError(renamed, 404, 'API_KEY_NOT_FOUND');
      expectError(removed, 404, 'API_KEY_NOT_FOUND');
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1',
        [p.id],
      );
      expect(n).toBe(0);

      const [created, updated] = await whileHeld(
        'UPDATE projects SET deleted_at = now() WHERE id = $1',
        [p.id],
        () => [
          t.http.post(`/api/admin/v1/projects/${p.id}/keys`).set(admin).send({ kind: 'private' }),
          t.http
            .patch(`/api/admin/v1/projects/${p.id}`)
            .set(admin)
            .send({ name: 'Renamed after its deletion' }),
        ],
      );
      expectError(created, 404, 'PROJECT_NOT_FOUND');
      expectError(updated, 404, 'PROJECT_NOT_FOUND');
      const [row] = await t.dataSource.query(
        'SELECT name, (SELECT count(*)::int FROM api_keys WHERE project_id = $1) AS keys FROM projects WHERE id = $1',
        [p.id],
      );
      expect(row).toEqual({ name: 'Raced', keys: 0 });
    });

    it('rejects out-of-range paging', async () => {
      for (const q of ['page=0', 'pageSize=0', 'pageSize=101', 'page=1.5', 'page=abc']) {
        expectError(await t.http.get(`/api/admin/v1/projects?${q}`).set(admin), 400, 'VALIDATION_FAILED');
      }
    });
  });

  describe('health and docs', () => {
    it('answers liveness and readiness without keys', async () => {
      await t.http.get('/healthz').expect(200);
      const ready = await t.http.get('/readyz').expect(200);
      expect(ready.body.ok).toBe(true);
      // the state and each check, without terminus's empty `error: {}` and repeated `details`
      expect(ready.body.data).toEqual({
        status: 'ok',
        info: {
          database: { status: 'up', responseTime: expect.any(Number) },
          migrations: { status: 'up' },
        },
      });
    });

    it('answers readiness 503 SERVICE_UNAVAILABLE in the error envelope, naming the failed check', async () => {
      // a database without the migrations: the pending migrations are the failed check
      const db = await createEmptyDatabase();
      const app = await startApp({
        ...t.env,
        DATABASE_URL: db.url,
        DB_MIGRATE_ON_START: 'false',
        WEBHOOK_WORKER_ENABLED: 'false',
        EVENTS_SCHEDULER_ENABLED: 'false',
      });
      try {
        const res = await request(app.getHttpServer()).get('/readyz');
        expectError(res, 503, 'SERVICE_UNAVAILABLE');
        expect(res.body.error.message).toBe('Not ready: a migration is pending.');
        expect(res.body.error.details).toEqual([{ field: 'migrations', message: 'a migration is pending' }]);
      } finally {
        await app.close();
        await db.drop();
      }
    });

    it('serves the OpenAPI document: four security schemes, the error schema, and every API operation documented', async () => {
      const res = await t.http.get('/docs-json').expect(200);
      // each operation with its shared parameters and responses in place
      res.body = inlineShared(res.body);
      expect(Object.keys(res.body.components.securitySchemes).sort()).toEqual([
        'adminToken',
        'customerToken',
        'privateKey',
        'publicKey',
      ]);
      expect(res.body.components.schemas.ApiErrorResponse).toBeDefined();
      const info = res.body.paths['/api/private/v1/info'].get;
      expect(info.security).toEqual([{ privateKey: [] }]);
      expect(Object.keys(info.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '404']));
      // every operation under the API prefixes has a summary, a success answer and its error answers
      for (const [path, item] of Object.entries<any>(res.body.paths)) {
        if (!path.startsWith('/api/')) continue;
        for (const [method, op] of Object.entries<any>(item)) {
          const where = `${method.toUpperCase()} ${path}`;
          expect({ where, summary: typeof op.summary }).toEqual({ where, summary: 'string' });
          const statuses = Object.keys(op.responses);
          expect({ where, success: statuses.some((st) => st.startsWith('2')) }).toEqual({
            where,
            success: true,
          });
          expect({ where, errors: statuses.some((st) => st.startsWith('4')) }).toEqual({
            where,
            errors: true,
          });
        }
      }
      // codes of the class-wide key decorator and of the handler share a status without hiding each other
      const redeem = res.body.paths['/api/private/v1/redemptions'].post.responses;
      expect(redeem['400'].description).toEqual(expect.stringContaining('VALIDATION_FAILED'));
      expect(redeem['400'].description).toEqual(expect.stringContaining('INVALID_SUBSCRIPTION_CHAIN'));
      expect(redeem['403'].description).toEqual(expect.stringContaining('API_KEY_DISABLED'));
      expect(redeem['403'].description).toEqual(expect.stringContaining('CUSTOMER_PROJECT_MISMATCH'));
      // the CSV export: CSV on success only, its errors are the JSON envelope
      const exported = res.body.paths['/api/private/v1/codes/export'].get.responses;
      expect(Object.keys(exported['200'].content)).toEqual(['text/csv']);
      expect(Object.keys(exported['404'].content)).toEqual(['application/json']);
    });
  });
});

describe('admin interface without ADMIN_TOKEN', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ ADMIN_TOKEN: '' });
  });
  afterAll(() => t.close());

  it('does not exist: 404 ROUTE_NOT_FOUND', async () => {
    const res = await t.http.get('/api/admin/v1/projects').set(admin);
    expectError(res, 404, 'ROUTE_NOT_FOUND');
  });
});

describe('base URL behind a proxy and PUBLIC_BASE_URL', () => {
  it('takes the forwarded protocol and host only when TRUST_PROXY says so', async () => {
    const trusted = await createTestApp({ TRUST_PROXY: '1' });
    try {
      const p = await trusted.createProject();
      const res = await trusted.http
        .get('/api/private/v1/info')
        .set(bearer(p.privateKey))
        .set('X-Forwarded-Proto', 'https')
        .set('X-Forwarded-Host', 'subs.example.com')
        .expect(200);
      expect(res.body.data.api.baseUrl).toBe('https://subs.example.com/api/private/v1');
    } finally {
      await trusted.close();
    }
    const plain = await createTestApp({ PUBLIC_BASE_URL: 'https://api.example.org/' });
    try {
      const p = await plain.createProject();
      const res = await plain.http
        .get('/api/public/v1/info')
        .set('X-Service-Key', p.publicKey)
        .set('X-Forwarded-Proto', 'https')
        .expect(200);
      expect(res.body.data.api.baseUrl).toBe('https://api.example.org/api/public/v1');
    } finally {
      await plain.close();
    }
  });
});

describe('API key cache across replicas', () => {
  it('a replica sees a key disabled elsewhere after at most API_KEY_CACHE_TTL_MS', async () => {
    const t = await createTestApp({ API_KEY_CACHE_TTL_MS: '800' });
    try {
      const p = await t.createProject();
      const replica = await t.startReplica();
      const other = request(replica.getHttpServer());
      await other.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200); // now cached there
      await t.http
        .patch(`/api/admin/v1/projects/${p.id}/keys/${p.privateKeyId}`)
        .set(admin)
        .send({ enabled: false })
        .expect(200);
      expectError(
        await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)),
        403,
        'API_KEY_DISABLED',
      ); // this process: at once
      await other.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200); // the replica: still cached
      await new Promise((resolve) => setTimeout(resolve, 900));
      expectError(await other.get('/api/private/v1/info').set(bearer(p.privateKey)), 403, 'API_KEY_DISABLED');
    } finally {
      await t.close();
    }
  });
});
