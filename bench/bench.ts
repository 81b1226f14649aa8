/**
 * Benchmark: starts the built service (dist/) on its own PostgreSQL (embedded, or DATABASE_URL),
 * seeds a project with BENCH_CUSTOMERS customers (3 identifiers each), then drives it over
 * keep-alive HTTP and prints p50/p95/p99 and requests per second per scenario.
 *
 *   npm run bench                          # 1,000,000 customers (seeding takes a few minutes)
 *   BENCH_CUSTOMERS=100000 BENCH_SECONDS=5 npm run bench
 */
import { spawn, ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort, startEmbeddedPostgres, EmbeddedDatabase } from '../src/database/embedded';
import { migrateWithLock } from '../src/database/migrator';

const CUSTOMERS = Number(process.env.BENCH_CUSTOMERS ?? 1_000_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const REDEMPTIONS = Number(process.env.BENCH_REDEMPTIONS ?? 4000);
const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

interface Reply {
  status: number;
  body: any;
}

function call(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Reply> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method, path, agent, headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, body: text.startsWith('{') ? JSON.parse(text) : text });
        });
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

interface Result {
  scenario: string;
  requests: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  errors: number;
}

/** `concurrency` loops issuing `make(i)` until `seconds` pass or `limit` requests were sent. */
async function drive(scenario: string, concurrency: number, seconds: number, make: (i: number) => Promise<Reply>, limit = Infinity): Promise<Result> {
  const latencies: number[] = [];
  let errors = 0;
  let issued = 0;
  const started = process.hrtime.bigint();
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline && issued < limit) {
        const i = issued++;
        const t0 = process.hrtime.bigint();
        const reply = await make(i);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (reply.status >= 400) errors++;
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { scenario, requests: latencies.length, rps: r(latencies.length / elapsed), p50: r(pct(latencies, 50)), p95: r(pct(latencies, 95)), p99: r(pct(latencies, 99)), errors };
}

async function seed(url: string, projectId: string): Promise<void> {
  const db = new Client({ connectionString: url });
  await db.connect();
  const t0 = Date.now();
  // Trigram indexes are rebuilt once after the load: far faster than maintaining them per row.
  await db.query('DROP INDEX customers_username_trgm_idx; DROP INDEX customer_identifiers_value_trgm_idx');
  const chunk = 100_000;
  for (let from = 1; from <= CUSTOMERS; from += chunk) {
    const to = Math.min(CUSTOMERS, from + chunk - 1);
    await db.query(
      `WITH c AS (
         INSERT INTO customers (project_id, username)
         SELECT $1, 'user' || lpad(g::text, 7, '0') FROM generate_series($2::int, $3::int) g
         RETURNING id, username)
       INSERT INTO customer_identifiers (project_id, customer_id, type, value, readonly)
       SELECT $1, c.id, v.type, v.value, v.readonly FROM c, LATERAL (VALUES
         ('username', c.username, true),
         ('email', c.username || '@mail' || (c.id % 100) || '.example', false),
         ('external_user_id', 'ext-' || md5(c.username), false)) AS v(type, value, readonly)`,
      [projectId, from, to],
    );
    process.stdout.write(`\rseeded ${to.toLocaleString()} customers`);
  }
  await db.query('CREATE INDEX customers_username_trgm_idx ON customers USING gin (username gin_trgm_ops)');
  await db.query('CREATE INDEX customer_identifiers_value_trgm_idx ON customer_identifiers USING gin (value gin_trgm_ops)');
  await db.query('ANALYZE');
  await db.end();
  console.log(`\nseeding ${CUSTOMERS.toLocaleString()} customers with 3 identifiers each took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function main(): Promise<void> {
  let embedded: EmbeddedDatabase | undefined;
  let dir: string | undefined;
  let url = process.env.DATABASE_URL;
  if (!url) {
    dir = mkdtempSync(join(tmpdir(), 'subs-bench-'));
    embedded = await startEmbeddedPostgres(dir, () => undefined);
    url = embedded.url;
  }
  let service: ChildProcess | undefined;
  try {
    await migrateWithLock(url);
    const port = await freePort();
    service = spawn(process.execPath, ['dist/main.js'], {
      env: { ...process.env, DATABASE_URL: url, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'), DB_MIGRATE_ON_START: 'false' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    for (let i = 0; ; i++) {
      const ready = await call(port, 'GET', '/readyz', {}).catch(() => undefined);
      if (ready?.status === 200) break;
      if (i > 100) throw new Error('service did not become ready');
      await new Promise((r) => setTimeout(r, 200));
    }
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const project = (await call(port, 'POST', '/api/admin/v1/projects', admin, { name: 'bench', autoCreateCustomerAtRedemption: true })).body.data;
    const key = (await call(port, 'POST', `/api/admin/v1/projects/${project.id}/keys`, admin, { kind: 'private' })).body.data.key;
    const sk = { authorization: `Bearer ${key}` };
    await seed(url, project.id);
    const db = new Client({ connectionString: url });
    await db.connect();
    const ids: number[] = (await db.query('SELECT id FROM customers WHERE project_id = $1 ORDER BY random() LIMIT 5000', [project.id])).rows.map((r) => r.id);
    const pick = (i: number) => ids[i % ids.length];

    const results: Result[] = [];
    const run = async (r: Promise<Result>) => {
      const x = await r;
      results.push(x);
      console.log(JSON.stringify(x));
    };
    await run(drive('GET /customers/:id (1 client)', 1, SECONDS, (i) => call(port, 'GET', `/api/private/v1/customers/${pick(i)}`, sk)));
    await run(drive('POST /customers/resolve (1 client)', 1, SECONDS, (i) => call(port, 'POST', '/api/private/v1/customers/resolve', sk, { customer: { type: 'email', value: `user${String(pick(i)).padStart(7, '0')}@mail${pick(i) % 100}.example` } })));
    await run(drive('GET /customers (no term, 1 client)', 1, SECONDS, () => call(port, 'GET', '/api/private/v1/customers', sk)));
    await run(drive('GET /customers?search=<rare> (1 client)', 1, SECONDS, (i) => call(port, 'GET', `/api/private/v1/customers?search=user${String(pick(i)).padStart(7, '0')}`, sk)));
    await run(drive('GET /customers?search=<common, 1%> (1 client)', 1, SECONDS, () => call(port, 'GET', '/api/private/v1/customers?search=@mail42.', sk)));
    await run(drive('GET /customers/:id (32 clients)', 32, SECONDS, (i) => call(port, 'GET', `/api/private/v1/customers/${pick(i)}`, sk)));
    await run(drive('GET /api/private/v1/info (32 clients)', 32, SECONDS, () => call(port, 'GET', '/api/private/v1/info', sk)));

    // codes: one batch of 10,000 timed, then redemptions on distinct codes and customers
    const plan = (await call(port, 'POST', '/api/private/v1/plans', sk, { slug: 'pro', name: 'Pro', value: 20, group: 'tier' })).body.data;
    const codes: string[] = [];
    await run(drive('POST /codes (batch of 10,000)', 1, 600, async () => {
      const reply = await call(port, 'POST', '/api/private/v1/codes', sk, { planId: plan.id, duration: 'P30D', count: 10000 });
      codes.push(...(reply.body.data?.codes ?? []));
      return reply;
    }, Math.ceil(REDEMPTIONS / 10000)));
    await run(drive('POST /redemptions (32 clients, distinct codes and customers)', 32, 600, (i) =>
      call(port, 'POST', '/api/private/v1/redemptions', sk, { code: codes[i], customer: { type: 'username', value: `user${String(ids[i % ids.length]).padStart(7, '0')}` } }),
    Math.min(REDEMPTIONS, codes.length, ids.length)));
    await db.end();

    console.log('\n| scenario | requests | req/s | p50 ms | p95 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|');
    for (const r of results) console.log(`| ${r.scenario} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p95} | ${r.p99} | ${r.errors} |`);
  } finally {
    service?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    agent.destroy();
    if (embedded) await embedded.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
