import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NestExpressApplication } from '@nestjs/platform-express';
import request from 'supertest';
import { runCli } from '../src/cli';
import {
  declaredScopes,
  SCOPE_NAMES,
  SCOPES,
  ScopeName,
  tableScopeOf,
  UNSCOPED_ROUTES,
} from '../src/auth/scopes';
import { API_PREFIXES } from '../src/common/routes/api-prefixes';
import { RouteCatalog } from '../src/common/routes/route-catalog.service';
import type { RouteInfo } from '../src/common/routes/route-walker';
import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError, ISO_MS } from './support/expect';
import { sleep } from './support/faults';

const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const PRIVATE = API_PREFIXES.private;

interface KeyView {
  id: number;
  kind: 'private' | 'public';
  name: string | null;
  prefix: string;
  enabled: boolean;
  scopes: string[] | null;
  expiresAt: string | null;
  createdAt: string;
  key?: string;
  signingSecret?: string;
}

/** The routes of the private interface the application serves. */
const privateRoutes = (app: NestExpressApplication): RouteInfo[] =>
  app
    .get(RouteCatalog)
    .all()
    .filter((r) => r.path === PRIVATE || r.path.startsWith(`${PRIVATE}/`));

/** A route's path with every parameter filled in: the scope is checked before the parameters are. */
const concrete = (path: string) => path.replace(/:[^/]+/g, '1');

/** The routes the table lists for the other specifications' parts built later (holds) or elsewhere (audit). */
const NOT_YET_SERVED = new Set([
  'GET /usage/holds/:id',
  'GET /customers/:customerId/holds',
  'POST /usage/holds',
  'POST /usage/holds/:id/commit',
  'POST /usage/holds/:id/release',
  ...SCOPES['audit:read'].routes,
]);

/**
 * Scoped and expiring keys (docs/operations.md#scopes): the scope of every private route, the
 * order of refusals, the admin interface and the CLI.
 */
describe('scoped and expiring keys (docs/operations.md#scopes)', () => {
  let t: TestApp;
  let p: TestProject;

  const createKey = async (projectId: string, body: Record<string, unknown>): Promise<KeyView> =>
    (await t.http.post(`/api/admin/v1/projects/${projectId}/keys`).set(admin).send(body).expect(201)).body
      .data as KeyView;
  const patchKey = (projectId: string, keyId: number, body: unknown) =>
    t.http
      .patch(`/api/admin/v1/projects/${projectId}/keys/${keyId}`)
      .set(admin)
      .send(body as object);
  const privateKey = async (scopes?: string[], more: Record<string, unknown> = {}) =>
    createKey(p.id, { kind: 'private', ...(scopes ? { scopes } : {}), ...more });

  /** A VALIDATION_FAILED that names `field`. */
  const expectInvalid = (
    res: { status: number; body: any; headers: Record<string, string> },
    field: string,
  ) => {
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  };

  beforeAll(async () => {
    // a long cache: what the tests see after a change is the invalidation, never the cache running out
    t = await createTestApp({ API_KEY_CACHE_TTL_MS: '60000' });
    p = await t.createProject();
  });
  afterAll(() => t.close());

  describe('the scope table', () => {
    it('gives every private route the application serves exactly the scope it declares', () => {
      const routes = privateRoutes(t.app);
      expect(routes.length).toBeGreaterThanOrEqual(50);
      const wrong = routes
        .map((r) => ({ route: `${r.method} ${r.path}`, declared: declaredScopes(r), table: tableScopeOf(r) }))
        .filter((r) => r.declared.length !== 1 || r.table === undefined || r.declared[0] !== r.table);
      expect(wrong).toEqual([]);
    });

    it('is the table of docs/operations.md#scopes, row by row', () => {
      const page = readFileSync(join(__dirname, '..', 'docs', 'operations.md'), 'utf8');
      const section = page.split('\n## Scopes\n')[1].split('\n## ')[0];
      const rows = section
        .split('\n')
        .filter((line) => /^\| (`[a-z]+:[a-z]+`|none) /.test(line))
        .map((line) => line.split(' | ').map((cell) => cell.replace(/^\| |\s*\|?$/g, '').trim()));
      expect(rows).toEqual([
        ...SCOPE_NAMES.map((name) => [
          `\`${name}\``,
          SCOPES[name].allows,
          SCOPES[name].routes.map((r) => `\`${r}\``).join(', '),
        ]),
        ['none', 'any private key may call it', UNSCOPED_ROUTES.map((r) => `\`${r}\``).join(', ')],
      ]);
    });

    it('lists each route once, and only routes that are served or still to be built', () => {
      const listed = [...SCOPE_NAMES.flatMap((name) => SCOPES[name].routes), ...UNSCOPED_ROUTES];
      expect(new Set(listed).size).toBe(listed.length);
      const served = new Set(privateRoutes(t.app).map((r) => `${r.method} ${r.path.slice(PRIVATE.length)}`));
      expect(listed.filter((r) => !served.has(r) && !NOT_YET_SERVED.has(r))).toEqual([]);
      expect(UNSCOPED_ROUTES).toEqual(['GET /info']);
    });
  });

  describe('every private route', () => {
    /** Per scope: a key holding only it, and a key holding every other scope but none that includes it. */
    const only = new Map<ScopeName, string>();
    const without = new Map<ScopeName, string>();

    beforeAll(async () => {
      for (const name of SCOPE_NAMES) {
        only.set(name, (await privateKey([name])).key!);
        const includes = [name, name.replace(/:read$/, ':write')];
        without.set(name, (await privateKey(SCOPE_NAMES.filter((n) => !includes.includes(n)))).key!);
      }
    });

    const send = (route: RouteInfo, key: string) => {
      const path = concrete(route.path);
      const req = t.http[route.method.toLowerCase() as 'get' | 'post' | 'patch' | 'put' | 'delete'](path).set(
        bearer(key),
      );
      return route.method === 'GET' ? req : req.send({});
    };

    it('refuses a key without its scope with 403 INSUFFICIENT_SCOPE naming it, and lets a key with only that scope past the check', async () => {
      const failures: string[] = [];
      for (const route of privateRoutes(t.app)) {
        const scope = tableScopeOf(route);
        const name = `${route.method} ${route.path}`;
        if (scope === undefined) {
          failures.push(`${name}: not in the table`);
          continue;
        }
        if (scope === null) {
          // no scope: a key with a single unrelated scope passes
          const res = await send(route, only.get('usage:read')!);
          if (res.status !== 200) failures.push(`${name}: ${res.status} with any key`);
          continue;
        }
        const refused = await send(route, without.get(scope)!);
        const got = {
          status: refused.status,
          code: refused.body?.error?.code,
          details: refused.body?.error?.details,
        };
        const message = got.details?.[0]?.message;
        const want = {
          status: 403,
          code: 'INSUFFICIENT_SCOPE',
          details: [{ field: 'scopes', message, required: scope }],
        };
        if (typeof message !== 'string' || JSON.stringify(got) !== JSON.stringify(want))
          failures.push(`${name}: without ${scope}: ${JSON.stringify(got)}`);

        const passed = await send(route, only.get(scope)!);
        if (
          passed.body?.error?.code === 'INSUFFICIENT_SCOPE' ||
          passed.status === 401 ||
          passed.status >= 500
        )
          failures.push(
            `${name}: with only ${scope}: ${passed.status} ${JSON.stringify(passed.body?.error)}`,
          );
      }
      expect(failures).toEqual([]);
    });
  });

  it('a :write scope includes its :read; * holds every scope and is what a key gets by default', async () => {
    const writer = await privateKey(['customers:write']);
    expect(writer.scopes).toEqual(['customers:write']);
    await t.http.get(`${PRIVATE}/customers`).set(bearer(writer.key!)).expect(200);
    const created = await t.http
      .post(`${PRIVATE}/customers`)
      .set(bearer(writer.key!))
      .send({ username: 'writer01' })
      .expect(201);
    await t.http.get(`${PRIVATE}/customers/${created.body.data.id}`).set(bearer(writer.key!)).expect(200);
    const refused = await t.http.get(`${PRIVATE}/features`).set(bearer(writer.key!));
    expectError(refused, 403, 'INSUFFICIENT_SCOPE');
    expect(refused.body.error.details).toEqual([
      { field: 'scopes', message: expect.any(String), required: 'catalog:read' },
    ]);
    // a :read scope does not include its :write
    const reader = await privateKey(['customers:read']);
    const write = await t.http
      .post(`${PRIVATE}/customers`)
      .set(bearer(reader.key!))
      .send({ username: 'reader01' });
    expectError(write, 403, 'INSUFFICIENT_SCOPE');
    expect(write.body.error.details[0].required).toBe('customers:write');

    // by default (and for every key made before scopes) a private key holds them all
    const plain = await privateKey();
    expect(plain.scopes).toEqual(['*']);
    await t.http.get(`${PRIVATE}/features`).set(bearer(plain.key!)).expect(200);
    await t.http
      .post(`${PRIVATE}/customers`)
      .set(bearer(plain.key!))
      .send({ username: 'plain001' })
      .expect(201);
    // a private key a version before scopes made has none stored: it holds them all
    const old = await privateKey();
    await t.dataSource.query('UPDATE api_keys SET scopes = NULL WHERE id = $1', [old.id]);
    await t.http.get(`${PRIVATE}/events`).set(bearer(old.key!)).expect(200);
    const listed = await t.http.get(`/api/admin/v1/projects/${p.id}/keys`).set(admin).expect(200);
    expect(listed.body.data.find((k: KeyView) => k.id === old.id).scopes).toEqual(['*']);
    // the migration gave every private key made before `{*}`, and public keys none
    const [column] = await t.dataSource.query(
      `SELECT count(*) FILTER (WHERE kind = 'public' AND scopes IS NOT NULL)::int AS public_with
         FROM api_keys`,
    );
    expect(column.public_with).toBe(0);
  });

  it('GET /info names the key: id, prefix, scopes and expiresAt', async () => {
    const key = await privateKey(['usage:write', 'catalog:read'], {
      expiresAt: '2031-05-06T07:08:09.123+02:00',
    });
    const res = await t.http.get(`${PRIVATE}/info`).set(bearer(key.key!)).expect(200);
    expect(res.body.data.key).toEqual({
      id: key.id,
      prefix: key.key!.slice(0, 8),
      scopes: ['catalog:read', 'usage:write'],
      expiresAt: '2031-05-06T05:08:09.123Z',
    });
    expect(res.body.data.project.id).toBe(p.id);
    const full = await t.http.get(`${PRIVATE}/info`).set(bearer(p.privateKey)).expect(200);
    expect(full.body.data.key).toEqual({
      id: p.privateKeyId,
      prefix: p.privateKey.slice(0, 8),
      scopes: ['*'],
      expiresAt: null,
    });
  });

  describe('expiry', () => {
    it('401 API_KEY_EXPIRED for private and public keys from their expiresAt on, whatever the cache', async () => {
      const expiresAt = new Date(Date.now() + 1500).toISOString();
      const sk = await privateKey(undefined, { expiresAt });
      const pk = await createKey(p.id, { kind: 'public', expiresAt });
      expect(sk.expiresAt).toBe(expiresAt);
      expect(pk).toMatchObject({ scopes: null, expiresAt });
      // both cached (API_KEY_CACHE_TTL_MS is a minute here) while still valid
      await t.http.get(`${PRIVATE}/info`).set(bearer(sk.key!)).expect(200);
      await t.http.get('/api/public/v1/info').set('X-Service-Key', pk.key!).expect(200);
      await sleep(Date.parse(expiresAt) - Date.now() + 50);
      expectError(await t.http.get(`${PRIVATE}/info`).set(bearer(sk.key!)), 401, 'API_KEY_EXPIRED');
      expectError(await t.http.get(`${PRIVATE}/customers`).set(bearer(sk.key!)), 401, 'API_KEY_EXPIRED');
      expectError(
        await t.http.get('/api/public/v1/info').set('X-Service-Key', pk.key!),
        401,
        'API_KEY_EXPIRED',
      );
      // a later expiresAt (or none) brings them back at once on this replica
      const later = new Date(Date.now() + 3_600_000).toISOString();
      expect((await patchKey(p.id, sk.id, { expiresAt: later }).expect(200)).body.data.expiresAt).toBe(later);
      expect((await patchKey(p.id, pk.id, { expiresAt: null }).expect(200)).body.data.expiresAt).toBeNull();
      await t.http.get(`${PRIVATE}/info`).set(bearer(sk.key!)).expect(200);
      await t.http.get('/api/public/v1/info').set('X-Service-Key', pk.key!).expect(200);
    });

    it('refuses in order: INVALID_API_KEY, API_KEY_DISABLED, PROJECT_NOT_FOUND, API_KEY_EXPIRED, then the scope', async () => {
      const other = await t.createProject();
      const sk = await createKey(other.id, { kind: 'private', scopes: ['catalog:read'] });
      const pk = await createKey(other.id, { kind: 'public' });
      const expire = (id: number) =>
        t.dataSource.query(`UPDATE api_keys SET expires_at = now() - interval '1 minute' WHERE id = $1`, [
          id,
        ]);
      await expire(sk.id);
      await expire(pk.id);
      const pub = () => t.http.get('/api/public/v1/info').set('X-Service-Key', pk.key!);

      expectError(
        await t.http.get(`${PRIVATE}/customers`).set(bearer(`sk_${'x'.repeat(40)}`)),
        401,
        'INVALID_API_KEY',
      );
      // expired, and without the route's scope: the expiry first
      expectError(await t.http.get(`${PRIVATE}/customers`).set(bearer(sk.key!)), 401, 'API_KEY_EXPIRED');
      // expired before the signature is looked at
      const signed = await pub().set({
        'X-Service-Timestamp': '1',
        'X-Service-Nonce': 'n0nce-0000000001',
        'X-Service-Signature': '0'.repeat(64),
      });
      expectError(signed, 401, 'API_KEY_EXPIRED');

      // disabled and expired: disabled
      await patchKey(other.id, sk.id, { enabled: false }).expect(200);
      await patchKey(other.id, pk.id, { enabled: false }).expect(200);
      expectError(await t.http.get(`${PRIVATE}/customers`).set(bearer(sk.key!)), 403, 'API_KEY_DISABLED');
      expectError(await pub(), 403, 'API_KEY_DISABLED');
      await patchKey(other.id, sk.id, { enabled: true }).expect(200);
      await patchKey(other.id, pk.id, { enabled: true }).expect(200);

      // the project deleted, the keys expired: the project
      await t.http.delete(`/api/admin/v1/projects/${other.id}`).set(admin).expect(200);
      expectError(await t.http.get(`${PRIVATE}/customers`).set(bearer(sk.key!)), 404, 'PROJECT_NOT_FOUND');
      expectError(await pub(), 404, 'PROJECT_NOT_FOUND');
    });

    it('the rate limit comes before the scope, and the scope before Idempotency-Key and validation', async () => {
      const replica = await t.startReplica({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PER_KEY: '1' });
      const http = request(replica.getHttpServer());
      const key = await privateKey(['catalog:read']);
      const first = await http
        .post(`${PRIVATE}/customers`)
        .set(bearer(key.key!))
        .set('Idempotency-Key', 'x'.repeat(300))
        .send({ username: 1 });
      expectError(first, 403, 'INSUFFICIENT_SCOPE');
      expectError(await http.get(`${PRIVATE}/customers`).set(bearer(key.key!)), 429, 'RATE_LIMITED');
      // an expired key is refused before it is counted
      const expiring = await privateKey(['catalog:read']);
      await t.dataSource.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        expiring.id,
      ]);
      for (let i = 0; i < 2; i++)
        expectError(await http.get(`${PRIVATE}/features`).set(bearer(expiring.key!)), 401, 'API_KEY_EXPIRED');
    });
  });

  it('a scope refusal with an Idempotency-Key stores nothing and replays nothing', async () => {
    const narrow = await privateKey(['customers:read']);
    const records = async (key: string) =>
      (
        await t.dataSource.query(
          'SELECT count(*)::int AS n FROM idempotency_records WHERE project_id = $1 AND key = $2',
          [p.id, key],
        )
      )[0].n as number;

    // a stored answer is not replayed to a key without the scope
    const first = await t.http
      .post(`${PRIVATE}/customers`)
      .set(bearer(p.privateKey))
      .set('Idempotency-Key', 'scoped-k1')
      .send({ username: 'idem0001' })
      .expect(201);
    const refused = await t.http
      .post(`${PRIVATE}/customers`)
      .set(bearer(narrow.key!))
      .set('Idempotency-Key', 'scoped-k1')
      .send({ username: 'idem0001' });
    expectError(refused, 403, 'INSUFFICIENT_SCOPE');
    expect(refused.headers['idempotent-replayed']).toBeUndefined();
    expect(refused.body.data).toBeUndefined();
    expect(first.body.data.username).toBe('idem0001');

    // a refused request leaves its key unused: the same request with the scope runs
    const again = await t.http
      .post(`${PRIVATE}/customers`)
      .set(bearer(narrow.key!))
      .set('Idempotency-Key', 'scoped-k2')
      .send({ username: 'idem0002' });
    expectError(again, 403, 'INSUFFICIENT_SCOPE');
    expect(await records('scoped-k2')).toBe(0);
    const ran = await t.http
      .post(`${PRIVATE}/customers`)
      .set(bearer(p.privateKey))
      .set('Idempotency-Key', 'scoped-k2')
      .send({ username: 'idem0002' })
      .expect(201);
    expect(ran.headers['idempotent-replayed']).toBeUndefined();
    expect(ran.body.data.username).toBe('idem0002');
    expect(await records('scoped-k2')).toBe(1);
  });

  describe('the admin interface', () => {
    it('takes scopes and expiresAt on create and PATCH, and shows them in the key view', async () => {
      const key = await createKey(p.id, {
        kind: 'private',
        name: 'narrow',
        scopes: ['usage:write', 'customers:read', 'usage:write', 'catalog:read'],
        expiresAt: '2030-06-01',
      });
      expect(key).toEqual({
        id: expect.any(Number),
        kind: 'private',
        name: 'narrow',
        prefix: key.key!.slice(0, 8),
        enabled: true,
        scopes: ['catalog:read', 'customers:read', 'usage:write'],
        expiresAt: '2030-06-01T00:00:00.000Z',
        createdAt: expect.stringMatching(ISO_MS),
        key: expect.stringMatching(/^sk_[A-Za-z0-9]{40}$/),
      });
      const pub = await createKey(p.id, { kind: 'public', expiresAt: '2031-01-01T02:00:00+02:00' });
      expect(pub).toMatchObject({ kind: 'public', scopes: null, expiresAt: '2031-01-01T00:00:00.000Z' });
      expect(pub.signingSecret).toMatch(/^ss_/);
      const never = await createKey(p.id, { kind: 'private', expiresAt: null });
      expect(never).toMatchObject({ scopes: ['*'], expiresAt: null });

      const listed = (await t.http.get(`/api/admin/v1/projects/${p.id}/keys`).set(admin).expect(200)).body
        .data as KeyView[];
      const { key: _secret, ...view } = key;
      expect(listed.find((k) => k.id === key.id)).toEqual(view);

      // PATCH: each field alone, the others kept; expiresAt null clears it
      const renamed = await patchKey(p.id, key.id, { name: 'renamed' }).expect(200);
      expect(renamed.body.data).toMatchObject({
        name: 'renamed',
        scopes: ['catalog:read', 'customers:read', 'usage:write'],
        expiresAt: '2030-06-01T00:00:00.000Z',
      });
      const widened = await patchKey(p.id, key.id, { scopes: ['*'] }).expect(200);
      expect(widened.body.data).toMatchObject({ scopes: ['*'], expiresAt: '2030-06-01T00:00:00.000Z' });
      const cleared = await patchKey(p.id, key.id, {
        expiresAt: null,
        scopes: ['webhooks:read', 'events:read'],
      }).expect(200);
      expect(cleared.body.data).toMatchObject({ scopes: ['events:read', 'webhooks:read'], expiresAt: null });
      // a change applies at once on this replica
      await t.http.get(`${PRIVATE}/events`).set(bearer(key.key!)).expect(200);
      expectError(await t.http.get(`${PRIVATE}/customers`).set(bearer(key.key!)), 403, 'INSUFFICIENT_SCOPE');
      await patchKey(p.id, key.id, { scopes: ['customers:read'] }).expect(200);
      await t.http.get(`${PRIVATE}/customers`).set(bearer(key.key!)).expect(200);
      await patchKey(p.id, pub.id, { name: 'web', expiresAt: '2032-02-02' }).expect(200);
    });

    it('refuses invalid scopes and expiresAt with 400 VALIDATION_FAILED naming the field', async () => {
      const key = await privateKey(['codes:read']);
      const pub = await createKey(p.id, { kind: 'public' });
      const badScopes: unknown[] = [
        ['codes:nope'],
        ['*', 'codes:read'],
        [],
        null,
        'codes:read',
        '*',
        { 'codes:read': true },
        [1],
        ['Codes:Read'],
      ];
      for (const scopes of badScopes) {
        expectInvalid(
          await t.http
            .post(`/api/admin/v1/projects/${p.id}/keys`)
            .set(admin)
            .send({ kind: 'private', scopes }),
          'scopes',
        );
        expectInvalid(await patchKey(p.id, key.id, { scopes }), 'scopes');
      }
      // a public key has no scopes, not even all of them
      for (const scopes of [['*'], ['codes:read']]) {
        expectInvalid(
          await t.http
            .post(`/api/admin/v1/projects/${p.id}/keys`)
            .set(admin)
            .send({ kind: 'public', scopes }),
          'scopes',
        );
        expectInvalid(await patchKey(p.id, pub.id, { scopes }), 'scopes');
      }
      const badExpiry: unknown[] = [
        new Date(Date.now() - 1000).toISOString(),
        '2020-01-01',
        'tomorrow',
        '2030-01-01T10:00:00',
        '2030-02-30',
        '2030-13-01',
        '2030-01-01T24:00:00Z',
        '10000-01-01',
        '9999-12-31T23:00:00-05:00',
        20300101,
        true,
        {},
      ];
      for (const expiresAt of badExpiry) {
        expectInvalid(
          await t.http
            .post(`/api/admin/v1/projects/${p.id}/keys`)
            .set(admin)
            .send({ kind: 'private', expiresAt }),
          'expiresAt',
        );
        expectInvalid(await patchKey(p.id, key.id, { expiresAt }), 'expiresAt');
      }
      // the last instant before the year 10000 is a valid expiry
      const far = await patchKey(p.id, key.id, { expiresAt: '9999-12-31T23:59:59.999Z' }).expect(200);
      expect(far.body.data.expiresAt).toBe('9999-12-31T23:59:59.999Z');
      // nothing refused was written
      const after = (await t.http.get(`/api/admin/v1/projects/${p.id}/keys`).set(admin).expect(200)).body
        .data as KeyView[];
      expect(after.find((k) => k.id === key.id)).toMatchObject({ scopes: ['codes:read'] });
      expect(after.find((k) => k.id === pub.id)).toMatchObject({ scopes: null });
    });

    it("a key id of another project is 404 API_KEY_NOT_FOUND through this project's path", async () => {
      const other = await t.createProject();
      expectError(
        await patchKey(p.id, other.privateKeyId, { scopes: ['codes:read'] }),
        404,
        'API_KEY_NOT_FOUND',
      );
      expectError(
        await t.http.delete(`/api/admin/v1/projects/${p.id}/keys/${other.publicKeyId}`).set(admin),
        404,
        'API_KEY_NOT_FOUND',
      );
      // untouched
      const keys = (await t.http.get(`/api/admin/v1/projects/${other.id}/keys`).set(admin).expect(200)).body
        .data as KeyView[];
      expect(keys.map((k) => k.scopes)).toEqual([['*'], null]);
      const info = await t.http.get(`${PRIVATE}/info`).set(bearer(other.privateKey)).expect(200);
      expect(info.body.data.project.id).toBe(other.id);
    });
  });

  it('a change applies at once on the replica that made it, on the others within API_KEY_CACHE_TTL_MS', async () => {
    const ttl = 400;
    const replica = await t.startReplica({ API_KEY_CACHE_TTL_MS: String(ttl) });
    const other = request(replica.getHttpServer());
    const key = await privateKey();
    await t.http.get(`${PRIVATE}/customers`).set(bearer(key.key!)).expect(200);
    await other.get(`${PRIVATE}/customers`).set(bearer(key.key!)).expect(200);
    await patchKey(p.id, key.id, { scopes: ['catalog:read'] }).expect(200);
    const changedAt = Date.now();
    expectError(await t.http.get(`${PRIVATE}/customers`).set(bearer(key.key!)), 403, 'INSUFFICIENT_SCOPE');
    let seen: number | undefined;
    while (Date.now() - changedAt < ttl + 2000) {
      const res = await other.get(`${PRIVATE}/customers`).set(bearer(key.key!));
      if (res.status === 403) {
        expectError(res, 403, 'INSUFFICIENT_SCOPE');
        seen = Date.now() - changedAt;
        break;
      }
      await sleep(25);
    }
    expect(seen).toBeDefined();
    expect(seen!).toBeLessThanOrEqual(ttl + 250);
  });

  describe('the CLI', () => {
    const cli = async (...args: string[]) => {
      let stdout = '';
      let stderr = '';
      const code = await runCli(args, {
        env: {
          DATABASE_URL: t.appDatabaseUrl,
          SECRET_ENCRYPTION_KEY: t.env.SECRET_ENCRYPTION_KEY,
          LOG_LEVEL: 'silent',
        },
        stdout: (text) => (stdout += text),
        stderr: (text) => (stderr += text),
      });
      return { code, stdout, stderr };
    };
    const ok = (run: { code: number; stdout: string; stderr: string }) => {
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      return JSON.parse(run.stdout) as KeyView;
    };

    it('keys:create and keys:update take --scopes and --expires-at and print the key as the admin interface does', async () => {
      const created = ok(
        await cli(
          'keys:create',
          p.id,
          '--kind',
          'private',
          '--name',
          'cli',
          '--scopes',
          'usage:write, customers:read',
          '--expires-at',
          '2030-01-01',
        ),
      );
      expect(created).toEqual({
        id: expect.any(Number),
        kind: 'private',
        name: 'cli',
        prefix: created.key!.slice(0, 8),
        enabled: true,
        scopes: ['customers:read', 'usage:write'],
        expiresAt: '2030-01-01T00:00:00.000Z',
        createdAt: expect.stringMatching(ISO_MS),
        key: expect.stringMatching(/^sk_[A-Za-z0-9]{40}$/),
      });
      await t.http.get(`${PRIVATE}/customers`).set(bearer(created.key!)).expect(200);
      expectError(await t.http.get(`${PRIVATE}/plans`).set(bearer(created.key!)), 403, 'INSUFFICIENT_SCOPE');

      const updated = ok(
        await cli('keys:update', p.id, String(created.id), '--scopes', '*', '--expires-at', 'none'),
      );
      expect(updated).toMatchObject({ id: created.id, scopes: ['*'], expiresAt: null });
      const later = ok(
        await cli('keys:update', p.id, String(created.id), '--expires-at', '2031-03-04T05:06:07+01:00'),
      );
      expect(later).toMatchObject({ scopes: ['*'], expiresAt: '2031-03-04T04:06:07.000Z' });
      const viaAdmin = (await t.http.get(`/api/admin/v1/projects/${p.id}/keys`).set(admin).expect(200)).body
        .data as KeyView[];
      const { key: _secret, ...view } = { ...created, scopes: ['*'], expiresAt: '2031-03-04T04:06:07.000Z' };
      expect(viaAdmin.find((k) => k.id === created.id)).toEqual(view);

      const pub = ok(
        await cli('keys:create', p.id, '--kind', 'public', '--expires-at', '2030-01-01T00:00:00Z'),
      );
      expect(pub).toMatchObject({ kind: 'public', scopes: null, expiresAt: '2030-01-01T00:00:00.000Z' });
    });

    it('refuses bad flags as the admin interface does: VALIDATION_FAILED naming the field, exit status 1', async () => {
      const key = ok(await cli('keys:create', p.id, '--kind', 'private'));
      const pub = ok(await cli('keys:create', p.id, '--kind', 'public'));
      const cases: Array<[string[], string]> = [
        [['keys:create', p.id, '--kind', 'private', '--scopes', 'customers:read,bogus'], 'scopes'],
        [['keys:create', p.id, '--kind', 'private', '--scopes', ''], 'scopes'],
        [['keys:create', p.id, '--kind', 'private', '--scopes', '*,codes:read'], 'scopes'],
        [['keys:create', p.id, '--kind', 'public', '--scopes', '*'], 'scopes'],
        [['keys:create', p.id, '--kind', 'private', '--expires-at', '2020-01-01'], 'expiresAt'],
        [['keys:update', p.id, String(key.id), '--expires-at', 'soon'], 'expiresAt'],
        [['keys:update', p.id, String(key.id), '--scopes', 'codes:nope'], 'scopes'],
        [['keys:update', p.id, String(pub.id), '--scopes', 'codes:read'], 'scopes'],
      ];
      for (const [args, field] of cases) {
        const run = await cli(...args);
        expect({ args, code: run.code, stdout: run.stdout }).toEqual({ args, code: 1, stdout: '' });
        expect(run.stderr).toMatch(/^error: VALIDATION_FAILED: /);
        expect(run.stderr).toContain(`  - ${field}: `);
      }
      const unknown = await cli('keys:update', p.id, '999999', '--scopes', 'codes:read');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toMatch(/^error: API_KEY_NOT_FOUND: /);
    });
  });
});
