// Scale-out: three instances of the service, each with its own pool through one PgBouncer in
// transaction mode, behind a small round-robin HTTP proxy (loopback), under redemption and usage load.
// Exactly-once must hold across instances: every code has one winner, every loser gets
// 409 CODE_ALREADY_REDEEMED, and each customer's chain stays one line of windows; metered usage
// never goes past a quota's limit (exactly L records, the rest 409 QUOTA_EXCEEDED), and one eventId
// sent through every instance at once is recorded once, the others answered `replayed: true`.
import { createServer, request as httpRequest, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Client } from 'pg';
import { bearer, createTestApp, poolerKeepsPreparedStatements, TestApp, TestProject } from './support/app';
import { createTestDatabase } from './support/database';
import { PgBouncer, pgbouncerBinary, pgbouncerVersion, startPgBouncer } from './support/pgbouncer';

const available = pgbouncerBinary() !== undefined;
if (!available && process.env.TEST_REQUIRE_ENGINES === '1')
  throw new Error('TEST_REQUIRE_ENGINES=1 but pgbouncer is not installed (apt-get install -y pgbouncer)');
if (!available) process.stderr.write('pgbouncer is not installed: the scale-out test is SKIPPED\n');
const suite = available ? describe : describe.skip;

/** A round-robin reverse proxy over `targets` (ports on 127.0.0.1); counts the requests each one got. */
function roundRobinProxy(targets: number[]): Promise<{ server: Server; port: number; served: number[] }> {
  const served = targets.map(() => 0);
  let next = 0;
  const server = createServer((req, res) => {
    const i = next++ % targets.length;
    served[i]++;
    const upstream = httpRequest(
      { host: '127.0.0.1', port: targets[i], method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 5000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, port: (server.address() as AddressInfo).port, served }),
    ),
  );
}

/** POSTs `body` as JSON to 127.0.0.1:`port`; resolves with the status and the parsed answer. */
function post(port: number, path: string, headers: Record<string, string>, body: unknown, agent: unknown) {
  return new Promise<{
    status: number;
    body: { ok: boolean; data?: any; error?: { code: string } };
  }>((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: agent as never,
        headers: {
          ...headers,
          'Content-Type': 'application/json',
          'Content-Length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Runs `tasks` with at most `concurrency` in flight. */
async function pool<T>(tasks: Array<() => Promise<T>>, concurrency: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (i < tasks.length) {
        const mine = i++;
        results[mine] = await tasks[mine]();
      }
    }),
  );
  return results;
}

suite('scale-out: three instances behind a round-robin proxy, through PgBouncer', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let bouncer: PgBouncer;
  let t: TestApp;
  const instances: NestExpressApplication[] = [];
  const ports: number[] = [];
  let proxy: Awaited<ReturnType<typeof roundRobinProxy>>;
  let project: TestProject;
  let planId: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    bouncer = await startPgBouncer(db.url, { default_pool_size: '20' });
    const env = {
      DATABASE_URL: bouncer.via(db.url),
      DATABASE_DIRECT_URL: db.url,
      DB_PREPARED_STATEMENTS: String(poolerKeepsPreparedStatements(pgbouncerVersion())),
      DB_POOL_SIZE: '10',
    };
    t = await createTestApp(env, { database: { url: db.url, drop: async () => undefined } });
    instances.push(t.app, await t.startReplica(), await t.startReplica());
    for (const app of instances) {
      await app.listen(0, '127.0.0.1');
      ports.push((app.getHttpServer().address() as AddressInfo).port);
    }
    proxy = await roundRobinProxy(ports);
    project = await t.createProject({ autoCreateCustomerAtRedemption: true });
    const plan = await t.http
      .post('/api/private/v1/plans')
      .set(bearer(project.privateKey))
      .send({ slug: 'pro', name: 'Pro', value: 10, group: 'tier' })
      .expect(201);
    planId = plan.body.data.id;
  }, 120_000);

  afterAll(async () => {
    proxy?.server.close();
    await t?.close(); // closes the other instances too
    await bouncer?.stop();
    await db?.drop();
  }, 60_000);

  const codes = async (count: number): Promise<string[]> => {
    const res = await t.http
      .post('/api/private/v1/codes')
      .set(bearer(project.privateKey))
      .send({ planId, duration: 'P30D', count })
      .expect(201);
    return res.body.data.codes;
  };

  /** Each code redeemed by `racers` different new customers at once; every request through `port`. */
  async function race(port: number, list: string[], racers: number, tag: string) {
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const tasks = list.flatMap((code, c) =>
      Array.from(
        { length: racers },
        (_, r) => () =>
          post(
            port,
            '/api/private/v1/redemptions',
            bearer(project.privateKey),
            {
              code,
              customer: { type: 'username', value: `${tag}_${c}_${r}`.padEnd(8, 'x') },
              autoCreate: true,
            },
            agent,
          ),
      ),
    );
    // interleave: the racers of one code are not next to each other
    const order = tasks.map((task, i) => ({
      task,
      key: (i % racers) * list.length + Math.floor(i / racers),
    }));
    order.sort((a, b) => a.key - b.key);
    const started = process.hrtime.bigint();
    const answers = await pool(
      order.map((o) => o.task),
      32,
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    agent.destroy();
    return { answers, seconds };
  }

  it('one code, one winner: every code redeemed exactly once across the three instances', async () => {
    const list = await codes(150);
    const { answers, seconds } = await race(proxy.port, list, 4, 'so');
    const ok = answers.filter((a) => a.status === 200);
    const lost = answers.filter((a) => a.status === 409);
    expect(ok).toHaveLength(list.length);
    expect(lost).toHaveLength(list.length * 3);
    expect(new Set(lost.map((a) => a.body.error?.code))).toEqual(new Set(['CODE_ALREADY_REDEEMED']));
    // every instance took its share
    expect(proxy.served.every((n) => n >= answers.length / 3 - 2)).toBe(true);

    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT c.code, c.status, count(s.id)::int AS windows
           FROM codes c LEFT JOIN subscriptions s ON s.code_id = c.id AND s.project_id = c.project_id
          WHERE c.project_id = $1 GROUP BY c.id`,
        [project.id],
      );
      expect(rows).toHaveLength(list.length);
      expect(rows.every((r) => r.status === 'redeemed' && r.windows === 1)).toBe(true);
    } finally {
      await client.end();
    }
    process.stdout.write(
      `scale-out: ${answers.length} redemption attempts (${list.length} codes x 4) through 3 instances in ${seconds.toFixed(2)} s: ${(answers.length / seconds).toFixed(0)} req/s, ${(list.length / seconds).toFixed(0)} redemptions/s\n`,
    );
  });

  it('one customer, many codes at once on different instances: every code granted once, the chain stays one line', async () => {
    const list = await codes(30);
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const answers = await Promise.all(
      list.map((code) =>
        post(
          proxy.port,
          '/api/private/v1/redemptions',
          bearer(project.privateKey),
          { code, customer: { type: 'username', value: 'one_customer' }, autoCreate: true },
          agent,
        ),
      ),
    );
    agent.destroy();
    expect(answers.map((a) => [a.status, a.body.error?.code])).toEqual(list.map(() => [200, undefined]));
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query(
        `SELECT s.valid_from, s.valid_to FROM subscriptions s JOIN customers c ON c.id = s.customer_id
          WHERE c.project_id = $1 AND c.username = 'one_customer' AND s.status = 'active' AND s.code_id IS NOT NULL
          ORDER BY s.valid_from`,
        [project.id],
      );
      expect(rows).toHaveLength(list.length);
      // 30 windows of 30 days end to end: no overlap, no gap
      for (let i = 1; i < rows.length; i++)
        expect(rows[i].valid_from.getTime()).toBe(rows[i - 1].valid_to.getTime());
    } finally {
      await client.end();
    }
  });

  let usageSeq = 0;
  /** A metered feature with a quota of `limit` on a new plan, granted to a new customer by redeeming a code. */
  async function meteredCustomer(limit: number): Promise<{ customerId: number; feature: string }> {
    const n = ++usageSeq;
    const auth = bearer(project.privateKey);
    const feature = await t.http
      .post('/api/private/v1/features')
      .set(auth)
      .send({ slug: `calls-${n}`, name: `Calls ${n}`, metered: true, unit: 'call' })
      .expect(201);
    const plan = await t.http
      .post('/api/private/v1/plans')
      .set(auth)
      .send({
        slug: `metered-${n}`,
        name: `Metered ${n}`,
        value: 10,
        group: `usage-${n}`,
        quotas: [{ featureId: feature.body.data.id, limit }],
      })
      .expect(201);
    const code = await t.http
      .post('/api/private/v1/codes')
      .set(auth)
      .send({ planId: plan.body.data.id, duration: 'P30D', count: 1 })
      .expect(201);
    const redeemed = await t.http
      .post('/api/private/v1/redemptions')
      .set(auth)
      .send({
        code: code.body.data.codes[0],
        customer: { type: 'username', value: `usage_customer_${n}` },
        autoCreate: true,
      })
      .expect(200);
    return { customerId: redeemed.body.data.customer.id, feature: `calls-${n}` };
  }

  /** `attempts` consumes of 1 (distinct eventIds) against a quota of `limit`, 32 in flight, through `port`. */
  async function consume(port: number, limit: number, attempts: number) {
    const { customerId, feature } = await meteredCustomer(limit);
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const tasks = Array.from(
      { length: attempts },
      (_, i) => () =>
        post(
          port,
          '/api/private/v1/usage',
          bearer(project.privateKey),
          { customerId, feature, amount: 1, eventId: `load-${customerId}-${i}` },
          agent,
        ),
    );
    const started = process.hrtime.bigint();
    const answers = await pool(tasks, 32);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    agent.destroy();
    expect(answers.filter((a) => a.status === 201)).toHaveLength(limit);
    const refused = answers.filter((a) => a.status === 409);
    expect(refused).toHaveLength(attempts - limit);
    expect(new Set(refused.map((a) => a.body.error?.code))).toEqual(new Set(['QUOTA_EXCEEDED']));
    // the ledger, through HTTP: exactly `limit` records for this customer
    const ledger = await t.http
      .get(`/api/private/v1/customers/${customerId}/usage?pageSize=100`)
      .set(bearer(project.privateKey))
      .expect(200);
    expect(ledger.body.data.total).toBe(limit);
    expect(ledger.body.data.data).toHaveLength(limit);
    const balance = answers.filter((a) => a.status === 201).map((a) => a.body.data.balance.used);
    expect(new Set(balance).size).toBe(limit); // each success saw its own count, 1..limit
    expect(Math.max(...balance)).toBe(limit);
    return { answers, seconds };
  }

  it('usage never past a limit: 120 concurrent consumes of 1 against a quota of 40 across the three instances → exactly 40 records', async () => {
    const before = [...proxy.served];
    const { answers, seconds } = await consume(proxy.port, 40, 120);
    // every instance took its share of the usage load
    expect(proxy.served.every((n, i) => n - before[i] >= answers.length / 3 - 2)).toBe(true);
    process.stdout.write(
      `scale-out usage: ${answers.length} consumes (quota 40) through 3 instances in ${seconds.toFixed(2)} s: ${(answers.length / seconds).toFixed(0)} req/s, ${(40 / seconds).toFixed(0)} usage records/s\n`,
    );
  });

  it('the same eventId sent at once through every instance: one record, the others replayed: true with the same usage', async () => {
    const { customerId, feature } = await meteredCustomer(100);
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    // 4 through each instance directly, all at once
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        post(
          ports[i % 3],
          '/api/private/v1/usage',
          bearer(project.privateKey),
          { customerId, feature, amount: 1, eventId: 'same-everywhere' },
          agent,
        ),
      ),
    );
    agent.destroy();
    const created = answers.filter((a) => a.status === 201);
    expect(created).toHaveLength(1);
    const replays = answers.filter((a) => a.status === 200);
    expect(replays).toHaveLength(11);
    const id = created[0].body.data.usage.id;
    for (const r of replays) expect(r.body.data).toMatchObject({ replayed: true, usage: { id } });
    const ledger = await t.http
      .get(`/api/private/v1/customers/${customerId}/usage`)
      .set(bearer(project.privateKey))
      .expect(200);
    expect(ledger.body.data.total).toBe(1);
    expect(ledger.body.data.data[0].id).toBe(id);
  });

  it('the same usage load through one instance, for comparison (figures in docs/benchmarks.md#scale-out-test)', async () => {
    const { answers, seconds } = await consume(ports[0], 40, 120);
    process.stdout.write(
      `one instance usage: ${answers.length} consumes (quota 40) in ${seconds.toFixed(2)} s: ${(answers.length / seconds).toFixed(0)} req/s, ${(40 / seconds).toFixed(0)} usage records/s\n`,
    );
  });

  it('the same load through one instance, for comparison (figures in docs/benchmarks.md#scale-out-test)', async () => {
    const list = await codes(150);
    const { answers, seconds } = await race(ports[0], list, 4, 'one');
    expect(answers.filter((a) => a.status === 200)).toHaveLength(list.length);
    process.stdout.write(
      `one instance: ${answers.length} redemption attempts (${list.length} codes x 4) in ${seconds.toFixed(2)} s: ${(answers.length / seconds).toFixed(0)} req/s, ${(list.length / seconds).toFixed(0)} redemptions/s\n`,
    );
  });
});
