import { Injectable } from '@nestjs/common';
import { Statement, Statements } from '../database/statements';
import { Allocation, microsText } from './engine/entitlement-engine';
import { ALLOCATION_JSON, ORDINALITY_MAX, slicesOf, USAGE_JSON, UsageRow } from './entitlements.repository';
import { PageWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';
import { customerJoin } from '../customers/customer-sql';
import {
  defaultPartitionRows,
  eachPartition,
  maintainPartitions,
  NamedPartitions,
  PARTITION_UPKEEP_LOCK,
  PartitionedColumn,
} from '../database/partitions';
import { Clock } from '../common/clock';
import { LedgerStatements } from './ledger-months';
import { Transactions } from '../database/transactional';

/** The ledger's partitioned tables, a month of `recorded_at` each; records first (allocations reference them). */
export const LEDGER_PARTITIONS: readonly PartitionedColumn[] = [
  { spec: { table: 'usage_records', unit: 'month' }, column: 'recorded_at' },
  { spec: { table: 'usage_allocations', unit: 'month' }, column: 'recorded_at' },
];

/** The advisory lock of the ledger's partition upkeep. */
export const LEDGER_UPKEEP_LOCK: [number, number] = [PARTITION_UPKEEP_LOCK, 1];

export interface NewUsage {
  projectId: string;
  customerId: number;
  featureId: number;
  eventId: string;
  amount: bigint;
  overage: bigint;
  recordedAt: Date;
  allocations: Allocation[];
  /** Its id when drawn beforehand (a consume's, with its batch's state); else drawn by the insert. */
  id?: string;
}

/**
 * Every SQL statement of `usage_records`, `usage_allocations` and `usage_event_ids`, and the `used` of the grants
 * they take from, run on the current unit of work's transaction (the writes need one: a consume's
 * or a reversal's, under its customer's lock).
 */
@Injectable()
export class UsageRepository {
  private readonly ledgerStatements: LedgerStatements;

  constructor(
    private readonly statements: Statements,
    private readonly transactions: Transactions,
    clock: Clock,
  ) {
    this.ledgerStatements = new LedgerStatements(clock);
  }

  /**
   * The ledger's partition upkeep, in the current transaction, by one replica at a time (an
   * advisory lock, tried): creates the months from the one holding `from` to the one holding `to`
   * that are missing, and with `dropBefore` drops the months that end at or before it. Null when
   * another replica holds the lock.
   */
  @GenerateSql({
    params: [
      new Date('2020-01-15T00:00:00Z'),
      new Date('2020-03-15T00:00:00Z'),
      new Date('2019-11-01T00:00:00Z'),
    ],
  })
  async maintainPartitions(
    from: Date,
    to: Date,
    dropBefore: Date | null,
  ): Promise<{ created: string[]; dropped: string[] } | null> {
    return maintainPartitions(
      this.transactions.tx,
      LEDGER_UPKEEP_LOCK,
      LEDGER_PARTITIONS,
      from,
      to,
      dropBefore,
    );
  }

  /** Rows of each ledger table that no month's partition holds (its DEFAULT partition's). */
  @GenerateSql({ params: [] })
  defaultPartitionRows(): Promise<Array<{ table: string; rows: number }>> {
    return defaultPartitionRows(this.transactions.tx, LEDGER_PARTITIONS);
  }

  /**
   * Writes records and their allocations in one statement, a customer's in the order given, at
   * one instant (see `insertUsage`); answers the stored records in the order of `usages`.
   */
  @GenerateSql({
    params: [
      [
        {
          projectId: 'prj_1',
          customerId: 1,
          featureId: 1,
          eventId: 'use_2',
          amount: 2_000_000n,
          overage: 0n,
          recordedAt: new Date('2026-03-15T12:00:00Z'),
          allocations: [
            {
              source: 'plan',
              group: 'default',
              periodStart: new Date('2026-03-01T00:00:00Z'),
              grantId: null,
              amount: 1_500_000n,
            },
            { source: 'grant', group: null, periodStart: null, grantId: 1, amount: 500_000n },
          ],
        },
      ],
    ],
  })
  async insertMany(usages: NewUsage[]): Promise<UsageRow[]> {
    const allocations = usages.flatMap((u) => u.allocations);
    const slices = slicesOf(usages.map((u) => u.allocations.length));
    const values = [
      usages.map((u) => u.projectId),
      usages.map((u) => u.customerId),
      usages.map((u) => u.featureId),
      usages.map((u) => u.eventId),
      usages.map((u) => microsText(u.amount)),
      usages.map((u) => microsText(u.overage)),
      usages.map((u) => u.recordedAt),
      usages.map((u) => microsText(u.allocations.reduce((sum, a) => (a.grantId ? sum + a.amount : sum), 0n))),
      slices.map(([from]) => from),
      slices.map(([, to]) => to),
      allocations.map((a) => a.group),
      allocations.map((a) => a.periodStart),
      allocations.map((a) => microsText(a.amount)),
      allocations.map((a) => a.source),
      allocations.map((a) => a.grantId),
      usages.map((u) => u.id ?? null),
    ];
    const rows = await this.statements.rows<{ i: string; usage: UsageRow }>(
      undefined,
      this.ledgerStatements.get('insert', insertUsage),
      values,
    );
    const ordered: UsageRow[] = [];
    for (const row of rows) ordered[Number(row.i) - 1] = row.usage;
    return ordered;
  }

  /**
   * The record `usageId` of the project, with its customer's row locked `FOR UPDATE` (the lock of
   * consumes and grants) and the record's own row; null when there is none.
   */
  @GenerateSql({ params: ['prj_1', '1'] })
  async lockForReversal(projectId: string, usageId: string): Promise<UsageRow | null> {
    const [row] = await this.statements.rows<{ usage: UsageRow }>(undefined, LOCK_FOR_REVERSAL, [
      usageId,
      projectId,
    ]);
    return row?.usage ?? null;
  }

  /** The record `usageId` of the project (a committed hold's), null when there is none. */
  @GenerateSql({ params: ['prj_1', '1'] })
  async find(projectId: string, usageId: string): Promise<UsageRow | null> {
    const [row] = await this.statements.rows<{ usage: UsageRow }>(undefined, FIND_USAGE, [
      usageId,
      projectId,
    ]);
    return row?.usage ?? null;
  }

  /**
   * Marks a record and its allocations reversed at `at`, giving back to each grant what the record
   * took from it only while that grant is in effect (neither expired nor voided: `restored`);
   * answers the record as it now is.
   */
  @GenerateSql({ params: ['prj_1', '1', new Date('2026-03-15T12:00:00Z')] })
  async reverse(projectId: string, usageId: string, at: Date): Promise<UsageRow> {
    const [row] = await this.statements.rows<{ usage: UsageRow }>(undefined, REVERSE, [
      usageId,
      projectId,
      at,
    ]);
    return row.usage;
  }

  /**
   * One page of a customer's ledger, newest first; `from` inclusive, `to` exclusive. Run in a unit
   * of work: after the rows, its total is asked for with the plan kept for its shape (see
   * `pageTotal`), for the rest of the transaction only.
   */
  @GenerateSql(
    { name: 'unfiltered', params: ['prj_1', 1, {}, { limit: 20, offset: 0 }] },
    {
      name: 'of a feature, from and to',
      params: [
        'prj_1',
        1,
        { featureId: 1, from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-04-01T00:00:00Z') },
        { limit: 20, offset: 0 },
      ],
    },
  )
  async page(
    projectId: string,
    customerId: number,
    filter: LedgerFilter,
    { limit, offset }: PageWindow,
  ): Promise<{ rows: UsageRow[]; total: number }> {
    const { values, params } = pageParams(projectId, customerId, filter);
    const where = [
      'u.project_id = $1 AND u.customer_id = $2',
      params.feature && `u.feature_id = ${params.feature}`,
      params.from && `u.recorded_at >= ${params.from}`,
      params.to && `u.recorded_at < ${params.to}`,
    ]
      .filter(Boolean)
      .join(' AND ');
    // unnamed, planned for each page: a plan kept for any `LIMIT` once sorted a whole month of a
    // busy customer's records to keep a page of them
    const rows = await this.statements.rows<{ usage: UsageRow }>(
      undefined,
      {
        name: '',
        text: `SELECT ${USAGE_JSON} AS usage FROM usage_records u WHERE ${where}
               ORDER BY u.recorded_at DESC, u.id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      },
      [...values, limit, offset],
    );
    if (!this.transactions.isTransactionActive())
      throw new Error('UsageRepository.page runs in a unit of work (its plan setting is the transaction’s)');
    await this.transactions.tx.query(`SET LOCAL plan_cache_mode = force_generic_plan`);
    const [{ total }] = await this.statements.rows<{ total: number }>(undefined, pageTotal(params), values);
    return { rows: rows.map((r) => r.usage), total };
  }
}

/** What a ledger page is filtered on. */
export interface LedgerFilter {
  featureId?: number;
  from?: Date;
  to?: Date;
}

/** A ledger page's filter as parameters of its statements (`$3`…, each present when filtered on). */
interface PageParams {
  feature?: string;
  from?: string;
  to?: string;
}

/** The values of a ledger page's statements (`$1` the project, `$2` the customer, then the filter's) and where each is. */
export function pageParams(
  projectId: string,
  customerId: number,
  filter: LedgerFilter,
): { values: unknown[]; params: PageParams } {
  const values: unknown[] = [projectId, customerId];
  const param = (value: unknown) => `$${values.push(value)}`;
  return {
    values,
    params: {
      feature: filter.featureId !== undefined ? param(filter.featureId) : undefined,
      from: filter.from ? param(filter.from) : undefined,
      to: filter.to ? param(filter.to) : undefined,
    },
  };
}

/**
 * A ledger page's `total` (parameters `$1` the project, `$2` the customer, then the filter's), a
 * prepared statement of its own for each shape of filter, run with its generic plan (the one a
 * connection keeps). Planned for each request, it named every month's partition of the ledger four
 * times over, and planning took several times what running it did. PostgreSQL keeps a generic
 * plan only once it looks no dearer than the custom ones, which it did not for a customer with
 * many records or few, so `page` asks for it (`plan_cache_mode`). Kept for any customer and range
 * alike, as each of its probes reads one row of an index (`test/ledger-page-plan.e2e-spec.ts`).
 *
 * The total itself:
 * for each feature of the filter (the one asked for, or each the customer has records of, found
 * one index probe apiece), the place (`feature_seq`) of its last record before `to` less the place
 * of its first record from `from`, plus one. Places number the records of a series in
 * `(recorded_at, id)` order, so this is the number of records in `[from, to)`, found by two probes
 * of `usage_records_customer_feature_idx` per feature, where a count walked every record of the
 * filter, which grew with the customer's ledger. Counting from the first record still there keeps
 * it right after the oldest records were pruned (docs/entitlements.md#retention-of-the-ledger).
 */
export function pageTotal({ feature, from, to }: PageParams): Statement {
  const place = (order: 'ASC' | 'DESC', bound?: string) =>
    `(SELECT u.feature_seq FROM usage_records u WHERE u.customer_id = $2 AND u.feature_id = f.id
       ${bound ? `AND u.recorded_at ${order === 'DESC' ? '<' : '>='} ${bound}` : ''}
      ORDER BY u.recorded_at ${order}, u.id ${order} LIMIT 1)`;
  const features =
    feature !== undefined
      ? `(SELECT u.feature_id FROM usage_records u
           WHERE u.customer_id = $2 AND u.project_id = $1 AND u.feature_id = ${feature} LIMIT 1)`
      : `SELECT min(u.feature_id) FROM usage_records u WHERE u.customer_id = $2 AND u.project_id = $1
         UNION ALL
         SELECT (SELECT min(u.feature_id) FROM usage_records u
                  WHERE u.customer_id = $2 AND u.project_id = $1 AND u.feature_id > f.id)
           FROM f WHERE f.id IS NOT NULL`;
  // no record from `from`: none in the range (null, taken as 0); the last before `to` ahead of
  // the first from `from`: none either (negative, taken as 0)
  const shape = [feature && 'feature', from && 'from', to && 'to'].filter(Boolean).join('-') || 'all';
  return {
    name: `usage.page-total-${shape}`,
    text: `WITH RECURSIVE f(id) AS (${features})
          SELECT coalesce(sum(greatest(${place('DESC', to)} - ${place('ASC', from)} + 1, 0)), 0)::int AS total
            FROM f WHERE f.id IS NOT NULL`,
  };
}

/**
 * Records and their allocations (`insertMany`), each record's event id in `usage_event_ids` (the
 * uniqueness of event ids across the ledger's months: a second record of one event id fails
 * there), with their running totals (migration UsageRunningTotals) and their records' places
 * (`feature_seq`, migration UsageRecordPositions, counted as the totals are): the series' last
 * total as the statement found it (its latest row, month by month: `eachPartition`) plus the
 * amounts of this statement's rows of the series up to this one (a customer's records of one batch, in its order,
 * at one instant: their ids, drawn in that order, order them). Run under the customers' locks at a
 * time never before their latest record, so each row follows every row of its series in
 * `(recorded_at, id)` order. `$1` to `$9` one row per record (its allocations a slice, from and to,
 * of the arrays `$10` to `$12`). Each series' last total is read (`base`) before the first row
 * is written: read beside the inserts, each probe of a customer's series walked the index entries
 * the statement had written before it (invisible to its snapshot), which grew with the square of
 * a hot customer's consumes in one batch. `$16` the records' ids where drawn beforehand (ascending
 * in the batch's order), null where the insert draws them. The always-true ranges on the ordinalities keep the
 * generic plan (see `ORDINALITY_MAX`): without them the planner assumed many rows of each, each
 * with its probe, and planned every call again.
 */
const insertUsage = (months: NamedPartitions): Statement => ({
  name: `usage.insert-many-${months.key}`,
  // a consume's audit records go with it (its records' ids are drawn beforehand: see `$16`)
  carrier: true,
  text: `WITH x AS (
           SELECT x.*, last.overage_running AS base, last.feature_seq AS base_seq
             FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::numeric[], $6::numeric[],
                         $7::timestamptz[], $8::numeric[], $9::int[], $10::int[], $16::bigint[])
                  WITH ORDINALITY AS x(project, customer, feature, event, amount, overage, recorded_at, granted, af, at, id, i)
                  LEFT JOIN LATERAL (${eachPartition(
                    months,
                    `SELECT r.overage_running, r.feature_seq FROM usage_records r WHERE r.customer_id = x.customer AND r.feature_id = x.feature`,
                    'r',
                    'recorded_at',
                    'DESC',
                    '1',
                  )}) last ON true
            WHERE x.i BETWEEN 1 AND ${ORDINALITY_MAX}),
         xa AS MATERIALIZED (
           SELECT x.i, y.k, y.grp, y.ps, y.amount, y.source, y.grant_id,
                  (${eachPartition(
                    months,
                    `SELECT p.running FROM usage_allocations p WHERE p.customer_id = x.customer AND p.feature_id = x.feature
                        AND p.plan_group = y.grp`,
                    'p',
                    'recorded_at',
                    'DESC',
                    '1',
                  )}) AS base
             FROM x CROSS JOIN LATERAL unnest(($11::text[])[x.af:x.at], ($12::timestamptz[])[x.af:x.at],
                                              ($13::numeric[])[x.af:x.at], ($14::text[])[x.af:x.at], ($15::int[])[x.af:x.at])
                  WITH ORDINALITY AS y(grp, ps, amount, source, grant_id, k)
            WHERE y.k BETWEEN 1 AND ${ORDINALITY_MAX}),
         u AS (
           INSERT INTO usage_records (id, project_id, customer_id, feature_id, event_id, amount, overage, granted, recorded_at,
                                      overage_running, feature_seq)
           SELECT coalesce(x.id, nextval('usage_records_id_seq')), x.project, x.customer, x.feature, x.event, x.amount, x.overage, x.granted, x.recorded_at,
                  sum(x.overage) OVER w + coalesce(x.base, 0), row_number() OVER w + coalesce(x.base_seq, 0)
             FROM x WINDOW w AS (PARTITION BY x.customer, x.feature ORDER BY x.i) ORDER BY x.i
           RETURNING *),
         ux AS (SELECT u.*, x.i FROM u JOIN x ON x.customer = u.customer_id AND x.event = u.event_id),
         a AS (
           INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, source, plan_group, grant_id,
                                          period_start, amount, recorded_at, running)
           SELECT ux.project_id, ux.id, ux.customer_id, ux.feature_id, xa.source, xa.grp, xa.grant_id, xa.ps, xa.amount, ux.recorded_at,
                  CASE WHEN xa.grp IS NULL THEN xa.amount
                       ELSE sum(xa.amount) OVER (PARTITION BY ux.customer_id, ux.feature_id, xa.grp ORDER BY xa.i, xa.k) + coalesce(xa.base, 0)
                  END
             FROM ux JOIN xa ON xa.i = ux.i
            ORDER BY xa.i, xa.k
           RETURNING usage_id, source, plan_group, grant_id, period_start, amount, restored, id),
         e AS (
           INSERT INTO usage_event_ids (project_id, customer_id, event_id, feature_id, usage_id, recorded_at, amount, overage)
           SELECT ux.project_id, ux.customer_id, ux.event_id, ux.feature_id, ux.id, ux.recorded_at, ux.amount, ux.overage FROM ux),
         g AS (
           UPDATE grants SET used = grants.used + d.amount
             FROM (SELECT xa.grant_id, sum(xa.amount) AS amount FROM xa WHERE xa.grant_id IS NOT NULL GROUP BY xa.grant_id) d
            WHERE grants.id = d.grant_id)
         SELECT ux.i, json_build_object(
           'id', ux.id::text, 'eventId', ux.event_id, 'customerId', ux.customer_id, 'featureId', ux.feature_id,
           'amount', ux.amount::text, 'overage', ux.overage::text, 'recordedAt', ux.recorded_at, 'reversedAt', ux.reversed_at,
           'allocations', (SELECT coalesce(json_agg(${ALLOCATION_JSON} ORDER BY a.id), '[]'::json)
                             FROM a WHERE a.usage_id = ux.id)) AS usage
           FROM ux`,
});

const FIND_USAGE: Statement = {
  name: 'usage.find',
  text: `SELECT ${USAGE_JSON} AS usage FROM usage_records u WHERE u.id = $1::bigint AND u.project_id = $2`,
};

const LOCK_FOR_REVERSAL: Statement = {
  name: 'usage.lock-for-reversal',
  text: `SELECT ${USAGE_JSON} AS usage
           FROM usage_records u ${customerJoin('c', 'u.customer_id', 'u.project_id')}
          WHERE u.id = $1::bigint AND u.project_id = $2
            FOR UPDATE OF c, u`,
};

const REVERSE: Statement = {
  name: 'usage.reverse',
  text: `WITH a AS (
           UPDATE usage_allocations a SET reversed = true,
                  restored = a.grant_id IS NULL OR EXISTS (
                    SELECT 1 FROM grants g WHERE g.id = a.grant_id AND g.voided_at IS NULL
                       AND (g.expires_at IS NULL OR g.expires_at > $3))
            WHERE a.usage_id = $1::bigint AND a.project_id = $2
           RETURNING a.id, a.source, a.plan_group, a.grant_id, a.period_start, a.amount, a.restored),
         g AS (
           UPDATE grants SET used = grants.used - d.amount
             FROM (SELECT a.grant_id, sum(a.amount) AS amount FROM a WHERE a.grant_id IS NOT NULL AND a.restored
                   GROUP BY a.grant_id) d
            WHERE grants.id = d.grant_id),
         u AS (UPDATE usage_records SET reversed_at = $3 WHERE id = $1::bigint AND project_id = $2 RETURNING *)
         SELECT json_build_object(
           'id', u.id::text, 'eventId', u.event_id, 'customerId', u.customer_id, 'featureId', u.feature_id,
           'amount', u.amount::text, 'overage', u.overage::text, 'recordedAt', u.recorded_at, 'reversedAt', u.reversed_at,
           -- the allocations as this statement left them (a read of the table would see them as before it)
           'allocations', (SELECT coalesce(json_agg(${ALLOCATION_JSON} ORDER BY a.id), '[]'::json) FROM a)) AS usage
           FROM u`,
};
