/**
 * The one table of error codes and their HTTP status; the reference for clients, docs/errors.md,
 * is generated from it.
 * Services throw `DomainError` with one of these codes; the global exception filter maps it
 * to the status here. Nothing else in the code base decides a status.
 */
export const ERROR_STATUS = {
  // the codes of the core contract: keys, customers, codes and the chain
  INVALID_API_KEY: 401,
  API_KEY_DISABLED: 403,
  PROJECT_NOT_FOUND: 404,
  CUSTOMER_NOT_FOUND: 404,
  CODE_NOT_FOUND: 404,
  CODE_ALREADY_REDEEMED: 409,
  REDUNDANT_PERMANENT_PURCHASE: 409,
  PERMANENT_TAIL_CONFLICT: 409,
  CUSTOMER_PROJECT_MISMATCH: 403,
  INVALID_PLAN_VALUE: 400,
  INVALID_SUBSCRIPTION_CHAIN: 400,
  // the rest of the API (docs/api-guide.md#envelope-and-errors)
  VALIDATION_FAILED: 400,
  MALFORMED_JSON: 400,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PAYLOAD_TOO_LARGE: 413,
  ROUTE_NOT_FOUND: 404,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
  USERNAME_TAKEN: 409,
  IDENTIFIER_TAKEN: 409,
  PLAN_NOT_FOUND: 404,
  FEATURE_NOT_FOUND: 404,
  SLUG_TAKEN: 409,
  PLAN_FIELD_IMMUTABLE: 409,
  PLAN_IN_USE: 409,
  INVALID_RESET_ANCHOR: 400,
  FEATURE_IN_USE: 409,
  CODE_REVOKED: 409,
  CODE_EXPIRED: 409,
  IDEMPOTENCY_KEY_IN_USE: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  SIGNATURE_REQUIRED: 401,
  INVALID_SIGNATURE: 401,
  SIGNATURE_EXPIRED: 401,
  NONCE_REUSED: 401,
  INVALID_CREDENTIALS: 401,
  INVALID_CUSTOMER_TOKEN: 401,
  CUSTOMER_DISABLED: 403,
  // entitlements and usage (docs/entitlements.md#answers)
  FEATURE_NOT_METERED: 400,
  FEATURE_NOT_GRANTED: 403,
  QUOTA_EXCEEDED: 409,
  USAGE_EVENT_CONFLICT: 409,
  USAGE_NOT_FOUND: 404,
  // grants and overrides (docs/entitlements.md)
  GRANT_NOT_FOUND: 404,
  OVERRIDE_NOT_FOUND: 404,
  GRANT_EXPIRED: 409,
  // usage holds (docs/entitlements.md#holds)
  HOLD_NOT_FOUND: 404,
  HOLD_CONFLICT: 409,
  HOLD_FINALIZED: 409,
  HOLD_EXPIRED: 410,
  HOLD_LIMIT_REACHED: 409,
  // admin interface
  INVALID_ADMIN_TOKEN: 401,
  API_KEY_NOT_FOUND: 404,
  // scoped and expiring keys (docs/operations.md#scopes)
  API_KEY_EXPIRED: 401,
  INSUFFICIENT_SCOPE: 403,
  // per-project limits (docs/decisions.md#per-project-limits-from-the-environment)
  CUSTOMER_LIMIT_REACHED: 409,
  CODE_LIMIT_REACHED: 409,
  CODE_BATCH_RATE_LIMITED: 429,
  // campaign codes (docs/api-guide.md#campaign-codes)
  CODE_TAKEN: 409,
  CODE_NOT_YET_ACTIVE: 409,
  CODE_EXHAUSTED: 409,
  CODE_CUSTOMER_LIMIT_REACHED: 409,
  CODE_NOT_ELIGIBLE: 403,
  TRIAL_ALREADY_USED: 409,
  CODE_CHANGE_NOT_ALLOWED: 409,
  // events and webhooks (docs/events.md)
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  EVENT_NOT_FOUND: 404,
  WEBHOOK_ENDPOINT_DISABLED: 409,
  // audit log (docs/operations.md#audit-log)
  AUDIT_EVENT_NOT_FOUND: 404,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Default human text per code; a thrower may give a more precise one. */
export const ERROR_MESSAGES: Record<ErrorCode, string> = {
  INVALID_API_KEY: 'The API key is missing, malformed or unknown.',
  API_KEY_DISABLED: 'The API key is disabled.',
  PROJECT_NOT_FOUND: 'The project of this key does not exist.',
  CUSTOMER_NOT_FOUND: 'Customer not found.',
  CODE_NOT_FOUND: 'Code not found.',
  CODE_ALREADY_REDEEMED: 'The code has already been redeemed.',
  REDUNDANT_PERMANENT_PURCHASE: 'The customer already holds an equal or better permanent plan in this group.',
  PERMANENT_TAIL_CONFLICT:
    'The customer holds an equal or better permanent plan in this group; the time could never be used.',
  CUSTOMER_PROJECT_MISMATCH: 'The customer and the project of this request do not match.',
  INVALID_PLAN_VALUE: 'A plan in the subscription chain has an invalid value.',
  INVALID_SUBSCRIPTION_CHAIN: "The customer's subscription chain is inconsistent.",
  VALIDATION_FAILED: 'The request is not valid.',
  MALFORMED_JSON: 'The request body is not valid JSON.',
  UNSUPPORTED_MEDIA_TYPE: 'Request bodies must be application/json.',
  PAYLOAD_TOO_LARGE: 'The request body is larger than 1 MiB.',
  ROUTE_NOT_FOUND: 'No such route.',
  RATE_LIMITED: 'Too many requests; retry later.',
  INTERNAL_ERROR: 'An unexpected error occurred.',
  SERVICE_UNAVAILABLE: 'The service is not ready.',
  USERNAME_TAKEN: 'The username is already used in this project.',
  IDENTIFIER_TAKEN: 'The identifier already belongs to a customer of this project.',
  PLAN_NOT_FOUND: 'Plan not found.',
  FEATURE_NOT_FOUND: 'Feature not found.',
  SLUG_TAKEN: 'The slug is already used in this project.',
  PLAN_FIELD_IMMUTABLE: 'The group and value of a plan cannot be changed.',
  PLAN_IN_USE: 'The plan has subscriptions or codes and cannot be deleted.',
  INVALID_RESET_ANCHOR: "A quota's reset fields do not go together.",
  FEATURE_IN_USE: 'The feature is used by a quota, an override or a grant not ended, and cannot be deleted.',
  CODE_REVOKED: 'The code has been revoked.',
  CODE_EXPIRED: 'The code has expired.',
  IDEMPOTENCY_KEY_IN_USE: 'A request with this idempotency key is still being processed.',
  IDEMPOTENCY_KEY_REUSED: 'This idempotency key was used with a different request.',
  SIGNATURE_REQUIRED: 'This project requires signed requests.',
  INVALID_SIGNATURE: 'The request signature is not valid.',
  SIGNATURE_EXPIRED: 'The request timestamp is outside the accepted window.',
  NONCE_REUSED: 'The nonce has already been used.',
  INVALID_CREDENTIALS: 'Invalid credentials.',
  INVALID_CUSTOMER_TOKEN: 'The customer token is missing, invalid or expired.',
  CUSTOMER_DISABLED: 'The customer is disabled.',
  FEATURE_NOT_METERED: 'The feature is not metered: usage cannot be recorded for it.',
  FEATURE_NOT_GRANTED: 'No plan in effect for the customer grants this feature.',
  QUOTA_EXCEEDED: 'The amount exceeds what remains of the quota.',
  USAGE_EVENT_CONFLICT: 'This eventId was already recorded with another feature or amount.',
  USAGE_NOT_FOUND: 'Usage record not found.',
  GRANT_NOT_FOUND: 'Grant not found.',
  OVERRIDE_NOT_FOUND: 'The customer has no override of this feature in effect.',
  GRANT_EXPIRED: 'The grant has expired and can no longer be voided.',
  HOLD_NOT_FOUND: 'Usage hold not found.',
  HOLD_CONFLICT: 'This holdId was already held with another feature or amount.',
  HOLD_FINALIZED: 'The hold has already ended (committed or released).',
  HOLD_EXPIRED: 'The hold has expired; nothing was recorded.',
  HOLD_LIMIT_REACHED: 'The customer has the most live holds of this feature allowed.',
  INVALID_ADMIN_TOKEN: 'The admin token is missing or wrong.',
  API_KEY_NOT_FOUND: 'API key not found.',
  API_KEY_EXPIRED: 'The API key has expired.',
  INSUFFICIENT_SCOPE: 'The API key lacks the scope this operation needs.',
  CUSTOMER_LIMIT_REACHED: 'The project holds as many customers as it may (PROJECT_MAX_CUSTOMERS).',
  CODE_LIMIT_REACHED: 'The batch would take the project past the codes it may hold (PROJECT_MAX_CODES).',
  CODE_BATCH_RATE_LIMITED:
    'The project has created as many code batches in the last hour as it may (PROJECT_MAX_CODE_BATCHES_PER_HOUR).',
  CODE_TAKEN: 'Another code of the project holds this code.',
  CODE_NOT_YET_ACTIVE: 'The code cannot be redeemed before its startsAt.',
  CODE_EXHAUSTED: 'The code has been redeemed as many times as it may (maxRedemptions).',
  CODE_CUSTOMER_LIMIT_REACHED:
    'The customer has redeemed the code as many times as it may (perCustomerLimit).',
  CODE_NOT_ELIGIBLE: 'The customer may not redeem this code.',
  TRIAL_ALREADY_USED: 'The customer has already had a trial in this plan group.',
  CODE_CHANGE_NOT_ALLOWED: 'This field of the code cannot change now.',
  WEBHOOK_ENDPOINT_NOT_FOUND: 'Webhook endpoint not found.',
  EVENT_NOT_FOUND: 'Event not found.',
  WEBHOOK_ENDPOINT_DISABLED: 'The webhook endpoint is disabled; enable it first.',
  AUDIT_EVENT_NOT_FOUND: 'Audit record not found.',
};

export interface ErrorDetail {
  field: string;
  message: string;
  /** QUOTA_EXCEEDED: what remains (null: unlimited) and when the earliest bucket resets. */
  remaining?: number | null;
  resetsAt?: string | null;
  /** CODE_NOT_ELIGIBLE: why, and the plan group the reason is about. */
  reason?: string;
  group?: string;
  /** INSUFFICIENT_SCOPE: the scope the operation needs. */
  required?: string;
  /** HOLD_FINALIZED, HOLD_EXPIRED: the hold's status. */
  status?: string;
}

/**
 * When each code happens and what the caller should do: the error reference of the docs
 * (`docs/errors.md`, written by `npm run openapi`) and of every OpenAPI response that can carry it.
 */
export const ERROR_HELP: Record<ErrorCode, { when: string; action: string }> = {
  INVALID_API_KEY: {
    when: 'The key header is missing, malformed, or names no key of any project.',
    action:
      'Send `Authorization: Bearer sk_...` (private) or `X-Service-Key: pk_...` (public) with a key of the project.',
  },
  API_KEY_DISABLED: {
    when: 'The key exists but was disabled by an operator.',
    action: 'Use another key of the project, or enable this one (admin API or `keys:update --enabled true`).',
  },
  PROJECT_NOT_FOUND: {
    when: "The key's project was deleted; on the admin API, the project id is unknown.",
    action: 'Check the project id; a deleted project cannot be used again: create a new one.',
  },
  CUSTOMER_NOT_FOUND: {
    when: 'No customer of this project has this id or identifier (redemption: and `autoCreate` is off or not allowed).',
    action:
      'Check the id or identifier; create the customer, or redeem with `autoCreate: true` on a project that allows it.',
  },
  CODE_NOT_FOUND: {
    when: 'No code of this project matches (redemption ignores case, spaces and dashes); for the export, the batch is unknown.',
    action: 'Check the code or batch id; do not retry unchanged.',
  },
  CODE_ALREADY_REDEEMED: {
    when: 'The code was redeemed before (or, on revoke, a redeemed code cannot be revoked).',
    action: 'Show the customer that the code is used; retrying cannot succeed.',
  },
  REDUNDANT_PERMANENT_PURCHASE: {
    when: 'The customer already holds a permanent plan of this group worth as much or more than the permanent grant.',
    action: 'Do not sell or grant it; the customer already has it.',
  },
  PERMANENT_TAIL_CONFLICT: {
    when: 'A timed grant would sit behind a permanent plan of this group worth as much or more, so its time could never be used.',
    action: 'Do not grant it; grant a plan of higher value or of another group.',
  },
  CUSTOMER_PROJECT_MISMATCH: {
    when: "The customer (or the customer token's customer) belongs to another project than the key.",
    action: "Use the key of the customer's project.",
  },
  INVALID_PLAN_VALUE: {
    when: "A plan of the grant or of the customer's chain has a negative or non-finite value (bad stored data).",
    action: 'Report it with the request id; the plan data needs an operator.',
  },
  INVALID_SUBSCRIPTION_CHAIN: {
    when: "The customer's stored windows of this group break the chain rules (overlap, a permanent window before another, values rising over time), so no grant can be placed.",
    action: 'Report it with the request id; the data needs an operator.',
  },
  VALIDATION_FAILED: {
    when: 'A field, query or path parameter or header is missing, of the wrong type or out of its limits; `details` names each field.',
    action: 'Fix the fields named in `details`; do not retry unchanged.',
  },
  MALFORMED_JSON: {
    when: 'The body is not valid JSON.',
    action: 'Send a valid JSON document.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    when: 'A body was sent with a `Content-Type` other than `application/json` (or `application/*+json`).',
    action: 'Send `Content-Type: application/json`.',
  },
  PAYLOAD_TOO_LARGE: {
    when: 'The body is larger than 1 MiB.',
    action: 'Send a smaller body (codes: at most 10,000 per batch).',
  },
  ROUTE_NOT_FOUND: {
    when: 'No operation has this method and path (the admin API answers this when `ADMIN_TOKEN` is not set).',
    action: 'Check the method and path against `GET /info` or the OpenAPI document.',
  },
  RATE_LIMITED: {
    when: 'Too many requests from this key (public interface: this key and address, or this customer) in the current window, too many failed logins, or too many wrong admin tokens from this address.',
    action: 'Wait the `Retry-After` seconds, then retry; an `Idempotency-Key` is not used up by a 429.',
  },
  INTERNAL_ERROR: {
    when: 'An unexpected failure; nothing was half-written (every write is one transaction).',
    action:
      'Retry later (with the same `Idempotency-Key`: a 5xx is not stored); report the request id if it persists.',
  },
  SERVICE_UNAVAILABLE: {
    when: 'Readiness: the database does not answer or a migration is pending.',
    action: 'Route no traffic to this instance until `/readyz` answers 200.',
  },
  USERNAME_TAKEN: {
    when: 'Another customer of the project has this username (compared case-insensitively).',
    action: 'Choose another username.',
  },
  IDENTIFIER_TAKEN: {
    when: 'Another customer of the project has an identifier of this type and value.',
    action: 'Resolve the existing customer (`POST /customers/resolve`) instead of creating one.',
  },
  PLAN_NOT_FOUND: {
    when: 'No plan of this project has this id.',
    action: 'Check the plan id (`GET /plans`).',
  },
  FEATURE_NOT_FOUND: {
    when: "No feature of this project has this id (also for a quota's `featureId`).",
    action: 'Check the feature id (`GET /features`).',
  },
  SLUG_TAKEN: {
    when: 'Another plan (or feature) of the project has this slug.',
    action: 'Choose another slug.',
  },
  PLAN_FIELD_IMMUTABLE: {
    when: 'A plan update changes `group` or `value` (or switches between free and paid).',
    action: 'Create a new plan instead.',
  },
  INVALID_RESET_ANCHOR: {
    when: 'A quota is `calendar` with a `resetInterval` that is not a calendar unit (`PT1M`, `PT1H`, `P1D`, `P1W`, `P1M`, `P3M`, `P6M`, `P1Y`), has a `resetDayOfMonth` when it is `run` or its interval is not `P1M`, `P3M` or `P6M`, or a `resetTimeZone` when it is `run`; `details` names the field.',
    action: 'Change the quota named in `details` so that its reset fields go together.',
  },
  PLAN_IN_USE: {
    when: 'The plan has subscriptions, codes or code batches.',
    action: 'Keep the plan; stop selling it instead.',
  },
  FEATURE_IN_USE: {
    when: "A quota of some plan uses the feature, a customer's override names it (in effect or not), or a grant of it has not ended (neither voided nor expired).",
    action: 'Remove the quota from the plans, delete the overrides and void the grants first.',
  },
  CODE_REVOKED: {
    when: 'The code was revoked.',
    action: 'Show the customer that the code is no longer valid.',
  },
  CODE_EXPIRED: {
    when: "The code's `expiresAt` has passed.",
    action: 'Show the customer that the code has expired.',
  },
  IDEMPOTENCY_KEY_IN_USE: {
    when: 'A request with the same `Idempotency-Key` is still running.',
    action: 'Retry the same request after a moment; it then replays the first answer.',
  },
  IDEMPOTENCY_KEY_REUSED: {
    when: 'The `Idempotency-Key` was used within 24 hours for a different request (method, path, query or body).',
    action: 'Use a new key for a new request; send the identical request to get the stored answer.',
  },
  SIGNATURE_REQUIRED: {
    when: 'The project requires signed requests and a signature header is missing.',
    action: 'Send `X-Service-Timestamp`, `X-Service-Nonce` and `X-Service-Signature` (Signature v1).',
  },
  INVALID_SIGNATURE: {
    when: 'The signature does not match the canonical string of the request.',
    action:
      "Sign the exact method, path with query, timestamp, nonce and body bytes with the key's signing secret.",
  },
  SIGNATURE_EXPIRED: {
    when: "The timestamp is more than 300 s away from the server's clock.",
    action: "Sync the client's clock and sign again.",
  },
  NONCE_REUSED: {
    when: 'The nonce was used before with this key.',
    action: 'Send a new random nonce with every request.',
  },
  INVALID_CREDENTIALS: {
    when: 'Login: unknown identifier, wrong password, or a customer without a password (same answer for all three).',
    action: 'Ask the user to check the identifier and password; repeated failures are rate limited.',
  },
  INVALID_CUSTOMER_TOKEN: {
    when: 'The customer token is missing, unknown, expired or logged out, or its customer was deleted.',
    action: 'Log in again (`POST /api/public/v1/auth/login`).',
  },
  CUSTOMER_DISABLED: {
    when: 'The customer is disabled (`enabled: false`).',
    action: 'The project must enable the customer (`PATCH /customers/{id}` with `{"enabled":true}`).',
  },
  FEATURE_NOT_METERED: {
    when: 'Usage was recorded, or a grant created, for a boolean feature (`metered: false`): it is granted or not, never consumed.',
    action: 'Check access with `POST /entitlements/check` instead, or make the feature metered.',
  },
  FEATURE_NOT_GRANTED: {
    when: 'No plan in effect for the customer has a quota for the feature.',
    action: 'Grant a plan with the feature (redeem a code or activate a plan), then record usage.',
  },
  QUOTA_EXCEEDED: {
    when: "The amount exceeds what remains of the customer's buckets; nothing was recorded.",
    action:
      'Read `details[0].remaining` and `resetsAt`; wait for the reset, upgrade the plan, or send `allowOverage: true`.',
  },
  USAGE_EVENT_CONFLICT: {
    when: 'The `eventId` was already recorded for this customer with another feature or amount.',
    action: 'Use a new `eventId` for a new event; resend the same feature and amount to replay the first.',
  },
  USAGE_NOT_FOUND: {
    when: 'The usage record id is unknown in this project, or its month of the ledger was dropped (`USAGE_RETENTION_MONTHS`).',
    action:
      'Check the id (from `POST /usage` or `GET /customers/{id}/usage`); a record past the retention can no longer be reversed.',
  },
  GRANT_NOT_FOUND: {
    when: 'The grant id is unknown in this project.',
    action:
      'Check the id (from `POST /customers/{customerId}/grants` or `GET /customers/{customerId}/grants`).',
  },
  OVERRIDE_NOT_FOUND: {
    when: 'The customer has no override of the feature in effect (none was set, it was deleted, or its `expiresAt` has passed).',
    action: 'Nothing to remove or read; set one with `PUT /customers/{customerId}/overrides/{featureId}`.',
  },
  GRANT_EXPIRED: {
    when: 'A void named a grant whose `expiresAt` has passed: it has already ended, and what remained was forfeited then.',
    action: 'Nothing to void; read the grant for its figures.',
  },
  HOLD_NOT_FOUND: {
    when: "The hold id is not one of this project's holds (unknown, another project's, or deleted with its customer or feature).",
    action: 'Check the id (`hold.id` of `POST /usage/holds`, or `GET /customers/{customerId}/holds`).',
  },
  HOLD_CONFLICT: {
    when: 'The `holdId` was already used for this customer with another feature or amount.',
    action: 'Use a new `holdId` for a new hold; resend the same feature and amount to replay the first.',
  },
  HOLD_FINALIZED: {
    when: 'A commit named a released hold, or a release a committed one; `details[0].status` says which.',
    action: 'Nothing to do: the hold has ended. Read it (`GET /usage/holds/{id}`) for what became of it.',
  },
  HOLD_EXPIRED: {
    when: "A commit came at or after the hold's `expiresAt`: the hold gave its amount back and nothing was recorded.",
    action:
      'Record the usage with `POST /usage` (it may be refused for quota), or hold again with a longer `ttl`.',
  },
  HOLD_LIMIT_REACHED: {
    when: 'The customer already has `HOLDS_MAX_LIVE` live holds of this feature.',
    action:
      'Commit or release holds that are done, or wait for them to expire; a replay of a holdId is never refused.',
  },
  WEBHOOK_ENDPOINT_NOT_FOUND: {
    when: 'The webhook endpoint id (`we_...`) is unknown in this project.',
    action: 'Check the id (from `POST /webhook-endpoints` or `GET /webhook-endpoints`).',
  },
  EVENT_NOT_FOUND: {
    when: 'The event id (`evt_...`) is unknown in this project, or older than the 30 days events are kept.',
    action: "Check the id (from a delivery's `webhook-id` or `GET /events`).",
  },
  WEBHOOK_ENDPOINT_DISABLED: {
    when: 'A redelivery named an endpoint that is disabled (by `PATCH`, a `410 Gone`, or 5 days of failures).',
    action:
      'Read its `disabledReason`, fix the receiver, enable it (`PATCH {"enabled":true}`), then redeliver.',
  },
  AUDIT_EVENT_NOT_FOUND: {
    when: "The audit record id (`aud_...`) is not one of this project's records (unknown, another project's, or deleted by retention).",
    action: 'Check the id (from `GET /audit-events`).',
  },
  INVALID_ADMIN_TOKEN: {
    when: 'The admin bearer token is missing or is not `ADMIN_TOKEN`.',
    action: 'Send `Authorization: Bearer $ADMIN_TOKEN`.',
  },
  API_KEY_NOT_FOUND: {
    when: 'No key of this project has this id.',
    action: 'Check the key id (`GET .../keys`).',
  },
  API_KEY_EXPIRED: {
    when: "The key's `expiresAt` has passed (private and public keys; checked at every request).",
    action:
      'Use another key of the project, or give this one a later `expiresAt` (admin API or `keys:update --expires-at`).',
  },
  INSUFFICIENT_SCOPE: {
    when: "The private key's `scopes` do not include the scope of the operation; `details[0].required` names it. Nothing ran, and an `Idempotency-Key` sent with it is not used up.",
    action:
      'Call with a key that holds the scope (or its `:write`, or `*`), or add it to this key (admin API or `keys:update --scopes`).',
  },
  CUSTOMER_LIMIT_REACHED: {
    when: 'The project already holds `PROJECT_MAX_CUSTOMERS` customers; no customer was created (also by a sign-up, a redemption or an activation that would create one).',
    action:
      'Delete customers the project no longer needs, or ask the operator to raise `PROJECT_MAX_CUSTOMERS`; retrying unchanged cannot succeed.',
  },
  CODE_LIMIT_REACHED: {
    when: 'The batch would take the project past `PROJECT_MAX_CODES` codes in all its batches; no code was created.',
    action: 'Create a smaller batch, or ask the operator to raise `PROJECT_MAX_CODES`.',
  },
  CODE_BATCH_RATE_LIMITED: {
    when: 'The project has created `PROJECT_MAX_CODE_BATCHES_PER_HOUR` code batches in the last hour; no code was created.',
    action:
      'Wait the `Retry-After` seconds, then retry (with the same `Idempotency-Key`: a 429 is not stored); or create fewer, larger batches.',
  },
  CODE_TAKEN: {
    when: 'A batch code of the project, or a campaign code of the project that is neither revoked nor expired, has the same key (case, spaces and dashes ignored; `O` read as `0`, `I` and `L` as `1`).',
    action: 'Choose another code, or leave `code` out to have one generated.',
  },
  CODE_NOT_YET_ACTIVE: {
    when: "The campaign code's `startsAt` has not come yet.",
    action: 'Tell the customer when the code starts; retry from then.',
  },
  CODE_EXHAUSTED: {
    when: 'The campaign code has `maxRedemptions` successful redemptions (also when concurrent redemptions took the last ones: nothing was written).',
    action:
      'Tell the customer the offer is used up; raise `maxRedemptions` (`PATCH /codes/:codeId`) to allow more.',
  },
  CODE_CUSTOMER_LIMIT_REACHED: {
    when: 'The customer has redeemed the campaign code `perCustomerLimit` times.',
    action: 'Retrying cannot succeed for this customer; raise `perCustomerLimit` to allow more.',
  },
  CODE_NOT_ELIGIBLE: {
    when: "The customer does not meet the campaign code's eligibility; `details[0].reason` says why (`NOT_NEW_CUSTOMER`, `HELD_PLAN_GROUP`, `HOLDS_PAID_PLAN` for a trial code while a paid plan of its group is live) and `group` which plan group.",
    action: 'Tell the customer the offer is not for them; retrying cannot succeed.',
  },
  TRIAL_ALREADY_USED: {
    when: 'A trial code, and the customer has had a trial window in its plan group before (in any state, from any code): a trial is once per customer and group, ever.',
    action: 'Tell the customer the trial was used; offer a plain campaign code instead.',
  },
  CODE_CHANGE_NOT_ALLOWED: {
    when: 'A change of a batch code, or of `planId`, `duration`, `trial` or `startsAt` of a campaign code that has been redeemed; `details` name the field.',
    action: 'Create a new campaign code for the new terms.',
  },
};
