/**
 * The audit log's vocabulary (docs/operations.md#audit-log): every resource type a record may
 * name, with the actions recorded on it. The writer records only these; the list's filters
 * accept only these.
 */
export const AUDIT_ACTIONS = {
  project: ['project.created', 'project.updated', 'project.deleted'],
  api_key: ['api_key.created', 'api_key.updated', 'api_key.deleted'],
  customer: [
    'customer.created',
    'customer.updated',
    'customer.deleted',
    'customer.logged_in',
    'customer.logged_out',
  ],
  feature: ['feature.created', 'feature.updated', 'feature.deleted'],
  plan: ['plan.created', 'plan.updated', 'plan.deleted'],
  code_batch: ['code_batch.created'],
  code: ['code.created', 'code.updated', 'code.revoked', 'code.redeemed'],
  subscription: ['subscription.activated'],
  usage: ['usage.recorded', 'usage.reversed'],
  webhook_endpoint: [
    'webhook_endpoint.created',
    'webhook_endpoint.updated',
    'webhook_endpoint.deleted',
    'webhook_endpoint.secret_rotated',
  ],
  event: ['event.redelivered'],
  grant: ['grant.created', 'grant.voided'],
  override: ['override.set', 'override.removed'],
  hold: ['hold.created', 'hold.committed', 'hold.released'],
} as const;

export type AuditResourceType = keyof typeof AUDIT_ACTIONS;
export type AuditAction = (typeof AUDIT_ACTIONS)[AuditResourceType][number];

export const AUDIT_RESOURCE_TYPES = Object.keys(AUDIT_ACTIONS) as AuditResourceType[];
export const AUDIT_ACTION_NAMES: AuditAction[] = Object.values(AUDIT_ACTIONS).flat();

/** Who made a change: a private or public key, the admin interface, the operator's CLI, or the service. */
export const AUDIT_ACTOR_TYPES = ['private_key', 'public_key', 'admin', 'cli', 'system'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];
