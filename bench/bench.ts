/**
 * Benchmark: starts the built service (dist/) on its own PostgreSQL (embedded, or DATABASE_URL),
 * seeds a project with BENCH_CUSTOMERS customers (3 identifiers each), then
 *
 *   1. one client, a hand-written keep-alive loop: p50/p95/p99 of the lookups and searches;
 *   2. autocannon over keep-alive connections: req/s, p50, p99, errors and the service's peak RSS
 *      for info, customer by id, resolve, search, plans, redemptions (distinct codes), and
 *      entitlement checks and usage records (over 10,000 customers, and on one hot customer);
 *   3. against a bare `node:http` + `pg` baseline (bench/baseline.ts, same key lookup, same SQL),
 *      started beside it on the same database: `GET /customers/:id` and `POST /redemptions`,
 *      service and baseline alternating in rounds, and the median service/baseline req/s ratio.
 *
 *   npm run bench                                        # 200,000 customers
 *   BENCH_CUSTOMERS=1000000 npm run bench                # 1,000,000 customers (seeding takes minutes)
 *   BENCH_CUSTOMERS=20000 BENCH_SECONDS=3 npm run bench  # a quick check
 */
import autocannon = require('autocannon');
import { execFileSync, spawn, ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { cpus, platform, release, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import * as ts from 'typescript';
import { freePort, startEmbeddedPostgres, EmbeddedDatabase } from '../src/database/embedded';
import { migrateWithLock } from '../src/database/migrator';

const int = (name: string, fallback: number) => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
};
const CUSTOMERS = int('BENCH_CUSTOMERS', 200_000);
/** Seconds per measured run (each 1-client scenario, each autocannon run, each side of each round). */
const SECONDS = int('BENCH_SECONDS', 5);
const ROUNDS = Math.max(1, int('BENCH_ROUNDS', 3));
const WARMUP = int('BENCH_WARMUP_SECONDS', Math.min(2, SECONDS));
const READ_CONNECTIONS = int('BENCH_CONNECTIONS', 64);
const REDEEM_CONNECTIONS = int('BENCH_REDEEM_CONNECTIONS', 32);
const BATCH = 10_000;
/** Codes per side (service, baseline): enough for 2,500 redemptions/s over every round and the warm-up. */
const CODES_PER_SIDE = int('BENCH_CODES', Math.ceil(((ROUNDS * SECONDS + WARMUP) * 2500) / BATCH) * BATCH);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';
/** A directory: the service and the baseline run with `--cpu-prof` and write their profiles there on exit. */
const CPU_PROF = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;
const nodeFlags = (name: string) =>
  CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
const POOL_SIZE = 10; // the service's DB_POOL_SIZE default; the baseline gets the same
const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

interface Reply {
  status: number;
  body: any;
}

function call(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Reply> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolvePromise, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: {
          ...headers,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolvePromise({
            status: res.statusCode ?? 0,
            body: text.startsWith('{') ? JSON.parse(text) : text,
          });
        });
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? NaN
    : s.length % 2
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---------------------------------------------------------------------------------------------
// memory of a child process (Linux: /proc/<pid>/status)

function memoryOf(pid: number | undefined): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) used so far by `pid`, in ms (Linux: /proc/<pid>/stat). */
function cpuMsOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3 (state)
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** Samples VmRSS of `pid` every 100 ms while `work` runs; returns its result and the peak in MiB. */
async function withPeakRss<T>(
  pid: number | undefined,
  work: () => Promise<T>,
): Promise<{ value: T; peakRss: number }> {
  let peak = memoryOf(pid).rss;
  const timer = setInterval(() => {
    const { rss } = memoryOf(pid);
    if (Number.isNaN(peak) || rss > peak) peak = rss;
  }, 100);
  try {
    const value = await work();
    const { rss } = memoryOf(pid);
    if (rss > peak) peak = rss;
    return { value, peakRss: peak };
  } finally {
    clearInterval(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// 1 client: a hand-written keep-alive loop, p50/p95/p99 (the README quotes p95)

interface LoopResult {
  scenario: string;
  requests: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  errors: number;
}

/** `concurrency` loops issuing `make(i)` until `seconds` pass or `limit` requests were sent. */
async function drive(
  scenario: string,
  concurrency: number,
  seconds: number,
  make: (i: number) => Promise<Reply>,
  limit = Infinity,
): Promise<LoopResult> {
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
  return {
    scenario,
    requests: latencies.length,
    rps: round2(latencies.length / elapsed),
    p50: round2(pct(latencies, 50)),
    p95: round2(pct(latencies, 95)),
    p99: round2(pct(latencies, 99)),
    errors,
  };
}

// ---------------------------------------------------------------------------------------------
// many connections: autocannon

interface Target {
  name: 'service' | 'baseline';
  port: number;
  pid: number | undefined;
}

interface CannonRun {
  scenario: string;
  target: Target['name'];
  connections: number;
  seconds: number;
  requests: number;
  /** successful (2xx) responses per second */
  rps: number;
  p50: number;
  p99: number;
  /** non-2xx responses + connection errors and timeouts */
  errors: number;
  peakRss: number;
  /** CPU time of the target process (user + system) per completed request */
  cpuMsPerRequest: number;
}

/** `request.setupRequest` may set a fresh path/body per request (it runs before every send). */
async function cannon(
  scenario: string,
  target: Target,
  connections: number,
  seconds: number,
  req: autocannon.Request,
): Promise<CannonRun> {
  const cpu0 = cpuMsOf(target.pid);
  const { value: r, peakRss } = await withPeakRss(target.pid, () =>
    autocannon({
      url: `http://127.0.0.1:${target.port}`,
      connections,
      duration: seconds,
      timeout: 10,
      requests: [req],
    }),
  );
  const cpu = cpuMsOf(target.pid) - cpu0;
  return {
    scenario,
    target: target.name,
    connections,
    seconds,
    requests: r['2xx'] + r.non2xx,
    rps: round2(r['2xx'] / r.duration),
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.non2xx + r.errors,
    peakRss: round2(peakRss),
    cpuMsPerRequest: round2(cpu / Math.max(1, r['2xx'] + r.non2xx)),
  };
}

interface Row {
  scenario: string;
  connections: number;
  service: CannonRun[];
  baseline: CannonRun[];
  /** median over rounds of service req/s ÷ baseline req/s of the same round */
  ratio?: number;
  ratios?: number[];
}

/** One autocannon run of the service only. */
async function single(
  scenario: string,
  service: Target,
  connections: number,
  req: autocannon.Request,
): Promise<Row> {
  const run = await cannon(scenario, service, connections, SECONDS, req);
  console.log(JSON.stringify(run));
  return { scenario, connections, service: [run], baseline: [] };
}

/**
 * The same scenario against the service and the baseline, alternating: a warm-up of each, then
 * ROUNDS rounds of SECONDS per side (service first in even rounds, baseline first in odd ones) so
 * that a slow patch of a shared machine hits both sides.
 */
async function versus(
  scenario: string,
  service: Target,
  baseline: Target,
  connections: number,
  req: (side: Target) => autocannon.Request,
  afterWarmUp?: () => Promise<void>,
): Promise<Row> {
  const requests = new Map([service, baseline].map((t) => [t.name, req(t)]));
  if (WARMUP > 0) {
    for (const t of [service, baseline])
      await cannon(scenario, t, connections, WARMUP, requests.get(t.name)!);
  }
  await afterWarmUp?.();
  const row: Row = { scenario, connections, service: [], baseline: [], ratios: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [service, baseline] : [baseline, service];
    for (const t of order) {
      const run = await cannon(scenario, t, connections, SECONDS, requests.get(t.name)!);
      console.log(JSON.stringify({ round: round + 1, ...run }));
      row[t.name].push(run);
    }
    row.ratios!.push(round2(row.service[round].rps / row.baseline[round].rps));
  }
  row.ratio = round2(median(row.ratios!));
  console.log(`${scenario}: service/baseline req/s per round ${row.ratios!.join(', ')}; median ${row.ratio}`);
  return row;
}

// ---------------------------------------------------------------------------------------------
// set-up

async function seed(url: string, projectId: string): Promise<void> {
  const db = new Client({ connectionString: url });
  await db.connect();
  const t0 = Date.now();
  // Trigram indexes are rebuilt once after the load: far faster than maintaining them per row.
  // Likewise the search documents (migration CustomerSearch): their triggers are off during the
  // load, the documents are written in one statement afterwards, as the triggers would write them.
  await db.query(
    'DROP INDEX customers_username_trgm_idx; DROP INDEX customer_identifiers_value_trgm_idx; DROP INDEX customer_search_doc_trgm_idx',
  );
  const searchTriggers = ['customer_search_insert', 'customer_search_update', 'customer_search_delete'];
  await db.query(
    searchTriggers.map((t) => `ALTER TABLE customer_identifiers DISABLE TRIGGER ${t};`).join(' '),
  );
  try {
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
    await db.query(
      `INSERT INTO customer_search (customer_id, project_id, doc)
         SELECT c.id, c.project_id, string_agg(lower(i.value), chr(31) ORDER BY i.id)
           FROM customers c JOIN customer_identifiers i ON i.customer_id = c.id
          WHERE c.project_id = $1
          GROUP BY c.id
       ON CONFLICT (customer_id) DO UPDATE SET doc = EXCLUDED.doc`,
      [projectId],
    );
  } finally {
    await db.query(
      searchTriggers.map((t) => `ALTER TABLE customer_identifiers ENABLE TRIGGER ${t};`).join(' '),
    );
  }
  await db.query('CREATE INDEX customers_username_trgm_idx ON customers USING gin (username gin_trgm_ops)');
  await db.query(
    'CREATE INDEX customer_identifiers_value_trgm_idx ON customer_identifiers USING gin (value gin_trgm_ops)',
  );
  await db.query(
    'CREATE INDEX customer_search_doc_trgm_idx ON customer_search USING gin (doc gin_trgm_ops) WITH (fastupdate = off)',
  );
  // As a database that has lived a while, not one loaded a second ago: hint bits and visibility
  // maps set, statistics fresh, dirty pages written (CHECKPOINT needs a superuser; skipped otherwise).
  await db.query('VACUUM (ANALYZE)');
  await db.query('CHECKPOINT').catch(() => undefined);
  await db.end();
  console.log(
    `\nseeding ${CUSTOMERS.toLocaleString()} customers with 3 identifiers each took ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
}

async function waitReady(port: number, child: ChildProcess, name: string): Promise<void> {
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}`);
    const ready = await call(port, 'GET', '/readyz', {}).catch(() => undefined);
    if (ready?.status === 200) return;
    if (i > 150) throw new Error(`${name} did not become ready`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** bench/baseline.ts as plain JavaScript (no ts-node in the measured process); `pg` found through NODE_PATH. */
function startBaseline(dir: string, url: string, port: number): ChildProcess {
  const source = readFileSync(join(__dirname, 'baseline.ts'), 'utf8');
  const js = ts.transpileModule(source, {
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
    },
  }).outputText;
  const file = join(dir, 'baseline.js');
  writeFileSync(file, js);
  return spawn(process.execPath, [...nodeFlags('baseline'), file], {
    env: {
      ...process.env,
      NODE_PATH: resolve(__dirname, '..', 'node_modules'),
      DATABASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      DB_POOL_SIZE: String(POOL_SIZE),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, CPU_PROF ? 30_000 : 5000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'subs-bench-'));
  let embedded: EmbeddedDatabase | undefined;
  let url = process.env.DATABASE_URL;
  if (!url) {
    embedded = await startEmbeddedPostgres(dir, () => undefined);
    url = embedded.url;
  }
  let serviceProcess: ChildProcess | undefined;
  let baselineProcess: ChildProcess | undefined;
  const onSignal = () => {
    serviceProcess?.kill('SIGTERM');
    baselineProcess?.kill('SIGTERM');
    void (embedded?.stop() ?? Promise.resolve()).finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  try {
    await migrateWithLock(url);
    const port = await freePort();
    serviceProcess = spawn(process.execPath, [...nodeFlags('service'), 'dist/main.js'], {
      env: {
        ...process.env,
        DATABASE_URL: url,
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_TOKEN,
        LOG_LEVEL,
        SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        DB_MIGRATE_ON_START: 'false',
        DB_POOL_SIZE: String(POOL_SIZE),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitReady(port, serviceProcess, 'service');
    const service: Target = { name: 'service', port, pid: serviceProcess.pid };

    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const project = (
      await call(port, 'POST', '/api/admin/v1/projects', admin, {
        name: 'bench',
        autoCreateCustomerAtRedemption: true,
      })
    ).body.data;
    const key: string = (
      await call(port, 'POST', `/api/admin/v1/projects/${project.id}/keys`, admin, { kind: 'private' })
    ).body.data.key;
    const sk = { authorization: `Bearer ${key}` };
    const json = { ...sk, 'content-type': 'application/json' };
    await seed(url, project.id);

    const baselinePort = await freePort();
    baselineProcess = startBaseline(dir, url, baselinePort);
    await waitReady(baselinePort, baselineProcess, 'baseline');
    const baseline: Target = { name: 'baseline', port: baselinePort, pid: baselineProcess.pid };

    const db = new Client({ connectionString: url });
    await db.connect();
    const pgVersion: string = (await db.query('SHOW server_version')).rows[0].server_version;
    const sample: Array<{ id: number; username: string; email: string }> = (
      await db.query(
        `SELECT c.id, c.username, i.value AS email FROM customers c
           JOIN customer_identifiers i ON i.customer_id = c.id AND i.type = 'email'
          WHERE c.project_id = $1 ORDER BY random() LIMIT 10000`,
        [project.id],
      )
    ).rows;
    // the measured lookups use the first half; the warm-ups before them the other half, so the
    // measured customers are not in any cache that the warm-up filled
    const half = Math.ceil(sample.length / 2);
    const measured = sample.slice(0, half);
    const warm = sample.length > half ? sample.slice(half) : measured;
    const pick = (i: number) => measured[i % measured.length];
    const pickWarm = (i: number) => warm[i % warm.length];
    /** A rotating pick shared by all connections of one autocannon run. */
    const rotating = <T>(items: T[]) => {
      let n = 0;
      return () => items[n++ % items.length];
    };

    // --- 1 client: latency of the lookups and searches
    const loops: LoopResult[] = [];
    const loop = async (r: Promise<LoopResult>) => {
      const x = await r;
      loops.push(x);
      console.log(JSON.stringify(x));
    };
    /** `BENCH_WARMUP_SECONDS` of the same requests on other customers (JIT, connections), then the measured run. */
    const measure = async (scenario: string, make: (who: (typeof sample)[number]) => Promise<Reply>) => {
      if (WARMUP > 0) await drive(`${scenario} warm-up`, 1, WARMUP, (i) => make(pickWarm(i)));
      await loop(drive(scenario, 1, SECONDS, (i) => make(pick(i))));
    };
    await measure('GET /customers/:id (1 client)', (who) =>
      call(port, 'GET', `/api/private/v1/customers/${who.id}`, sk),
    );
    await measure('POST /customers/resolve (1 client)', (who) =>
      call(port, 'POST', '/api/private/v1/customers/resolve', sk, {
        customer: { type: 'email', value: who.email },
      }),
    );
    await measure('GET /customers (no term, 1 client)', () =>
      call(port, 'GET', '/api/private/v1/customers', sk),
    );
    await measure('GET /customers?search=<rare> (1 client)', (who) =>
      call(port, 'GET', `/api/private/v1/customers?search=${who.username}`, sk),
    );
    await measure('GET /customers?search=<common, 1%> (1 client)', () =>
      call(port, 'GET', '/api/private/v1/customers?search=@mail42.', sk),
    );

    // --- many connections: reads
    const rows: Row[] = [];
    rows.push(
      await single('GET /api/private/v1/info', service, READ_CONNECTIONS, {
        method: 'GET',
        path: '/api/private/v1/info',
        headers: sk,
      }),
    );
    rows.push(
      await versus('GET /customers/:id', service, baseline, READ_CONNECTIONS, () => {
        const next = rotating(sample);
        return {
          method: 'GET',
          path: '/',
          headers: sk,
          setupRequest: (r) => ({ ...r, path: `/api/private/v1/customers/${next().id}` }),
        };
      }),
    );
    {
      const next = rotating(sample);
      rows.push(
        await single('POST /customers/resolve (email)', service, READ_CONNECTIONS, {
          method: 'POST',
          path: '/api/private/v1/customers/resolve',
          headers: json,
          setupRequest: (r) => ({
            ...r,
            body: JSON.stringify({ customer: { type: 'email', value: next().email } }),
          }),
        }),
      );
    }
    {
      const next = rotating(sample);
      rows.push(
        await single('GET /customers?search=<rare>', service, READ_CONNECTIONS, {
          method: 'GET',
          path: '/',
          headers: sk,
          setupRequest: (r) => ({ ...r, path: `/api/private/v1/customers?search=${next().username}` }),
        }),
      );
    }

    // --- plans and codes: two batches of codes, one per side, never shared
    const plans = [];
    for (const [slug, value] of [
      ['basic', 10],
      ['pro', 20],
      ['max', 40],
    ] as const) {
      plans.push(
        (
          await call(port, 'POST', '/api/private/v1/plans', sk, {
            slug,
            name: slug.toUpperCase(),
            value,
            group: 'tier',
          })
        ).body.data,
      );
    }
    const plan = plans[1];
    rows.push(
      await single('GET /plans', service, READ_CONNECTIONS, {
        method: 'GET',
        path: '/api/private/v1/plans',
        headers: sk,
      }),
    );

    const codes: string[] = [];
    await loop(
      drive(
        `POST /codes (batch of ${BATCH.toLocaleString()})`,
        1,
        3600,
        async () => {
          const reply = await call(port, 'POST', '/api/private/v1/codes', sk, {
            planId: plan.id,
            duration: 'P30D',
            count: BATCH,
          });
          codes.push(...(reply.body.data?.codes ?? []));
          return reply;
        },
        Math.ceil((2 * CODES_PER_SIDE) / BATCH),
      ),
    );
    const codesOf = {
      service: codes.slice(0, CODES_PER_SIDE),
      baseline: codes.slice(CODES_PER_SIDE, 2 * CODES_PER_SIDE),
    };
    // distinct customers too: even positions for the service, odd ones for the baseline
    const usernames: string[] = (
      await db.query('SELECT username FROM customers WHERE project_id = $1 ORDER BY id LIMIT $2', [
        project.id,
        2 * CODES_PER_SIDE,
      ])
    ).rows.map((r) => r.username);
    const customersOf = {
      service: usernames.filter((_, i) => i % 2 === 0),
      baseline: usernames.filter((_, i) => i % 2 === 1),
    };

    // --- redemptions: distinct codes and customers, service against baseline
    const used = { service: 0, baseline: 0 };
    // The seed analyzed `subscriptions` while it was empty, and the warm-up has just filled it
    // faster than autovacuum looks (once a minute). A generic plan the service cached meanwhile
    // would scan the whole table for each customer's chain until then (README, prepared
    // statements), while the baseline plans every statement afresh: the steady state is measured.
    const analyze = () => db.query('ANALYZE subscriptions, codes').then(() => undefined);
    rows.push(
      await versus(
        'POST /redemptions (distinct codes)',
        service,
        baseline,
        REDEEM_CONNECTIONS,
        (side) => ({
          method: 'POST',
          path: '/api/private/v1/redemptions',
          headers: json,
          setupRequest: (r) => {
            const i = used[side.name]++;
            const list = codesOf[side.name];
            const who = customersOf[side.name];
            // past the end the codes repeat and answer 409 (counted as errors): raise BENCH_CODES
            return {
              ...r,
              body: JSON.stringify({
                code: list[i % list.length],
                customer: { type: 'username', value: who[i % who.length] },
              }),
            };
          },
        }),
        analyze,
      ),
    );

    // --- entitlements: a metered feature with a monthly quota far above what the run uses,
    // granted to the 10,000 sampled customers (windows written straight into the chain, as a
    // grant would leave them), then checks and consumes spread over them, and consumes on one
    // hot customer (serialised by its row lock); ratios against GET /customers/:id above
    const feature = (
      await call(port, 'POST', '/api/private/v1/features', sk, {
        slug: 'api-calls',
        name: 'API calls',
        metered: true,
        unit: 'call',
      })
    ).body.data;
    const meteredPlan = (
      await call(port, 'POST', '/api/private/v1/plans', sk, {
        slug: 'metered',
        name: 'Metered',
        value: 5,
        group: 'usage',
        quotas: [{ featureId: feature.id, limit: 1_000_000_000, priority: 0, resetInterval: 'P1M' }],
      })
    ).body.data;
    await db.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
       SELECT $1, id, $2, 'usage', now() - interval '3 days', NULL, 'activation' FROM unnest($3::int[]) AS id`,
      [project.id, meteredPlan.id, sample.map((c) => c.id)],
    );
    await db.query('ANALYZE subscriptions');
    {
      const next = rotating(sample);
      const checkRequest: autocannon.Request = {
        method: 'POST',
        path: '/api/private/v1/entitlements/check',
        headers: json,
        setupRequest: (r) => ({
          ...r,
          body: JSON.stringify({ customerId: next().id, feature: 'api-calls', amount: 1 }),
        }),
      };
      // warm-up: the connections' prepared statements, and each process's periods of the customers
      if (WARMUP > 0) await cannon('entitlements warm-up', service, READ_CONNECTIONS, WARMUP, checkRequest);
      rows.push(
        await single('POST /entitlements/check (10,000 customers)', service, READ_CONNECTIONS, checkRequest),
      );
    }
    let eventSeq = 0;
    {
      const next = rotating(sample);
      rows.push(
        await single('POST /usage (10,000 customers)', service, READ_CONNECTIONS, {
          method: 'POST',
          path: '/api/private/v1/usage',
          headers: json,
          setupRequest: (r) => ({
            ...r,
            body: JSON.stringify({
              customerId: next().id,
              feature: 'api-calls',
              amount: 1,
              eventId: `bench-${++eventSeq}`,
            }),
          }),
        }),
      );
    }
    rows.push(
      await single('POST /usage (one hot customer)', service, READ_CONNECTIONS, {
        method: 'POST',
        path: '/api/private/v1/usage',
        headers: json,
        setupRequest: (r) => ({
          ...r,
          body: JSON.stringify({
            customerId: sample[0].id,
            feature: 'api-calls',
            amount: 1,
            eventId: `hot-${++eventSeq}`,
          }),
        }),
      }),
    );
    await db.end();
    const exhausted = (['service', 'baseline'] as const).filter((s) => used[s] > codesOf[s].length);

    // --- report
    const serviceMem = memoryOf(service.pid);
    const baselineMem = memoryOf(baseline.pid);
    const cpu = cpus();
    console.log(
      `\nmachine: ${cpu.length} × ${cpu[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()} ${release()}, node ${process.version}, PostgreSQL ${pgVersion}`,
    );
    console.log(
      `settings: BENCH_CUSTOMERS=${CUSTOMERS} BENCH_SECONDS=${SECONDS} BENCH_ROUNDS=${ROUNDS} BENCH_WARMUP_SECONDS=${WARMUP} BENCH_CONNECTIONS=${READ_CONNECTIONS} BENCH_REDEEM_CONNECTIONS=${REDEEM_CONNECTIONS} BENCH_CODES=${CODES_PER_SIDE} (per side), pool ${POOL_SIZE}, LOG_LEVEL=${LOG_LEVEL}`,
    );
    if (exhausted.length)
      console.log(
        `WARNING: codes ran out for ${exhausted.join(', ')} (used ${JSON.stringify(used)}): raise BENCH_CODES`,
      );

    console.log('\n1 client (hand-written keep-alive loop):\n');
    console.log(
      '| scenario | requests | req/s | p50 ms | p95 ms | p99 ms | errors |\n|---|---|---|---|---|---|---|',
    );
    for (const r of loops)
      console.log(
        `| ${r.scenario} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p95} | ${r.p99} | ${r.errors} |`,
      );

    console.log(
      `\nautocannon, ${SECONDS} s per run; rows with a baseline: median of ${ROUNDS} alternating rounds, ratio = median of the per-round service/baseline req/s:\n`,
    );
    console.log(
      '| scenario | connections | req/s | p50 ms | p99 ms | errors | peak RSS MiB | CPU ms/req | baseline req/s | baseline p99 ms | baseline CPU ms/req | ratio |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const row of rows) {
      const s = row.service;
      const b = row.baseline;
      const m = (runs: CannonRun[], f: (r: CannonRun) => number) => round2(median(runs.map(f)));
      const errors = s.reduce((n, r) => n + r.errors, 0);
      const peak = Math.max(...s.map((r) => r.peakRss));
      const base = b.length
        ? `${m(b, (r) => r.rps)} | ${m(b, (r) => r.p99)} | ${m(b, (r) => r.cpuMsPerRequest)} | **${row.ratio}**`
        : '– | – | – | –';
      console.log(
        `| ${row.scenario} | ${row.connections} | ${m(s, (r) => r.rps)} | ${m(s, (r) => r.p50)} | ${m(s, (r) => r.p99)} | ${errors} | ${round2(peak)} | ${m(s, (r) => r.cpuMsPerRequest)} | ${base} |`,
      );
    }
    const rpsOf = (scenario: string) =>
      median(rows.find((r) => r.scenario === scenario)?.service.map((r) => r.rps) ?? [NaN]);
    const byId = rpsOf('GET /customers/:id');
    console.log('\nentitlements against GET /customers/:id (targets: check >= 0.8, usage >= 0.5):');
    for (const scenario of [
      'POST /entitlements/check (10,000 customers)',
      'POST /usage (10,000 customers)',
      'POST /usage (one hot customer)',
    ])
      console.log(`${scenario}: ${round2(rpsOf(scenario))} req/s, ratio ${round2(rpsOf(scenario) / byId)}`);
    const baselineErrors = rows.flatMap((r) => r.baseline).reduce((n, r) => n + r.errors, 0);
    const peakOf = (hwm: number, runs: CannonRun[]) =>
      round2(Math.max(hwm, ...runs.map((r) => r.peakRss).filter((x) => !Number.isNaN(x))));
    console.log('');
    for (const row of rows.filter((r) => r.ratios))
      console.log(
        `${row.scenario}: service/baseline req/s per round ${row.ratios!.join(', ')} → median ${row.ratio}`,
      );
    console.log(
      `peak RSS over the whole run: service ${peakOf(
        serviceMem.hwm,
        rows.flatMap((r) => r.service),
      )} MiB, baseline ${peakOf(
        baselineMem.hwm,
        rows.flatMap((r) => r.baseline),
      )} MiB; baseline errors ${baselineErrors}; total time ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  } finally {
    process.removeListener('SIGINT', onSignal);
    await Promise.all([stopChild(serviceProcess), stopChild(baselineProcess)]);
    agent.destroy();
    if (embedded) await embedded.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
