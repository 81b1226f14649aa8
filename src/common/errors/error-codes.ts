/**
 * The one table of error codes and their HTTP status (interface.md 7.2 and product.md 2).
 * Services throw `DomainError` with one of these codes; the global exception filter maps it
 * to the status here. Nothing else in the code base decides a status.
 */
export const ERROR_STATUS = {
  // interface.md 7.2
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
  // product.md 2
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
  // entitlements.md
  FEATURE_NOT_METERED: 400,
  FEATURE_NOT_GRANTED: 403,
  QUOTA_EXCEEDED: 409,
  USAGE_EVENT_CONFLICT: 409,
  USAGE_NOT_FOUND: 404,
  // admin interface
  INVALID_ADMIN_TOKEN: 401,
  API_KEY_NOT_FOUND: 404,
  // events.md
  WEBHOOK_ENDPOINT_NOT_FOUND: 404,
  EVENT_NOT_FOUND: 404,
  WEBHOOK_ENDPOINT_DISABLED: 409,
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
  FEATURE_IN_USE: 'The feature is used by a quota and cannot be deleted.',
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
  INVALID_ADMIN_TOKEN: 'The admin token is missing or wrong.',
  API_KEY_NOT_FOUND: 'API key not found.',
  WEBHOOK_ENDPOINT_NOT_FOUND: 'Webhook endpoint not found.',
  EVENT_NOT_FOUND: 'Event not found.',
  WEBHOOK_ENDPOINT_DISABLED: 'The webhook endpoint is disabled; enable it first.',
};

export interface ErrorDetail {
  field: string;
  message: string;
  /** QUOTA_EXCEEDED: what remains (null: unlimited) and when the earliest bucket resets. */
  remaining?: number | null;
  resetsAt?: string | null;
}
