import { Injectable } from '@nestjs/common';
import { Statement, Statements } from '../database/statements';
import { Allocation, microsText } from './engine/entitlement-engine';
import { ORDINALITY_MAX, slicesOf, USAGE_JSON, UsageRow } from './entitlements.repository';
import { PageWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';

export interface NewUsage {
  projectId: string;
  customerId: number;
  featureId: number;
  eventId: string;
  amount: bigint;
  overage: bigint;
  recordedAt: Date;
  allocations: Allocation[];
}

/**
 * Every SQL statement of `usage_records` and `usage_allocations`, run on the current unit of
 * work's transaction (the writes need one: a consume's or a reversal's, under its customer's lock).
 */
@Injectable()
export class UsageRepository {
  constructor(private readonly statements: Statements) {}

  /**
   * Writes records and their allocations in one statement, a customer's in the order given, at
   * one instant (see `INSERT_USAGE`); answers the stored records in the order of `usages`.
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
            { group: 'default', periodStart: new Date('2026-03-01T00:00:00Z'), amount: 2_000_000n },
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
      slices.map(([from]) => from),
      slices.map(([, to]) => to),
      allocations.map((a) => a.group),
      allocations.map((a) => a.periodStart),
      allocations.map((a) => microsText(a.amount)),
    ];
    const rows = await this.statements.rows<{ i: string; usage: UsageRow }>(undefined, INSERT_USAGE, values);
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

  /** Marks a record and its allocations reversed at `at`; answers the record as it now is. */
  @GenerateSql({ params: ['prj_1', '1', new Date('2026-03-15T12:00:00Z')] })
  async reverse(projectId: string, usageId: string, at: Date): Promise<UsageRow> {
    const [row] = await this.statements.rows<{ usage: UsageRow }>(undefined, REVERSE, [
      usageId,
      projectId,
      at,
    ]);
    return row.usage;
  }

  /** One page of a customer's ledger, newest first; `from` inclusive, `to` exclusive. */
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
    filter: { featureId?: number; from?: Date; to?: Date },
    { limit, offset }: PageWindow,
  ): Promise<{ rows: UsageRow[]; total: number }> {
    const values: unknown[] = [projectId, customerId];
    let where = 'u.project_id = $1 AND u.customer_id = $2';
    if (filter.featureId !== undefined) where += ` AND u.feature_id = $${values.push(filter.featureId)}`;
    if (filter.from) where += ` AND u.recorded_at >= $${values.push(filter.from)}`;
    if (filter.to) where += ` AND u.recorded_at < $${values.push(filter.to)}`;
    const [{ total }] = await this.statements.rows<{ total: number }>(
      undefined,
      { name: '', text: `SELECT count(*)::int AS total FROM usage_records u WHERE ${where}` },
      values,
    );
    const rows = await this.statements.rows<{ usage: UsageRow }>(
      undefined,
      {
        name: '',
        text: `SELECT ${USAGE_JSON} AS usage FROM usage_records u WHERE ${where}
               ORDER BY u.recorded_at DESC, u.id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      },
      [...values, limit, offset],
    );
    return { rows: rows.map((r) => r.usage), total };
  }
}

/**
 * Records and their allocations (`insertMany`), with their running totals (migration
 * UsageRunningTotals): the series' last total as the statement found it plus the amounts of this
 * statement's rows of the series up to this one (a customer's records of one batch, in its order,
 * at one instant: their ids, drawn in that order, order them). Run under the customers' locks at a
 * time never before their latest record, so each row follows every row of its series in
 * `(recorded_at, id)` order. `$1` to `$9` one row per record (its allocations a slice, from and to,
 * of the arrays `$10` to `$12`). Each series' last total is read (`base`) before the first row
 * is written: read beside the inserts, each probe of a customer's series walked the index entries
 * the statement had written before it (invisible to its snapshot), which grew with the square of
 * a hot customer's consumes in one batch. The always-true ranges on the ordinalities keep the
 * generic plan (see `ORDINALITY_MAX`): without them the planner assumed many rows of each, each
 * with its probe, and planned every call again.
 */
const INSERT_USAGE: Statement = {
  name: 'usage.insert-many',
  text: `WITH x AS (
           SELECT x.*, (SELECT r.overage_running FROM usage_records r WHERE r.customer_id = x.customer AND r.feature_id = x.feature
                         ORDER BY r.recorded_at DESC, r.id DESC LIMIT 1) AS base
             FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::numeric[], $6::numeric[],
                         $7::timestamptz[], $8::int[], $9::int[])
                  WITH ORDINALITY AS x(project, customer, feature, event, amount, overage, recorded_at, af, at, i)
            WHERE x.i BETWEEN 1 AND ${ORDINALITY_MAX}),
         xa AS MATERIALIZED (
           SELECT x.i, y.k, y.grp, y.ps, y.amount,
                  (SELECT p.running FROM usage_allocations p WHERE p.customer_id = x.customer AND p.feature_id = x.feature
                      AND p.plan_group = y.grp
                    ORDER BY p.recorded_at DESC, p.id DESC LIMIT 1) AS base
             FROM x CROSS JOIN LATERAL unnest(($10::text[])[x.af:x.at], ($11::timestamptz[])[x.af:x.at],
                                              ($12::numeric[])[x.af:x.at]) WITH ORDINALITY AS y(grp, ps, amount, k)
            WHERE y.k BETWEEN 1 AND ${ORDINALITY_MAX}),
         u AS (
           INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at, overage_running)
           SELECT x.project, x.customer, x.feature, x.event, x.amount, x.overage, x.recorded_at,
                  sum(x.overage) OVER (PARTITION BY x.customer, x.feature ORDER BY x.i) + coalesce(x.base, 0)
             FROM x ORDER BY x.i
           RETURNING *),
         ux AS (SELECT u.*, x.i FROM u JOIN x ON x.customer = u.customer_id AND x.event = u.event_id),
         a AS (
           INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at, running)
           SELECT ux.project_id, ux.id, ux.customer_id, ux.feature_id, xa.grp, xa.ps, xa.amount, ux.recorded_at,
                  sum(xa.amount) OVER (PARTITION BY ux.customer_id, ux.feature_id, xa.grp ORDER BY xa.i, xa.k) + coalesce(xa.base, 0)
             FROM ux JOIN xa ON xa.i = ux.i
            ORDER BY xa.i, xa.k
           RETURNING usage_id, plan_group, period_start, amount, id)
         SELECT ux.i, json_build_object(
           'id', ux.id::text, 'eventId', ux.event_id, 'customerId', ux.customer_id, 'featureId', ux.feature_id,
           'amount', ux.amount::text, 'overage', ux.overage::text, 'recordedAt', ux.recorded_at, 'reversedAt', ux.reversed_at,
           'allocations', (SELECT coalesce(json_agg(json_build_object('group', a.plan_group, 'periodStart', a.period_start,
                                   'amount', a.amount::text) ORDER BY a.id), '[]'::json) FROM a WHERE a.usage_id = ux.id)) AS usage
           FROM ux`,
};

const LOCK_FOR_REVERSAL: Statement = {
  name: 'usage.lock-for-reversal',
  text: `SELECT ${USAGE_JSON} AS usage
           FROM usage_records u JOIN customers c ON c.id = u.customer_id AND c.project_id = u.project_id
          WHERE u.id = $1::bigint AND u.project_id = $2
            FOR UPDATE OF c, u`,
};

const REVERSE: Statement = {
  name: 'usage.reverse',
  text: `WITH a AS (UPDATE usage_allocations SET reversed = true WHERE usage_id = $1::bigint AND project_id = $2),
              u AS (UPDATE usage_records SET reversed_at = $3 WHERE id = $1::bigint AND project_id = $2 RETURNING *)
         SELECT ${USAGE_JSON} AS usage FROM u`,
};
