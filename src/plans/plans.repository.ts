import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { ReadReplicas } from '../database/read-replicas';
import { Statement, Statements } from '../database/statements';
import { Transactions } from '../database/transactional';
import { Feature } from './entities/feature.entity';
import { Plan } from './entities/plan.entity';
import { Quota } from './entities/quota.entity';
import type { QuotaWithFeature } from './plans.mapper';
import type { PageWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';

/** The columns a plan write sets; the reset fields as `QuotaResetFields`. */
export type QuotaResetFields = Pick<
  Quota,
  'resetInterval' | 'resetAnchor' | 'resetDayOfMonth' | 'resetTimeZone' | 'thresholds'
>;
export type QuotaRow = Pick<Quota, 'projectId' | 'planId' | 'featureId' | 'limit' | 'priority'> &
  QuotaResetFields;

/** Reset fields of the generated calls. */
const RUN_MONTHLY: QuotaResetFields = {
  resetInterval: 'P1M',
  resetAnchor: 'run',
  resetDayOfMonth: null,
  resetTimeZone: null,
  thresholds: [80, 100],
};
const CALENDAR_DAILY: QuotaResetFields = {
  resetInterval: 'P1D',
  resetAnchor: 'calendar',
  resetDayOfMonth: null,
  resetTimeZone: 'Europe/Berlin',
  thresholds: [],
};

/**
 * Every statement on `plans` and `quotas` (and the key-share lock of the features a quota names):
 * the named statements, the TypeORM calls, the row types and the row-to-entity mapping.
 * `PlansService` keeps the rules. Every statement runs in the current unit of work's
 * transaction, if one is open; the page reads on a read replica inside `ReadReplicas.run`.
 */
@Injectable()
export class PlansRepository {
  constructor(
    private readonly transactions: Transactions,
    private readonly statements: Statements,
    private readonly reads: ReadReplicas,
  ) {}

  private get tx() {
    return this.transactions.tx;
  }

  /** One page of plans in id order, and the total (a page past the end counts separately). */
  @GenerateSql(
    { name: 'a page', params: ['prj_1', undefined, { limit: 20, offset: 0 }] },
    { name: 'past the end', params: ['prj_1', undefined, { limit: 20, offset: 100 }] },
    { name: 'searching', params: ['prj_1', '%pro%', { limit: 20, offset: 0 }] },
    { name: 'searching, past the end', params: ['prj_1', '%pro%', { limit: 20, offset: 100 }] },
  )
  async page(
    projectId: string,
    pattern: string | undefined,
    { limit, offset }: PageWindow,
  ): Promise<{ plans: Plan[]; total: number }> {
    const reader = this.reads.manager; // undefined outside ReadReplicas.run: the current transaction
    const search = pattern !== undefined ? [pattern] : [];
    const rows = await this.statements.rows<PlanRow & { total: number }>(
      reader,
      search.length ? PLAN_PAGE_SEARCH : PLAN_PAGE,
      [projectId, limit, offset, ...search],
    );
    // the total rides on the page's rows; a page past the end counts separately
    const total = rows.length
      ? rows[0].total
      : (
          await this.statements.rows<{ total: number }>(
            reader,
            search.length ? PLAN_COUNT_SEARCH : PLAN_COUNT,
            [projectId, ...search],
          )
        )[0].total;
    return { plans: rows.map(planFromRow), total };
  }

  /** One plan of the project, optionally locked for the rest of the transaction, or null. */
  @GenerateSql(
    { name: 'unlocked', params: ['prj_1', 1] },
    { name: 'locked for update', params: ['prj_1', 1, 'pessimistic_write'] },
    { name: 'locked for no key update', params: ['prj_1', 1, 'for_no_key_update'] },
  )
  find(
    projectId: string,
    planId: number,
    lock?: 'pessimistic_write' | 'for_no_key_update',
  ): Promise<Plan | null> {
    return this.tx.findOne(Plan, {
      where: { id: planId, projectId },
      ...(lock ? { lock: { mode: lock } } : {}),
    });
  }

  /** The name of a plan of the project, or undefined. */
  @GenerateSql({ params: ['prj_1', 1] })
  async findName(projectId: string, planId: number): Promise<string | undefined> {
    const plan = await this.tx.findOne(Plan, {
      where: { id: planId, projectId },
      select: { id: true, name: true },
    });
    return plan?.name;
  }

  /** The names of some plans of the project, by id (one query; on a read replica inside `ReadReplicas.run`). */
  @GenerateSql({ params: ['prj_1', [1, 2]] })
  async names(projectId: string, planIds: number[]): Promise<Map<number, string>> {
    const plans = await (this.reads.manager ?? this.tx).find(Plan, {
      select: { id: true, name: true },
      where: { id: In(planIds), projectId },
    });
    return new Map(plans.map((p) => [p.id, p.name]));
  }

  /** The project's free plans (value 0), in order of id. */
  @GenerateSql({ params: ['prj_1'] })
  listFree(projectId: string): Promise<Plan[]> {
    return this.tx.find(Plan, { where: { projectId, value: 0 }, order: { id: 'ASC' } });
  }

  @GenerateSql({ params: [{ projectId: 'prj_1', slug: 'team', name: 'Team', value: 25, group: 'default' }] })
  insert(plan: Pick<Plan, 'projectId' | 'slug' | 'name' | 'value' | 'group'>): Promise<Plan> {
    return this.tx.save(this.tx.create(Plan, plan));
  }

  /** Writes `changes` and moves `updatedAt`. */
  @GenerateSql({ params: ['prj_1', 1, { name: 'Pro 2026' }] })
  async touch(projectId: string, planId: number, changes: Partial<Plan>): Promise<void> {
    await this.tx.update(
      Plan,
      { id: planId, projectId },
      { ...changes, updatedAt: () => 'CURRENT_TIMESTAMP' },
    );
  }

  /**
   * Whether a subscription, a code or a code batch of the project refers to the plan: the
   * referents of its foreign keys (`PLAN_REFERENCES`), asked by the plan's owner.
   */
  @GenerateSql({ name: 'not referenced', params: ['prj_1', 2] })
  async isReferenced(projectId: string, planId: number): Promise<boolean> {
    for (const table of ['subscriptions', 'codes', 'code_batches']) {
      const [row]: Array<{ exists: boolean }> = await this.tx.query(
        `SELECT EXISTS (SELECT 1 FROM ${table} WHERE plan_id = $1 AND project_id = $2) AS "exists"`,
        [planId, projectId],
      );
      if (row.exists) return true;
    }
    return false;
  }

  @GenerateSql({ params: ['prj_1', 2] })
  async delete(projectId: string, planId: number): Promise<void> {
    await this.tx.delete(Plan, { id: planId, projectId });
  }

  /** The ids among `ids` of the project's features, key-share locked until the transaction ends. */
  @GenerateSql({ params: ['prj_1', [1, 2]] })
  async lockFeatureIds(projectId: string, ids: number[]): Promise<Set<number>> {
    const found = await this.tx.find(Feature, {
      select: { id: true },
      where: { projectId, id: In(ids) },
      lock: { mode: 'for_key_share' },
    });
    return new Set(found.map((f) => f.id));
  }

  @GenerateSql({ params: ['prj_1', 1] })
  quotasOf(projectId: string, planId: number): Promise<Quota[]> {
    return this.tx.find(Quota, { where: { planId, projectId } });
  }

  @GenerateSql(
    {
      name: 'one',
      params: [[{ projectId: 'prj_1', planId: 2, featureId: 1, limit: 100, priority: 0, ...RUN_MONTHLY }]],
    },
    {
      name: 'several',
      params: [
        [
          { projectId: 'prj_1', planId: 2, featureId: 1, limit: 100, priority: 0, ...RUN_MONTHLY },
          { projectId: 'prj_1', planId: 2, featureId: 2, limit: null, priority: 0, ...CALENDAR_DAILY },
        ],
      ],
    },
  )
  async insertQuotas(rows: QuotaRow[]): Promise<void> {
    await this.tx.insert(Quota, rows);
  }

  @GenerateSql({ params: ['prj_1', 1, 1, { limit: 2000, priority: 1, ...RUN_MONTHLY }] })
  async updateQuota(
    projectId: string,
    planId: number,
    quotaId: number,
    changes: Pick<Quota, 'limit' | 'priority'> & QuotaResetFields,
  ): Promise<void> {
    await this.tx.update(Quota, { id: quotaId, planId, projectId }, changes);
  }

  @GenerateSql({ params: ['prj_1', 1, [1, 2]] })
  async deleteQuotas(projectId: string, planId: number, ids: number[]): Promise<void> {
    await this.tx.delete(Quota, { id: In(ids), planId, projectId });
  }

  /**
   * The quotas of some plans of the project, each with its feature, in quota id order: one
   * statement (on a read replica inside `ReadReplicas.run`).
   */
  @GenerateSql({ params: ['prj_1', [1, 2]] })
  async quotasWithFeatures(projectId: string, planIds: number[]): Promise<QuotaWithFeature[]> {
    const rows = await this.statements.rows<QuotaFeatureRow>(this.reads.manager, PLAN_QUOTAS, [
      planIds,
      projectId,
    ]);
    return rows.map(quotaFromRow);
  }
}

const PLAN_COLUMNS = 'p.id, p.project_id, p.slug, p.name, p.value, p.plan_group, p.created_at, p.updated_at';
const PLAN_SEARCH = '(p.name ILIKE $4 OR p.slug ILIKE $4)';
const PLAN_PAGE: Statement = {
  name: 'plans.page',
  text: `SELECT ${PLAN_COLUMNS}, count(*) OVER ()::int AS total FROM plans p WHERE p.project_id = $1 ORDER BY p.id LIMIT $2 OFFSET $3`,
};
const PLAN_PAGE_SEARCH: Statement = {
  name: 'plans.page-search',
  text: `SELECT ${PLAN_COLUMNS}, count(*) OVER ()::int AS total FROM plans p WHERE p.project_id = $1 AND ${PLAN_SEARCH} ORDER BY p.id LIMIT $2 OFFSET $3`,
};
const PLAN_COUNT: Statement = {
  name: 'plans.count',
  text: 'SELECT count(*)::int AS total FROM plans p WHERE p.project_id = $1',
};
const PLAN_COUNT_SEARCH: Statement = {
  name: 'plans.count-search',
  text: `SELECT count(*)::int AS total FROM plans p WHERE p.project_id = $1 AND ${PLAN_SEARCH.replaceAll('$4', '$2')}`,
};
/** The quotas of some plans of the project, each with its feature, in id order. */
const PLAN_QUOTAS: Statement = {
  name: 'plans.quotas',
  text: `SELECT q.id, q.project_id, q.plan_id, q.feature_id, q.quota_limit, q.priority, q.reset_interval,
                q.reset_anchor, q.reset_day_of_month, q.reset_time_zone, q.thresholds, q.created_at, q.updated_at,
                f.project_id AS f_project_id, f.slug AS f_slug, f.name AS f_name, f.description AS f_description,
                f.metered AS f_metered, f.unit AS f_unit, f.created_at AS f_created_at, f.updated_at AS f_updated_at
           FROM quotas q JOIN features f ON f.id = q.feature_id AND f.project_id = q.project_id
          WHERE q.plan_id = ANY($1::int[]) AND q.project_id = $2
          ORDER BY q.id`,
};

interface PlanRow {
  id: number;
  project_id: string;
  slug: string;
  name: string;
  value: string;
  plan_group: string;
  created_at: Date;
  updated_at: Date;
}

interface QuotaFeatureRow {
  id: number;
  project_id: string;
  plan_id: number;
  feature_id: number;
  quota_limit: string | null;
  priority: number;
  reset_interval: string | null;
  reset_anchor: 'run' | 'calendar';
  reset_day_of_month: number | null;
  reset_time_zone: string | null;
  thresholds: number[];
  created_at: Date;
  updated_at: Date;
  f_project_id: string;
  f_slug: string;
  f_name: string;
  f_description: string;
  f_metered: boolean;
  f_unit: string;
  f_created_at: Date;
  f_updated_at: Date;
}

/** Rows of the statements above as entities (numeric columns arrive as text, as TypeORM's transformer expects). */
const planFromRow = (r: PlanRow): Plan =>
  Object.assign(new Plan(), {
    id: r.id,
    projectId: r.project_id,
    slug: r.slug,
    name: r.name,
    value: Number(r.value),
    group: r.plan_group,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });

const quotaFromRow = (r: QuotaFeatureRow): QuotaWithFeature =>
  Object.assign(new Quota(), {
    id: r.id,
    projectId: r.project_id,
    planId: r.plan_id,
    featureId: r.feature_id,
    limit: r.quota_limit === null ? null : Number(r.quota_limit),
    priority: r.priority,
    resetInterval: r.reset_interval,
    resetAnchor: r.reset_anchor,
    resetDayOfMonth: r.reset_day_of_month,
    resetTimeZone: r.reset_time_zone,
    thresholds: r.thresholds,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    feature: Object.assign(new Feature(), {
      id: r.feature_id,
      projectId: r.f_project_id,
      slug: r.f_slug,
      name: r.f_name,
      description: r.f_description,
      metered: r.f_metered,
      unit: r.f_unit,
      createdAt: r.f_created_at,
      updatedAt: r.f_updated_at,
    }),
  });
