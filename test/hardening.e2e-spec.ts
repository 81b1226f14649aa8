import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import type { Logger } from 'pino';
import { ROOT_LOGGER } from '../src/common/http/logging';
import { configureHttpServer } from '../src/configure-app';
import { validateEnv } from '../src/config/env';
import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';

/**
 * Regression tests of the hardening issue (16), one block per finding, each through HTTP and
 * each failing on the code before it. The hostile shapes on every operation are in
 * `fuzz-hostile.e2e-spec.ts`.
 */

const PASSWORD = 'correct horse battery';
let seq = 0;
const uniq = () => `${Date.now().toString(36).slice(-5)}${(++seq).toString(36)}`;
const username = (prefix = 'u') => `${prefix}${uniq()}`.slice(0, 16).padEnd(8, '0');
/** A client address of its own (TRUST_PROXY=true takes it from X-Forwarded-For). */
const address = () => `10.16.${seq % 250}.${++seq % 250}`;

const LOGIN = '/api/public/v1/auth/login';
const ME = '/api/public/v1/me';

async function newCustomer(t: TestApp, p: TestProject, extra: Record<string, unknown> = {}) {
  const name = username();
  const res = await t.http
    .post('/api/private/v1/customers')
    .set(bearer(p.privateKey))
    .send({ username: name, password: PASSWORD, ...extra })
    .expect(201);
  return { id: res.body.data.id as number, username: res.body.data.username as string };
}

function login(
  t: TestApp,
  p: TestProject,
  value: string,
  options: { password?: string; from?: string; type?: string } = {},
) {
  const req = t.http.post(LOGIN).set('X-Service-Key', p.publicKey);
  if (options.from) req.set('X-Forwarded-For', options.from);
  return req.send({
    identifier: { type: options.type ?? 'username', value },
    password: options.password ?? PASSWORD,
  });
}

async function tokenOf(t: TestApp, p: TestProject, name: string, from?: string): Promise<string> {
  const res = await login(t, p, name, { from });
  expect(res.status).toBe(200);
  return res.body.data.token;
}

const me = (t: TestApp, p: TestProject, token: string, from?: string) => {
  const req = t.http.get(ME).set('X-Service-Key', p.publicKey).set('Authorization', `Bearer ${token}`);
  return from ? req.set('X-Forwarded-For', from) : req;
};

describe('hardening (issue 16)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({
      TRUST_PROXY: 'true',
      PROJECT_MAX_CUSTOMERS: '4',
      PROJECT_MAX_CODES: '30',
      PROJECT_MAX_CODE_BATCHES_PER_HOUR: '3',
    });
  });
  afterAll(() => t.close());

  describe('1. the shape of a body is bounded before it is parsed or validated', () => {
    it('an object of 80,000 keys (869 KB) on the login: 400 naming the object, with a short answer', async () => {
      const p = await t.createProject();
      const body: Record<string, unknown> = {
        identifier: { type: 'username', value: 'abcdefgh' },
        password: 'x',
      };
      for (let i = 0; i < 80_000; i++) body[`k${i}`] = 1;
      const res = await t.http
        .post(LOGIN)
        .set('X-Service-Key', p.publicKey)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify(body));
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details).toEqual([{ field: 'body', message: 'has more than 100 keys' }]);
      expect(res.text.length).toBeLessThan(1000);
    });

    it('an array of more than 1,000 items, or more than 10,000 values in all: 400 naming the field', async () => {
      const p = await t.createProject();
      const identifiers = Array.from({ length: 1001 }, (_, i) => ({ type: 'email', value: `${i}@x.io` }));
      const wide = await t.http
        .post('/api/private/v1/customers')
        .set(bearer(p.privateKey))
        .send({ username: username(), identifiers });
      expectError(wide, 400, 'VALIDATION_FAILED');
      expect(wide.body.error.details).toEqual([
        { field: 'identifiers', message: 'has more than 1000 items' },
      ]);

      const many = { quotas: Array.from({ length: 20 }, () => Array.from({ length: 600 }, () => 0)) };
      const huge = await t.http.post('/api/private/v1/plans').set(bearer(p.privateKey)).send(many);
      expectError(huge, 400, 'VALIDATION_FAILED');
      expect(huge.body.error.details).toEqual([
        { field: 'body', message: 'holds more than 10000 values in all' },
      ]);

      // a key deep inside is named by its path
      const nested = await t.http
        .post('/api/private/v1/customers/resolve')
        .set(bearer(p.privateKey))
        .send({ customer: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, i])) });
      expect(nested.body.error.details).toEqual([{ field: 'customer', message: 'has more than 100 keys' }]);
    });

    it('a body within the limits that breaks hundreds of rules lists 20 of them and says how many', async () => {
      const p = await t.createProject();
      const body: Record<string, unknown> = { username: username() };
      for (let i = 0; i < 99; i++) body[`unknown${i}`] = i;
      const res = await t.http.post('/api/private/v1/customers').set(bearer(p.privateKey)).send(body);
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details).toHaveLength(20);
      expect(res.body.error.message).toBe('99 rules are broken; the first 20 are listed');
    });

    it('a request within the limits still works: 50 identifiers, 100 fields checked', async () => {
      const p = await t.createProject();
      const identifiers = Array.from({ length: 50 }, (_, i) => ({ type: 'email', value: `${i}@x.io` }));
      await t.http
        .post('/api/private/v1/customers')
        .set(bearer(p.privateKey))
        .send({ username: username(), identifiers })
        .expect(201);
    });
  });

  describe('2. one spelling of every path', () => {
    it('the path in another case, or with a trailing slash, is 404 and creates nothing', async () => {
      const p = await t.createProject();
      const plan = await t.http
        .post('/api/private/v1/plans')
        .set(bearer(p.privateKey))
        .send({ slug: 'pro', name: 'Pro', value: 10, group: 'tier' })
        .expect(201);
      const key = `case-${uniq()}`;
      const batch = { planId: plan.body.data.id, count: 1 };
      await t.http
        .post('/api/private/v1/codes')
        .set(bearer(p.privateKey))
        .set('Idempotency-Key', key)
        .send(batch)
        .expect(201);
      for (const path of [
        '/API/PRIVATE/v1/codes',
        '/api/private/V1/codes',
        '/api/private/v1/Codes',
        '/api/private/v1/codes/',
      ]) {
        const res = await t.http.post(path).set(bearer(p.privateKey)).set('Idempotency-Key', key).send(batch);
        expectError(res, 404, 'ROUTE_NOT_FOUND');
      }
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM code_batches WHERE project_id = $1',
        [p.id],
      );
      expect(n).toBe(1);
      expectError(
        await t.http.get('/API/PUBLIC/v1/info').set('X-Service-Key', p.publicKey),
        404,
        'ROUTE_NOT_FOUND',
      );
      expectError(await t.http.get('/HEALTHZ'), 404, 'ROUTE_NOT_FOUND');
    });
  });

  describe('4. login: usernames outside the username rules, counters of the customer found', () => {
    it('another Unicode spelling of a locked-out username is refused before any lookup', async () => {
      const p = await t.createProject();
      const c = await newCustomer(t, p, { username: `adminiv3nix${uniq()}`.slice(0, 16) });
      const from = address();
      for (let i = 0; i < 5; i++)
        expectError(
          await login(t, p, c.username, { password: 'wrong one!', from }),
          401,
          'INVALID_CREDENTIALS',
        );
      expectError(await login(t, p, c.username, { from }), 429, 'RATE_LIMITED');
      for (const spelling of [
        c.username.replace('i', 'İ'),
        c.username.replace('i', 'ı'),
        `${c.username.slice(0, 15)}\u0307`,
      ]) {
        const res = await login(t, p, spelling, { from });
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details).toEqual([{ field: 'identifier.value', message: expect.any(String) }]);
      }
      // the counter is the customer's: the upper-case spelling (a valid username) is counted with it
      expectError(await login(t, p, c.username.toUpperCase(), { from }), 429, 'RATE_LIMITED');
    });

    it('failures through any identifier of one customer share one counter', async () => {
      const p = await t.createProject();
      const email = `${uniq()}@example.com`;
      const c = await newCustomer(t, p, { identifiers: [{ type: 'email', value: email }] });
      const from = address();
      for (let i = 0; i < 3; i++)
        expectError(
          await login(t, p, c.username, { password: 'wrong one!', from }),
          401,
          'INVALID_CREDENTIALS',
        );
      for (let i = 0; i < 2; i++)
        expectError(
          await login(t, p, email, { type: 'email', password: 'wrong one!', from }),
          401,
          'INVALID_CREDENTIALS',
        );
      expectError(await login(t, p, email, { type: 'email', from }), 429, 'RATE_LIMITED');
      expectError(await login(t, p, c.username, { from }), 429, 'RATE_LIMITED');
    });
  });

  describe('5 and 6. sessions end when a disabled customer is enabled again or gets a new password', () => {
    it('disabled: its tokens are 403 CUSTOMER_DISABLED; enabled again, its sessions are gone and the old tokens stay dead', async () => {
      const p = await t.createProject();
      const c = await newCustomer(t, p);
      const token = await tokenOf(t, p, c.username);
      await me(t, p, token).expect(200);
      const setEnabled = (enabled: boolean) =>
        t.http
          .patch(`/api/private/v1/customers/${c.id}`)
          .set(bearer(p.privateKey))
          .send({ enabled })
          .expect(200);
      const sessions = async () =>
        (
          await t.dataSource.query(
            'SELECT count(*)::int AS n FROM customer_sessions WHERE customer_id = $1',
            [c.id],
          )
        )[0].n as number;
      await setEnabled(false);
      expectError(await me(t, p, token), 403, 'CUSTOMER_DISABLED');
      expect(await sessions()).toBe(1);
      await setEnabled(true);
      expect(await sessions()).toBe(0);
      expectError(await me(t, p, token), 401, 'INVALID_CUSTOMER_TOKEN');
      // enabling a customer that is already enabled ends nothing
      const fresh = await tokenOf(t, p, c.username);
      await setEnabled(true);
      await me(t, p, fresh).expect(200);
    });

    it('a new password through the private interface ends every session of the customer, and only its', async () => {
      const p = await t.createProject();
      const c = await newCustomer(t, p);
      const other = await newCustomer(t, p);
      const tokens = [await tokenOf(t, p, c.username), await tokenOf(t, p, c.username)];
      const otherToken = await tokenOf(t, p, other.username);
      await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(bearer(p.privateKey))
        .send({ password: 'a brand new one' })
        .expect(200);
      for (const token of tokens) expectError(await me(t, p, token), 401, 'INVALID_CUSTOMER_TOKEN');
      await me(t, p, otherToken).expect(200);
      // an update that sets no password (nor disables) keeps the sessions
      const fresh = (await login(t, p, c.username, { password: 'a brand new one' }).expect(200)).body.data
        .token;
      await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(bearer(p.privateKey))
        .send({ enabled: true })
        .expect(200);
      await me(t, p, fresh).expect(200);
    });

    it('a new password through the public interface ends every other session, the caller keeps its own', async () => {
      const p = await t.createProject();
      const c = await newCustomer(t, p);
      const mine = await tokenOf(t, p, c.username);
      const elsewhere = await tokenOf(t, p, c.username);
      const change = (token: string, body: object) =>
        t.http
          .post(`${ME}/password`)
          .set('X-Service-Key', p.publicKey)
          .set('Authorization', `Bearer ${token}`)
          .send(body);
      expectError(
        await change(mine, { currentPassword: 'not it at all', newPassword: 'another secret' }),
        401,
        'INVALID_CREDENTIALS',
      );
      await me(t, p, elsewhere).expect(200);
      const res = await change(mine, { currentPassword: PASSWORD, newPassword: 'another secret' }).expect(
        200,
      );
      expect(res.body.data).toEqual({ success: true });
      await me(t, p, mine).expect(200);
      expectError(await me(t, p, elsewhere), 401, 'INVALID_CUSTOMER_TOKEN');
      expectError(await login(t, p, c.username), 401, 'INVALID_CREDENTIALS');
      await login(t, p, c.username, { password: 'another secret' }).expect(200);
      expectError(
        await change(mine, { currentPassword: 'another secret', newPassword: 'short' }),
        400,
        'VALIDATION_FAILED',
      );
    });
  });

  describe('7. a batch note is stored once; per-project limits', () => {
    it('the note lives on the batch only, and the codes show and search it', async () => {
      const p = await t.createProject();
      const plan = await t.http
        .post('/api/private/v1/plans')
        .set(bearer(p.privateKey))
        .send({ slug: 'pro', name: 'Pro', value: 10, group: 'tier' })
        .expect(201);
      const note = `launch ${'n'.repeat(400)}`;
      const batch = await t.http
        .post('/api/private/v1/codes')
        .set(bearer(p.privateKey))
        .send({ planId: plan.body.data.id, count: 3, note })
        .expect(201);
      expect(batch.body.data.note).toBe(note);
      const stored = await t.dataSource.query('SELECT note FROM codes WHERE batch_id = $1', [
        batch.body.data.batchId,
      ]);
      expect(stored).toEqual([{ note: null }, { note: null }, { note: null }]);
      const list = await t.http
        .get('/api/private/v1/codes?search=launch')
        .set(bearer(p.privateKey))
        .expect(200);
      expect(list.body.data.total).toBe(3);
      for (const code of list.body.data.data) expect(code.note).toBe(note);
      const one = await t.http
        .get(`/api/private/v1/codes/${list.body.data.data[0].id}`)
        .set(bearer(p.privateKey))
        .expect(200);
      expect(one.body.data.note).toBe(note);
      const revoked = await t.http
        .post(`/api/private/v1/codes/${list.body.data.data[0].id}/revoke`)
        .set(bearer(p.privateKey))
        .expect(200);
      expect(revoked.body.data.note).toBe(note);
    });

    it('codes: 409 CODE_LIMIT_REACHED past PROJECT_MAX_CODES, 429 CODE_BATCH_RATE_LIMITED past the batches of an hour', async () => {
      const p = await t.createProject();
      const other = await t.createProject();
      const planOf = async (project: TestProject) =>
        (
          await t.http
            .post('/api/private/v1/plans')
            .set(bearer(project.privateKey))
            .send({ slug: 'pro', name: 'Pro', value: 10, group: 'tier' })
            .expect(201)
        ).body.data.id as number;
      const planId = await planOf(p);
      const batch = (count: number, project = p, plan = planId) =>
        t.http.post('/api/private/v1/codes').set(bearer(project.privateKey)).send({ planId: plan, count });
      await batch(20).expect(201);
      const over = await batch(11);
      expectError(over, 409, 'CODE_LIMIT_REACHED');
      expect(over.body.error.message).toMatch(/PROJECT_MAX_CODES/);
      await batch(10).expect(201);
      expectError(await batch(1), 409, 'CODE_LIMIT_REACHED');
      // another project has limits of its own
      const otherPlan = await planOf(other);
      for (let i = 0; i < 3; i++) await batch(1, other, otherPlan).expect(201);
      const limited = await batch(1, other, otherPlan);
      expectError(limited, 429, 'CODE_BATCH_RATE_LIMITED');
      const retryAfter = Number(limited.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(3500);
      expect(retryAfter).toBeLessThanOrEqual(3600);
    });

    it('customers: 409 CUSTOMER_LIMIT_REACHED past PROJECT_MAX_CUSTOMERS, by creation and by redemption', async () => {
      const p = await t.createProject({ autoCreateCustomerAtRedemption: true });
      for (let i = 0; i < 4; i++)
        await t.http
          .post('/api/private/v1/customers')
          .set(bearer(p.privateKey))
          .send({ username: username() })
          .expect(201);
      expectError(
        await t.http
          .post('/api/private/v1/customers')
          .set(bearer(p.privateKey))
          .send({ username: username() }),
        409,
        'CUSTOMER_LIMIT_REACHED',
      );
      const plan = await t.http
        .post('/api/private/v1/plans')
        .set(bearer(p.privateKey))
        .send({ slug: 'pro', name: 'Pro', value: 10, group: 'tier' })
        .expect(201);
      const code = (
        await t.http
          .post('/api/private/v1/codes')
          .set(bearer(p.privateKey))
          .send({ planId: plan.body.data.id, count: 1 })
          .expect(201)
      ).body.data.codes[0];
      const redeemed = await t.http
        .post('/api/private/v1/redemptions')
        .set(bearer(p.privateKey))
        .send({ code, customer: { type: 'email', value: 'new@example.com' }, autoCreate: true });
      expectError(redeemed, 409, 'CUSTOMER_LIMIT_REACHED');
      // nothing was half-done: the code is still available
      const [row] = await t.dataSource.query('SELECT status FROM codes WHERE project_id = $1', [p.id]);
      expect(row.status).toBe('available');
    });
  });

  describe('8. page and pageSize: decimal digits only, an exact offset, never a 500', () => {
    it('refuses exponents, hex, spaces, signs and huge numbers on every paged list; a far page is empty', async () => {
      const p = await t.createProject();
      const lists: Array<[string, Record<string, string>]> = [
        ['/api/private/v1/customers', bearer(p.privateKey)],
        ['/api/private/v1/plans', bearer(p.privateKey)],
        ['/api/private/v1/features', bearer(p.privateKey)],
        ['/api/private/v1/codes', bearer(p.privateKey)],
        ['/api/admin/v1/projects', bearer(ADMIN_TOKEN)],
      ];
      const bad = [
        '1e300',
        '99999999999999999999',
        '1e2',
        '0x10',
        '%20100',
        '+5',
        '-1',
        '1.0',
        '90071992547410',
        '',
      ];
      for (const [path, auth] of lists) {
        for (const name of ['page', 'pageSize']) {
          for (const value of bad) {
            const res = await t.http.get(`${path}?${name}=${value}`).set(auth);
            expectError(res, 400, 'VALIDATION_FAILED');
            expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(name);
          }
        }
        const far = await t.http.get(`${path}?page=90071992547409&pageSize=100`).set(auth).expect(200);
        expect(far.body.data).toMatchObject({ data: [], page: 90071992547409, pageSize: 100 });
        await t.http.get(`${path}?page=0010&pageSize=007`).set(auth).expect(200);
      }
    });
  });

  describe('9. login delays per customer and address; a looser bound per customer', () => {
    it('failures from one address do not lock the owner out from another', async () => {
      const p = await t.createProject();
      const c = await newCustomer(t, p);
      const attacker = address();
      for (let i = 0; i < 5; i++)
        expectError(
          await login(t, p, c.username, { password: 'wrong one!', from: attacker }),
          401,
          'INVALID_CREDENTIALS',
        );
      expectError(await login(t, p, c.username, { from: attacker }), 429, 'RATE_LIMITED');
      await login(t, p, c.username, { from: address() }).expect(200);
    });

    it('past 50 failures for one customer from any addresses, every address waits for the window', async () => {
      const p = await t.createProject();
      const c = await newCustomer(t, p);
      for (let a = 0; a < 10; a++) {
        const from = address();
        for (let i = 0; i < 5; i++)
          expectError(
            await login(t, p, c.username, { password: 'wrong one!', from }),
            401,
            'INVALID_CREDENTIALS',
          );
      }
      const limited = await login(t, p, c.username, { from: address() });
      expectError(limited, 429, 'RATE_LIMITED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(800);
      // another customer is not affected
      const d = await newCustomer(t, p);
      await login(t, p, d.username, { from: address() }).expect(200);
    });
  });

  describe('10. the admin token', () => {
    it('must be 32 characters or more, with at least 8 different ones', () => {
      const base = {
        DATABASE_URL: 'postgres://x@localhost/db',
        SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      };
      expect(() => validateEnv({ ...base, ADMIN_TOKEN: 'aaaaaaaaaaaaaaaa' })).toThrow(
        /ADMIN_TOKEN must be at least 32/,
      );
      expect(() => validateEnv({ ...base, ADMIN_TOKEN: 'a'.repeat(40) })).toThrow(
        /ADMIN_TOKEN must hold at least 8 different/,
      );
      expect(() => validateEnv({ ...base, ADMIN_TOKEN: 'abababababababababababababababab' })).toThrow(
        /ADMIN_TOKEN/,
      );
      expect(validateEnv({ ...base, ADMIN_TOKEN: randomBytes(32).toString('hex') }).ADMIN_TOKEN).toHaveLength(
        64,
      );
      expect(validateEnv({ ...base, ADMIN_TOKEN: '' }).ADMIN_TOKEN).toBe('');
    });

    it('past 10 wrong tokens, the address gets 429 whatever it sends; other addresses do not', async () => {
      const from = address();
      const list = (token: string, at = from) =>
        t.http
          .get('/api/admin/v1/projects')
          .set('X-Forwarded-For', at)
          .set('Authorization', `Bearer ${token}`);
      for (let i = 0; i < 10; i++) expectError(await list(`wrong-${i}`), 401, 'INVALID_ADMIN_TOKEN');
      const limited = await list(ADMIN_TOKEN);
      expectError(limited, 429, 'RATE_LIMITED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(800);
      await list(ADMIN_TOKEN, address()).expect(200);
      // right tokens are not counted, not even 40 at once
      const fresh = address();
      for (let i = 0; i < 15; i++) await list(ADMIN_TOKEN, fresh).expect(200);
      const parallel = await Promise.all(Array.from({ length: 40 }, () => list(ADMIN_TOKEN, fresh)));
      expect(parallel.map((r) => r.status)).toEqual(Array(40).fill(200));
    });
  });

  describe('11 and 12. exports and caching', () => {
    it('the CSV export neutralises cells a spreadsheet would run as formulas', async () => {
      const p = await t.createProject();
      const plan = await t.http
        .post('/api/private/v1/plans')
        .set(bearer(p.privateKey))
        .send({ slug: 'evil', name: '=HYPERLINK("http://evil.example","x")', value: 10, group: 'tier' })
        .expect(201);
      const batch = await t.http
        .post('/api/private/v1/codes')
        .set(bearer(p.privateKey))
        .send({ planId: plan.body.data.id, count: 1 })
        .expect(201);
      const csv = await t.http
        .get(`/api/private/v1/codes/export?batchId=${batch.body.data.batchId}`)
        .set(bearer(p.privateKey))
        .expect(200);
      const row = csv.text.split('\r\n')[1];
      expect(row).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
      expect(row).not.toMatch(/,"?=/);
      expect(csv.headers['cache-control']).toBe('no-store');
    });

    it('every API answer carries Cache-Control: no-store, errors included', async () => {
      const p = await t.createProject();
      const c = await newCustomer(t, p);
      const answers = [
        await t.http
          .post(`/api/admin/v1/projects/${p.id}/keys`)
          .set(bearer(ADMIN_TOKEN))
          .send({ kind: 'public' }),
        await login(t, p, c.username),
        await t.http.get('/api/private/v1/codes').set(bearer(p.privateKey)),
        await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)),
        await t.http.get('/api/private/v1/info'),
        await t.http.get('/api/nothing-here'),
        await t.http.post('/api/private/v1/customers').set(bearer(p.privateKey)).send('{'),
        await t.http.get('/healthz'),
      ];
      for (const res of answers)
        expect([res.status, res.headers['cache-control']]).toEqual([res.status, 'no-store']);
    });
  });
});

describe('hardening (issue 16): rate limits per public client and per customer', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      RATE_LIMIT_PER_KEY: '4',
      RATE_LIMIT_PER_ADDRESS: '1000',
      RATE_LIMIT_PER_CUSTOMER: '3',
      TRUST_PROXY: 'true',
    });
  });
  afterAll(() => t.close());

  it('2. after 429, the path in another case is no way around the limit', async () => {
    const p = await t.createProject();
    const from = address();
    const redeem = (path: string) =>
      t.http
        .post(path)
        .set(bearer(p.privateKey))
        .set('X-Forwarded-For', from)
        .send({ code: 'x', customer: { type: 'email', value: 'a@b.c' } });
    for (let i = 0; i < 4; i++) expect((await redeem('/api/private/v1/redemptions')).status).not.toBe(429);
    expectError(await redeem('/api/private/v1/redemptions'), 429, 'RATE_LIMITED');
    expectError(await redeem('/API/PRIVATE/v1/redemptions'), 404, 'ROUTE_NOT_FOUND');
  });

  it("3. one client using up its public key's requests leaves the key to every other client", async () => {
    const p = await t.createProject();
    const c = await newCustomer(t, p);
    const token = await tokenOf(t, p, c.username, address());
    const flooder = address();
    for (let i = 0; i < 4; i++)
      await t.http.post(LOGIN).set('X-Service-Key', p.publicKey).set('X-Forwarded-For', flooder).send({});
    expectError(
      await t.http.post(LOGIN).set('X-Service-Key', p.publicKey).set('X-Forwarded-For', flooder).send({}),
      429,
      'RATE_LIMITED',
    );
    // everyone else goes on: the info, a login, a logged-in customer
    await t.http
      .get('/api/public/v1/info')
      .set('X-Service-Key', p.publicKey)
      .set('X-Forwarded-For', address())
      .expect(200);
    await login(t, p, c.username, { from: address() }).expect(200);
    await me(t, p, token, address()).expect(200);
  });

  it('3. a logged-in customer is limited as one, from any address', async () => {
    const p = await t.createProject();
    const c = await newCustomer(t, p);
    const d = await newCustomer(t, p);
    const token = await tokenOf(t, p, c.username, address());
    for (let i = 0; i < 3; i++) await me(t, p, token, address()).expect(200);
    const limited = await me(t, p, token, address());
    expectError(limited, 429, 'RATE_LIMITED');
    expect(limited.headers['ratelimit-limit']).toBe('3');
    await me(t, p, await tokenOf(t, p, d.username, address()), address()).expect(200);
  });
});

describe('hardening (issue 16): request timeout and request logs', () => {
  let t: TestApp;
  let root: Logger;
  const lines: Array<Record<string, unknown>> = [];

  /** Captures the lines of the process's logger (setting its level re-binds the methods: spy again). */
  const capture = () => {
    for (const level of ['info', 'warn', 'error', 'debug'] as const)
      jest.spyOn(root, level).mockImplementation(((obj: unknown) => {
        if (typeof obj === 'object' && obj !== null) lines.push(obj as Record<string, unknown>);
      }) as never);
  };

  beforeAll(async () => {
    t = await createTestApp({ REQUEST_TIMEOUT_MS: '1000', LOG_LEVEL: 'info' });
    root = t.app.get<Logger>(ROOT_LOGGER);
    capture();
  });
  afterAll(async () => {
    jest.restoreAllMocks();
    await t.close();
  });

  it('13. a body trickling in past REQUEST_TIMEOUT_MS is cut with 408 within a second of the setting', async () => {
    const server = t.app.getHttpServer();
    configureHttpServer(server, { requestTimeoutMs: 1000, keepAliveTimeoutMs: 5000 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const started = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      let timer: NodeJS.Timeout | undefined;
      socket.on('connect', () => {
        socket.write(
          'POST /api/private/v1/customers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
        );
        timer = setInterval(() => socket.write(' '), 200); // a byte at a time, never the whole body
      });
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => {
        clearInterval(timer);
        resolve(text);
      });
      socket.on('error', reject);
      setTimeout(() => socket.destroy(), 10_000);
    });
    const elapsed = Date.now() - started;
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(2000);
    await new Promise((resolve) => server.close(resolve));
  });

  it('14. request lines carry the route and the names of the query parameters, not their values', async () => {
    const p = await t.createProject();
    const secret = 'ada.lovelace@example.com';
    lines.length = 0;
    await t.http
      .get(`/api/private/v1/customers?search=${encodeURIComponent(secret)}&page=1`)
      .set(bearer(p.privateKey))
      .expect(200);
    await t.http.get(`/api/private/v1/codes/export?batchId=12345`).set(bearer(p.privateKey));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const requests = lines.filter((l) => l.req !== undefined);
    expect(requests.map((l) => l.req)).toEqual([
      { method: 'GET', route: '/api/private/v1/customers', query: ['search', 'page'] },
      { method: 'GET', route: '/api/private/v1/codes/export', query: ['batchId'] },
    ]);
    expect(JSON.stringify(lines)).not.toContain('lovelace');
    expect(JSON.stringify(lines)).not.toContain('12345');

    // with LOG_LEVEL=debug the whole URL is there
    root.level = 'debug';
    capture();
    try {
      lines.length = 0;
      await t.http.get(`/api/private/v1/customers?search=ada`).set(bearer(p.privateKey)).expect(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(lines.find((l) => l.req)?.req).toMatchObject({ url: '/api/private/v1/customers?search=ada' });
    } finally {
      root.level = 'info';
      capture();
    }
  });
});
