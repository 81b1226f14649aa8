/**
 * The customers module's part of statements another module sends in one round trip with its own
 * (the entitlement reads and consumes). The SQL that names this module's tables stays here, so a
 * change to them is made and reviewed in one place; `project`, `values` and the like are SQL
 * expressions of the embedding statement (parameters, or columns of a batch's request row).
 */

/** How a request names a customer: by id, by username (case-insensitively) or by another identifier (exactly). */
export type CustomerLookupKind = 'id' | 'username' | 'identifier';

/** The `FROM ... WHERE` that finds the customer (alias `c`) of a lookup of `kind` with `values`. */
export function customerFrom(kind: CustomerLookupKind, project: string, values: string[]): string {
  switch (kind) {
    case 'id':
      return `FROM customers c WHERE c.project_id = ${project} AND c.id = ${values[0]}`;
    case 'username':
      return `FROM customers c WHERE c.project_id = ${project} AND lower(c.username) = lower(${values[0]})`;
    case 'identifier':
      return `FROM customers c JOIN customer_identifiers i ON i.customer_id = c.id AND c.project_id = i.project_id WHERE i.project_id = ${project} AND i.type = ${values[0]} AND i.value = ${values[1]}`;
  }
}

/**
 * Locks the customers whose ids `ids` (a subquery) yields, `FOR UPDATE` in id order so that two
 * statements locking several never wait for each other in a cycle; answers their ids.
 */
export const lockCustomersSql = (ids: string): string =>
  `SELECT c.id FROM customers c WHERE c.id = ANY (ARRAY(${ids})) ORDER BY c.id FOR UPDATE OF c`;

/** Joins the customer (alias `alias`) of a row whose customer and project are `customer` and `project`. */
export const customerJoin = (alias: string, customer: string, project: string): string =>
  `JOIN customers ${alias} ON ${alias}.id = ${customer} AND ${alias}.project_id = ${project}`;

/**
 * The zone of a customer (alias `c`) and its changes, as JSON: `{ zone, changes: [[at, from, to],
 * ...] }`, `at` in epoch ms as `epochMs` renders it, in time order; a null zone follows the project.
 */
export const customerZonesJson = (epochMs: (column: string) => string): string =>
  `json_build_object('zone', c.time_zone, 'changes',
     (SELECT coalesce(json_agg(json_build_array(${epochMs('z.changed_at')}, z.from_zone, z.to_zone)
                               ORDER BY z.changed_at, z.id), '[]'::json)
        FROM customer_time_zone_changes z WHERE z.customer_id = c.id AND z.project_id = c.project_id))`;
