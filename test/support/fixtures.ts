import { DataSource } from 'typeorm';

let counter = 0;

/**
 * A plan written straight into the database: for tests that need plans (even broken ones) without
 * depending on the plans API.
 */
export async function insertPlan(
  ds: DataSource,
  plan: { projectId: string; name: string; value: number; group?: string; slug?: string },
): Promise<number> {
  const slug = plan.slug ?? `${plan.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${++counter}`;
  const [row] = await ds.query(
    'INSERT INTO plans (project_id, slug, name, value, plan_group) VALUES ($1, $2, $3, $4, $5) RETURNING id',
    [plan.projectId, slug, plan.name, plan.value, plan.group ?? 'tier'],
  );
  return row.id;
}
