/**
 * The event types and the shapes of their `data` (docs/events.md#event-types, #event-data). Every event that names a
 * customer carries `customerSeq` inside `data`; it is added when the event is recorded.
 */
export const EVENT_TYPES = [
  'subscriptions.changed',
  'subscription.started',
  'subscription.ended',
  'usage.limit_reached',
  'usage.threshold_crossed',
  'customer.created',
  'customer.updated',
  'customer.deleted',
  'code.redeemed',
  'code.revoked',
  'code.exhausted',
  'grant.created',
  'grant.voided',
  'grant.expired',
  'grant.exhausted',
  'override.set',
  'override.removed',
  'trial.started',
  'trial.ending',
  'trial.ended',
  'usage.hold_expired',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Sent by `POST /webhook-endpoints/:id/test`; cannot be subscribed to and is never stored. */
export const TEST_EVENT_TYPE = 'webhook.test';

export interface EventCustomer {
  id: number;
  username: string;
}

/** A subscription window as events show it. */
export interface EventWindow {
  id: number;
  planId: number;
  planName: string;
  group: string;
  validFrom: string;
  validTo: string | null;
  status: 'active' | 'cancelled';
  source: 'signup' | 'code' | 'activation';
  codeId: number | null;
  trial: boolean;
}

export interface SubscriptionsChangedData {
  customer: EventCustomer;
  source: 'signup' | 'code' | 'activation';
  codeId: number | null;
  created: EventWindow[];
  ended: EventWindow[];
  cancelled: EventWindow[];
  moved: EventWindow[];
}

export interface UsageLimitReachedData {
  customer: EventCustomer;
  feature: { id: number; slug: string };
  /** The metered bucket as the entitlements module shows it (its period, limit, used, remaining). */
  bucket: Record<string, unknown>;
}

export interface UsageThresholdCrossedData extends UsageLimitReachedData {
  /** The percent of the bucket's limit crossed. */
  threshold: number;
  /** The record that crossed it. */
  usageId: number;
}

/** A grant as the API shows it at the event's instant (docs/entitlements.md). */
export type EventGrant = Record<string, unknown>;

/** A customer's override of a feature as the API shows it at the event's instant. */
export type EventOverride = Record<string, unknown>;

export interface GrantEventData {
  customer: EventCustomer;
  grant: EventGrant;
}

export interface OverrideSetData {
  customer: EventCustomer;
  override: EventOverride;
  /** The override replaced if it was in effect, else null. */
  previous: EventOverride | null;
}

export interface OverrideRemovedData {
  customer: EventCustomer;
  override: EventOverride;
  reason: 'deleted' | 'expired';
}

/**
 * One event to record in the caller's transaction. `customer`: the customer it names (its
 * `customerSeq` is taken then); `uniqueKey`: at most one event ever has it (a later one with the
 * same key is dropped), e.g. `subscription.ended:<windowId>`.
 */
export type NewEvent =
  | { type: 'subscriptions.changed'; customer: EventCustomer; data: SubscriptionsChangedData }
  | {
      type: 'subscription.started';
      customer: EventCustomer;
      data: { customer: EventCustomer; window: EventWindow };
      uniqueKey: string;
    }
  | {
      type: 'subscription.ended';
      customer: EventCustomer;
      data: { customer: EventCustomer; window: EventWindow; reason: 'expired' | 'replaced' };
      uniqueKey: string;
    }
  | { type: 'usage.limit_reached'; customer: EventCustomer; data: UsageLimitReachedData; uniqueKey?: string }
  | {
      type: 'usage.threshold_crossed';
      customer: EventCustomer;
      data: UsageThresholdCrossedData;
      uniqueKey?: string;
    }
  | {
      type: 'customer.created' | 'customer.updated' | 'customer.deleted';
      customer: EventCustomer;
      data: { customer: Record<string, unknown> };
    }
  | {
      type: 'code.redeemed';
      customer: EventCustomer;
      data: { code: Record<string, unknown>; customer: EventCustomer };
    }
  | { type: 'code.revoked'; customer?: undefined; data: { code: Record<string, unknown> } }
  | {
      type: 'code.exhausted';
      customer?: undefined;
      data: { code: Record<string, unknown> };
      uniqueKey: string;
    }
  | {
      type: 'grant.created' | 'grant.voided' | 'grant.expired' | 'grant.exhausted';
      customer: EventCustomer;
      data: GrantEventData;
      uniqueKey?: string;
    }
  | {
      type: 'trial.started';
      customer: EventCustomer;
      data: { customer: EventCustomer; window: EventWindow; codeId: number | null };
    }
  | {
      type: 'trial.ending';
      customer: EventCustomer;
      data: { customer: EventCustomer; window: EventWindow };
      uniqueKey: string;
    }
  | {
      type: 'trial.ended';
      customer: EventCustomer;
      data: {
        customer: EventCustomer;
        window: EventWindow;
        reason: 'expired' | 'replaced';
        converted: boolean;
      };
      uniqueKey: string;
    }
  | {
      type: 'usage.hold_expired';
      customer: EventCustomer;
      data: {
        customer: EventCustomer;
        feature: { id: number; slug: string };
        /** The hold as the API shows it once expired. */
        hold: Record<string, unknown>;
      };
      uniqueKey: string;
    }
  | { type: 'override.set'; customer: EventCustomer; data: OverrideSetData }
  | { type: 'override.removed'; customer: EventCustomer; data: OverrideRemovedData; uniqueKey?: string };

/**
 * The key that makes a window's start or end announced once (`trial.ended`'s is shared by its two
 * reasons, so a trial ends once whichever comes first).
 */
export const boundaryKey = (
  type: 'subscription.started' | 'subscription.ended' | 'trial.ending' | 'trial.ended',
  windowId: number,
) => `${type}:${windowId}`;
