import { DomainError } from '../common/errors/domain-error';
import { isUniqueViolation } from '../database/pg-errors';

export const FEATURE_SLUG_INDEX = 'features_project_slug_uq';
export const PLAN_SLUG_INDEX = 'plans_project_slug_uq';

/**
 * Runs a write and turns a unique violation of the project's slug index into 409 SLUG_TAKEN.
 * The index decides, not a prior SELECT, so two concurrent writes of one slug give one success
 * and one SLUG_TAKEN, never a 500. Wrap the whole transaction: a violation aborts it.
 */
export async function guardSlug<T>(
  index: typeof FEATURE_SLUG_INDEX | typeof PLAN_SLUG_INDEX,
  work: () => Promise<T>,
): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (isUniqueViolation(error, index)) throw new DomainError('SLUG_TAKEN');
    throw error;
  }
}

/** The fields of `dto` that are present and differ from `current` (for updates that only write changes). */
export function changedFields<T extends object, K extends keyof T>(
  current: T,
  dto: Partial<Pick<T, K>>,
  keys: readonly K[],
): Partial<Pick<T, K>> {
  const changes: Partial<Pick<T, K>> = {};
  for (const key of keys) {
    const value = dto[key];
    if (value !== undefined && value !== current[key]) changes[key] = value;
  }
  return changes;
}
