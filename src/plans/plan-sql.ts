/**
 * The plans module's part of statements another module sends in one round trip with its own (the
 * entitlement reads and consumes); see src/customers/customer-sql.ts for why.
 */

/** How a statement names a feature: by id (`int`), by slug (`text`), or every feature of the project. */
export type FeatureLookupKind = 'id' | 'slug' | 'all';

/** The condition on features (alias `f`) of a lookup of `kind` (`feature`: the id or slug expression). */
const featureWhere = (kind: FeatureLookupKind, feature: string | undefined): string =>
  kind === 'all' ? '' : kind === 'id' ? ` AND f.id = ${feature}` : ` AND f.slug = ${feature}`;

/** The looked-up feature(s) of the project as a JSON array ordered by id: id, slug, name, metered, unit. */
export const featuresJson = (project: string, kind: FeatureLookupKind, feature?: string): string =>
  `(SELECT coalesce(json_agg(json_build_object('id', f.id, 'slug', f.slug, 'name', f.name,
            'metered', f.metered, 'unit', f.unit) ORDER BY f.id), '[]'::json)
     FROM features f WHERE f.project_id = ${project}${featureWhere(kind, feature)})`;

/** The ids of the looked-up feature(s) (a subquery). */
export const featureIds = (project: string, kind: FeatureLookupKind, feature?: string): string =>
  `SELECT f.id FROM features f WHERE f.project_id = ${project}${featureWhere(kind, feature)}`;

/**
 * The plans `planIds` (a subquery) as a JSON object by plan id: each plan's slug and its quotas
 * (id, feature id, limit as text, priority, reset interval, anchor, day of month and zone,
 * thresholds) of the looked-up feature(s), read once
 * per plan (a customer who renewed monthly for years holds hundreds of windows of one plan).
 */
export const plansWithQuotasJson = (
  project: string,
  planIds: string,
  kind: FeatureLookupKind,
  feature?: string,
): string =>
  `(SELECT coalesce(json_object_agg(p.id, json_build_object('slug', p.slug, 'quotas',
            (SELECT coalesce(json_agg(json_build_object('id', q.id, 'featureId', q.feature_id,
                      'limit', q.quota_limit::text, 'priority', q.priority, 'resetInterval', q.reset_interval,
                      'resetAnchor', q.reset_anchor, 'resetDayOfMonth', q.reset_day_of_month,
                      'resetTimeZone', q.reset_time_zone, 'thresholds', q.thresholds)), '[]'::json)
               FROM quotas q
              WHERE q.plan_id = p.id AND q.project_id = ${project}${
                kind === 'all' ? '' : ` AND q.feature_id IN (${featureIds(project, kind, feature)})`
              }))), '{}'::json)
     FROM plans p WHERE p.project_id = ${project} AND p.id IN (${planIds}))`;
