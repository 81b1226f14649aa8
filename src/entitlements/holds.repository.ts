import { Injectable } from '@nestjs/common';
import { PageWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';
import { Statement, Statements } from '../database/statements';
import type { HoldStatus } from './dto/hold.dto';
import { Allocation, microsText } from './engine/entitlement-engine';
import { HoldAllocationJson, ORDINALITY_MAX } from './entitlements.repository';
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
      [
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
    ],
  })
  async insertMany(holds: NewHold[]): Promise<HoldRow[]> {
    const allocations = holds.map((hold) =>
      JSON.stringify(
        hold.allocations.map((a): HoldAllocationJson => ({
          source: a.source,
          group: a.group,
          periodStart: a.periodStart === null ? null : a.periodStart.toISOString(),
          grantId: a.grantId,
          amount: microsText(a.amount),
        })),
      ),
    );
    const rows = await this.statements.rows<HoldRow & { i: string }>(undefined, INSERT_HOLDS, [
      holds.map((h) => h.projectId),
      holds.map((h) => h.customerId),
      holds.map((h) => h.featureId),
      holds.map((h) => h.holdId),
      holds.map((h) => microsText(h.amount)),
      holds.map((h) => microsText(h.overage)),
      holds.map((h) => h.allowOverage),
      allocations,
      holds.map((h) => h.createdAt),
      holds.map((h) => h.expiresAt),
    ]);
    return inOrder(holds, rows) as HoldRow[];
  }

  /** The project's hold `id`, if any. */
  @GenerateSql({ params: ['prj_1', '1'] })
  async find(projectId: string, id: string): Promise<HoldRow | null> {
    const [row] = await this.statements.rows<HoldRow>(undefined, FIND_HOLD, [id, projectId]);
    return row ?? null;
  }

  /**
   * Each hold of `ids` (of its project) with its row locked `FOR UPDATE`, in id order, so that two
   * commits never wait for each other in a cycle; null for one the project does not have. A
   * commit or a release locks its hold before its customer: the expiry scheduler's marking, a
   * commit and a release of one hold see each other's result whole.
   */
  @GenerateSql({ params: [[{ projectId: 'prj_1', id: '1' }]] })
  async lockMany(ids: ReadonlyArray<{ projectId: string; id: string }>): Promise<Array<HoldRow | null>> {
    const rows = await this.statements.rows<HoldRow & { i: string }>(undefined, LOCK_HOLDS, [
      ids.map((h) => h.id),
      ids.map((h) => h.projectId),
    ]);
    return inOrder(ids, rows);
  }

  /** Each customer's hold with the caller's `holdId` (unique per project and customer); null where none. */
  @GenerateSql({ params: [[{ projectId: 'prj_1', customerId: 1, holdId: 'completion-1' }]] })
  async findByHoldIds(
    keys: ReadonlyArray<{ projectId: string; customerId: number; holdId: string }>,
  ): Promise<Array<HoldRow | null>> {
    const rows = await this.statements.rows<HoldRow & { i: string }>(undefined, FIND_BY_HOLD_IDS, [
      keys.map((k) => k.projectId),
      keys.map((k) => k.customerId),
      keys.map((k) => k.holdId),
    ]);
    return inOrder(keys, rows);
  }

  /**
   * Ends holds (committed or released) and answers them as they now are, in the order given. It
   * carries the unit of work's waiting riders (its audit records), so that they cost no round
   * trip of their own.
   */
  @GenerateSql({
    params: [[{ projectId: 'prj_1', id: '1', status: 'committed', endedAt: SAMPLE_AT, usageId: '1' }]],
  })
  async endMany(ends: ReadonlyArray<HoldEnd & { projectId: string; id: string }>): Promise<HoldRow[]> {
    const rows = await this.statements.rows<HoldRow & { i: string }>(undefined, END_HOLDS, [
      ends.map((e) => e.id),
      ends.map((e) => e.projectId),
      ends.map((e) => e.status),
      ends.map((e) => e.endedAt),
      ends.map((e) => e.usageId),
    ]);
    return inOrder(ends, rows) as HoldRow[];
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

const INSERT_HOLDS: Statement = {
  name: 'holds.insert-many',
  text: `WITH h AS (
           INSERT INTO usage_holds (project_id, customer_id, feature_id, hold_id, amount, overage, allow_overage,
                                    allocations, created_at, expires_at)
           SELECT x.project, x.customer, x.feature, x.hold, x.amount, x.overage, x.allow_overage, x.allocations,
                  x.created_at, x.expires_at
             FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::numeric[], $6::numeric[], $7::boolean[],
                         $8::jsonb[], $9::timestamptz[], $10::timestamptz[])
                  AS x(project, customer, feature, hold, amount, overage, allow_overage, allocations, created_at, expires_at)
           RETURNING *)
         SELECT r.i, ${HOLD_COLUMNS}
           FROM unnest($1::text[], $2::int[], $4::text[]) WITH ORDINALITY AS r(project, customer, hold, i)
           JOIN h ON h.project_id = r.project AND h.customer_id = r.customer AND h.hold_id = r.hold`,
};

const FIND_HOLD: Statement = {
  name: 'holds.find',
  text: `SELECT ${HOLD_COLUMNS} FROM usage_holds h WHERE h.id = $1::bigint AND h.project_id = $2`,
};

const LOCK_HOLDS: Statement = {
  name: 'holds.lock-many',
  text: `SELECT r.i, ${HOLD_COLUMNS}
           FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS r(id, project, i)
           JOIN usage_holds h ON h.id = r.id AND h.project_id = r.project
          WHERE r.i BETWEEN 1 AND ${ORDINALITY_MAX}
          ORDER BY h.id
            FOR UPDATE OF h`,
};

const FIND_BY_HOLD_IDS: Statement = {
  name: 'holds.find-by-hold-ids',
  text: `SELECT r.i, ${HOLD_COLUMNS}
           FROM unnest($1::text[], $2::int[], $3::text[]) WITH ORDINALITY AS r(project, customer, hold, i)
           JOIN usage_holds h ON h.project_id = r.project AND h.customer_id = r.customer AND h.hold_id = r.hold
          WHERE r.i BETWEEN 1 AND ${ORDINALITY_MAX}`,
};

const END_HOLDS: Statement = {
  name: 'holds.end-many',
  carrier: true,
  text: `WITH r AS (
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::timestamptz[], $5::bigint[])
                         WITH ORDINALITY AS r(id, project, status, ended_at, usage_id, i)
            WHERE r.i BETWEEN 1 AND ${ORDINALITY_MAX}),
         h AS (
           UPDATE usage_holds u SET status = r.status, ended_at = r.ended_at, usage_id = r.usage_id
             FROM r WHERE u.id = r.id AND u.project_id = r.project
           RETURNING u.*)
         SELECT r.i, ${HOLD_COLUMNS} FROM r JOIN h ON h.id = r.id`,
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

/** Rows of a statement over `items` (each with the ordinality `i` of its item) in the items' order; null where none. */
function inOrder<R extends { i: string }>(items: readonly unknown[], rows: R[]): Array<HoldRow | null> {
  const ordered: Array<HoldRow | null> = items.map(() => null);
  for (const { i, ...row } of rows) ordered[Number(i) - 1] = row as unknown as HoldRow;
  return ordered;
}
