import { Client } from 'pg';
import { LIVE_CHAIN } from '../src/subscriptions/subscriptions.repository';
import { createTestDatabase, planNodes } from './support/database';

/**
 * The redemption's chain read (`LIVE_CHAIN`) finds a customer's live windows of one group as one
 * index range, however many ended windows the group holds (migration LiveWindowsIndex): read
 * through `(customer_id, plan_group)` alone, it fetched and filtered every one of them.
 */
describe('the live windows of a customer group', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: Client;
  let projectId: string;
  let customerId: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = new Client({ connectionString: db.url });
    await client.connect();
    projectId = (
      await client.query(`INSERT INTO projects (id, name) VALUES ('prj_live', 'live') RETURNING id`)
    ).rows[0].id;
    const plan = (
      await client.query(
        `INSERT INTO plans (project_id, slug, name, value, plan_group) VALUES ($1, 'pro', 'Pro', 10, 'tier') RETURNING id`,
        [projectId],
      )
    ).rows[0].id;
    customerId = (
      await client.query(`INSERT INTO customers (project_id, username) VALUES ($1, 'veteran') RETURNING id`, [
        projectId,
      ])
    ).rows[0].id;
    // 1,000 ended windows, one live timed window, one open (permanent) window, one cancelled live one
    await client.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, status)
       SELECT $1::text, $2::int, $3::int, 'tier', now() - (w * 30 + 30) * interval '1 day', now() - w * 30 * interval '1 day', 'activation', 'active'
         FROM generate_series(1, 1000) w
       UNION ALL SELECT $1, $2, $3, 'tier', now() - interval '1 day', now() + interval '29 days', 'code', 'active'
       UNION ALL SELECT $1, $2, $3, 'tier', now() + interval '29 days', NULL, 'code', 'active'
       UNION ALL SELECT $1, $2, $3, 'tier', now() - interval '1 day', now() + interval '9 days', 'code', 'cancelled'
       UNION ALL SELECT $1, $2, $3, 'other', now() - interval '1 day', now() + interval '9 days', 'code', 'active'`,
      [projectId, customerId, plan],
    );
    await client.query('ANALYZE subscriptions');
  });

  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it('answers the live timed and open windows only, through the live-windows index, reading no ended one', async () => {
    // the plan a connection keeps for the prepared statement: the generic one; and an index scan,
    // as on a table of many customers (here one customer's windows are the whole table)
    await client.query(`SET plan_cache_mode = force_generic_plan`);
    await client.query(`SET enable_seqscan = off`);
    await client.query(`SET enable_bitmapscan = off`);
    await client.query(`PREPARE live_chain AS ${LIVE_CHAIN.text}`);
    const args = `(${customerId}, 'tier', now(), '${projectId}')`;
    const rows = (await client.query(`EXECUTE live_chain${args}`)).rows;
    expect(rows.map((r) => (r.valid_to === null ? 'open' : 'timed')).sort()).toEqual(['open', 'timed']);

    const [
      {
        'QUERY PLAN': [plan],
      },
    ] = (await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE live_chain${args}`)).rows;
    const scans = planNodes(plan.Plan).filter((node) => node['Relation Name'] === 'subscriptions');
    expect(scans).toHaveLength(1);
    expect(scans[0]['Index Name']).toBe('subscriptions_live_chain_idx');
    expect(scans[0]['Rows Removed by Filter'] ?? 0).toBe(0);
  });
});
