/**
 * The subscriptions module's part of statements another module sends in one round trip with its
 * own (the entitlement reads and consumes); see src/customers/customer-sql.ts for why.
 */

/**
 * A customer's live (not cancelled) windows as a JSON array ordered by start: each window's id,
 * plan id, group, and `validFrom`/`validTo` as `epochMs` renders them (milliseconds, null: none).
 */
export const liveWindowsJson = (
  customer: string,
  project: string,
  epochMs: (column: string) => string,
): string =>
  `(SELECT coalesce(json_agg(json_build_object('id', s.id, 'planId', s.plan_id, 'group', s.plan_group,
            'validFrom', ${epochMs('s.valid_from')}, 'validTo', ${epochMs('s.valid_to')})
          ORDER BY s.valid_from, s.id), '[]'::json)
     FROM subscriptions s
    WHERE s.customer_id = ${customer} AND s.project_id = ${project} AND s.status = 'active')`;

/** The plan ids of a customer's live windows (a subquery). */
export const livePlanIds = (customer: string, project: string): string =>
  `SELECT s.plan_id FROM subscriptions s WHERE s.customer_id = ${customer} AND s.project_id = ${project} AND s.status = 'active'`;
