import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In } from 'typeorm';
import { inTransaction } from '../database/transaction';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { CodeBatch } from '../codes/entities/code-batch.entity';
import { Code } from '../codes/entities/code.entity';
import { DomainError } from '../common/errors/domain-error';
import { Page, likePattern, toPage } from '../common/http/pagination';
import { violatedConstraint } from '../database/pg-errors';
import { Statement, Statements } from '../database/statements';
import { Subscription } from '../subscriptions/entities/subscription.entity';
import { CreatePlanDto, PlanListQueryDto, PlanView, QuotaInputDto, UpdatePlanDto } from './dto/plan.dto';
import { Feature } from './entities/feature.entity';
import { Plan } from './entities/plan.entity';
import { Quota } from './entities/quota.entity';
import { QuotaWithFeature, toPlanView } from './plans.mapper';
import { changedFields, guardSlug, PLAN_SLUG_INDEX } from './write-helpers';

/** Foreign keys (ON DELETE RESTRICT) that keep a referenced plan from being deleted. */
const PLAN_REFERENCES = new Set(['subscriptions_plan_fk', 'codes_plan_fk', 'code_batches_plan_fk']);

type QuotaRow = Pick<Quota, 'projectId' | 'planId' | 'featureId' | 'limit' | 'priority' | 'resetInterval'>;

/** The project's plans and their quotas (product.md 4); every query is limited to the caller's project. */
@Injectable()
export class PlansService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly statements: Statements,
  ) {}

  /** One plan of the project, or PLAN_NOT_FOUND (a plan of another project is not found). */
  async getPlanEntity(
    projectId: string,
    planId: number,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<Plan> {
    const plan = await manager.findOne(Plan, { where: { id: planId, projectId } });
    if (!plan) throw new DomainError('PLAN_NOT_FOUND');
    return plan;
  }

  /** The project's free plans (value 0), in order of id: what sign-up grants (product.md 6). */
  listFreePlans(projectId: string, manager: EntityManager = this.dataSource.manager): Promise<Plan[]> {
    return manager.find(Plan, { where: { projectId, value: 0 }, order: { id: 'ASC' } });
  }

  /** Plans with their quotas, in id order; `search` is a case-insensitive substring of the name or slug. */
  async list(projectId: string, query: PlanListQueryDto): Promise<Page<PlanView>> {
    const search = query.search ? [likePattern(query.search)] : [];
    const offset = (query.page - 1) * query.pageSize;
    const rows = await this.statements.rows<PlanRow & { total: number }>(
      undefined,
      search.length ? PLAN_PAGE_SEARCH : PLAN_PAGE,
      [projectId, query.pageSize, offset, ...search],
    );
    // the total rides on the page's rows; a page past the end counts separately
    const total = rows.length
      ? rows[0].total
      : (
          await this.statements.rows<{ total: number }>(
            undefined,
            search.length ? PLAN_COUNT_SEARCH : PLAN_COUNT,
            [projectId, ...search],
          )
        )[0].total;
    return toPage(
      await this.toViews(this.dataSource.manager, projectId, rows.map(planFromRow)),
      total,
      query,
    );
  }

  /** One plan with its quotas and their features. */
  async get(
    projectId: string,
    planId: number,
    manager: EntityManager = this.dataSource.manager,
  ): Promise<PlanView> {
    const plan = await this.getPlanEntity(projectId, planId, manager);
    const [view] = await this.toViews(manager, projectId, [plan]);
    return view;
  }

  /** A plan and its quotas in one transaction; each quota's feature must belong to the project. */
  async create(projectId: string, dto: CreatePlanDto, idem?: IdempotencyContext): Promise<PlanView> {
    return guardSlug(PLAN_SLUG_INDEX, () =>
      inTransaction(
        this.dataSource,
        async (em) => {
          const quotas = dto.quotas ?? [];
          await this.lockFeatures(em, projectId, quotas);
          const plan = await em.save(
            em.create(Plan, {
              projectId,
              slug: dto.slug,
              name: dto.name,
              value: dto.value,
              group: dto.group,
            }),
          );
          if (quotas.length > 0)
            await em.insert(
              Quota,
              quotas.map((q) => quotaRow(projectId, plan.id, q)),
            );
          return this.get(projectId, plan.id, em);
        },
        { participant: idem },
      ),
    );
  }

  /**
   * Changes `name`, `slug` and the whole list of `quotas`: a quota whose feature stays keeps its
   * id and createdAt (and is updated in place), the others are deleted or created. `group` and
   * `value` are accepted only when equal to the stored ones (PLAN_FIELD_IMMUTABLE otherwise).
   */
  async update(
    projectId: string,
    planId: number,
    dto: UpdatePlanDto,
    idem?: IdempotencyContext,
  ): Promise<PlanView> {
    return guardSlug(PLAN_SLUG_INDEX, () =>
      inTransaction(
        this.dataSource,
        async (em) => {
          // Serialises updates of this plan without holding up writers that only reference it (subscriptions, codes).
          const plan = await em.findOne(Plan, {
            where: { id: planId, projectId },
            lock: { mode: 'for_no_key_update' },
          });
          if (!plan) throw new DomainError('PLAN_NOT_FOUND');
          if (dto.group !== undefined && dto.group !== plan.group) {
            throw new DomainError('PLAN_FIELD_IMMUTABLE', 'The group of a plan cannot be changed.');
          }
          if (dto.value !== undefined && dto.value !== plan.value) {
            throw new DomainError('PLAN_FIELD_IMMUTABLE', 'The value of a plan cannot be changed.');
          }
          const changes = changedFields(plan, dto, ['name', 'slug'] as const);
          const quotasChanged = dto.quotas
            ? await this.replaceQuotas(em, projectId, plan.id, dto.quotas)
            : false;
          if (Object.keys(changes).length > 0 || quotasChanged) {
            // A quota change is a change of the plan too: its updatedAt moves.
            await em.update(
              Plan,
              { id: plan.id, projectId },
              { ...changes, updatedAt: () => 'CURRENT_TIMESTAMP' },
            );
          }
          return this.get(projectId, plan.id, em);
        },
        { participant: idem },
      ),
    );
  }

  /** PLAN_IN_USE while subscriptions, codes or code batches refer to the plan; its quotas go with it. */
  async remove(projectId: string, planId: number, idem?: IdempotencyContext): Promise<{ success: true }> {
    try {
      return await inTransaction(
        this.dataSource,
        async (em) => {
          // The row lock waits for writers that are adding a reference (their foreign key check holds a key-share lock).
          const plan = await em.findOne(Plan, {
            where: { id: planId, projectId },
            lock: { mode: 'pessimistic_write' },
          });
          if (!plan) throw new DomainError('PLAN_NOT_FOUND');
          const where = { where: { planId: plan.id, projectId } };
          const inUse =
            (await em.exists(Subscription, where)) ||
            (await em.exists(Code, where)) ||
            (await em.exists(CodeBatch, where));
          if (inUse) throw new DomainError('PLAN_IN_USE');
          await em.delete(Plan, { id: plan.id, projectId });
          return { success: true as const };
        },
        { participant: idem },
      );
    } catch (error) {
      if (PLAN_REFERENCES.has(violatedConstraint(error) ?? '')) throw new DomainError('PLAN_IN_USE');
      throw error;
    }
  }

  /**
   * FEATURE_NOT_FOUND unless every quota's feature is one of the project's. The features are
   * key-share locked until the transaction ends, so a concurrent delete waits and then sees the quota.
   */
  private async lockFeatures(em: EntityManager, projectId: string, quotas: QuotaInputDto[]): Promise<void> {
    const ids = quotas.map((q) => q.featureId);
    if (ids.length === 0) return;
    const found = await em.find(Feature, {
      select: { id: true },
      where: { projectId, id: In(ids) },
      lock: { mode: 'for_key_share' },
    });
    const known = new Set(found.map((f) => f.id));
    const missing = ids.find((id) => !known.has(id));
    if (missing !== undefined) throw new DomainError('FEATURE_NOT_FOUND', `Feature ${missing} not found.`);
  }

  /** Replaces the plan's quotas with `inputs`; true when anything changed. */
  private async replaceQuotas(
    em: EntityManager,
    projectId: string,
    planId: number,
    inputs: QuotaInputDto[],
  ): Promise<boolean> {
    await this.lockFeatures(em, projectId, inputs);
    const existing = await em.find(Quota, { where: { planId, projectId } });
    const byFeature = new Map(existing.map((q) => [q.featureId, q]));
    const wanted = new Set(inputs.map((q) => q.featureId));

    const removed = existing.filter((q) => !wanted.has(q.featureId)).map((q) => q.id);
    if (removed.length > 0) await em.delete(Quota, { id: In(removed), planId, projectId });

    const added: QuotaRow[] = [];
    let updated = 0;
    for (const input of inputs) {
      const row = quotaRow(projectId, planId, input);
      const current = byFeature.get(input.featureId);
      if (!current) {
        added.push(row);
      } else if (
        current.limit !== row.limit ||
        current.priority !== row.priority ||
        current.resetInterval !== row.resetInterval
      ) {
        await em.update(
          Quota,
          { id: current.id, planId, projectId },
          { limit: row.limit, priority: row.priority, resetInterval: row.resetInterval },
        );
        updated++;
      }
    }
    if (added.length > 0) await em.insert(Quota, added);
    return removed.length + added.length + updated > 0;
  }

  /** Views of `plans` with their quotas (quota id order), read in one query. */
  private async toViews(em: EntityManager, projectId: string, plans: Plan[]): Promise<PlanView[]> {
    if (plans.length === 0) return [];
    const rows = await this.statements.rows<QuotaFeatureRow>(em, PLAN_QUOTAS, [
      plans.map((p) => p.id),
      projectId,
    ]);
    const byPlan = new Map<number, QuotaWithFeature[]>();
    for (const row of rows) {
      const q = quotaFromRow(row);
      const list = byPlan.get(q.planId);
      if (list) list.push(q);
      else byPlan.set(q.planId, [q]);
    }
    return plans.map((p) => toPlanView(p, byPlan.get(p.id) ?? []));
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
  text: `SELECT q.id, q.project_id, q.plan_id, q.feature_id, q.quota_limit, q.priority, q.reset_interval, q.created_at, q.updated_at,
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
  quota_limit: string;
  priority: number;
  reset_interval: string | null;
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
    limit: Number(r.quota_limit),
    priority: r.priority,
    resetInterval: r.reset_interval,
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

/** A quota's columns from its input: priority 0 and no reset unless given. */
const quotaRow = (projectId: string, planId: number, q: QuotaInputDto): QuotaRow => ({
  projectId,
  planId,
  featureId: q.featureId,
  limit: q.limit,
  priority: q.priority ?? 0,
  resetInterval: q.resetInterval ?? null,
});
