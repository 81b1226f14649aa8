import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { Statement, Statements } from '../database/statements';
import type { OwnTransaction } from '../database/transaction';
import { Allocation, microsText } from './engine/entitlement-engine';
import { ORDINALITY_MAX, USAGE_JSON, UsageRow } from './entitlements.repository';
import { PageWindow } from '../common/http/pagination';

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

/** Every SQL statement of `usage_records` and `usage_allocations`. */
@Injectable()
export class UsageRepository {
  constructor(private readonly statements: Statements) {}

  /**
   * Writes a record and its allocations in one statement; answers the stored record. With
   * `commit` (the last statement of a consume's own transaction), `COMMIT` goes in the same
   * round trip when the connection allows (`Statements.chain`), which `commit.committed` says.
   */
  async insert(em: EntityManager, usage: NewUsage, commit?: OwnTransaction): Promise<UsageRow> {
    const values = [
      usage.projectId,
      usage.customerId,
      usage.featureId,
      usage.eventId,
      microsText(usage.amount),
      microsText(usage.overage),
      usage.recordedAt,
      usage.allocations.map((a) => a.group),
      usage.allocations.map((a) => a.periodStart),
      usage.allocations.map((a) => microsText(a.amount)),
    ];
    if (commit) {
      const chained = await this.statements.chain<{ usage: UsageRow }>(em, [
        { statement: INSERT_USAGE, values },
        'COMMIT',
      ]);
      if (chained) {
        commit.committed = true;
        return chained[0][0].usage;
      }
    }
    const [row] = await this.statements.rows<{ usage: UsageRow }>(em, INSERT_USAGE, values);
    return row.usage;
  }

  /**
   * The record `usageId` of the project, with its customer's row locked `FOR UPDATE` (the lock of
   * consumes and grants) and the record's own row; null when there is none.
   */
  async lockForReversal(em: EntityManager, projectId: string, usageId: string): Promise<UsageRow | null> {
    const [row] = await this.statements.rows<{ usage: UsageRow }>(em, LOCK_FOR_REVERSAL, [
      usageId,
      projectId,
    ]);
    return row?.usage ?? null;
  }

  /** Marks a record and its allocations reversed at `at`; answers the record as it now is. */
  async reverse(em: EntityManager, projectId: string, usageId: string, at: Date): Promise<UsageRow> {
    const [row] = await this.statements.rows<{ usage: UsageRow }>(em, REVERSE, [usageId, projectId, at]);
    return row.usage;
  }

  /** One page of a customer's ledger, newest first; `from` inclusive, `to` exclusive. */
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
 * A record and its allocations, with their running totals (migration UsageRunningTotals): the
 * series' last total plus this row's amount. Run under the customer's lock at a time never before
 * its latest record, so each row is the last of its series in `(recorded_at, id)` order. The
 * always-true range on the ordinality keeps the generic plan (see `ORDINALITY_MAX`): without it
 * the planner counted 10 allocations, each with its probe, and planned every call again (0.16 ms).
 */
const INSERT_USAGE: Statement = {
  name: 'usage.insert',
  text: `WITH u AS (
           INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at, overage_running)
           VALUES ($1, $2, $3, $4, $5, $6::numeric, $7, $6::numeric + coalesce(
             (SELECT r.overage_running FROM usage_records r WHERE r.customer_id = $2 AND r.feature_id = $3
               ORDER BY r.recorded_at DESC, r.id DESC LIMIT 1), 0))
           RETURNING *),
         a AS (
           INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at, running)
           SELECT $1, u.id, $2, $3, x.grp, x.ps, x.amount, $7, x.amount + coalesce(
                    (SELECT p.running FROM usage_allocations p WHERE p.customer_id = $2 AND p.feature_id = $3 AND p.plan_group = x.grp
                      ORDER BY p.recorded_at DESC, p.id DESC LIMIT 1), 0)
             FROM u, unnest($8::text[], $9::timestamptz[], $10::numeric[]) WITH ORDINALITY AS x(grp, ps, amount, i)
            WHERE x.i BETWEEN 1 AND ${ORDINALITY_MAX}
            ORDER BY x.i
           RETURNING plan_group, period_start, amount, id)
         SELECT json_build_object(
           'id', u.id::text, 'eventId', u.event_id, 'customerId', u.customer_id, 'featureId', u.feature_id,
           'amount', u.amount::text, 'overage', u.overage::text, 'recordedAt', u.recorded_at, 'reversedAt', u.reversed_at,
           'allocations', (SELECT coalesce(json_agg(json_build_object('group', a.plan_group, 'periodStart', a.period_start,
                                   'amount', a.amount::text) ORDER BY a.id), '[]'::json) FROM a)) AS usage
           FROM u`,
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
