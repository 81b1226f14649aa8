import { BoundaryScheduler } from '../src/events/boundary.scheduler';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';

const P = '/api/private/v1';
const DAY = 86_400_000;

/** `<table>_p<yyyymmdd>` of the UTC day holding `at`. */
const dayName = (table: string, at: Date) => `${table}_p${at.toISOString().slice(0, 10).replace(/-/g, '')}`;

/**
 * Events, deliveries and attempts split by UTC day (docs/events.md#retention), on a real
 * PostgreSQL: days made a week ahead, a day past the 30 days' retention dropped whole with its
 * deliveries and attempts (no DELETE), an event no day holds kept in DEFAULT and counted.
 */
describe('events partitioned by day', () => {
  let t: TestApp;
  let a: TestProject;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_WORKER_ENABLED: 'false', WEBHOOK_ALLOW_INSECURE_URLS: 'true' });
    a = await t.createProject();
  });
  afterAll(() => t.close());

  const partitions = async (table: string): Promise<string[]> =>
    (
      await t.dataSource.query(
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = $1::regclass ORDER BY 1`,
        [table],
      )
    ).map((r: { name: string }) => r.name);

  it('days are made a week ahead; a day past the retention goes whole, its deliveries and attempts with it; recent ones stay', async () => {
    const now = new Date();
    for (const table of ['events', 'webhook_deliveries', 'webhook_attempts']) {
      const names = await partitions(table);
      expect(names).toEqual(
        expect.arrayContaining([
          `${table}_default`,
          dayName(table, now),
          dayName(table, new Date(now.getTime() + 7 * DAY)),
        ]),
      );
    }
    const scheduler = t.app.get(BoundaryScheduler);
    // a day 40 days ago, as a replica running then made it, with an event delivered once
    const old = new Date(now.getTime() - 40 * DAY);
    await scheduler.maintainPartitions(old);
    const endpoint = await t.http
      .post(`${P}/webhook-endpoints`)
      .set(bearer(a.privateKey))
      .send({ url: 'http://127.0.0.1:9/hook' });
    expect(endpoint.status).toBe(201);
    await t.dataSource.query(
      `WITH e AS (INSERT INTO events (id, project_id, type, data, unique_key, created_at)
                  VALUES ('evt_old_partition_00000001', $1, 'code.revoked', '{}', 'old:1', $2) RETURNING id, created_at),
            k AS (INSERT INTO event_unique_keys (unique_key, created_at) SELECT 'old:1', created_at FROM e),
            d AS (INSERT INTO webhook_deliveries (project_id, event_id, event_created_at, endpoint_id, status, next_attempt_at)
                  SELECT $1, e.id, e.created_at, $3, 'failed', e.created_at FROM e RETURNING id, event_created_at)
       INSERT INTO webhook_attempts (delivery_id, event_created_at, attempted_at, outcome, duration_ms)
       SELECT d.id, d.event_created_at, d.event_created_at, 'failed', 5 FROM d`,
      [a.id, old, endpoint.body.data.id],
    );
    const [where] = await t.dataSource.query(
      `SELECT (SELECT tableoid::regclass::text FROM events WHERE id = 'evt_old_partition_00000001') AS event,
              (SELECT tableoid::regclass::text FROM webhook_deliveries WHERE event_id = 'evt_old_partition_00000001') AS delivery`,
    );
    expect(where).toEqual({ event: dayName('events', old), delivery: dayName('webhook_deliveries', old) });
    // a recent event (customer.created) and its delivery, made through the API
    const recent = await t.http
      .post(`${P}/customers`)
      .set(bearer(a.privateKey))
      .send({ username: 'recent01' });
    expect(recent.status).toBe(201);
    const count = async () =>
      (
        await t.dataSource.query(
          `SELECT (SELECT count(*)::int FROM events WHERE project_id = $1) AS events,
                  (SELECT count(*)::int FROM webhook_deliveries WHERE project_id = $1) AS deliveries,
                  (SELECT count(*)::int FROM event_unique_keys WHERE unique_key = 'old:1') AS keys`,
          [a.id],
        )
      )[0];
    const before = await count();

    const result = await scheduler.maintainPartitions(now);
    expect(result!.dropped).toEqual(
      expect.arrayContaining([
        dayName('events', old),
        dayName('webhook_deliveries', old),
        dayName('webhook_attempts', old),
      ]),
    );
    expect(await partitions('events')).not.toContain(dayName('events', old));
    expect(await partitions('events')).toContain(dayName('events', now));
    const after = await count();
    expect(before.events).toBeGreaterThanOrEqual(2);
    expect(before.deliveries).toBeGreaterThanOrEqual(2);
    expect(after).toEqual({ events: before.events - 1, deliveries: before.deliveries - 1, keys: 0 });
    expect(
      await t.dataSource.query(`SELECT 1 FROM webhook_attempts WHERE event_created_at = $1`, [old]),
    ).toEqual([]);
  });

  it('pages of events read day by day stay newest first: across days, ties on a day’s first instant, DEFAULT rows', async () => {
    const p = await t.createProject();
    const today = new Date(Math.floor(Date.now() / DAY) * DAY);
    const at = (days: number, ms = 0) => new Date(today.getTime() - days * DAY + ms).toISOString();
    // two events on today's first instant (their order is their ids'), others over the days before
    // (in DEFAULT here, where only today's days ahead were made) and the day after tomorrow
    const rows: Array<[string, string]> = [
      ['evt_days_0000000000000001', at(0)],
      ['evt_days_0000000000000002', at(0)],
      ['evt_days_0000000000000003', at(0, 3_600_000)],
      ['evt_days_0000000000000004', at(1, 5)],
      ['evt_days_0000000000000005', at(2)],
      ['evt_days_0000000000000006', at(5, 60_000)],
      ['evt_days_0000000000000007', at(20)],
      ['evt_days_0000000000000008', at(-2)],
      ['evt_days_0000000000000009', '2001-01-01T00:00:00.000Z'],
    ];
    for (const [id, createdAt] of rows)
      await t.dataSource.query(
        `INSERT INTO events (id, project_id, type, data, created_at) VALUES ($1, $2, 'code.revoked', '{}', $3)`,
        [id, p.id, createdAt],
      );
    const expected = [...rows]
      .sort(([i, x], [j, y]) => Date.parse(y) - Date.parse(x) || (j < i ? -1 : 1))
      .map(([id]) => id);
    for (const limit of [1, 2, 3, 20]) {
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const q: string = `/events?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
        const page: any = (await t.http.get(`${P}${q}`).set(bearer(p.privateKey)).expect(200)).body.data;
        expect(page.data.length).toBeLessThanOrEqual(limit);
        ids.push(...page.data.map((e: { id: string }) => e.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(ids).toEqual(expected);
    }
    // the days before today were not made here: those rows sat in DEFAULT, which the next test counts
    await t.dataSource.query('DELETE FROM events WHERE project_id = $1', [p.id]);
  });

  it('an event no day holds is kept in DEFAULT and counted in /metrics', async () => {
    await t.dataSource.query(
      `INSERT INTO events (id, project_id, type, data, created_at)
       VALUES ('evt_far_future_000000000001', $1, 'code.revoked', '{}', '2099-01-01T00:00:00Z')`,
      [a.id],
    );
    const metrics = await t.http.get('/metrics').expect(200);
    expect(metrics.text).toContain('db_partition_default_rows{table="events"} 1');
    expect(metrics.text).toContain('db_partition_default_rows{table="webhook_deliveries"} 0');
  });
});
