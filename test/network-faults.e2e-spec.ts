import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { FaultProxy, sleep, waitFor } from './support/faults';

/**
 * The network to PostgreSQL and to Redis through a TCP proxy written here, which freezes,
 * cuts or refuses connections on demand: a request never waits longer than its budget, and an
 * unavailable or too slow database answers 503 SERVICE_UNAVAILABLE with Retry-After, never 500.
 */

const CUSTOMERS = '/api/private/v1/customers';
const STATEMENT_TIMEOUT_MS = 1000;
const POOL_WAIT_MS = 1000;
/** Statement timeout + the client's margin + a pool wait, and slack for a loaded machine. */
const BUDGET_MS = STATEMENT_TIMEOUT_MS + 1000 + POOL_WAIT_MS + 2000;

const expectUnavailable = (res: { status: number; headers: Record<string, string>; body: unknown }) => {
  expect({
    status: res.status,
    code: (res.body as { error?: { code?: string } }).error?.code,
    retryAfter: res.headers['retry-after'],
  }).toEqual({ status: 503, code: 'SERVICE_UNAVAILABLE', retryAfter: '2' });
};

describe('database faults', () => {
  let proxy: FaultProxy;
  let t: TestApp;
  let p: TestProject;
  let direct: Client;
  let seq = 0;
  const uname = () => `netf${String(++seq).padStart(4, '0')}${randomBytes(2).toString('hex')}`;

  beforeAll(async () => {
    const admin = new URL(process.env.TEST_ADMIN_DATABASE_URL!);
    proxy = await new FaultProxy(Number(admin.port), admin.hostname).start();
    t = await createTestApp((url) => {
      const viaProxy = new URL(url);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      return {
        DATABASE_URL: viaProxy.toString(),
        DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
        DB_POOL_WAIT_MS: String(POOL_WAIT_MS),
        DB_POOL_SIZE: '2',
        API_KEY_CACHE_TTL_MS: '0',
      };
    });
    p = await t.createProject();
    direct = new Client({ connectionString: t.databaseUrl });
    await direct.connect();
  });

  afterAll(async () => {
    await direct?.end();
    await proxy?.stop();
    await t?.close();
  });

  afterEach(async () => {
    proxy.thaw();
    await proxy.accept();
    // the service is back: a read goes through again
    await waitFor('the service to reach the database again', async () => {
      const res = await t.http.get(CUSTOMERS).set(bearer(p.privateKey));
      return res.status === 200;
    });
  });

  const timed = async <T>(run: () => Promise<T>) => {
    const started = Date.now();
    const result = await run();
    return { result, ms: Date.now() - started };
  };

  const customersNamed = async (username: string) =>
    (await direct.query('SELECT count(*)::int AS n FROM customers WHERE username = $1', [username])).rows[0]
      .n as number;

  it('a statement slower than DB_STATEMENT_TIMEOUT_MS: 503 with Retry-After within the budget, nothing written', async () => {
    const username = uname();
    const lock = new Client({ connectionString: t.databaseUrl });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE customers IN EXCLUSIVE MODE');
    // without a timeout the request would wait for the lock: release it after a while in any case
    const release = setTimeout(() => void lock.query('COMMIT'), 15_000);
    try {
      const { result, ms } = await timed(() =>
        t.http.post(CUSTOMERS).set(bearer(p.privateKey)).send({ username }),
      );
      expectUnavailable(result);
      expect(ms).toBeLessThan(BUDGET_MS);
    } finally {
      clearTimeout(release);
      await lock.query('COMMIT').catch(() => undefined);
      await lock.end();
    }
    expect(await customersNamed(username)).toBe(0);
  });

  it('the network to PostgreSQL frozen: requests holding a connection and requests waiting for one all answer 503 within the budget', async () => {
    await t.http.get(CUSTOMERS).set(bearer(p.privateKey)).expect(200); // the pool has its connections
    proxy.freeze();
    // the freeze lasts longer than any budget; it is lifted after 15 s in any case
    const thaw = setTimeout(() => proxy.thaw(), 15_000);
    try {
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => timed(() => t.http.get(CUSTOMERS).set(bearer(p.privateKey)))),
      );
      for (const { result, ms } of answers) {
        expectUnavailable(result);
        expect(ms).toBeLessThan(BUDGET_MS);
      }
      // while still frozen, new requests are refused within the budget too (new connections hang)
      const again = await timed(() => t.http.get(CUSTOMERS).set(bearer(p.privateKey)));
      expectUnavailable(again.result);
      expect(again.ms).toBeLessThan(BUDGET_MS);
    } finally {
      clearTimeout(thaw);
    }
  });

  it('the backend of a running request terminated (pg_terminate_backend, as in a restart): 503, not 500', async () => {
    const username = uname();
    const lock = new Client({ connectionString: t.databaseUrl });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE customers IN EXCLUSIVE MODE');
    try {
      const pending = t.http.post(CUSTOMERS).set(bearer(p.privateKey)).send({ username });
      const answer = new Promise<Awaited<typeof pending>>((resolve, reject) => {
        pending.then(resolve, reject);
      });
      let terminated = 0;
      await waitFor('the request to wait on the lock', async () => {
        const { rows } = await direct.query(
          `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND state = 'active'`,
        );
        terminated = rows.length;
        return terminated > 0;
      });
      expect(terminated).toBe(1);
      expectUnavailable(await answer);
    } finally {
      await lock.query('COMMIT').catch(() => undefined);
      await lock.end();
    }
    expect(await customersNamed(username)).toBe(0);
  });

  it('PostgreSQL down (connections cut, then refused): 503 at once; the service recovers when it is back', async () => {
    proxy.cut();
    await proxy.refuse();
    const { result, ms } = await timed(() => t.http.get(CUSTOMERS).set(bearer(p.privateKey)));
    expectUnavailable(result);
    expect(ms).toBeLessThan(BUDGET_MS);
    await proxy.accept(); // afterEach checks the recovery
    await sleep(10);
  });
});

/** Is Redis there (127.0.0.1:6379 or TEST_REDIS_URL)? Checked before the block runs; skipped when not. */
const REDIS_URL = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');

describe('a stalled Redis behind the rate limiter: circuit breaker', () => {
  const PAUSE_MS = 1500;
  let proxy: FaultProxy;
  let t: TestApp;
  let p: TestProject;
  let redisUp = false;

  beforeAll(async () => {
    const { connect } = await import('node:net');
    redisUp = await new Promise<boolean>((resolve) => {
      const s = connect(Number(REDIS_URL.port || 6379), REDIS_URL.hostname);
      s.setTimeout(1000);
      s.on('connect', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
      s.on('timeout', () => (s.destroy(), resolve(false)));
    });
    if (!redisUp) {
      console.warn(`Redis is not reachable at ${REDIS_URL.href}: the circuit breaker test is SKIPPED`);
      return;
    }
    proxy = await new FaultProxy(Number(REDIS_URL.port || 6379), REDIS_URL.hostname).start();
    t = await createTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_STORE: 'redis',
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      REDIS_KEY_PREFIX: `test-breaker-${process.pid}-${randomBytes(4).toString('hex')}:`,
      RATE_LIMIT_REDIS_PAUSE_MS: String(PAUSE_MS),
      RATE_LIMIT_PER_KEY: '1000',
      RATE_LIMIT_PER_ADDRESS: '1000',
    });
    p = await t.createProject();
  });

  afterAll(async () => {
    await proxy?.stop();
    await t?.close();
  });

  const metric = async (name: string) => {
    const text = (await t.http.get('/metrics').expect(200)).text;
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return Number(line?.split(' ')[1] ?? NaN);
  };
  const info = () => t.http.get('/api/private/v1/info').set(bearer(p.privateKey));

  it('after a failure Redis is skipped (requests go through at once, uncounted), the opening is counted in /metrics, then Redis is probed again and limits come back', async () => {
    if (!redisUp) return;
    const limited = await info().expect(200);
    expect(limited.headers['ratelimit-limit']).toBe('1000');
    expect(await metric('rate_limit_store_circuit_opened_total')).toBe(0);

    proxy.freeze();
    // the first request waits for Redis's command timeout, fails open, and opens the circuit
    const first = await info().expect(200);
    expect(first.headers['ratelimit-limit']).toBeUndefined();
    const sentWhileOpen = proxy.bytesFromClients;

    // while open, Redis is not even asked: nothing more goes out towards it
    for (let i = 0; i < 5; i++) {
      const res = await info().expect(200);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    }
    expect(proxy.bytesFromClients).toBe(sentWhileOpen);
    expect(await metric('rate_limit_store_circuit_opened_total')).toBe(1);
    expect(await metric('rate_limit_store_skipped_total')).toBeGreaterThanOrEqual(10);

    // Redis is back; after the pause one request probes it, and the limits are enforced again
    proxy.thaw();
    await waitFor(
      'the limits to be enforced again',
      async () => (await info()).headers['ratelimit-limit'] === '1000',
      PAUSE_MS * 10,
    );
    expect(proxy.bytesFromClients).toBeGreaterThan(sentWhileOpen);
    expect(await metric('rate_limit_store_circuit_opened_total')).toBe(1);
  }, 60_000);
});
