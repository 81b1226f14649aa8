import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { validateEnv } from '../src/config/env';
import { Transactions } from '../src/database/transactional';
import { PostgresRateLimitRepository } from '../src/rate-limit/rate-limit.repository';
import { RateLimitClock } from '../src/rate-limit/rate-limit.store';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';

const WINDOW_SECONDS = 2;
const PER_KEY = 3;
const PER_ADDRESS = 5;
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Is Redis reachable? Checked synchronously at load time, so that its block can be skipped. */
function redisReachable(url: string): boolean {
  const { hostname, port } = new URL(url);
  const probe = spawnSync(
    process.execPath,
    [
      '-e',
      `const s = require('node:net').connect(${Number(port || 6379)}, ${JSON.stringify(hostname)});
       s.setTimeout(1000);
       s.on('connect', () => process.exit(0));
       s.on('error', () => process.exit(1));
       s.on('timeout', () => process.exit(1));`,
    ],
    { timeout: 5000 },
  );
  return probe.status === 0;
}
const redisUp = redisReachable(REDIS_URL);
// CI sets TEST_REQUIRE_ENGINES=1: there the shared-limit suite must run on the real Redis, never skip
if (!redisUp && process.env.TEST_REQUIRE_ENGINES === '1')
  throw new Error(`TEST_REQUIRE_ENGINES=1 but Redis is not reachable at ${REDIS_URL}`);
if (!redisUp) {
  console.warn(
    `Redis is not reachable at ${REDIS_URL}: the rate-limit tests of the redis store are SKIPPED (set TEST_REDIS_URL).`,
  );
}

describe('rate limits: off by default; security headers', () => {
  let t: TestApp;
  let p: TestProject;

  beforeAll(async () => {
    t = await createTestApp();
    p = await t.createProject();
  });
  afterAll(() => t.close());

  it('counts nothing and sends no RateLimit headers when RATE_LIMIT_ENABLED is unset outside production', async () => {
    for (let i = 0; i < PER_ADDRESS + 2; i++) {
      const res = await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
    expect(await t.dataSource.query('SELECT * FROM rate_limit_counters')).toEqual([]);
  });

  it('is on by default with NODE_ENV=production, and the redis store needs REDIS_URL', () => {
    const base = {
      DATABASE_URL: 'postgres://x@localhost/db',
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    };
    expect(validateEnv({ ...base, NODE_ENV: 'production' }).RATE_LIMIT_ENABLED).toBe(true);
    expect(
      validateEnv({ ...base, NODE_ENV: 'production', RATE_LIMIT_ENABLED: 'false' }).RATE_LIMIT_ENABLED,
    ).toBe(false);
    expect(validateEnv({ ...base, NODE_ENV: 'development' }).RATE_LIMIT_ENABLED).toBe(false);
    expect(() => validateEnv({ ...base, RATE_LIMIT_STORE: 'redis' })).toThrow(/REDIS_URL/);
    expect(() => validateEnv({ ...base, RATE_LIMIT_STORE: 'memcached' })).toThrow(/RATE_LIMIT_STORE/);
    expect(
      validateEnv({ ...base, RATE_LIMIT_STORE: 'redis', REDIS_URL: 'redis://127.0.0.1:6379' })
        .RATE_LIMIT_STORE,
    ).toBe('redis');
  });

  it('API answers carry helmet headers with a CSP that allows nothing', async () => {
    const res = await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200);
    expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-powered-by']).toBeUndefined();
    const error = await t.http.get('/api/private/v1/info');
    expectError(error, 401, 'INVALID_API_KEY');
    expect(error.headers['x-content-type-options']).toBe('nosniff');
  });

  it('Swagger UI at /docs still loads: HTML 200 with a CSP that lets it run, and its scripts', async () => {
    const html = await t.http.get('/docs').redirects(1).expect(200);
    expect(html.headers['content-type']).toMatch(/^text\/html/);
    expect(html.text).toContain('swagger-ui');
    const csp = html.headers['content-security-policy'];
    expect(csp).toMatch(/script-src 'self' 'unsafe-inline'/);
    expect(csp).toMatch(/style-src 'self' 'unsafe-inline'/);
    expect(csp).not.toContain('upgrade-insecure-requests');
    for (const asset of ['swagger-ui-init.js', 'swagger-ui-bundle.js', 'swagger-ui.css']) {
      const res = await t.http.get(`/docs/${asset}`).expect(200);
      expect(res.headers['content-security-policy']).toContain("'unsafe-inline'");
    }
    await t.http.get('/docs-json').expect(200);
  });
});

describe.each([
  { store: 'postgres', available: true, env: {} as Record<string, string> },
  {
    store: 'redis',
    available: redisUp,
    env: { REDIS_URL, REDIS_KEY_PREFIX: `test-${process.pid}-${randomBytes(4).toString('hex')}:` },
  },
])('rate limits with the $store store', ({ store, available, env }) => {
  const suite = available ? describe : describe.skip;

  suite(`(${store})`, () => {
    let t: TestApp;
    let addressSeq = 0;
    /** A client address of its own (TRUST_PROXY=true takes it from X-Forwarded-For). */
    const newAddress = () => `10.${process.pid % 250}.${Math.floor(++addressSeq / 250)}.${addressSeq % 250}`;
    const info = (key: string, address: string, http = t.http) =>
      http.get('/api/private/v1/info').set(bearer(key)).set('X-Forwarded-For', address);
    const headersOf = (res: { headers: Record<string, string> }) => ({
      limit: Number(res.headers['ratelimit-limit']),
      remaining: Number(res.headers['ratelimit-remaining']),
      reset: Number(res.headers['ratelimit-reset']),
    });

    beforeAll(async () => {
      t = await createTestApp({
        RATE_LIMIT_ENABLED: 'true',
        RATE_LIMIT_STORE: store,
        RATE_LIMIT_WINDOW_SECONDS: String(WINDOW_SECONDS),
        RATE_LIMIT_PER_KEY: String(PER_KEY),
        RATE_LIMIT_PER_ADDRESS: String(PER_ADDRESS),
        TRUST_PROXY: 'true',
        ...env,
      });
    });
    afterAll(() => t.close());

    /**
     * Past the current windows: the postgres store's clock is moved forward (no waiting); Redis
     * keeps its own time, so with it the test waits.
     */
    const passWindow = async () => {
      if (store === 'postgres') t.app.get(RateLimitClock).advance(WINDOW_SECONDS);
      else await sleep(WINDOW_SECONDS * 1000 + 100);
    };

    it('per key: RateLimit headers, 429 RATE_LIMITED with Retry-After past the limit, other keys unaffected, back after the window', async () => {
      const p = await t.createProject();
      const other = await t.createProject();
      const address = newAddress();
      for (let i = 1; i <= PER_KEY; i++) {
        const res = await info(p.privateKey, address).expect(200);
        const h = headersOf(res);
        expect(h).toEqual({ limit: PER_KEY, remaining: PER_KEY - i, reset: expect.any(Number) });
        expect(h.reset).toBeGreaterThanOrEqual(1);
        expect(h.reset).toBeLessThanOrEqual(WINDOW_SECONDS);
      }
      const refused = await info(p.privateKey, address);
      expectError(refused, 429, 'RATE_LIMITED');
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(WINDOW_SECONDS);
      expect(headersOf(refused)).toEqual({ limit: PER_KEY, remaining: 0, reset: retryAfter });

      // another project's key, and the same project's public key, have counters of their own
      await info(other.privateKey, newAddress()).expect(200);
      const pub = await t.http
        .get('/api/public/v1/info')
        .set('X-Service-Key', p.publicKey)
        .set('X-Forwarded-For', newAddress())
        .expect(200);
      expect(headersOf(pub).remaining).toBe(PER_KEY - 1);

      await passWindow();
      const again = await info(p.privateKey, address).expect(200);
      expect(headersOf(again).remaining).toBe(PER_KEY - 1);
    });

    it('per address: every request from the address counts, whatever the key, refused keys included', async () => {
      const p = await t.createProject();
      const q = await t.createProject();
      const address = newAddress();
      // wrong keys are counted (the address guard runs before the key guard)
      for (let i = 1; i <= 2; i++) {
        const res = await info('sk_wrong', address);
        expectError(res, 401, 'INVALID_API_KEY');
        expect(headersOf(res)).toMatchObject({ limit: PER_ADDRESS, remaining: PER_ADDRESS - i });
      }
      for (let i = 1; i <= PER_KEY; i++) await info(p.privateKey, address).expect(200);
      // the address has used its 5; q's key is fresh but the address is not
      const refused = await info(q.privateKey, address);
      expectError(refused, 429, 'RATE_LIMITED');
      expect(headersOf(refused)).toMatchObject({ limit: PER_ADDRESS, remaining: 0 });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      // another address is unaffected, and q's key was not counted by the refused request
      const elsewhere = await info(q.privateKey, newAddress()).expect(200);
      expect(headersOf(elsewhere)).toMatchObject({ limit: PER_KEY, remaining: PER_KEY - 1 });
    });

    it('does not limit probes, metrics, docs or the admin interface', async () => {
      const address = newAddress();
      for (let i = 0; i < PER_ADDRESS + 2; i++) {
        for (const path of ['/healthz', '/readyz', '/metrics', '/docs-json']) {
          const res = await t.http.get(path).set('X-Forwarded-For', address).expect(200);
          expect(res.headers['ratelimit-limit']).toBeUndefined();
        }
        await t.http
          .get('/api/admin/v1/projects')
          .set('Authorization', 'Bearer test-admin-token-0123456789abcdef')
          .set('X-Forwarded-For', address)
          .expect(200);
      }
    });

    it('two instances share the counters', async () => {
      const replica = await t.startReplica();
      const other = request(replica.getHttpServer());
      const p = await t.createProject();
      const address = newAddress();
      await info(p.privateKey, address).expect(200);
      await info(p.privateKey, address, other).expect(200);
      const third = await info(p.privateKey, address).expect(200);
      expect(headersOf(third).remaining).toBe(0);
      expectError(await info(p.privateKey, address, other), 429, 'RATE_LIMITED');
    });

    it('a refused request does not use up its Idempotency-Key: the retry after the window runs', async () => {
      const p = await t.createProject();
      const address = newAddress();
      for (let i = 0; i < PER_KEY; i++) await info(p.privateKey, address).expect(200);
      const key = `rl-${store}-${randomBytes(6).toString('hex')}`;
      const send = () =>
        t.http
          .post('/api/private/v1/customers')
          .set(bearer(p.privateKey))
          .set('X-Forwarded-For', address)
          .set('Idempotency-Key', key)
          .send({ username: 'ratelimit01' });
      const refused = await send();
      expectError(refused, 429, 'RATE_LIMITED');
      await passWindow();
      const created = await send().expect(201);
      expect(created.headers['idempotent-replayed']).toBeUndefined();
      expect(created.body.data.username).toBe('ratelimit01');
    });

    if (store === 'postgres') {
      it('keeps the counters in rate_limit_counters and prunes ended windows', async () => {
        const p = await t.createProject();
        await info(p.privateKey, newAddress()).expect(200);
        const rows = await t.dataSource.query('SELECT key, hits FROM rate_limit_counters WHERE key = $1', [
          `key:${p.privateKeyId}`,
        ]);
        expect(rows).toEqual([{ key: `key:${p.privateKeyId}`, hits: 1 }]);
        await passWindow();
        const clock = t.app.get(RateLimitClock);
        expect(
          await new PostgresRateLimitRepository(t.app.get(Transactions), clock).prune(),
        ).toBeGreaterThanOrEqual(2);
        expect(
          await t.dataSource.query(
            'SELECT 1 FROM rate_limit_counters WHERE expires_at <= now() + make_interval(secs => $1::float8)',
            [clock.shiftSeconds],
          ),
        ).toEqual([]);
      });
    }
  });
});

describe('rate limits when the store is unreachable', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_STORE: 'redis',
      REDIS_URL: 'redis://127.0.0.1:1',
      RATE_LIMIT_WINDOW_SECONDS: '60',
      RATE_LIMIT_PER_KEY: '1',
      RATE_LIMIT_PER_ADDRESS: '1',
    });
  });
  afterAll(() => t.close());

  it('lets requests through (a broken limiter must not take the API down)', async () => {
    const p = await t.createProject();
    for (let i = 0; i < 3; i++) {
      const res = await t.http.get('/api/private/v1/info').set(bearer(p.privateKey)).expect(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
  });
});
