import type { FeatureView } from './dto/feature.dto';
import type { PlanView, QuotaView } from './dto/plan.dto';
import type { Feature } from './entities/feature.entity';
import type { Plan } from './entities/plan.entity';
import type { Quota } from './entities/quota.entity';

export const toFeatureView = (f: Feature): FeatureView => ({
  id: f.id,
  slug: f.slug,
  name: f.name,
  description: f.description,
  projectId: f.projectId,
  metered: f.metered,
  unit: f.unit,
  createdAt: f.createdAt.toISOString(),
  updatedAt: f.updatedAt.toISOString(),
});

/** A quota loaded with its feature. */
export type QuotaWithFeature = Quota & { feature: Feature };

export const toQuotaView = (q: QuotaWithFeature): QuotaView => ({
  id: q.id,
  planId: q.planId,
  featureId: q.featureId,
  limit: q.limit,
  priority: q.priority,
  resetInterval: q.resetInterval,
  resetAnchor: q.resetAnchor,
  resetDayOfMonth: q.resetDayOfMonth,
  resetTimeZone: q.resetTimeZone,
  thresholds: q.thresholds,
  createdAt: q.createdAt.toISOString(),
  updatedAt: q.updatedAt.toISOString(),
  feature: toFeatureView(q.feature),
});

/** A plan with its quotas (each with its feature), passed explicitly so none is forgotten. */
export const toPlanView = (p: Plan, quotas: QuotaWithFeature[]): PlanView => ({
  id: p.id,
  slug: p.slug,
  name: p.name,
  projectId: p.projectId,
  value: p.value,
  group: p.group,
  createdAt: p.createdAt.toISOString(),
  updatedAt: p.updatedAt.toISOString(),
  quotas: quotas.map(toQuotaView),
});

/** A plan as its audit records tell it: its quotas by id, each with the fields that shape it. */
export const toAuditedPlan = (view: PlanView) => ({
  ...view,
  quotas: [...view.quotas]
    .sort((a, b) => a.id - b.id)
    .map(
      ({
        featureId,
        limit,
        priority,
        resetInterval,
        resetAnchor,
        resetDayOfMonth,
        resetTimeZone,
        thresholds,
      }) => ({
        featureId,
        limit,
        priority,
        resetInterval,
        resetAnchor,
        resetDayOfMonth,
        resetTimeZone,
        thresholds,
      }),
    ),
});
