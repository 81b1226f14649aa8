/**
 * The `ledger` part of the benchmark (BENCH_PARTS=ledger, not in the default): the ledger grown
 * through SQL to each of BENCH_LEDGER_RECORDS usage records (cumulative: 10 thousand, then 1
 * million, ...), spread over up to 100,000 customers with a skewed tail and a tenth of them on
 * one heavy customer, with an event for every ten records; at each size, one client measures a
 * customer with few records and the heavy one: the check, the consume, the first ledger page, a
 * filtered ledger page (one feature, one month long ago) and `GET /events` of the customer, in
 * rounds. Each is reported against its cost at the first size, in time and in the database's
 * buffers per request (docs/benchmarks.md#the-ledger-at-scale).
 */
import type { Client } from 'pg';
import { createPartitions, listPartitions, maintainPartitions } from '../src/database/partitions';
import { LEDGER_PARTITIONS, LEDGER_UPKEEP_LOCK } from '../src/entitlements/usage.repository';

/** What the part needs of the benchmark's run. */
export interface LedgerScaleContext {
  db: Client;
  projectId: string;
  featureId: number;
  /** Customers the records are spread over (the first takes the most). */
  customers: number[];
  /** A customer with a live window of the feature's plan who gets a tenth of every size's records. */
  heavy: number;
  /** A customer with a live window of the feature's plan who gets none. */
  few: number;
  /** `seconds` of one-client requests made by `make`: its p50 and req/s. */
  drive: (
    scenario: string,
    make: (i: number) => Promise<{ status: number; body: unknown }>,
  ) => Promise<{ requests: number; p50: number; p99: number; rps: number; errors: number }>;
  get: (path: string) => Promise<{ status: number; body: unknown }>;
  /** Rounds of every scenario at each size (BENCH_LEDGER_ROUNDS): the table gives their medians. */
  rounds: number;
  post: (path: string, body: unknown) => Promise<{ status: number; body: unknown }>;
}

export interface LedgerScaleRow {
  records: number;
  customer: 'few' | 'heavy';
  scenario: string;
  /** Requests and errors of every round; p50 and p99 their medians. */
  requests: number;
  p50: number;
  p99: number;
  errors: number;
  /** p50 ÷ the same scenario's p50 at the first size. */
  ratio: number | null;
  /** p50 of the read (`GET /customers/:id`) driven just before the scenario (the median of the rounds): the machine's pace then. */
  readP50: number;
  /** `ratio` ÷ the same ratio of the reads before them: the scenario's growth with the machine's drift taken out. */
  paced: number | null;
  /** The database's buffers (shared, hit or read, planning included) per request: its work, which noise does not change. */
  buffers: number | null;
  /** `buffers` ÷ the same scenario's at the first size. */
  buffersRatio: number | null;
  /** The database's time (planning and execution) per request, ms. */
  dbMs: number | null;
}

/** The database's work per request over a run, from its statement statistics (`statementTotals`). */
interface Work {
  buffers: number;
  dbMs: number;
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const round2 = (x: number) => Math.round(x * 100) / 100;

/**
 * The totals of every statement the database has run (pg_stat_statements: buffers and ms, with
 * planning), or null where the extension is not loaded (a DATABASE_URL of another server).
 */
async function statementTotals(db: Client): Promise<{ buffers: number; ms: number } | null> {
  try {
    const { rows } = await db.query(
      `SELECT coalesce(sum(shared_blks_hit + shared_blks_read), 0)::float8 AS buffers,
              coalesce(sum(total_exec_time + total_plan_time), 0)::float8 AS ms
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    return { buffers: rows[0].buffers, ms: rows[0].ms };
  } catch {
    return null;
  }
}

const workOf = (
  before: { buffers: number; ms: number },
  after: { buffers: number; ms: number },
  requests: number,
): Work => ({
  buffers: Math.round((after.buffers - before.buffers) / requests),
  dbMs: round2((after.ms - before.ms) / requests),
});

export interface LedgerScaleResult {
  rows: LedgerScaleRow[];
  /** After the last size: the retention's drop of the two oldest months, as `USAGE_RETENTION_MONTHS` does it. */
  retention?: { records: number; ms: number };
  fills: Array<{
    records: number;
    seconds: number;
    /** Bytes per million records of usage_records and usage_allocations with their indexes. */
    bytesPerMillion: number;
    /** The same of usage_event_ids (the exactly-once keys, not split by time). */
    eventIdBytesPerMillion: number;
    heavyRecords: number;
    /** The ledger's partition upkeep, ms: a run making a month, and one dropping it. */
    maintenance: { create: number; drop: number };
  }>;
}

/** `db` as the partition functions take a connection (`query` answering the rows). */
const rowsOf = (db: Client) =>
  ({ query: (sql: string, params?: unknown[]) => db.query(sql, params).then((r) => r.rows) }) as never;

/** Records inserted per statement while filling. */
const CHUNK = 1_000_000;

/** How far back the filled records reach: two years, all before the current period's window. */
const HISTORY_DAYS = 720;

export async function ledgerScale(ctx: LedgerScaleContext, sizes: number[]): Promise<LedgerScaleResult> {
  const { db, projectId, featureId } = ctx;
  const spread = ctx.customers.filter((c) => c !== ctx.heavy && c !== ctx.few);
  const rows: LedgerScaleRow[] = [];
  const fills: LedgerScaleResult['fills'] = [];
  const first = new Map<string, { p50: number; read: number; buffers: number | null }>();
  let filled = Number(
    (await db.query('SELECT count(*) AS n FROM usage_records WHERE project_id = $1', [projectId])).rows[0].n,
  );
  let stage = 0;
  let eventSeq = 0;
  // sizes below what the ledger already holds (the load part's history) are measured at that count
  const targets = [...new Set(sizes.map((s) => Math.max(s, filled)))].sort((a, b) => a - b);
  // the fill's records, in time order over the history (`fillRecords`), and each customer's count of them
  const initial = filled;
  const planned = targets[targets.length - 1] - initial;
  const historyEnd = new Date(Date.now() - 11 * 86_400_000);
  await db.query(
    'CREATE TEMP TABLE IF NOT EXISTS ledger_fill_counts (customer_id int PRIMARY KEY, n bigint NOT NULL)',
  );
  // the database's work per request, where the server loads the statistics (the benchmark's own does)
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements').catch(() => undefined);
  // the months and days the fill writes to, made as the service makes them (else its rows would
  // all go to the DEFAULT partitions)
  const historyStart = new Date(historyEnd.getTime() - HISTORY_DAYS * 86_400_000);
  for (const { spec, column } of LEDGER_PARTITIONS)
    await createPartitions(rowsOf(db), spec, column, historyStart, historyEnd);
  await createPartitions(
    rowsOf(db),
    { table: 'events', unit: 'day' },
    'created_at',
    new Date(Date.now() - 30 * 86_400_000),
    new Date(),
  );
  for (const size of targets) {
    stage++;
    const t0 = Date.now();
    for (; filled < size; stage++) {
      const n = Math.min(CHUNK, size - filled);
      await fillRecords(db, {
        projectId,
        featureId,
        heavy: ctx.heavy,
        spread,
        n,
        stage,
        offset: filled - initial,
        planned,
        historyEnd,
      });
      // an event for every ten records, within the events' retention
      await db.query(
        `INSERT INTO events (id, project_id, type, customer_id, data, created_at)
         SELECT 'evt_l' || lpad(($4::bigint + g)::text, 23, '0'), $1,
                'usage.threshold_crossed', CASE WHEN g % 10 = 0 THEN $2::int
                  ELSE ($3::int[])[1 + floor(array_length($3::int[], 1) * power(random(), 3))::int] END,
                '{"bench":true}'::jsonb, now() - random() * interval '29 days'
           FROM generate_series(1, $5::int) AS g`,
        [projectId, ctx.heavy, spread, eventSeq, Math.ceil(n / 10)],
      );
      eventSeq += Math.ceil(n / 10);
      filled += n;
    }
    // the places of the records after the history (the load part's, the consumes measured at the
    // sizes before), which follow the fill's records of their customer
    await db.query(
      `UPDATE usage_records t SET feature_seq = r.seq
         FROM (SELECT u.id, coalesce(c.n, 0) + row_number() OVER (PARTITION BY u.customer_id ORDER BY u.recorded_at, u.id) AS seq
                 FROM usage_records u LEFT JOIN ledger_fill_counts c ON c.customer_id = u.customer_id
                WHERE u.project_id = $1 AND u.feature_id = $2 AND u.recorded_at >= $3) r
        WHERE r.id = t.id AND t.feature_seq <> r.seq`,
      [projectId, featureId, historyEnd],
    );
    await db.query('VACUUM ANALYZE usage_records, usage_allocations, usage_event_ids, events');
    // the fill's pages written back now, not by a checkpoint during the measurements (a ledger
    // grown over months has no such backlog)
    await db.query('CHECKPOINT');
    const bytesOf = async (pattern: string) =>
      Number(
        (
          await db.query(
            `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
               FROM pg_class c WHERE c.relkind IN ('r', 'p') AND c.relname LIKE $1`,
            [pattern],
          )
        ).rows[0].bytes,
      );
    const ledgerBytes = (await bytesOf('usage_records%')) + (await bytesOf('usage_allocations%'));
    const eventIdBytes = await bytesOf('usage_event_ids%');
    const heavyRecords = Number(
      (await db.query('SELECT count(*) AS n FROM usage_records WHERE customer_id = $1', [ctx.heavy])).rows[0]
        .n,
    );
    // the heavy customer's places are its records' ranks (the page totals count by them)
    const misplaced = Number(
      (
        await db.query(
          `SELECT count(*) AS n FROM (
             SELECT feature_seq, row_number() OVER (ORDER BY recorded_at, id) AS rank
               FROM usage_records WHERE customer_id = $1 AND feature_id = $2) r
            WHERE r.feature_seq <> r.rank`,
          [ctx.heavy, featureId],
        )
      ).rows[0].n,
    );
    if (misplaced > 0) throw new Error(`${misplaced} of the heavy customer's records out of place`);
    fills.push({
      records: filled,
      seconds: (Date.now() - t0) / 1000,
      bytesPerMillion: Math.round((ledgerBytes / filled) * 1e6),
      eventIdBytesPerMillion: Math.round((eventIdBytes / filled) * 1e6),
      heavyRecords,
      maintenance: await timeMaintenance(db),
    });
    console.log(JSON.stringify({ part: 'ledger', filled, ...fills[fills.length - 1] }));

    let consumeSeq = 0;
    const monthAgo = new Date(Date.now() - 180 * 86_400_000);
    const from = new Date(monthAgo.getTime() - 30 * 86_400_000).toISOString();
    const to = monthAgo.toISOString();
    const scenarios: Array<{
      who: 'few' | 'heavy';
      customerId: number;
      scenario: string;
      make: (i: number) => Promise<{ status: number; body: unknown }>;
    }> = [];
    for (const [who, customerId] of [
      ['few', ctx.few],
      ['heavy', ctx.heavy],
    ] as const) {
      const of: Array<[string, (i: number) => Promise<{ status: number; body: unknown }>]> = [
        [
          'POST /entitlements/check',
          () => ctx.post('/entitlements/check', { customerId, featureId, amount: 1 }),
        ],
        [
          'POST /usage',
          () =>
            ctx.post('/usage', {
              customerId,
              featureId,
              amount: 1,
              eventId: `ledger-scale-${stage}-${who}-${++consumeSeq}`,
            }),
        ],
        [
          'GET /customers/:id/usage (first page)',
          () => ctx.get(`/customers/${customerId}/usage?pageSize=20`),
        ],
        [
          'GET /customers/:id/usage (one feature, one month)',
          () =>
            ctx.get(
              `/customers/${customerId}/usage?pageSize=20&featureId=${featureId}&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
            ),
        ],
        ['GET /events (the customer)', () => ctx.get(`/events?customerId=${customerId}&limit=20`)],
      ];
      for (const [scenario, make] of of) scenarios.push({ who, customerId, scenario, make });
    }
    // every scenario once a round, each after a read of its customer (the machine's pace then);
    // the medians over the rounds, so that a moment of a shared machine's noise is outvoted
    const runs = scenarios.map(() => ({
      p50: [] as number[],
      read: [] as number[],
      p99: [] as number[],
      work: [] as Work[],
      requests: 0,
      errors: 0,
    }));
    for (let round = 0; round < ctx.rounds; round++)
      for (const [k, { who, customerId, scenario, make }] of scenarios.entries()) {
        const read = await ctx.drive(`ledger ${filled}: the read before, ${who}`, () =>
          ctx.get(`/customers/${customerId}`),
        );
        const before = await statementTotals(db);
        const run = await ctx.drive(`ledger ${filled}: ${scenario}, ${who}`, make);
        const after = await statementTotals(db);
        const work = before && after && run.requests > 0 ? workOf(before, after, run.requests) : null;
        console.log(
          JSON.stringify({
            part: 'ledger',
            records: filled,
            round,
            customer: who,
            readP50: read.p50,
            ...run,
            work,
          }),
        );
        runs[k].p50.push(run.p50);
        runs[k].p99.push(run.p99);
        runs[k].read.push(read.p50);
        if (work) runs[k].work.push(work);
        runs[k].requests += run.requests;
        runs[k].errors += run.errors;
      }
    for (const [k, { who, scenario }] of scenarios.entries()) {
      const r = runs[k];
      const p50 = median(r.p50);
      const readP50 = median(r.read);
      const work = r.work.length
        ? { buffers: median(r.work.map((w) => w.buffers)), dbMs: median(r.work.map((w) => w.dbMs)) }
        : null;
      const key = `${who} ${scenario}`;
      if (!first.has(key)) first.set(key, { p50, read: readP50, buffers: work?.buffers ?? null });
      const base = first.get(key)!;
      const ratio = base.p50 > 0 ? p50 / base.p50 : null;
      rows.push({
        records: filled,
        customer: who,
        scenario,
        requests: r.requests,
        p50: round2(p50),
        p99: round2(median(r.p99)),
        errors: r.errors,
        ratio: ratio === null ? null : round2(ratio),
        readP50: round2(readP50),
        paced: ratio === null || readP50 <= 0 ? null : round2(ratio / (readP50 / base.read)),
        buffers: work?.buffers ?? null,
        buffersRatio: work && base.buffers ? round2(work.buffers / base.buffers) : null,
        dbMs: work ? round2(work.dbMs) : null,
      });
    }
  }
  return { rows, fills, retention: await timeRetention(db) };
}

/**
 * The upkeep run that drops the ledger's two oldest months (allocations, then records: detached,
 * then dropped), timed with the number of records they held. Run last: the ledger is smaller after it.
 */
async function timeRetention(db: Client): Promise<{ records: number; ms: number }> {
  // the oldest month holds the history's first days only: the two oldest go, a whole month with it
  const oldest = (await listPartitions(rowsOf(db), LEDGER_PARTITIONS[0].spec)).slice(0, 2);
  let records = 0;
  for (const { name } of oldest)
    records += Number((await db.query(`SELECT count(*) AS n FROM ${name}`)).rows[0].n);
  const last = oldest[oldest.length - 1].start;
  const end = new Date(Date.UTC(last.getUTCFullYear(), last.getUTCMonth() + 1, 1));
  await db.query('CHECKPOINT');
  const t0 = process.hrtime.bigint();
  await db.query('BEGIN');
  const done = await maintainPartitions(rowsOf(db), LEDGER_UPKEEP_LOCK, LEDGER_PARTITIONS, end, end, end);
  await db.query('COMMIT');
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (!done || done.dropped.length !== LEDGER_PARTITIONS.length * oldest.length)
    throw new Error(`the retention dropped ${JSON.stringify(done)}, not the two oldest months of each table`);
  console.log(
    JSON.stringify({ part: 'ledger', retention: { months: oldest.map((m) => m.name), records, ms } }),
  );
  return { records, ms: Math.round(ms) };
}

/**
 * The service's upkeep of the ledger's partitions (the function its scheduler runs, in one
 * transaction), timed twice: making a month that is missing (four years back, before the
 * filled history: empty) and dropping it again.
 */
async function timeMaintenance(db: Client): Promise<{ create: number; drop: number }> {
  // four years back: before the filled history (two years) and the load part's
  const now = new Date();
  const month = new Date(Date.UTC(now.getUTCFullYear() - 4, now.getUTCMonth(), 1));
  const after = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1));
  const run = async (to: Date, dropBefore: Date | null, expect: 'created' | 'dropped') => {
    const t0 = process.hrtime.bigint();
    await db.query('BEGIN');
    const done = await maintainPartitions(
      rowsOf(db),
      LEDGER_UPKEEP_LOCK,
      LEDGER_PARTITIONS,
      month,
      to,
      dropBefore,
    );
    await db.query('COMMIT');
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (!done || done[expect].length !== LEDGER_PARTITIONS.length)
      throw new Error(`the upkeep ${expect} ${JSON.stringify(done)}, not a month of each table`);
    return Math.round(ms * 100) / 100;
  };
  const create = await run(month, null, 'created');
  const drop = await run(month, after, 'dropped');
  return { create, drop };
}

/**
 * `n` records of one feature, each with its allocation to the plan group `usage`, the records
 * `offset + 1` to `offset + n` of the `planned` ones spread evenly in time over the two years
 * before `historyEnd` (which is before the current period), in order: a tenth for the heavy
 * customer, the rest over `spread` with a skewed tail (the first customers take the most). Their
 * places in their customer's series follow the fill's earlier records of that customer
 * (`ledger_fill_counts`), as the service would have numbered them. Their running totals are
 * written as 0 (the insert triggers compute them only when none is given): the current period's
 * sums read the running totals of the rows around its bounds, which these records, all older, do
 * not change.
 */
async function fillRecords(
  db: Client,
  o: {
    projectId: string;
    featureId: number;
    heavy: number;
    spread: number[];
    n: number;
    stage: number;
    offset: number;
    planned: number;
    historyEnd: Date;
  },
): Promise<void> {
  await db.query(
    `WITH src AS (
       SELECT g, CASE WHEN g % 10 = 0 THEN $3::int
                 ELSE ($4::int[])[1 + floor(array_length($4::int[], 1) * power(random(), 3))::int] END AS customer_id,
              $9::timestamptz - interval '${HISTORY_DAYS} days' * (1 - ($7::bigint + g)::float8 / ($8::bigint + 1)) AS recorded_at
         FROM generate_series(1, $5::int) AS g),
     numbered AS MATERIALIZED (
       SELECT src.*, coalesce(c.n, 0) + row_number() OVER (PARTITION BY src.customer_id ORDER BY src.g) AS seq
         FROM src LEFT JOIN ledger_fill_counts c ON c.customer_id = src.customer_id),
     counted AS (
       INSERT INTO ledger_fill_counts (customer_id, n) SELECT customer_id, max(seq) FROM numbered GROUP BY customer_id
       ON CONFLICT (customer_id) DO UPDATE SET n = excluded.n),
     u AS (
       INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at, overage_running, feature_seq)
       SELECT $1, customer_id, $2, 'ledger-fill-' || $6::int || '-' || g, 1, 0, recorded_at, 0, seq FROM numbered ORDER BY g
       RETURNING id, customer_id, event_id, recorded_at),
     a AS (
       INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at, running)
       SELECT $1, id, customer_id, $2, 'usage', date_trunc('month', recorded_at), 1, recorded_at, 0 FROM u)
     INSERT INTO usage_event_ids (project_id, customer_id, event_id, feature_id, usage_id, recorded_at, amount, overage)
     SELECT $1, customer_id, event_id, $2, id, recorded_at, 1, 0 FROM u`,
    [o.projectId, o.featureId, o.heavy, o.spread, o.n, o.stage, o.offset, o.planned, o.historyEnd],
  );
}
