import * as bcrypt from 'bcrypt';
import { createHash, randomBytes } from 'node:crypto';
import request from 'supertest';
import TestAgent from 'supertest/lib/agent';
import { FailureCounters } from '../src/auth/failure-counters';
import { canonicalString, sign } from '../src/auth/signature';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError, ISO_MS } from './support/expect';
import { inlineShared } from './support/openapi';
import { expressRoutes } from './support/routes';

const DAY = 86_400_000;
const BCRYPT_COST = 8; // high enough that a bcrypt comparison dominates a login's time
const PASSWORD = 'correct horse battery';
const INFO = '/api/public/v1/info';
const LOGIN = '/api/public/v1/auth/login';
const LOGOUT = '/api/public/v1/auth/logout';
const ME = '/api/public/v1/me';

const nonce = () => randomBytes(24).toString('base64url');
const nowSeconds = () => Math.floor(Date.now() / 1000);
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const ms = (iso: string) => new Date(iso).getTime();

/** What a signed request is signed with; each field may differ from what is sent. */
interface Signing {
  secret: string;
  method: string;
  path: string;
  timestamp: number;
  nonce: string;
  body: string;
}

interface Call {
  /** The body as the exact JSON text sent. */
  body?: string | object;
  token?: string;
  /** Sign the request (true: correctly; an object: with these fields changed in the signed data). */
  sign?: boolean | Partial<Signing>;
  /** Headers sent instead of / besides the computed ones (`undefined` removes one). */
  headers?: Record<string, string | undefined>;
  agent?: TestAgent;
}

describe('public interface: signatures, login, customer endpoints', () => {
  let t: TestApp;
  let replica: TestAgent;
  let open: TestProject; // signatures optional
  let strict: TestProject; // signatures required
  let other: TestProject;
  let seq = 0;
  const next = () => ++seq;

  function call(project: TestProject, method: 'GET' | 'POST', path: string, options: Call = {}) {
    const agent = options.agent ?? t.http;
    const body =
      options.body === undefined
        ? ''
        : typeof options.body === 'string'
          ? options.body
          : JSON.stringify(options.body);
    const headers: Record<string, string | undefined> = { 'X-Service-Key': project.publicKey };
    if (options.token) headers.Authorization = `Bearer ${options.token}`;
    if (body) headers['Content-Type'] = 'application/json';
    if (options.sign) {
      const sent: Signing = {
        secret: project.signingSecret,
        method,
        path,
        timestamp: nowSeconds(),
        nonce: nonce(),
        body,
      };
      const signed: Signing = { ...sent, ...(options.sign === true ? {} : options.sign) };
      if (options.sign !== true && options.sign.timestamp !== undefined)
        sent.timestamp = options.sign.timestamp;
      headers['X-Service-Timestamp'] = String(sent.timestamp);
      headers['X-Service-Nonce'] = sent.nonce;
      headers['X-Service-Signature'] = sign(
        signed.secret,
        signed.method,
        signed.path,
        signed.timestamp,
        signed.nonce,
        signed.body,
      );
    }
    Object.assign(headers, options.headers ?? {});
    let req = method === 'GET' ? agent.get(path) : agent.post(path);
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) req = req.set(name, value);
    return body ? req.send(body) : req;
  }

  /** A signed request's headers, to send them again (a replay). */
  function signedHeaders(project: TestProject, method: string, path: string, body = '') {
    const ts = nowSeconds();
    const n = nonce();
    return {
      'X-Service-Timestamp': String(ts),
      'X-Service-Nonce': n,
      'X-Service-Signature': sign(project.signingSecret, method, path, ts, n, body),
    };
  }

  async function customer(
    project: TestProject,
    options: { password?: string | null; enabled?: boolean } = {},
  ) {
    const username = `cust${String(next()).padStart(8, '0')}`;
    const password = options.password === undefined ? PASSWORD : options.password;
    const res = await t.http
      .post('/api/private/v1/customers')
      .set(bearer(project.privateKey))
      .send({
        username,
        ...(password ? { password } : {}),
        ...(options.enabled === false ? { enabled: false } : {}),
      });
    expect(res.status).toBe(201);
    return { id: res.body.data.id as number, username };
  }

  const login = (project: TestProject, username: string, password = PASSWORD, options: Call = {}) =>
    call(project, 'POST', LOGIN, {
      ...options,
      body: { identifier: { type: 'username', value: username }, password },
    });

  async function tokenFor(project: TestProject, username: string): Promise<string> {
    const res = await login(project, username);
    expect(res.status).toBe(200);
    return res.body.data.token;
  }

  const resetLoginFailures = () => t.dataSource.query('DELETE FROM login_failures');

  beforeAll(async () => {
    t = await createTestApp({ BCRYPT_COST: String(BCRYPT_COST) });
    replica = request((await t.startReplica()).getHttpServer());
    open = await t.createProject({ name: 'Open' });
    strict = await t.createProject({ name: 'Strict', requireSignature: true });
    other = await t.createProject({ name: 'Other' });
  });
  afterAll(() => t.close());

  describe('signature v1', () => {
    it('matches the worked example of the documentation', () => {
      expect(canonicalString('GET', ME, 1767225600, 'n0nce-0000000001', '')).toBe(
        'GET\n/api/public/v1/me\n1767225600\nn0nce-0000000001\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      );
      expect(sign('ss_example', 'GET', ME, 1767225600, 'n0nce-0000000001', Buffer.alloc(0))).toBe(
        '0b8a7696ebea153b5abf332d731dd20b01e83e2dad56078a28729dbeeb8cfc2a',
      );
      expect(sign('ss_example', 'post', '/x?a=1', '1', 'n', '{"a":1}')).toBe(
        sign('ss_example', 'POST', '/x?a=1', 1, 'n', Buffer.from('{"a":1}')),
      );
    });

    it('accepts a correctly signed request, with and without a body', async () => {
      await call(strict, 'GET', INFO, { sign: true }).expect(200);
      const c = await customer(strict);
      const res = await login(strict, c.username, PASSWORD, { sign: true }).expect(200);
      expect(res.body.data.customer.id).toBe(c.id);
      await call(strict, 'GET', `${ME}/subscriptions?history=true`, {
        sign: true,
        token: res.body.data.token,
      }).expect(200);
    });

    it('refuses each single change of the signed data with INVALID_SIGNATURE', async () => {
      const c = await customer(strict);
      const body = JSON.stringify({
        identifier: { type: 'username', value: c.username },
        password: PASSWORD,
      });
      const tampered = body.replace('"password"', '"passwore"');
      const cases: Array<[string, () => ReturnType<typeof call>]> = [
        ['method', () => call(strict, 'GET', INFO, { sign: { method: 'POST' } })],
        ['path', () => call(strict, 'GET', INFO, { sign: { path: ME } })],
        ['query', () => call(strict, 'GET', `${INFO}?page=1`, { sign: { path: `${INFO}?page=2` } })],
        ['query dropped', () => call(strict, 'GET', `${INFO}?page=1`, { sign: { path: INFO } })],
        ['one body byte', () => call(strict, 'POST', LOGIN, { body, sign: { body: tampered } })],
        [
          'timestamp',
          () =>
            call(strict, 'GET', INFO, {
              sign: { timestamp: nowSeconds() - 1 },
              headers: { 'X-Service-Timestamp': String(nowSeconds()) },
            }),
        ],
        ['nonce', () => call(strict, 'GET', INFO, { sign: { nonce: nonce() } })],
        ['secret', () => call(strict, 'GET', INFO, { sign: { secret: other.signingSecret } })],
      ];
      for (const [what, send] of cases) {
        const res = await send();
        expect({ what, status: res.status, code: res.body.error?.code }).toEqual({
          what,
          status: 401,
          code: 'INVALID_SIGNATURE',
        });
      }
      // the same body, correctly signed, passes
      await call(strict, 'POST', LOGIN, { body, sign: true }).expect(200);
    });

    it('refuses malformed signature headers with INVALID_SIGNATURE', async () => {
      const good = signedHeaders(strict, 'GET', INFO);
      for (const headers of [
        { ...good, 'X-Service-Nonce': 'short-nonce-15c' },
        { ...good, 'X-Service-Nonce': 'x'.repeat(65) },
        { ...good, 'X-Service-Nonce': 'has.a.dot.in.it.here' },
        { ...good, 'X-Service-Timestamp': 'yesterday' },
        { ...good, 'X-Service-Timestamp': `${good['X-Service-Timestamp']}.5` },
        { ...good, 'X-Service-Signature': 'abc' },
        { ...good, 'X-Service-Signature': 'z'.repeat(64) },
      ]) {
        expectError(await call(strict, 'GET', INFO, { headers }), 401, 'INVALID_SIGNATURE');
      }
      // a refused request does not use up its nonce
      await call(strict, 'GET', INFO, { headers: good }).expect(200);
    });

    it('accepts a timestamp within 300 s; 301 s old or ahead is SIGNATURE_EXPIRED', async () => {
      await call(strict, 'GET', INFO, { sign: { timestamp: nowSeconds() - 290 } }).expect(200);
      await call(strict, 'GET', INFO, { sign: { timestamp: nowSeconds() + 290 } }).expect(200);
      expectError(
        await call(strict, 'GET', INFO, { sign: { timestamp: nowSeconds() - 301 } }),
        401,
        'SIGNATURE_EXPIRED',
      );
      expectError(
        await call(strict, 'GET', INFO, { sign: { timestamp: nowSeconds() + 301 } }),
        401,
        'SIGNATURE_EXPIRED',
      );
    });

    it('refuses a replayed nonce with NONCE_REUSED, also on another replica', async () => {
      const first = signedHeaders(strict, 'GET', INFO);
      await call(strict, 'GET', INFO, { headers: first }).expect(200);
      expectError(await call(strict, 'GET', INFO, { headers: first }), 401, 'NONCE_REUSED');
      expectError(await call(strict, 'GET', INFO, { headers: first, agent: replica }), 401, 'NONCE_REUSED');

      const second = signedHeaders(strict, 'GET', INFO);
      await call(strict, 'GET', INFO, { headers: second, agent: replica }).expect(200);
      expectError(await call(strict, 'GET', INFO, { headers: second }), 401, 'NONCE_REUSED');

      // nonces are per key: another key may use the same one
      const sameNonce = second['X-Service-Nonce'];
      await call(open, 'GET', INFO, {
        sign: { nonce: sameNonce },
        headers: { 'X-Service-Nonce': sameNonce },
      }).expect(200);
      const rows = await t.dataSource.query(
        'SELECT api_key_id, expires_at FROM request_nonces WHERE nonce = $1 ORDER BY api_key_id',
        [sameNonce],
      );
      expect(rows.map((r: { api_key_id: number }) => r.api_key_id)).toEqual(
        [strict.publicKeyId, open.publicKeyId].sort((a, b) => a - b),
      );
      // kept until the timestamp has left the window (300 s) plus a margin
      for (const r of rows) expect(ms(r.expires_at) - Date.now()).toBeGreaterThan(299_000);
    });

    it('accepts a nonce again once its record has expired', async () => {
      const headers = signedHeaders(strict, 'GET', INFO);
      await call(strict, 'GET', INFO, { headers }).expect(200);
      await t.dataSource.query(
        "UPDATE request_nonces SET expires_at = now() - interval '1 second' WHERE nonce = $1",
        [headers['X-Service-Nonce']],
      );
      await call(strict, 'GET', INFO, { headers }).expect(200);
    });

    it('a project that requires signatures refuses requests without them: SIGNATURE_REQUIRED', async () => {
      expectError(await call(strict, 'GET', INFO), 401, 'SIGNATURE_REQUIRED');
      const { 'X-Service-Signature': _, ...partial } = signedHeaders(strict, 'GET', INFO);
      expectError(await call(strict, 'GET', INFO, { headers: partial }), 401, 'SIGNATURE_REQUIRED');
      expectError(
        await call(strict, 'POST', LOGIN, {
          body: { identifier: { type: 'username', value: 'nobody00' }, password: 'x' },
        }),
        401,
        'SIGNATURE_REQUIRED',
      );
      // the key is checked first
      expectError(
        await call({ ...strict, publicKey: `pk_${'z'.repeat(40)}` }, 'GET', INFO),
        401,
        'INVALID_API_KEY',
      );
    });

    it('a project that does not require them accepts unsigned requests and still verifies present headers', async () => {
      await call(open, 'GET', INFO).expect(200);
      await call(open, 'GET', INFO, { sign: true }).expect(200);
      expectError(
        await call(open, 'GET', INFO, { sign: { secret: other.signingSecret } }),
        401,
        'INVALID_SIGNATURE',
      );
      const { 'X-Service-Timestamp': ts } = signedHeaders(open, 'GET', INFO);
      expectError(
        await call(open, 'GET', INFO, { headers: { 'X-Service-Timestamp': ts } }),
        401,
        'INVALID_SIGNATURE',
      );
      expectError(
        await call(open, 'GET', INFO, { sign: { timestamp: nowSeconds() - 400 } }),
        401,
        'SIGNATURE_EXPIRED',
      );
    });
  });

  describe('login and logout', () => {
    beforeEach(resetLoginFailures);

    it('answers a token, its expiry and the customer record', async () => {
      const c = await customer(open);
      const res = await login(open, c.username.toUpperCase()).expect(200); // usernames are case-insensitive
      const data = res.body.data;
      expect(data).toEqual({
        token: expect.any(String),
        tokenType: 'Bearer',
        expiresAt: expect.stringMatching(ISO_MS),
        customer: expect.any(Object),
      });
      expect(data.token.length).toBeGreaterThanOrEqual(40);
      expect(Math.abs(ms(data.expiresAt) - (Date.now() + 30 * DAY))).toBeLessThan(60_000);
      const record = await t.http
        .get(`/api/private/v1/customers/${c.id}`)
        .set(bearer(open.privateKey))
        .expect(200);
      expect(data.customer).toEqual(record.body.data);

      // only the hash is stored
      const rows = await t.dataSource.query(
        'SELECT token_hash, project_id, customer_id, last_used_at FROM customer_sessions WHERE customer_id = $1',
        [c.id],
      );
      expect(rows).toEqual([
        { token_hash: sha256(data.token), project_id: open.id, customer_id: c.id, last_used_at: null },
      ]);
      await call(open, 'GET', ME, { token: data.token }).expect(200);
      const [used] = await t.dataSource.query(
        'SELECT last_used_at FROM customer_sessions WHERE customer_id = $1',
        [c.id],
      );
      expect(used.last_used_at).not.toBeNull();

      // any identifier works
      const withEmail = await t.http
        .post('/api/private/v1/customers')
        .set(bearer(open.privateKey))
        .send({
          username: `mail${String(next()).padStart(8, '0')}`,
          password: PASSWORD,
          identifiers: [{ type: 'email', value: `c${seq}@example.com` }],
        })
        .expect(201);
      const byEmail = await call(open, 'POST', LOGIN, {
        body: { identifier: { type: 'email', value: `c${seq}@example.com` }, password: PASSWORD },
      }).expect(200);
      expect(byEmail.body.data.customer.id).toBe(withEmail.body.data.id);
    });

    it('every character of a 128-character password counts (bcrypt alone reads 72 bytes)', async () => {
      const long = `${'k'.repeat(100)}${'z'.repeat(28)}`;
      const c = await customer(open, { password: long });
      await login(open, c.username, long).expect(200);
      expectError(
        await login(open, c.username, `${'k'.repeat(100)}${'y'.repeat(28)}`),
        401,
        'INVALID_CREDENTIALS',
      );
      expectError(await login(open, c.username, 'k'.repeat(72)), 401, 'INVALID_CREDENTIALS');
    });

    it('wrong password, unknown customer and customer without password: the same 401 after the same work', async () => {
      const withPassword = await customer(open);
      const withoutPassword = await customer(open, { password: null });
      const attempts = {
        wrongPassword: () => login(open, withPassword.username, 'not the password'),
        unknown: () => login(open, `nobody${String(next()).padStart(6, '0')}`, 'not the password'),
        noPassword: () => login(open, withoutPassword.username, 'not the password'),
      };
      const bodies: Record<string, unknown> = {};
      const times: Record<string, number[]> = { wrongPassword: [], unknown: [], noPassword: [] };
      // the reference, one bcrypt comparison at the configured cost, is timed next to every
      // attempt, so that a busy spell on a shared machine weighs on both sides alike
      const hash = await bcrypt.hash('x', BCRYPT_COST);
      let bcryptTime = Infinity;
      for (let round = 0; round < 5; round++) {
        for (const [name, attempt] of Object.entries(attempts)) {
          const comparing = performance.now();
          await bcrypt.compare('y', hash);
          bcryptTime = Math.min(bcryptTime, performance.now() - comparing);
          const started = performance.now();
          const res = await attempt();
          times[name].push(performance.now() - started);
          expectError(res, 401, 'INVALID_CREDENTIALS');
          const { requestId: _, ...rest } = res.body;
          bodies[name] = { status: res.status, ...rest };
        }
      }
      expect(bodies.unknown).toEqual(bodies.wrongPassword);
      expect(bodies.noPassword).toEqual(bodies.wrongPassword);

      // every case ran one bcrypt comparison at the configured cost. Each case's fastest attempt
      // is compared (the least disturbed by a busy spell of a shared machine: a median of three
      // still caught one): a case that skipped bcrypt would answer several times faster than one
      // that ran it
      const wrong = Math.min(...times.wrongPassword);
      for (const name of Object.keys(times)) {
        const fastest = Math.min(...times[name]);
        expect({ name, atLeastBcrypt: fastest >= bcryptTime * 0.7 }).toEqual({ name, atLeastBcrypt: true });
        expect({ name, similar: fastest > wrong * 0.5 }).toEqual({ name, similar: true });
      }
    });

    it('a disabled customer: 403 CUSTOMER_DISABLED at login with the right password and with its tokens; enabled again, its old tokens are 401 for good', async () => {
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(bearer(open.privateKey))
        .send({ enabled: false })
        .expect(200);
      expectError(await login(open, c.username), 403, 'CUSTOMER_DISABLED');
      expectError(await login(open, c.username, 'not the password'), 401, 'INVALID_CREDENTIALS');
      // while disabled, its token is known and refused as the customer's
      expectError(await call(open, 'GET', ME, { token }), 403, 'CUSTOMER_DISABLED');
      expectError(await call(open, 'GET', `${ME}/subscriptions`, { token }), 403, 'CUSTOMER_DISABLED');
      // enabling it again ends the sessions: the old token never comes back to life
      await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(bearer(open.privateKey))
        .send({ enabled: true })
        .expect(200);
      expectError(await call(open, 'GET', ME, { token }), 401, 'INVALID_CUSTOMER_TOKEN');
      await call(open, 'GET', ME, { token: await tokenFor(open, c.username) }).expect(200);
    });

    it('logout revokes the token, and only that one', async () => {
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      const second = await tokenFor(open, c.username);
      const res = await call(open, 'POST', LOGOUT, { token }).expect(200);
      expect(res.body.data).toEqual({ success: true });
      expectError(await call(open, 'GET', ME, { token }), 401, 'INVALID_CUSTOMER_TOKEN');
      expectError(await call(open, 'POST', LOGOUT, { token }), 401, 'INVALID_CUSTOMER_TOKEN');
      await call(open, 'GET', ME, { token: second }).expect(200);
    });

    it('validates the body', async () => {
      for (const body of [
        {},
        { identifier: { type: 'username', value: 'abc' } },
        { identifier: 'abc', password: 'x' },
        { identifier: { type: 'username', value: 'a' }, password: 'x', extra: 1 },
      ]) {
        expectError(await call(open, 'POST', LOGIN, { body }), 400, 'VALIDATION_FAILED');
      }
    });

    it('after 5 failures for one customer from one address: 429 RATE_LIMITED with a Retry-After that doubles, before the password is checked', async () => {
      const c = await customer(open);
      for (let i = 0; i < 5; i++)
        expectError(await login(open, c.username, 'not the password'), 401, 'INVALID_CREDENTIALS');
      const limited = await login(open, c.username);
      expectError(limited, 429, 'RATE_LIMITED');
      const retryAfter = Number(limited.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(10);
      expect(retryAfter).toBeLessThanOrEqual(15);
      // another replica shares the counter; another identifier is not affected
      expectError(await login(open, c.username, PASSWORD, { agent: replica }), 429, 'RATE_LIMITED');
      const d = await customer(open);
      await login(open, d.username).expect(200);

      // once the delay has passed, one more attempt; a wrong one doubles the delay
      const waited = () =>
        t.dataSource.query(
          "UPDATE login_failures SET last_failure_at = now() - interval '31 seconds' WHERE key LIKE 'lp:%'",
        );
      await waited();
      expectError(await login(open, c.username, 'not the password'), 401, 'INVALID_CREDENTIALS');
      const doubled = await login(open, c.username);
      expectError(doubled, 429, 'RATE_LIMITED');
      expect(Number(doubled.headers['retry-after'])).toBeGreaterThan(25);
      expect(Number(doubled.headers['retry-after'])).toBeLessThanOrEqual(30);

      // and the right password, once the delay has passed, works and clears the counter
      await waited();
      await login(open, c.username).expect(200);
      for (let i = 0; i < 5; i++)
        expectError(
          await login(open, c.username, 'not the password', { agent: i % 2 ? replica : t.http }),
          401,
          'INVALID_CREDENTIALS',
        );
      expectError(await login(open, c.username, 'not the password'), 429, 'RATE_LIMITED');
    });

    it("a success clears the identifier's counter", async () => {
      const c = await customer(open);
      for (let i = 0; i < 4; i++)
        expectError(await login(open, c.username, 'not the password'), 401, 'INVALID_CREDENTIALS');
      await login(open, c.username).expect(200);
      for (let i = 0; i < 5; i++)
        expectError(await login(open, c.username, 'not the password'), 401, 'INVALID_CREDENTIALS');
      expectError(await login(open, c.username), 429, 'RATE_LIMITED');
    });

    it('parallel guesses cannot pass the limit', async () => {
      const c = await customer(open);
      const results = await Promise.all(
        Array.from({ length: 12 }, () => login(open, c.username, 'not the password')),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 401)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(7);
    });

    it('parallel right logins and password changes never fail: 200 (429 only past the limit, as attempts count until checked), never a 500 (the counters are locked in one order)', async () => {
      // the same customer and address again and again: the counters' rows move about in the table
      // (each update writes a new version), so an update that locks them in the order it finds
      // them would meet one that locks them in key order
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      const change = () =>
        call(open, 'POST', '/api/public/v1/me/password', {
          token,
          body: { currentPassword: PASSWORD, newPassword: PASSWORD },
        });
      for (let round = 0; round < 12; round++) {
        const results = await Promise.all(
          Array.from({ length: 6 }, (_, i) => (i % 2 ? change() : login(open, c.username))),
        );
        expect(results.map((r) => r.status).filter((s) => s !== 200 && s !== 429)).toEqual([]);
      }
    });

    it('giving counts back locks the counters in key order, as an attempt does: no deadlock when the table holds them in another order', async () => {
      // the rows in reverse key order in the table, so that a scan finds "zz" before "aa"
      const [aa, zz] = [`aa-${next()}`, `zz-${next()}`];
      await t.dataSource.query(
        `INSERT INTO login_failures (key, window_start, failures, last_failure_at)
         VALUES ($2, now(), 3, now()), ($1, now(), 3, now())`,
        [aa, zz],
      );
      // an attempt holds "aa" (the first in key order) and is about to lock "zz"
      const attempt = t.dataSource.createQueryRunner();
      await attempt.connect();
      try {
        await attempt.startTransaction();
        await attempt.query('SELECT key FROM login_failures WHERE key = $1 FOR UPDATE', [aa]);
        const given = t.app.get(FailureCounters).giveBack([zz, aa]);
        await new Promise((r) => setTimeout(r, 200)); // the give-back waits for "aa", holding nothing
        await attempt.query('SELECT key FROM login_failures WHERE key = $1 FOR UPDATE', [zz]);
        await attempt.commitTransaction();
        await given;
      } finally {
        await attempt.release();
      }
      const rows = await t.dataSource.query(
        'SELECT key, failures FROM login_failures WHERE key = ANY($1::varchar[]) ORDER BY key',
        [[aa, zz]],
      );
      expect(rows).toEqual([
        { key: aa, failures: 2 },
        { key: zz, failures: 2 },
      ]);
    });

    it('after 20 failures from one address: 429 for every identifier', async () => {
      for (let i = 0; i < 20; i++) {
        expectError(
          await login(other, `nobody${String(next()).padStart(6, '0')}`, 'not the password'),
          401,
          'INVALID_CREDENTIALS',
        );
      }
      const c = await customer(open);
      const limited = await login(open, c.username);
      expectError(limited, 429, 'RATE_LIMITED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      await resetLoginFailures();
      await login(open, c.username).expect(200);
    });
  });

  describe('customer tokens', () => {
    beforeEach(resetLoginFailures);

    it('missing, malformed or unknown: 401 INVALID_CUSTOMER_TOKEN', async () => {
      expectError(await call(open, 'GET', ME), 401, 'INVALID_CUSTOMER_TOKEN');
      expectError(await call(open, 'GET', ME, { token: 'not-a-token' }), 401, 'INVALID_CUSTOMER_TOKEN');
      expectError(
        await call(open, 'GET', ME, { headers: { Authorization: 'Basic abc' } }),
        401,
        'INVALID_CUSTOMER_TOKEN',
      );
      // the project key is checked first
      expectError(await t.http.get(ME).set('Authorization', 'Bearer x'), 401, 'INVALID_API_KEY');
    });

    it("a token of another project's customer: 403 CUSTOMER_PROJECT_MISMATCH", async () => {
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      expectError(await call(other, 'GET', ME, { token }), 403, 'CUSTOMER_PROJECT_MISMATCH');
      expectError(
        await call(other, 'POST', `${ME}/redemptions`, { token, body: { code: 'AAAA-BBBB-CCCC-DDDD' } }),
        403,
        'CUSTOMER_PROJECT_MISMATCH',
      );
      await call(open, 'GET', ME, { token }).expect(200);
    });

    it('an expired token: 401', async () => {
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      await t.dataSource.query(
        "UPDATE customer_sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1",
        [sha256(token)],
      );
      expectError(await call(open, 'GET', ME, { token }), 401, 'INVALID_CUSTOMER_TOKEN');
    });

    it('a live session of a disabled customer: 403 CUSTOMER_DISABLED, after the token and project checks', async () => {
      // The order of the guard's checks, on a customer disabled by a direct database write (so that
      // enabling it again keeps its sessions, which enabling through the API would end).
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      const expired = await tokenFor(open, c.username);
      await t.dataSource.query(
        "UPDATE customer_sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1",
        [sha256(expired)],
      );
      const setEnabled = (enabled: boolean) =>
        t.dataSource.query('UPDATE customers SET enabled = $2 WHERE id = $1', [c.id, enabled]);
      await setEnabled(false);
      expectError(await call(open, 'GET', ME, { token }), 403, 'CUSTOMER_DISABLED');
      expectError(await call(open, 'GET', `${ME}/subscriptions`, { token }), 403, 'CUSTOMER_DISABLED');
      expectError(await call(open, 'GET', ME, { token: expired }), 401, 'INVALID_CUSTOMER_TOKEN');
      expectError(await call(other, 'GET', ME, { token }), 403, 'CUSTOMER_PROJECT_MISMATCH');
      await setEnabled(true);
      await call(open, 'GET', ME, { token }).expect(200);
    });

    it("a deleted customer's token: 401, its sessions are gone", async () => {
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      await t.http.delete(`/api/private/v1/customers/${c.id}`).set(bearer(open.privateKey)).expect(200);
      expectError(await call(open, 'GET', ME, { token }), 401, 'INVALID_CUSTOMER_TOKEN');
      expect(
        await t.dataSource.query('SELECT 1 FROM customer_sessions WHERE customer_id = $1', [c.id]),
      ).toEqual([]);
    });
  });

  describe('me', () => {
    let plans: { free: number; basic: number; pro: number };
    const A = () => bearer(open.privateKey);

    async function insertPlan(name: string, value: number): Promise<number> {
      const [row] = await t.dataSource.query(
        "INSERT INTO plans (project_id, slug, name, value, plan_group) VALUES ($1, $2, $3, $4, 'tier') RETURNING id",
        [open.id, `${name.toLowerCase()}-${next()}`, name, value],
      );
      return row.id;
    }

    async function code(planId: number, duration: string | null): Promise<string> {
      const res = await t.http
        .post('/api/private/v1/codes')
        .set(A())
        .send({ planId, duration, count: 1 })
        .expect(201);
      return res.body.data.codes[0];
    }

    const privateChain = async (customerId: number, history = true) =>
      (
        await t.http
          .get(`/api/private/v1/customers/${customerId}/subscriptions${history ? '?history=true' : ''}`)
          .set(A())
          .expect(200)
      ).body.data as Array<{
        id: number;
        planId: number;
        validFrom: string;
        validTo: string | null;
        status: string;
        source: string;
      }>;

    beforeAll(async () => {
      await resetLoginFailures();
      plans = {
        free: await insertPlan('Free', 0),
        basic: await insertPlan('Basic', 10),
        pro: await insertPlan('Pro', 20),
      };
    });

    it("returns only the caller's own record and subscriptions", async () => {
      const c1 = await customer(open);
      const c2 = await customer(open);
      const t1 = await tokenFor(open, c1.username);
      const t2 = await tokenFor(open, c2.username);
      await t.http
        .post('/api/private/v1/redemptions')
        .set(A())
        .send({ code: await code(plans.pro, 'P30D'), customer: { type: 'username', value: c2.username } })
        .expect(200);

      const me1 = await call(open, 'GET', ME, { token: t1 }).expect(200);
      const record1 = await t.http.get(`/api/private/v1/customers/${c1.id}`).set(A()).expect(200);
      expect(me1.body.data).toEqual(record1.body.data);
      expect((await call(open, 'GET', ME, { token: t2 }).expect(200)).body.data.id).toBe(c2.id);

      const subs1 = (await call(open, 'GET', `${ME}/subscriptions`, { token: t1 }).expect(200)).body.data;
      expect(subs1).toEqual(await privateChain(c1.id, false));
      expect(subs1.map((s: { planId: number }) => s.planId)).toEqual([plans.free]);
      const subs2 = (await call(open, 'GET', `${ME}/subscriptions?history=true`, { token: t2 }).expect(200))
        .body.data;
      expect(subs2).toEqual(await privateChain(c2.id, true));
      expect(subs2.map((s: { planId: number }) => s.planId)).toEqual([plans.pro, plans.free, plans.free]);
      expectError(
        await call(open, 'GET', `${ME}/subscriptions?history=maybe`, { token: t1 }),
        400,
        'VALIDATION_FAILED',
      );
    });

    it('redeeming through me/redemptions and through the private interface builds the same chain', async () => {
      const viaPrivate = await customer(open);
      const viaPublic = await customer(open);
      const token = await tokenFor(open, viaPublic.username);
      const steps: Array<[number, string | null]> = [
        [plans.pro, 'P30D'],
        [plans.pro, 'P30D'],
        [plans.basic, 'P10D'],
        [plans.pro, null],
      ];
      const shape = (data: {
        customer: object;
        subscriptions: Array<{ planId: number; planName: string; validFrom: string; validTo: string | null }>;
      }) => ({
        keys: Object.keys(data).sort(),
        customerKeys: Object.keys(data.customer).sort(),
        created: (data.customer as { created: boolean }).created,
        subscriptions: data.subscriptions.map((s) => [
          s.planId,
          s.planName,
          s.validTo === null ? null : Math.round((ms(s.validTo) - ms(s.validFrom)) / 60_000),
        ]),
      });
      let succeeded = 0;
      for (const [planId, duration] of steps) {
        const priv = await t.http
          .post('/api/private/v1/redemptions')
          .set(A())
          .send({
            code: await code(planId, duration),
            customer: { type: 'username', value: viaPrivate.username },
          });
        const pub = await call(open, 'POST', `${ME}/redemptions`, {
          token,
          body: { code: await code(planId, duration) },
        });
        expect({ status: pub.status, code: pub.body.error?.code }).toEqual({
          status: priv.status,
          code: priv.body.error?.code,
        });
        if (priv.status !== 200) continue;
        succeeded++;
        expect(pub.body.data.customer).toEqual({
          id: viaPublic.id,
          username: viaPublic.username,
          created: false,
        });
        expect(shape(pub.body.data)).toEqual(shape(priv.body.data));
      }
      expect(succeeded).toBeGreaterThanOrEqual(3);
      const chainShape = async (id: number) =>
        (await privateChain(id)).map((w) => [
          w.planId,
          w.status,
          w.source,
          w.validTo === null ? null : Math.round((ms(w.validTo) - ms(w.validFrom)) / 60_000),
        ]);
      expect(await chainShape(viaPublic.id)).toEqual(await chainShape(viaPrivate.id));
      expect(
        (await call(open, 'GET', `${ME}/subscriptions?history=true`, { token }).expect(200)).body.data,
      ).toEqual(await privateChain(viaPublic.id));
    });

    it('answers the errors of the private redemption', async () => {
      const c = await customer(open);
      const token = await tokenFor(open, c.username);
      const used = await code(plans.basic, 'P1D');
      await call(open, 'POST', `${ME}/redemptions`, { token, body: { code: used } }).expect(200);
      expectError(
        await call(open, 'POST', `${ME}/redemptions`, { token, body: { code: used } }),
        409,
        'CODE_ALREADY_REDEEMED',
      );
      expectError(
        await call(open, 'POST', `${ME}/redemptions`, { token, body: { code: 'ZZZZ-ZZZZ-ZZZZ-ZZZZ' } }),
        404,
        'CODE_NOT_FOUND',
      );
      await call(open, 'POST', `${ME}/redemptions`, {
        token,
        body: { code: await code(plans.pro, null) },
      }).expect(200);
      expectError(
        await call(open, 'POST', `${ME}/redemptions`, { token, body: { code: await code(plans.pro, null) } }),
        409,
        'REDUNDANT_PERMANENT_PURCHASE',
      );
      // a code of another project is simply not found
      const [otherPlan] = await t.dataSource.query(
        "INSERT INTO plans (project_id, slug, name, value, plan_group) VALUES ($1, $2, 'X', 5, 'tier') RETURNING id",
        [other.id, `x-${next()}`],
      );
      const foreign = (
        await t.http
          .post('/api/private/v1/codes')
          .set(bearer(other.privateKey))
          .send({ planId: otherPlan.id, duration: 'P1D', count: 1 })
          .expect(201)
      ).body.data.codes[0];
      expectError(
        await call(open, 'POST', `${ME}/redemptions`, { token, body: { code: foreign } }),
        404,
        'CODE_NOT_FOUND',
      );
      // the target is always the logged-in customer
      for (const body of [{}, { code: used, customer: { type: 'username', value: c.username } }]) {
        expectError(await call(open, 'POST', `${ME}/redemptions`, { token, body }), 400, 'VALIDATION_FAILED');
      }
    });
  });

  describe('discovery', () => {
    it('the public info lists the new endpoints, as Express serves them', async () => {
      const res = await call(open, 'GET', INFO).expect(200);
      expect(res.body.data.endpoints).toEqual(
        expect.arrayContaining([
          'POST /api/public/v1/auth/login',
          'POST /api/public/v1/auth/logout',
          'GET /api/public/v1/me',
          'GET /api/public/v1/me/subscriptions',
          'POST /api/public/v1/me/redemptions',
        ]),
      );
      expect([...res.body.data.endpoints].sort()).toEqual(expressRoutes(t.app, '/api/public/v1'));
    });

    it('documents the signature headers and the customer token in OpenAPI', async () => {
      const doc = inlineShared((await t.http.get('/docs-json').expect(200)).body);
      const loginOp = doc.paths[LOGIN].post;
      expect(loginOp.tags).toEqual(['Public']);
      expect(
        loginOp.parameters
          .filter((p: { in: string }) => p.in === 'header')
          .map((p: { name: string; required: boolean }) => [p.name, p.required]),
      ).toEqual(
        expect.arrayContaining([
          ['X-Service-Timestamp', false],
          ['X-Service-Nonce', false],
          ['X-Service-Signature', false],
        ]),
      );
      expect(JSON.stringify(loginOp.parameters)).toContain(
        '0b8a7696ebea153b5abf332d731dd20b01e83e2dad56078a28729dbeeb8cfc2a',
      );
      // both at once (one requirement object), not either of them
      expect(doc.paths[ME].get.security).toEqual([{ publicKey: [], customerToken: [] }]);
      expect(doc.paths[`${ME}/redemptions`].post.security).toEqual([{ publicKey: [], customerToken: [] }]);
      expect(loginOp.security).toEqual([{ publicKey: [] }]);
      expect(Object.keys(loginOp.responses)).toEqual(
        expect.arrayContaining(['200', '400', '401', '403', '429']),
      );
    });
  });
});
