import request from 'supertest';
import { Clock } from '../src/common/clock';
import { LedgerPartitionsScheduler } from '../src/entitlements/ledger-partitions.scheduler';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';

const P = '/api/private/v1';

/** `<table>_p<yyyymm>` of the UTC month `k` months after the one holding `at`. */
const monthName = (table: string, at: Date, k = 0) =>
  `${table}_p${new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + k, 1)).toISOString().slice(0, 7).replace('-', '')}`;

/**
 * The ledger split by month (docs/operations.md#partitioned-tables), through HTTP on a real
 * PostgreSQL: partitions made ahead, a write no partition covers kept in the DEFAULT one and
 * counted, the exactly-once rule across months (`usage_event_ids`), and USAGE_RETENTION_MONTHS
 * dropping whole months while replays, balances and reversals of recent records stay right.
 */
describe('the ledger partitioned by month', () => {
  let t: TestApp;
  let a: TestProject;
  let clock: Clock;
  let seq = 0;
  const A = () => bearer(a.privateKey);

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject();
    clock = t.app.get(Clock);
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  const setNow = (iso: string | Date) => {
    const d = new Date(iso);
    jest.spyOn(clock, 'now').mockImplementation(() => new Date(d));
  };

  /** A metered feature with a permanent plan window of `limit` a month for a new customer. */
  async function setup(limit = 100): Promise<{ customerId: number; feature: string; featureId: number }> {
    const slug = `f-${++seq}`;
    const f = await t.http
      .post(`${P}/features`)
      .set(A())
      .send({ slug, name: slug, metered: true, unit: 'call' });
    expect(f.status).toBe(201);
    const p = await t.http
      .post(`${P}/plans`)
      .set(A())
      .send({
        slug: `p-${seq}`,
        name: `p-${seq}`,
        value: 10,
        group: 'tier',
        quotas: [{ featureId: f.body.data.id, limit, resetInterval: 'P1M' }],
      });
    expect(p.status).toBe(201);
    const c = await t.http
      .post(`${P}/customers`)
      .set(A())
      .send({ username: `ledger${String(++seq).padStart(6, '0')}` });
    expect(c.status).toBe(201);
    await t.dataSource.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, status)
       VALUES ($1, $2, $3, 'tier', '2025-01-01T00:00:00Z', NULL, 'activation', 'active')`,
      [a.id, c.body.data.id, p.body.data.id],
    );
    return { customerId: c.body.data.id, feature: slug, featureId: f.body.data.id };
  }

  const partitionOf = async (usageId: number | string) =>
    (
      await t.dataSource.query(`SELECT tableoid::regclass::text AS name FROM usage_records WHERE id = $1`, [
        usageId,
      ])
    )[0]?.name as string | undefined;

  const partitions = async (table: string): Promise<string[]> =>
    (
      await t.dataSource.query(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = $1::regclass ORDER BY 1`,
        [table],
      )
    ).map((r: { name: string }) => r.name);

  it('the service makes this month and the next two ahead; a record no month holds still succeeds, in DEFAULT, counted in /metrics', async () => {
    const now = new Date();
    for (const table of ['usage_records', 'usage_allocations'])
      expect(await partitions(table)).toEqual(
        expect.arrayContaining([
          `${table}_default`,
          monthName(table, now),
          monthName(table, now, 1),
          monthName(table, now, 2),
        ]),
      );

    const { customerId, feature } = await setup();
    setNow('2099-06-15T00:00:00Z');
    const res = await t.http
      .post(`${P}/usage`)
      .set(A())
      .send({ customerId, feature, amount: 1, eventId: 'far-1' });
    expect(res.status).toBe(201);
    expect(await partitionOf(res.body.data.usage.id)).toBe('usage_records_default');
    const metrics = await t.http.get('/metrics').expect(200);
    expect(metrics.text).toContain('db_partition_default_rows{table="usage_records"} 1');
    expect(metrics.text).toContain('db_partition_default_rows{table="usage_allocations"} 1');
  });

  it('replicas making partitions together: one at a time (an advisory lock, tried), each month once', async () => {
    const replica = await t.startReplica();
    const at = new Date('2031-01-15T00:00:00Z');
    const runs = await Promise.all([
      t.app.get(LedgerPartitionsScheduler).runOnce(at),
      replica.get(LedgerPartitionsScheduler).runOnce(at),
    ]);
    expect(runs.some((r) => r !== null)).toBe(true);
    const made = runs.flatMap((r) => r?.created ?? []);
    expect(made.filter((n) => n === 'usage_records_p203101')).toHaveLength(1);
    expect(await partitions('usage_records')).toEqual(
      expect.arrayContaining(['usage_records_p203101', 'usage_records_p203102', 'usage_records_p203103']),
    );
  });

  let old: { customerId: number; feature: string; usage: any; holdId: number };

  it('a replay of an event recorded months ago, in an old month’s partition, answers the replay (200, replayed: true); another amount is 409 USAGE_EVENT_CONFLICT', async () => {
    const { customerId, feature, featureId } = await setup();
    setNow('2025-03-10T12:00:00Z');
    // the month of the moved clock gets its partitions as a replica started then would make them
    await t.app.get(LedgerPartitionsScheduler).runOnce();
    const body = { customerId, feature, amount: 2, eventId: 'old-1' };
    const first = await t.http.post(`${P}/usage`).set(A()).send(body);
    expect(first.status).toBe(201);
    expect(await partitionOf(first.body.data.usage.id)).toBe('usage_records_p202503');
    // and a hold committed then, its record in the same month
    const held = await t.http
      .post(`${P}/usage/holds`)
      .set(A())
      .send({ customerId, featureId, amount: 1, holdId: 'old-hold-1' });
    expect(held.status).toBe(201);
    const committed = await t.http
      .post(`${P}/usage/holds/${held.body.data.hold.id}/commit`)
      .set(A())
      .send({});
    expect(committed.status).toBe(201);
    old = { customerId, feature, usage: first.body.data.usage, holdId: held.body.data.hold.id };

    jest.restoreAllMocks(); // back to the present
    const again = await t.http.post(`${P}/usage`).set(A()).send(body);
    expect(again.status).toBe(200);
    expect(again.body.data.replayed).toBe(true);
    expect(again.body.data.usage).toEqual(first.body.data.usage);
    expectError(
      await t.http
        .post(`${P}/usage`)
        .set(A())
        .send({ ...body, amount: 3 }),
      409,
      'USAGE_EVENT_CONFLICT',
    );
    // the replay found the record through usage_event_ids, not by scanning the months
    const [{ n }] = await t.dataSource.query(
      `SELECT count(*)::int AS n FROM usage_event_ids WHERE project_id = $1 AND customer_id = $2 AND event_id = 'old-1'`,
      [a.id, customerId],
    );
    expect(n).toBe(1);
  });

  it('USAGE_RETENTION_MONTHS drops whole months: a replay of a dropped record still answers (and conflicts), its reversal is 404 USAGE_NOT_FOUND, recent records and balances stay right', async () => {
    const now = new Date();
    // a record of this month, before the retention runs
    const recent = await t.http
      .post(`${P}/usage`)
      .set(A())
      .send({ customerId: old.customerId, feature: old.feature, amount: 5, eventId: 'new-1' });
    expect(recent.status).toBe(201);
    expect(recent.body.data.balance).toMatchObject({ limit: 100, used: 5, remaining: 95 });

    const replica = await t.startReplica({ USAGE_RETENTION_MONTHS: '12' });
    const result = await replica.get(LedgerPartitionsScheduler).runOnce(now);
    expect(result!.dropped).toEqual(
      expect.arrayContaining(['usage_allocations_p202503', 'usage_records_p202503']),
    );
    expect(await partitions('usage_records')).not.toContain('usage_records_p202503');
    expect(await partitions('usage_records')).toContain(monthName('usage_records', now));
    expect(await partitionOf(old.usage.id)).toBeUndefined();

    const again = await request(replica.getHttpServer())
      .post(`${P}/usage`)
      .set(A())
      .send({ customerId: old.customerId, feature: old.feature, amount: 2, eventId: 'old-1' });
    expect(again.status).toBe(200);
    expect(again.body.data.replayed).toBe(true);
    expect(again.body.data.usage).toMatchObject({
      id: old.usage.id,
      eventId: 'old-1',
      amount: 2,
      recordedAt: old.usage.recordedAt,
      allocations: [],
    });
    expectError(
      await t.http
        .post(`${P}/usage`)
        .set(A())
        .send({ customerId: old.customerId, feature: old.feature, amount: 3, eventId: 'old-1' }),
      409,
      'USAGE_EVENT_CONFLICT',
    );
    expectError(await t.http.post(`${P}/usage/${old.usage.id}/reverse`).set(A()), 404, 'USAGE_NOT_FOUND');
    // a replay of the commit of a hold whose record went with its month: 404 USAGE_NOT_FOUND, never a 500
    expectError(
      await t.http.post(`${P}/usage/holds/${old.holdId}/commit`).set(A()).send({}),
      404,
      'USAGE_NOT_FOUND',
    );
    const hold = await t.http.get(`${P}/usage/holds/${old.holdId}`).set(A());
    expect(hold.status).toBe(200);
    expect(hold.body.data.status).toBe('committed');

    // this month's usage is what it was; one more consume and a reversal of the recent record count right
    const more = await t.http
      .post(`${P}/usage`)
      .set(A())
      .send({ customerId: old.customerId, feature: old.feature, amount: 1, eventId: 'new-2' });
    expect(more.status).toBe(201);
    expect(more.body.data.balance).toMatchObject({ used: 6, remaining: 94 });
    const reversed = await t.http.post(`${P}/usage/${recent.body.data.usage.id}/reverse`).set(A());
    expect(reversed.status).toBe(200);
    expect(reversed.body.data.balance).toMatchObject({ used: 1, remaining: 99 });
  });
});
