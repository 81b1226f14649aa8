import type { DataSource, EntityManager } from 'typeorm';

/**
 * Rows one prune statement deletes at most. Each statement stays short (its row locks, WAL and
 * the cascades of an event's deliveries bounded) even after a long stop left a backlog; a prune
 * runs statements until one deletes fewer.
 */
export const PRUNE_BATCH = 5000;

/** How a module's repository names the rows to prune: `condition` over `table`'s columns, `$1`... from `values`. */
export interface PruneTarget {
  table: string;
  condition: string;
  values?: unknown[];
}

/**
 * The one delete of expired rows (idempotency records, request nonces, customer sessions,
 * login-failure counters, rate-limit counters, old events): `batch` rows at a time, picked by
 * `ctid` so that any table works whatever its key, and with `condition` checked again on the row
 * deleted (a row renewed meanwhile stays). Returns how many rows went. Runs on `db`: a repository
 * passes its current manager, so outside a unit of work each batch commits on its own.
 */
export async function pruneInBatches(
  db: DataSource | EntityManager,
  { table, condition, values = [] }: PruneTarget,
  batch = PRUNE_BATCH,
): Promise<number> {
  const limit = `$${values.length + 1}`;
  const text = `WITH gone AS (
     DELETE FROM ${table}
      WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table} WHERE ${condition} LIMIT ${limit})) AND (${condition})
      RETURNING 1)
   SELECT count(*)::int AS n FROM gone`;
  let total = 0;
  for (;;) {
    const [{ n }]: Array<{ n: number }> = await db.query(text, [...values, batch]);
    total += n;
    if (n < batch) return total;
  }
}
