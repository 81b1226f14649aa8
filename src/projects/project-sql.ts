/**
 * The projects module's part of statements another module sends in one round trip with its own
 * (the entitlement reads and consumes); see src/customers/customer-sql.ts for why.
 */

/**
 * The zone of project `project` and its changes, as JSON: `{ zone, changes: [[at, from, to], ...]
 * }`, `at` in epoch ms as `epochMs` renders it, in time order.
 */
export const projectZonesJson = (project: string, epochMs: (column: string) => string): string =>
  `(SELECT json_build_object('zone', p.time_zone, 'changes',
       (SELECT coalesce(json_agg(json_build_array(${epochMs('z.changed_at')}, z.from_zone, z.to_zone)
                                 ORDER BY z.changed_at, z.id), '[]'::json)
          FROM project_time_zone_changes z WHERE z.project_id = p.id))
     FROM projects p WHERE p.id = ${project})`;
