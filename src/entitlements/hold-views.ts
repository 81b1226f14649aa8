import type { HoldStatus, HoldView } from './dto/hold.dto';
import type { HoldRow } from './holds.repository';
import { toAllocationView } from './allocation-view';

/**
 * A hold's status at `at`, derived when read: `committed` and `released` are final; otherwise
 * `expired` once `expiresAt <= at` (marked by the scheduler or not yet), else `held`.
 */
export function holdStatusOf(h: Pick<HoldRow, 'status' | 'expiresAt'>, at: Date): HoldStatus {
  if (h.status !== 'held') return h.status;
  return h.expiresAt.getTime() <= at.getTime() ? 'expired' : 'held';
}

/** A hold as the API shows it at `at` (its routes and `usage.hold_expired`). */
export function toHoldView(h: HoldRow, at: Date): HoldView {
  const status = holdStatusOf(h, at);
  const endedAt = status === 'held' ? null : status === 'expired' ? h.expiresAt : h.endedAt;
  return {
    id: Number(h.id),
    holdId: h.holdId,
    customerId: h.customerId,
    featureId: h.featureId,
    amount: Number(h.amount),
    overage: Number(h.overage),
    allowOverage: h.allowOverage,
    allocations: h.allocations.map(toAllocationView),
    status,
    expiresAt: h.expiresAt.toISOString(),
    createdAt: h.createdAt.toISOString(),
    endedAt: endedAt === null ? null : endedAt.toISOString(),
    usageId: h.usageId === null ? null : Number(h.usageId),
  };
}
