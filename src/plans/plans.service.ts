import { Injectable } from '@nestjs/common';
import { ReadReplicas } from '../database/read-replicas';
import { AuditTrail } from '../audit/audit-trail';
import { Transactions, runInTransaction } from '../database/transactional';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { DomainError } from '../common/errors/domain-error';
import { Page, likePattern, pageWindow, toPage } from '../common/http/pagination';
import { violatedConstraint } from '../database/pg-errors';
import { CreatePlanDto, PlanListQueryDto, PlanView, QuotaInputDto, UpdatePlanDto } from './dto/plan.dto';
import { Plan } from './entities/plan.entity';
import type { Quota } from './entities/quota.entity';
import { QuotaWithFeature, toAuditedPlan, toPlanView } from './plans.mapper';
import { PlansRepository, QuotaRow } from './plans.repository';
import { assertResetFields } from './reset-rules';
import { changedFields, guardSlug, PLAN_SLUG_INDEX } from './write-helpers';

/** Foreign keys (ON DELETE RESTRICT) that keep a referenced plan from being deleted. */
const PLAN_REFERENCES = new Set(['subscriptions_plan_fk', 'codes_plan_fk', 'code_batches_plan_fk']);

/** The project's plans and their quotas; every query is limited to the caller's project. */
@Injectable()
export class PlansService {
  constructor(
    private readonly repository: PlansRepository,
    private readonly reads: ReadReplicas,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {}

  /** One plan of the project, or PLAN_NOT_FOUND (a plan of another project is not found). */
  async getPlanEntity(projectId: string, planId: number): Promise<Plan> {
    const plan = await this.repository.find(projectId, planId);
    if (!plan) throw new DomainError('PLAN_NOT_FOUND');
    return plan;
  }

  /** The name of a plan of the project, or undefined when there is none. */
  async findPlanName(projectId: string, planId: number): Promise<string | undefined> {
    return this.repository.findName(projectId, planId);
  }

  /** The names of some plans of the project, by id (one query). */
  planNames(projectId: string, planIds: number[]): Promise<Map<number, string>> {
    return this.repository.names(projectId, planIds);
  }

  /** The project's free plans (value 0), in order of id: what a new customer is granted at sign-up. */
  listFreePlans(projectId: string): Promise<Plan[]> {
    return this.repository.listFree(projectId);
  }

  /** Plans with their quotas, in id order; `search` is a case-insensitive substring of the name or slug. */
  async list(projectId: string, query: PlanListQueryDto): Promise<Page<PlanView>> {
    // a read replica may answer (ReadReplicas): the page may lag the primary a little
    return this.reads.run(projectId, async () => {
      const { plans, total } = await this.repository.page(
        projectId,
        query.search ? likePattern(query.search) : undefined,
        pageWindow(query),
      );
      return toPage(await this.toViews(projectId, plans), total, query);
    });
  }

  /** One plan with its quotas and their features. */
  async get(projectId: string, planId: number): Promise<PlanView> {
    const plan = await this.getPlanEntity(projectId, planId);
    const [view] = await this.toViews(projectId, [plan]);
    return view;
  }

  /** A plan and its quotas in one transaction; each quota's feature must belong to the project. */
  async create(projectId: string, dto: CreatePlanDto, idem?: IdempotencyContext): Promise<PlanView> {
    assertResetFields(dto.quotas);
    return guardSlug(PLAN_SLUG_INDEX, () =>
      runInTransaction(
        this.transactions,
        async () => {
          const quotas = dto.quotas ?? [];
          await this.lockFeatures(projectId, quotas);
          const plan = await this.repository.insert({
            projectId,
            slug: dto.slug,
            name: dto.name,
            value: dto.value,
            group: dto.group,
          });
          if (quotas.length > 0)
            await this.repository.insertQuotas(quotas.map((q) => quotaRow(projectId, plan.id, q)));
          const view = await this.get(projectId, plan.id);
          this.audit.created(projectId, 'plan', view.id, toAuditedPlan(view));
          return view;
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
    // before the plan is read: INVALID_RESET_ANCHOR comes before PLAN_NOT_FOUND
    assertResetFields(dto.quotas);
    return guardSlug(PLAN_SLUG_INDEX, () =>
      runInTransaction(
        this.transactions,
        async () => {
          // Serialises updates of this plan without holding up writers that only reference it (subscriptions, codes).
          const plan = await this.repository.find(projectId, planId, 'for_no_key_update');
          if (!plan) throw new DomainError('PLAN_NOT_FOUND');
          const [before] = await this.toViews(projectId, [plan]);
          if (dto.group !== undefined && dto.group !== plan.group) {
            throw new DomainError('PLAN_FIELD_IMMUTABLE', 'The group of a plan cannot be changed.');
          }
          if (dto.value !== undefined && dto.value !== plan.value) {
            throw new DomainError('PLAN_FIELD_IMMUTABLE', 'The value of a plan cannot be changed.');
          }
          const changes = changedFields(plan, dto, ['name', 'slug'] as const);
          const quotasChanged = dto.quotas ? await this.replaceQuotas(projectId, plan.id, dto.quotas) : false;
          if (Object.keys(changes).length > 0 || quotasChanged) {
            // A quota change is a change of the plan too: its updatedAt moves.
            await this.repository.touch(projectId, plan.id, changes);
          }
          const view = await this.get(projectId, plan.id);
          this.audit.updated(projectId, 'plan', view.id, toAuditedPlan(before), toAuditedPlan(view));
          return view;
        },
        { participant: idem },
      ),
    );
  }

  /** PLAN_IN_USE while subscriptions, codes or code batches refer to the plan; its quotas go with it. */
  async remove(projectId: string, planId: number, idem?: IdempotencyContext): Promise<{ success: true }> {
    try {
      return await runInTransaction(
        this.transactions,
        async () => {
          // The row lock waits for writers that are adding a reference (their foreign key check holds a key-share lock).
          const plan = await this.repository.find(projectId, planId, 'pessimistic_write');
          if (!plan) throw new DomainError('PLAN_NOT_FOUND');
          if (await this.repository.isReferenced(projectId, plan.id)) throw new DomainError('PLAN_IN_USE');
          const [before] = await this.toViews(projectId, [plan]);
          await this.repository.delete(projectId, plan.id);
          this.audit.deleted(projectId, 'plan', plan.id, toAuditedPlan(before));
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
  private async lockFeatures(projectId: string, quotas: QuotaInputDto[]): Promise<void> {
    const ids = quotas.map((q) => q.featureId);
    if (ids.length === 0) return;
    const known = await this.repository.lockFeatureIds(projectId, ids);
    const missing = ids.find((id) => !known.has(id));
    if (missing !== undefined) throw new DomainError('FEATURE_NOT_FOUND', `Feature ${missing} not found.`);
  }

  /** Replaces the plan's quotas with `inputs`; true when anything changed. */
  private async replaceQuotas(projectId: string, planId: number, inputs: QuotaInputDto[]): Promise<boolean> {
    await this.lockFeatures(projectId, inputs);
    const existing = await this.repository.quotasOf(projectId, planId);
    const byFeature = new Map(existing.map((q) => [q.featureId, q]));
    const wanted = new Set(inputs.map((q) => q.featureId));

    const removed = existing.filter((q) => !wanted.has(q.featureId)).map((q) => q.id);
    if (removed.length > 0) await this.repository.deleteQuotas(projectId, planId, removed);

    const added: QuotaRow[] = [];
    let updated = 0;
    for (const input of inputs) {
      const row = quotaRow(projectId, planId, input);
      const current = byFeature.get(input.featureId);
      if (!current) {
        added.push(row);
      } else if (quotaChanged(current, row)) {
        await this.repository.updateQuota(projectId, planId, current.id, {
          limit: row.limit,
          priority: row.priority,
          resetInterval: row.resetInterval,
          resetAnchor: row.resetAnchor,
          resetDayOfMonth: row.resetDayOfMonth,
          resetTimeZone: row.resetTimeZone,
          thresholds: row.thresholds,
        });
        updated++;
      }
    }
    if (added.length > 0) await this.repository.insertQuotas(added);
    return removed.length + added.length + updated > 0;
  }

  /** Views of `plans` with their quotas (quota id order), read in one query. */
  private async toViews(projectId: string, plans: Plan[]): Promise<PlanView[]> {
    if (plans.length === 0) return [];
    const quotas = await this.repository.quotasWithFeatures(
      projectId,
      plans.map((p) => p.id),
    );
    const byPlan = new Map<number, QuotaWithFeature[]>();
    for (const q of quotas) {
      const list = byPlan.get(q.planId);
      if (list) list.push(q);
      else byPlan.set(q.planId, [q]);
    }
    return plans.map((p) => toPlanView(p, byPlan.get(p.id) ?? []));
  }
}

/**
 * A quota's columns from its input: priority 0, no reset, the `run` anchor and no thresholds
 * unless given. Thresholds are kept in ascending order, the order they are answered in.
 */
const quotaRow = (projectId: string, planId: number, q: QuotaInputDto): QuotaRow => ({
  projectId,
  planId,
  featureId: q.featureId,
  limit: q.limit,
  priority: q.priority ?? 0,
  resetInterval: q.resetInterval ?? null,
  resetAnchor: q.resetAnchor ?? 'run',
  resetDayOfMonth: q.resetDayOfMonth ?? null,
  resetTimeZone: q.resetTimeZone ?? null,
  thresholds: [...(q.thresholds ?? [])].sort((a, b) => a - b),
});

/** Whether a stored quota differs from the row its input makes (so only changed quotas are written). */
const quotaChanged = (current: Quota, row: QuotaRow): boolean =>
  current.limit !== row.limit ||
  current.priority !== row.priority ||
  current.resetInterval !== row.resetInterval ||
  current.resetAnchor !== row.resetAnchor ||
  current.resetDayOfMonth !== row.resetDayOfMonth ||
  current.resetTimeZone !== row.resetTimeZone ||
  current.thresholds.join(',') !== row.thresholds.join(',');
