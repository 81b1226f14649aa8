import { OverrideView } from './dto/entitlement.dto';
import { GrantView } from './dto/grant.dto';
import { fromMicros, grantFigures, toMicros } from './engine/entitlement-engine';
import type { GrantRow, OverrideRow } from './entitlements.repository';
import { CustomerOverride } from './entities/customer-override.entity';
import { Grant } from './entities/grant.entity';
import { isoOrNull as iso } from '../common/time/iso';

/**
 * Grants and overrides as the API shows them, wherever they are shown: their own routes, the
 * entitlement answers and the events. Each is mapped from the rules' row (amounts in micro-units),
 * which the entitlement state reads and an entity converts to.
 */

/** A stored grant as the rules take it. */
export function grantRowOf(g: Grant): GrantRow {
  return {
    id: g.id,
    customerId: g.customerId,
    featureId: g.featureId,
    amount: toMicros(g.amount),
    used: toMicros(g.used),
    priority: g.priority,
    effectiveAt: g.effectiveAt,
    expiresAt: g.expiresAt,
    voidedAt: g.voidedAt,
    reason: g.reason,
    metadata: g.metadata ?? {},
    createdAt: g.createdAt,
    voidReason: g.voidReason,
  };
}

/** A stored override as the rules take it. */
export function overrideRowOf(o: CustomerOverride): OverrideRow {
  return {
    customerId: o.customerId,
    featureId: o.featureId,
    mode: o.mode as OverrideRow['mode'],
    limit: o.limit === null ? null : toMicros(o.limit),
    priority: o.priority,
    resetInterval: o.resetInterval,
    resetAnchor: o.resetAnchor,
    resetDayOfMonth: o.resetDayOfMonth,
    resetTimeZone: o.resetTimeZone,
    anchor: o.anchor,
    expiresAt: o.expiresAt,
    reason: o.reason,
    createdAt: o.createdAt,
  };
}

/** A grant as the API shows it at `at`: its status and figures worked out then. */
export function toGrantView(g: GrantRow, at: Date): GrantView {
  const figures = grantFigures(g, at);
  return {
    id: g.id,
    customerId: g.customerId,
    featureId: g.featureId,
    amount: fromMicros(g.amount),
    used: fromMicros(figures.used),
    remaining: fromMicros(figures.remaining),
    forfeited: fromMicros(figures.forfeited),
    priority: g.priority,
    effectiveAt: g.effectiveAt.toISOString(),
    expiresAt: iso(g.expiresAt),
    status: figures.status,
    reason: g.reason,
    metadata: g.metadata,
    createdAt: g.createdAt.toISOString(),
    voidedAt: iso(g.voidedAt),
    voidReason: g.voidReason,
  };
}

/** An override as the API shows it. */
export function toOverrideView(o: OverrideRow): OverrideView {
  return {
    customerId: o.customerId,
    featureId: o.featureId,
    mode: o.mode,
    limit: o.limit === null ? null : fromMicros(o.limit),
    priority: o.priority,
    resetInterval: o.resetInterval,
    resetAnchor: o.resetAnchor,
    resetDayOfMonth: o.resetDayOfMonth,
    resetTimeZone: o.resetTimeZone,
    anchor: iso(o.anchor),
    expiresAt: iso(o.expiresAt),
    reason: o.reason,
    createdAt: o.createdAt.toISOString(),
  };
}

/** The once-key of an override's `override.removed`, whoever records it (a `DELETE`, a `PUT`, or its expiry). */
export const overrideRemovedKey = (o: { customerId: number; featureId: number; createdAt: Date }): string =>
  `override.removed:${o.customerId}:${o.featureId}:${o.createdAt.getTime()}`;
