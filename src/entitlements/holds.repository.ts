import { Injectable } from '@nestjs/common';
import { PageWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';
import { Statement, Statements } from '../database/statements';
import type { HoldStatus } from './dto/hold.dto';
import { Allocation, microsText } from './engine/entitlement-engine';
import type { HoldAllocationJson } from './entitlements.repository';
import type { StoredHoldStatus } from './entities/usage-hold.entity';

/** A hold as stored: ids and amounts as text (bigint and numeric), times as dates. */
export interface HoldRow {
  id: string;
  projectId: string;
  customerId: number;
  featureId: number;
  holdId: string;
  amount: string;
  overage: string;
  allowOverage: boolean;
  allocations: HoldAllocationJson[];
  status: StoredHoldStatus;
  createdAt: Date;
  expiresAt: Date;
  endedAt: Date | null;
  usageId: string | null;
}

export interface NewHold {
  projectId: string;
  customerId: number;
  featureId: number;
  holdId: string;
  amount: bigint;
  overage: bigint;
  allowOverage: boolean;
  allocations: Allocation[];
  createdAt: Date;
  expiresAt: Date;
}

/** How a hold ends: committed (with its record), released, at an instant. */
export interface HoldEnd {
  status: 'committed' | 'released';
  endedAt: Date;
  usageId: string | null;
}

/** The columns of a hold `h` as a `HoldRow`. */
const HOLD_COLUMNS = `h.id::text AS "id", h.project_id AS "projectId", h.customer_id AS "customerId",
  h.feature_id AS "featureId", h.hold_id AS "holdId", h.amount::text AS "amount", h.overage::text AS "overage",
  h.allow_overage AS "allowOverage", h.allocations, h.status, h.created_at AS "createdAt",
  h.expires_at AS "expiresAt", h.ended_at AS "endedAt", h.usage_id::text AS "usageId"`;

const SAMPLE_AT = new Date('2026-03-15T12:00:00Z');

/**
 * Every statement on `usage_holds` but the entitlement state's read of the holds not ended
 * (`EntitlementsRepository`): a hold's insert, reads, end, the customer's page and the expiry
 * scheduler's marking. The writes run in the caller's unit of work, under the customer's lock
 * (the scheduler's excepted: it locks only the holds it marks).
 */
@Injectable()
export class HoldsRepository {
  constructor(private readonly statements: Statements) {}

  @GenerateSql({
    params: [
      {
        projectId: 'prj_1',
        customerId: 1,
        featureId: 1,
        holdId: 'completion-1',
        amount: 2_000_000n,
        overage: 0n,
        allowOverage: false,
        allocations: [
          {
            source: 'plan',
            group: 'default',
            periodStart: new Date('2026-03-01T00:00:00Z'),
            grantId: null,
            amount: 2_000_000n,
          },
        ],
        createdAt: SAMPLE_AT,
        expiresAt: new Date('2026-03-15T12:15:00Z'),
      },
    ],
  })
  async insert(hold: NewHold): Promise<HoldRow> {
    const allocations: HoldAllocationJson[] = hold.allocations.map((a) => ({
      source: a.source,
      group: a.group,
      periodStart: a.periodStart === null ? null : a.periodStart.toISOString(),
      grantId: a.grantId,
      amount: microsText(a.amount),
    }));
    const [row] = await this.statements.rows<HoldRow>(undefined, INSERT_HOLD, [
      hold.projectId,
      hold.customerId,
      hold.featureId,
      hold.holdId,
      microsText(hold.amount),
      microsText(hold.overage),
      hold.allowOverage,
      JSON.stringify(allocations),
      hold.createdAt,
      hold.expiresAt,
    ]);
    return row;
  }

  /** The project's hold `id`; `lock`: its row `FOR UPDATE` (a commit or a release, under its customer's lock). */
  @GenerateSql({ name: 'unlocked', params: ['prj_1', '1'] }, { name: 'locked', params: ['prj_1', '1', true] })
  async find(projectId: string, id: string, lock = false): Promise<HoldRow | null> {
    const [row] = await this.statements.rows<HoldRow>(undefined, lock ? FIND_HOLD_LOCKED : FIND_HOLD, [
      id,
      projectId,
    ]);
    return row ?? null;
  }

  /** The customer's hold with the caller's `holdId` (unique per project and customer), if any. */
  @GenerateSql({ params: ['prj_1', 1, 'completion-1'] })
  async findByHoldId(projectId: string, customerId: number, holdId: string): Promise<HoldRow | null> {
    const [row] = await this.statements.rows<HoldRow>(undefined, FIND_BY_HOLD_ID, [
      projectId,
      customerId,
      holdId,
    ]);
    return row ?? null;
  }

  /**
   * Ends a hold (committed or released) and answers it as it now is. It carries the unit of
   * work's waiting riders (its audit records), so that they cost no round trip of their own.
   */
  @GenerateSql({
    params: ['prj_1', '1', { status: 'committed', endedAt: SAMPLE_AT, usageId: '1' }],
  })
  async end(projectId: string, id: string, end: HoldEnd): Promise<HoldRow> {
    const [row] = await this.statements.rows<HoldRow>(undefined, END_HOLD, [
      id,
      projectId,
      end.status,
      end.endedAt,
      end.usageId,
    ]);
    return row;
  }

  /**
   * A page of the customer's holds, newest first (`id` descending); `status` is derived at `at`
   * as the views derive it (`holdStatusOf`), in SQL so that the page and the total agree.
   */
  @GenerateSql(
    { name: 'unfiltered', params: ['prj_1', 1, {}, SAMPLE_AT, { limit: 10, offset: 0 }] },
    {
      name: 'by feature and status',
      params: ['prj_1', 1, { featureId: 1, status: 'expired' }, SAMPLE_AT, { limit: 10, offset: 0 }],
    },
  )
  async page(
    projectId: string,
    customerId: number,
    filter: { featureId?: number; status?: HoldStatus },
    at: Date,
    { limit, offset }: PageWindow,
  ): Promise<{ rows: HoldRow[]; total: number }> {
    const values: unknown[] = [projectId, customerId];
    let where = 'h.project_id = $1 AND h.customer_id = $2';
    // a feature id beyond the column's range names no feature: compared as a bigint, it lists nothing
    if (filter.featureId !== undefined)
      where += ` AND h.feature_id = $${values.push(filter.featureId)}::bigint`;
    if (filter.status === 'held') where += ` AND h.status = 'held' AND h.expires_at > $${values.push(at)}`;
    else if (filter.status === 'expired')
      where += ` AND (h.status = 'expired' OR (h.status = 'held' AND h.expires_at <= $${values.push(at)}))`;
    else if (filter.status) where += ` AND h.status = $${values.push(filter.status)}`;
    const [{ total }] = await this.statements.rows<{ total: number }>(
      undefined,
      { name: '', text: `SELECT count(*)::int AS total FROM usage_holds h WHERE ${where}` },
      values,
    );
    const rows = await this.statements.rows<HoldRow>(
      undefined,
      {
        name: '',
        text: `SELECT ${HOLD_COLUMNS} FROM usage_holds h WHERE ${where}
               ORDER BY h.id DESC LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
      },
      [...values, limit, offset],
    );
    return { rows, total };
  }

  /**
   * Marks expired at most `limit` holds not ended whose `expiresAt` is at or before `at`, oldest
   * first (the partial index `usage_holds_expires_idx`), and answers them as they now are. Rows
   * another transaction holds (a commit or a release deciding) are skipped, not waited for: the
   * next run finds them again if they are still not ended.
   */
  @GenerateSql({ params: [SAMPLE_AT, 200] })
  expireDue(at: Date, limit: number): Promise<HoldRow[]> {
    return this.statements.rows<HoldRow>(undefined, EXPIRE_DUE, [at, limit]);
  }
}

const INSERT_HOLD: Statement = {
  name: 'holds.insert',
  text: `INSERT INTO usage_holds AS h (project_id, customer_id, feature_id, hold_id, amount, overage, allow_overage,
                                      allocations, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10)
         RETURNING ${HOLD_COLUMNS}`,
};

const FIND_HOLD: Statement = {
  name: 'holds.find',
  text: `SELECT ${HOLD_COLUMNS} FROM usage_holds h WHERE h.id = $1::bigint AND h.project_id = $2`,
};

const FIND_HOLD_LOCKED: Statement = {
  name: 'holds.find-locked',
  text: `SELECT ${HOLD_COLUMNS} FROM usage_holds h WHERE h.id = $1::bigint AND h.project_id = $2 FOR UPDATE`,
};

const FIND_BY_HOLD_ID: Statement = {
  name: 'holds.find-by-hold-id',
  text: `SELECT ${HOLD_COLUMNS} FROM usage_holds h WHERE h.project_id = $1 AND h.customer_id = $2 AND h.hold_id = $3`,
};

const END_HOLD: Statement = {
  name: 'holds.end',
  carrier: true,
  text: `WITH h AS (
           UPDATE usage_holds SET status = $3, ended_at = $4, usage_id = $5::bigint
            WHERE id = $1::bigint AND project_id = $2
           RETURNING *)
         SELECT ${HOLD_COLUMNS} FROM h`,
};

const EXPIRE_DUE: Statement = {
  name: 'holds.expire-due',
  text: `WITH due AS (
           SELECT d.id FROM usage_holds d WHERE d.status = 'held' AND d.expires_at <= $1
            ORDER BY d.expires_at, d.id LIMIT $2
              FOR UPDATE SKIP LOCKED),
         h AS (
           UPDATE usage_holds u SET status = 'expired', ended_at = u.expires_at
             FROM due WHERE u.id = due.id
           RETURNING u.*)
         SELECT ${HOLD_COLUMNS} FROM h ORDER BY h.expires_at, h.id`,
};
