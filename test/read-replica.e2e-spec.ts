// Read replicas (DATABASE_READ_URL) on a real streaming replica: a primary and a replica made
// with pg_basebackup, both of this test's own (temporary directory, free ports), from the
// machine's PostgreSQL installation. The replica's replay is paused to make it visibly stale:
// a read that misses a row the primary has was served by the replica.
import { Client } from 'pg';
import { ReadReplicas } from '../src/database/read-replicas';
import { migrateWithLock } from '../src/database/migrator';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { PgCluster, PgServer, pgBinDir, startPrimary } from './support/pg-cluster';

const available = pgBinDir() !== undefined;
if (!available && process.env.TEST_REQUIRE_ENGINES === '1')
  throw new Error(
    'TEST_REQUIRE_ENGINES=1 but PostgreSQL 15 (initdb, pg_ctl, pg_basebackup) is not installed',
  );
if (!available)
  process.stderr.write(
    'PostgreSQL server binaries not found (PG_BIN_DIR): the read replica tests are SKIPPED\n',
  );
const suite = available ? describe : describe.skip;

async function sql<T = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

async function eventually(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 20_000) {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

suite('read replicas (DATABASE_READ_URL) on a streaming replica', () => {
  let cluster: PgCluster;
  let replica: PgServer;
  let t: TestApp;
  let reads: ReadReplicas;
  let p: TestProject; // the project that writes through the service
  let q: TestProject; // a project whose rows the test writes behind the service's back

  const primaryUrl = () => cluster.primary.url('app');
  const replicaUrl = () => replica.url('app');
  const customers = async (project: TestProject, search?: string) => {
    const res = await t.http
      .get('/api/private/v1/customers')
      .query({ pageSize: 100, ...(search ? { search } : {}) })
      .set(bearer(project.privateKey))
      .expect(200);
    return (res.body.data.data as Array<{ username: string }>).map((c) => c.username);
  };
  /** A customer inserted on the primary without the service (so no write is noted for `project`). */
  const insertBehindTheService = async (project: TestProject, username: string) => {
    const [row] = await sql<{ id: number }>(
      primaryUrl(),
      'INSERT INTO customers (project_id, username) VALUES ($1, $2) RETURNING id',
      [project.id, username],
    );
    await sql(
      primaryUrl(),
      `INSERT INTO customer_identifiers (project_id, customer_id, type, value, readonly) VALUES ($1, $2, 'username', $3, true)`,
      [project.id, row.id, username],
    );
    return row.id;
  };
  const pauseReplay = () => sql(replicaUrl(), 'SELECT pg_wal_replay_pause()');
  const resumeReplay = () => sql(replicaUrl(), 'SELECT pg_wal_replay_resume()');
  const onReplica = (project: TestProject) => reads.target(project.id) !== 'primary';

  beforeAll(async () => {
    cluster = await startPrimary();
    await sql(cluster.primary.url('postgres'), 'CREATE DATABASE app');
    await migrateWithLock(primaryUrl());
    replica = await cluster.addReplica();
    t = await createTestApp(
      {
        // the second URL leads nowhere: a dead replica among live ones gets no reads
        DATABASE_READ_URL: `${replicaUrl()}, postgres://postgres@127.0.0.1:1/app`,
        DB_READ_CHECK_INTERVAL_MS: '100',
        DB_READ_MAX_LAG_MS: '60000',
      },
      { database: { url: primaryUrl(), drop: async () => undefined } },
    );
    reads = t.app.get(ReadReplicas);
    p = await t.createProject();
    q = await t.createProject();
    await eventually('the replica is caught up', () => onReplica(p) && onReplica(q));
  }, 120_000);

  afterAll(async () => {
    await t?.close();
    cluster?.destroy();
  }, 60_000);

  it('the replica is a streaming standby of the primary', async () => {
    const [standby] = await sql<{ r: boolean }>(replicaUrl(), 'SELECT pg_is_in_recovery() AS r');
    expect(standby.r).toBe(true);
    const senders = await sql(cluster.primary.url('postgres'), 'SELECT state FROM pg_stat_replication');
    expect(senders).toEqual([{ state: 'streaming' }]);
  });

  it('lists are served by the replica: a row the replica has not replayed is not listed, an exact read finds it on the primary', async () => {
    await pauseReplay();
    try {
      const id = await insertBehindTheService(q, 'behind_replica');
      expect(await customers(q)).not.toContain('behind_replica'); // the replica answered
      expect(await customers(q, 'behind_rep')).not.toContain('behind_replica'); // search too
      const got = await t.http.get(`/api/private/v1/customers/${id}`).set(bearer(q.privateKey)).expect(200); // an exact read: the primary
      expect(got.body.data.username).toBe('behind_replica');
      await t.http
        .post('/api/private/v1/customers/resolve')
        .set(bearer(q.privateKey))
        .send({ customer: { type: 'username', value: 'behind_replica' } })
        .expect(200);
    } finally {
      await resumeReplay();
    }
    await eventually('the replica replays the row', async () =>
      (await customers(q)).includes('behind_replica'),
    );
  });

  it('a caller reads its own writes: after a write through the service its lists come from the primary until the replica has it', async () => {
    await pauseReplay();
    try {
      const created = await t.http
        .post('/api/private/v1/customers')
        .set(bearer(p.privateKey))
        .send({ username: 'fresh_write' })
        .expect(201);
      expect(reads.target(p.id)).toBe('primary');
      expect(await customers(p)).toContain('fresh_write');
      expect(await customers(p, 'fresh_wr')).toContain('fresh_write');
      const feature = await t.http
        .post('/api/private/v1/features')
        .set(bearer(p.privateKey))
        .send({ slug: 'seats', name: 'Seats', metered: true, unit: 'seat' })
        .expect(201);
      const plan = await t.http
        .post('/api/private/v1/plans')
        .set(bearer(p.privateKey))
        .send({
          slug: 'pro',
          name: 'Pro',
          value: 10,
          group: 'tier',
          quotas: [{ featureId: feature.body.data.id, limit: 5, priority: 1, resetInterval: 'P1M' }],
        })
        .expect(201);
      const plans = await t.http.get('/api/private/v1/plans').set(bearer(p.privateKey)).expect(200);
      expect(plans.body.data.data.map((x: { slug: string }) => x.slug)).toContain('pro');
      const features = await t.http.get('/api/private/v1/features').set(bearer(p.privateKey)).expect(200);
      expect(features.body.data.data.map((x: { slug: string }) => x.slug)).toContain('seats');

      // redemption, entitlements, idempotency: on the primary, whatever the replica lags
      const batch = await t.http
        .post('/api/private/v1/codes')
        .set(bearer(p.privateKey))
        .send({ planId: plan.body.data.id, duration: 'P30D', count: 1 })
        .expect(201);
      const codes = await t.http.get('/api/private/v1/codes').set(bearer(p.privateKey)).expect(200);
      expect(codes.body.data.total).toBe(1);
      const code = batch.body.data.codes[0];
      const redeem = () =>
        t.http
          .post('/api/private/v1/redemptions')
          .set(bearer(p.privateKey))
          .set('Idempotency-Key', 'replica-redeem-1')
          .send({ code, customer: { type: 'username', value: 'fresh_write' } });
      const first = await redeem().expect(200);
      const again = await redeem().expect(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      const subs = await t.http
        .get(`/api/private/v1/customers/${created.body.data.id}/subscriptions`)
        .set(bearer(p.privateKey))
        .expect(200);
      expect(JSON.stringify(subs.body.data)).toContain('"planName":"Pro"');

      // a key made just now works at once (key checks read the primary)
      const key = await t.http
        .post(`/api/admin/v1/projects/${p.id}/keys`)
        .set(bearer('test-admin-token-0123456789abcdef'))
        .send({ kind: 'private' })
        .expect(201);
      await t.http.get('/api/private/v1/info').set(bearer(key.body.data.key)).expect(200);
    } finally {
      await resumeReplay();
    }
    await eventually('the replica catches up with the project', () => onReplica(p));
    expect(await customers(p)).toContain('fresh_write');
  });

  it('another instance, which did not see the write, may list stale rows for up to DB_READ_MAX_LAG_MS, then reads the primary', async () => {
    const other = await t.startReplica({ DB_READ_CHECK_INTERVAL_MS: '100', DB_READ_MAX_LAG_MS: '1000' });
    const otherReads = other.get(ReadReplicas);
    await eventually('the other instance uses the replica', () => otherReads.target(q.id) !== 'primary');
    await pauseReplay();
    try {
      await insertBehindTheService(q, 'lagging_row');
      // the replica falls more than 1 s behind: the other instance stops reading it
      await eventually(
        'the other instance leaves the lagging replica',
        () => otherReads.target(q.id) === 'primary',
      );
      const { default: request } = await import('supertest');
      const res = await request(other.getHttpServer())
        .get('/api/private/v1/customers')
        .set(bearer(q.privateKey))
        .expect(200);
      expect(res.body.data.data.map((c: { username: string }) => c.username)).toContain('lagging_row');
    } finally {
      await resumeReplay();
    }
    await eventually(
      'the other instance returns to the replica',
      () => otherReads.target(q.id) !== 'primary',
    );
  });

  it('keeps serving from the primary when the replica is stopped, and uses it again once it is back', async () => {
    replica.stop();
    await insertBehindTheService(q, 'while_down');
    for (let i = 0; i < 5; i++) expect(await customers(q)).toContain('while_down');
    expect(reads.target(q.id)).toBe('primary');
    replica.start();
    await eventually('the replica is used again', () => onReplica(q), 30_000);
    expect(await customers(q)).toContain('while_down');
  });

  it('another project stays invisible through the replica too', async () => {
    const res = await t.http.get('/api/private/v1/customers').set(bearer(q.privateKey)).expect(200);
    expect(res.body.data.data.map((c: { username: string }) => c.username)).not.toContain('fresh_write');
    expect(res.body.data.data.map((c: { username: string }) => c.username)).toContain('behind_replica');
  });
});
