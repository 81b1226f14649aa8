import type { AllocationRow } from './entitlements.repository';

/**
 * An allocation as the API shows it, from its JSON row (a usage record's or a hold's): the
 * bucket it took from and how much. A record's allocation adds `restored`.
 */
export const toAllocationView = (a: Omit<AllocationRow, 'restored'>) => ({
  source: a.source,
  group: a.group,
  periodStart: a.periodStart === null ? null : new Date(a.periodStart).toISOString(),
  grantId: a.grantId,
  amount: Number(a.amount),
});
