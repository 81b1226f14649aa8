import { Client } from 'pg';
import { createPartitions } from '../src/database/partitions';
import { runInTransaction, Transactions } from '../src/database/transactional';
import {
  LEDGER_PARTITIONS,
  LedgerFilter,
  pageParams,
  pageTotal,
  UsageRepository,
} from '../src/entitlements/usage.repository';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { buffersTouched, explainedForBuffers, nodeBuffers, planNodes } from './support/database';

const P = '/api/private/v1';

/**
 * A ledger page's `total` is a prepared statement, one per shape of filter, whose plan each
 * connection keeps after its first few pages (a generic plan). Planned for each request it named
 * every month's partition four times over, and planning it cost more than running it. What makes
 * keeping it safe: the plan kept holds for any customer and range, each of its probes one row of an
 * index, nothing sorted, however many records the customer has.
 */
describe('the total of a ledger page, prepared', () => {
  let t: TestApp;
  let a: TestProject;
  let client: Client;
  const months = 13;
  let heavy: number;
  let light: number;
  let features: number[];

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject();
    const now = new Date();
    const first = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - months + 1, 1));
    for (const { spec, column } of LEDGER_PARTITIONS)
      await createPartitions(t.dataSource, spec, column, first, now);
    features = [];
    for (const slug of ['calls', 'seats']) {
      const f = await t.http
        .post(`${P}/features`)
        .set(bearer(a.privateKey))
        .send({ slug, name: slug, metered: true, unit: 'call' });
      expect(f.status).toBe(201);
      features.push(f.body.data.id);
    }
    const customer = async (username: string) => {
      const c = await t.http.post(`${P}/customers`).set(bearer(a.privateKey)).send({ username });
      expect(c.status).toBe(201);
      return c.body.data.id as number;
    };
    heavy = await customer('heavy_ledger');
    light = await customer('light_ledger');
    // the seeding runs on a connection of its own, without the service's statement timeout: on a
    // loaded machine its 160,000 rows can take longer than a request may
    client = new Client({ connectionString: t.databaseUrl });
    await client.connect();
    // the heavy customer: 1,500 records a month of each feature over 13 months; the light one: 2
    // of each; 5,000 others one a month of each, as a ledger holds many customers (a kept plan is
    // made for a customer in general, from how many customers the ledger holds); places
    // (`feature_seq`) numbered in (recorded_at, id) order, as consumes number them
    const others = (
      await client.query<{ id: number }>(
        `INSERT INTO customers (project_id, username) SELECT $1, 'other_' || n FROM generate_series(1, 5000) n RETURNING id`,
        [a.id],
      )
    ).rows.map((r) => r.id);
    await client.query(
      `INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at,
                                  overage_running, feature_seq)
       SELECT $1, r.customer, r.feature, r.customer || '-' || r.feature || '-' || r.n, 1, 0, r.at, 0,
              row_number() OVER (PARTITION BY r.customer, r.feature ORDER BY r.at, r.n)
         FROM (SELECT $2::int AS customer, f AS feature, n,
                      $5::timestamptz + ($6::timestamptz - $5::timestamptz) * (n::float8 / ($7 + 1)) AS at
                 FROM unnest($4::int[]) f, generate_series(1, $7) n
               UNION ALL
               SELECT $3::int, f, n, $6::timestamptz - n * interval '20 days' FROM unnest($4::int[]) f, generate_series(1, 2) n
               UNION ALL
               SELECT o, f, n, $5::timestamptz + make_interval(months => n, hours => o % 24)
                 FROM unnest($8::int[]) o, unnest($4::int[]) f, generate_series(0, $9) n) r`,
      [a.id, heavy, light, features, first, now, 1500 * months, others, months - 2],
    );
    await client.query('ANALYZE usage_records');
  });

  afterAll(async () => {
    await client?.end();
    await t?.close();
  });

  const count = async (customerId: number, filter: LedgerFilter) =>
    (
      await t.dataSource.query(
        `SELECT count(*)::int AS n FROM usage_records WHERE project_id = $1 AND customer_id = $2
            AND ($3::int IS NULL OR feature_id = $3) AND ($4::timestamptz IS NULL OR recorded_at >= $4)
            AND ($5::timestamptz IS NULL OR recorded_at < $5)`,
        [a.id, customerId, filter.featureId ?? null, filter.from ?? null, filter.to ?? null],
      )
    )[0].n as number;

  /** The total's statement of a filter's shape with its values, as `UsageRepository.page` sends them. */
  const statementOf = (customerId: number, filter: LedgerFilter) => {
    const { values, params } = pageParams(a.id, customerId, filter);
    return { statement: pageTotal(params), values };
  };

  const monthsAgo = (k: number) => {
    const now = new Date();
    return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - k, 1));
  };
  const filters = () => [
    {},
    { featureId: features[0] },
    { from: monthsAgo(3) },
    { featureId: features[1], from: monthsAgo(7), to: monthsAgo(2) },
    { to: monthsAgo(5) },
  ];

  it('answers the number of records of every filter, through HTTP, again and again on the same connections', async () => {
    for (const customerId of [heavy, light])
      for (const filter of filters()) {
        const query = {
          ...(filter.featureId !== undefined && { featureId: filter.featureId }),
          ...(filter.from && { from: filter.from.toISOString() }),
          ...(filter.to && { to: filter.to.toISOString() }),
          pageSize: 5,
        };
        const expected = await count(customerId, filter);
        if (customerId === heavy) expect(expected).toBeGreaterThan(0);
        // more pages than connections keep custom plans for (5), so each ends on its kept plan
        for (let i = 0; i < 8; i++) {
          const res = await t.http
            .get(`${P}/customers/${customerId}/usage`)
            .query(query)
            .set(bearer(a.privateKey));
          expect(res.status).toBe(200);
          expect(res.body.data.total).toBe(expected);
        }
      }
  });

  it('is prepared once per shape on a connection and always run with the plan the connection keeps', async () => {
    const host: Transactions = t.app.get(Transactions);
    // one unit of work: every page on its one connection, as a request's page is
    const kept = await runInTransaction(host, async () => {
      const repository = t.app.get(UsageRepository);
      for (let i = 0; i < 4; i++)
        for (const customerId of [heavy, light])
          for (const filter of [{}, { featureId: features[0] }])
            await repository.page(a.id, customerId, filter, { limit: 5, offset: 0 });
      return (await host.tx.query(
        `SELECT name, generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
          WHERE name LIKE 'usage.page-total-%' ORDER BY name`,
      )) as Array<{ name: string; generic: number; custom: number }>;
    });
    // never planned for a customer (the connection may have served the pages above too)
    expect(kept.map((k) => k.name)).toEqual(
      expect.arrayContaining(['usage.page-total-all', 'usage.page-total-feature']),
    );
    for (const k of kept) expect(k).toEqual({ name: k.name, generic: expect.any(Number), custom: 0 });
    for (const k of kept.filter((k) => ['usage.page-total-all', 'usage.page-total-feature'].includes(k.name)))
      expect(k.generic).toBeGreaterThanOrEqual(8);
  });

  it('its generic plan reads one index entry per probe, sorts nothing, and costs a heavy customer no more than a light one', async () => {
    await client.query(`SET plan_cache_mode = force_generic_plan`);
    let shape = 0;
    for (const filter of filters()) {
      const buffers: number[] = [];
      const name = `total_${++shape}`;
      const { statement } = statementOf(heavy, filter);
      await client.query(`PREPARE ${name} AS ${statement.text}`);
      for (const customerId of [heavy, light]) {
        const { values } = statementOf(customerId, filter);
        const args = `(${values.map((v) => (v instanceof Date ? `'${v.toISOString()}'` : typeof v === 'string' ? `'${v}'` : v)).join(', ')})`;
        const [{ total }] = (await client.query(`EXECUTE ${name}${args}`)).rows;
        expect(total).toBe(await count(customerId, filter));
        const explained = (await client.query(explainedForBuffers(`EXECUTE ${name}${args}`))).rows;
        const nodes = planNodes(explained[0]['QUERY PLAN'][0].Plan);
        expect(nodes.filter((n) => n['Node Type'] === 'Sort')).toEqual([]);
        const scans = nodes.filter((n) => String(n['Relation Name'] ?? '').startsWith('usage_records'));
        expect(scans.length).toBeGreaterThan(0);
        // a month with no rows may be planned as a sequential scan, which reads nothing
        for (const scan of scans.filter((n) => nodeBuffers(n) > 0))
          expect(['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']).toContain(scan['Node Type']);
        buffers.push(buffersTouched(explained));
      }
      // 39,000 records against 2: the same probes, each a descent of an index
      const [heavyBuffers, lightBuffers] = buffers;
      expect(heavyBuffers).toBeLessThanOrEqual(lightBuffers * 2 + 20);
    }
  });
});
