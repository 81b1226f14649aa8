// Rate limits in Redis when Redis goes away and comes back: a redis-server of this test's own
// (free port, no persistence), killed and restarted on the same port, so the machine's Redis is
// never touched. While it is down, requests are let through (fail-open) and an error is logged;
// once it is back, limits are enforced again without restarting the service.
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { Logger } from '@nestjs/common';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { freePort } from './support/ports';

const REDIS_SERVER = process.env.REDIS_SERVER_BIN ?? 'redis-server';
const available = spawnSync(REDIS_SERVER, ['--version']).status === 0;
if (!available && process.env.TEST_REQUIRE_ENGINES === '1')
  throw new Error('TEST_REQUIRE_ENGINES=1 but redis-server is not installed');
if (!available) process.stderr.write('redis-server is not installed: the Redis outage test is SKIPPED\n');
const suite = available ? describe : describe.skip;

const PER_KEY = 4;

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (/Ready to accept connections/.test(out)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out}`)));
  });
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL'); // as a crash: no goodbye to the clients
  await gone;
}

async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 30_000) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

suite('rate limits in Redis: Redis goes away and comes back', () => {
  let port: number;
  let redis: ChildProcess;
  let t: TestApp;
  let project: TestProject;
  let errors: jest.SpyInstance;

  beforeAll(async () => {
    port = await freePort();
    redis = await startRedis(port);
    errors = jest.spyOn(Logger.prototype, 'error');
    t = await createTestApp({
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_STORE: 'redis',
      REDIS_URL: `redis://127.0.0.1:${port}`,
      REDIS_KEY_PREFIX: `outage-${port}:`,
      RATE_LIMIT_WINDOW_SECONDS: '3600',
      RATE_LIMIT_PER_KEY: String(PER_KEY),
      RATE_LIMIT_PER_ADDRESS: '0',
    });
    project = await t.createProject();
  });

  afterAll(async () => {
    errors?.mockRestore();
    await t?.close();
    if (redis) await kill(redis);
  });

  const info = () => t.http.get('/api/private/v1/info').set(bearer(project.privateKey));

  it('counts in Redis while it is up', async () => {
    const first = await info().expect(200);
    expect(first.headers['ratelimit-remaining']).toBe(String(PER_KEY - 1));
  });

  it('lets every request through while Redis is down, and logs it', async () => {
    await kill(redis);
    errors.mockClear();
    for (let i = 0; i < PER_KEY * 3; i++) {
      const res = await info();
      expect(res.status).toBe(200); // never a 429 or a 500 past the limit: the limit is not enforced
      expect(res.headers['ratelimit-remaining']).toBeUndefined();
    }
    const logged = errors.mock.calls.map((c) => JSON.stringify(c));
    expect(logged.some((l) => /let through|not enforced|unreachable|Redis/i.test(l))).toBe(true);
    expect(logged.join('\n')).not.toContain(project.privateKey);
  });

  it('enforces the limits again once Redis is back, without a restart', async () => {
    redis = await startRedis(port); // an empty Redis: the window starts again
    await eventually('the limiter counts in Redis again', async () => {
      const res = await info();
      return res.status === 200 && res.headers['ratelimit-remaining'] !== undefined;
    });
    let status = 200;
    for (let i = 0; i < PER_KEY + 1 && status === 200; i++) status = (await info()).status;
    expect(status).toBe(429);
  });
});
