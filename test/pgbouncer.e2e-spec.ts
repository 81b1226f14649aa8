// The service behind PgBouncer in transaction mode (Debian's package, 1.18 on these machines):
// the prepared-statement check at start, and the hot statements under concurrency through it.
// The HTTP suites themselves run through PgBouncer with TEST_PGBOUNCER=1 (see .ci/run).
import { Client } from 'pg';
import request from 'supertest';
import { Statements } from '../src/database/statements';
import { probePooler } from '../src/database/pooler-probe';
import { bearer, createTestApp, poolerKeepsPreparedStatements, startApp, TestApp } from './support/app';
import { createTestDatabase } from './support/database';
import { PgBouncer, pgbouncerBinary, pgbouncerVersion, startPgBouncer } from './support/pgbouncer';

const available = pgbouncerBinary() !== undefined;
if (!available && process.env.TEST_REQUIRE_ENGINES === '1')
  throw new Error('TEST_REQUIRE_ENGINES=1 but pgbouncer is not installed (apt-get install -y pgbouncer)');
if (!available) process.stderr.write('pgbouncer is not installed: the PgBouncer tests are SKIPPED\n');
const suite = available ? describe : describe.skip;

suite('behind PgBouncer in transaction mode', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let bouncer: PgBouncer;
  const keeps = poolerKeepsPreparedStatements(pgbouncerVersion());

  beforeAll(async () => {
    db = await createTestDatabase();
    bouncer = await startPgBouncer(db.url);
  });
  afterAll(async () => {
    await bouncer?.stop();
    await db?.drop();
  });

  it('the probe tells a direct connection from a transaction pooler, and whether prepared statements survive it', async () => {
    expect(await probePooler(db.url)).toEqual({ transactionPooled: false, prepares: true });
    expect(await probePooler(bouncer.via(db.url))).toEqual({ transactionPooled: true, prepares: keeps });
  });

  it('what the probe guards against: below 1.21 a named statement of one client breaks the next client on that server connection', async () => {
    if (keeps) return; // PgBouncer 1.21+ rewrites the names: nothing to show
    const a = new Client({ connectionString: bouncer.via(db.url) });
    const b = new Client({ connectionString: bouncer.via(db.url) });
    await a.connect();
    await b.connect();
    try {
      await a.query({ name: 'hot', text: 'SELECT 1' });
      await expect(b.query({ name: 'hot', text: 'SELECT 1' })).rejects.toMatchObject({ code: '42P05' });
    } finally {
      await a.end();
      await b.end();
    }
  });

  describe('an instance started with DB_PREPARED_STATEMENTS=true through the pooler', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(
        { DATABASE_URL: bouncer.via(db.url), DATABASE_DIRECT_URL: db.url, DB_PREPARED_STATEMENTS: 'true' },
        { database: { url: db.url, drop: async () => undefined } },
      );
    });
    afterAll(() => t?.close());

    it(`${keeps ? 'keeps' : 'turns off'} prepared statements, and the hot statements work from many connections at once`, async () => {
      expect(t.app.get(Statements).prepared).toBe(keeps);
      const project = await t.createProject();
      const auth = bearer(project.privateKey);
      const ids: number[] = [];
      for (let i = 0; i < 8; i++) {
        const res = await t.http
          .post('/api/private/v1/customers')
          .set(auth)
          .send({ username: `pooled_${i}_xx` })
          .expect(201);
        ids.push(res.body.data.id);
      }
      // reads of the hot statements on every pooled connection, interleaved with others' transactions
      const server = t.app.getHttpServer();
      const answers = await Promise.all(
        Array.from({ length: 120 }, (_, i) =>
          i % 3 === 0
            ? request(server).get('/api/private/v1/customers').set(auth)
            : request(server)
                .get(`/api/private/v1/customers/${ids[i % ids.length]}`)
                .set(auth),
        ),
      );
      expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    });

    it('the connections really go through PgBouncer (its admin console lists the database)', async () => {
      const admin = new Client({
        connectionString: bouncer.via(db.url).replace(/\/[^/?]+(\?|$)/, '/pgbouncer$1'),
      });
      await admin.connect();
      try {
        const { rows } = await admin.query('SHOW POOLS');
        expect(rows.map((r: { database: string }) => r.database)).toContain(db.name);
      } finally {
        await admin.end();
      }
    });
  });

  it('an instance on a direct connection keeps its prepared statements', async () => {
    const app = await startApp({
      DATABASE_URL: db.url,
      SECRET_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      LOG_LEVEL: 'silent',
      DB_MIGRATE_ON_START: 'false',
      DB_PREPARED_STATEMENTS: 'true',
    });
    try {
      expect(app.get(Statements).prepared).toBe(true);
    } finally {
      await app.close();
    }
  });
});
