import { isDeepStrictEqual } from 'node:util';

/** A record's `changes`: each audited field that changed, from what to what. */
export type Changes = Record<string, { from: unknown; to: unknown }>;

/** What stands for a secret's value in a record: its name is told, never its value. */
export const REDACTED = '[redacted]';

/**
 * The fields each resource type's records tell, in the order they are listed, and which of them
 * are secrets (docs/operations.md#audit-log).
 */
export const AUDITED = {
  project: { fields: ['name', 'autoCreateCustomerAtRedemption', 'requireSignature', 'timeZone'] },
  api_key: { fields: ['kind', 'name', 'prefix', 'enabled', 'scopes', 'expiresAt'] },
  customer: {
    fields: ['username', 'enabled', 'temporary', 'identifiers', 'timeZone', 'password'],
    secrets: ['password'],
  },
  feature: { fields: ['slug', 'name', 'description', 'metered', 'unit'] },
  plan: { fields: ['slug', 'name', 'value', 'group', 'quotas'] },
  code_batch: { fields: ['planId', 'duration', 'count', 'expiresAt', 'note'] },
  code: {
    fields: [
      'status',
      'redeemedByCustomerId',
      'planId',
      'duration',
      'trial',
      'maxRedemptions',
      'perCustomerLimit',
      'startsAt',
      'expiresAt',
      'eligibility',
      'note',
      'redemptionCount',
    ],
  },
  subscription: { fields: ['customerId', 'planId', 'validFrom', 'validTo'] },
  usage: { fields: ['customerId', 'featureId', 'eventId', 'amount', 'overage', 'reversedAt'] },
  webhook_endpoint: {
    fields: ['url', 'description', 'eventTypes', 'enabled', 'secret'],
    secrets: ['secret'],
  },
  event: { fields: [] },
  grant: {
    fields: [
      'customerId',
      'featureId',
      'amount',
      'priority',
      'effectiveAt',
      'expiresAt',
      'reason',
      'metadata',
      'voidedAt',
      'voidReason',
    ],
  },
  override: {
    fields: [
      'mode',
      'limit',
      'priority',
      'resetInterval',
      'resetAnchor',
      'resetDayOfMonth',
      'resetTimeZone',
      'anchor',
      'expiresAt',
      'reason',
    ],
  },
  hold: {
    fields: [
      'customerId',
      'featureId',
      'holdId',
      'amount',
      'overage',
      'allowOverage',
      'expiresAt',
      'status',
      'usageId',
    ],
  },
} as const satisfies Record<string, { fields: readonly string[]; secrets?: readonly string[] }>;

export type AuditedResource = keyof typeof AUDITED;

/** A resource as the API shows it (the audited fields are read from it; secrets as present or not). */
export type Snapshot = object;

const field = (snapshot: Snapshot, name: string): unknown => (snapshot as Record<string, unknown>)[name];

/** A value in a record's sense: not null or undefined, `""` or `[]` (`false` and `0` are values). */
const hasValue = (value: unknown) =>
  value !== null && value !== undefined && value !== '' && !(Array.isArray(value) && value.length === 0);

const isSecret = (type: AuditedResource, field: string) =>
  ((AUDITED[type] as { secrets?: readonly string[] }).secrets ?? []).includes(field);

/** A created resource: each audited field that has a value, from null (a secret redacted). */
export function createdChanges(type: AuditedResource, after: Snapshot): Changes {
  const changes: Changes = {};
  for (const name of AUDITED[type].fields) {
    const to = field(after, name);
    if (hasValue(to)) changes[name] = { from: null, to: isSecret(type, name) ? REDACTED : to };
  }
  return changes;
}

/** A deleted resource: each audited field that had a value, to null; secrets left out. */
export function deletedChanges(type: AuditedResource, before: Snapshot): Changes {
  const changes: Changes = {};
  for (const name of AUDITED[type].fields) {
    const from = field(before, name);
    if (!isSecret(type, name) && hasValue(from)) changes[name] = { from, to: null };
  }
  return changes;
}

/**
 * A changed resource: each audited field whose value changed. A secret is compared by whoever
 * calls (its snapshot holds `true` when it changed) and told as redacted: from null when there
 * was none before.
 */
export function updatedChanges(type: AuditedResource, before: Snapshot, after: Snapshot): Changes {
  const changes: Changes = {};
  for (const name of AUDITED[type].fields) {
    if (!(name in after)) continue;
    if (isSecret(type, name)) {
      if (field(after, name) === true)
        changes[name] = { from: field(before, name) === true ? REDACTED : null, to: REDACTED };
      continue;
    }
    const from = field(before, name) ?? null;
    const to = field(after, name) ?? null;
    if (!isDeepStrictEqual(from, to)) changes[name] = { from, to };
  }
  return changes;
}
