/**
 * The description of every operation of the OpenAPI document, keyed by `METHOD /path` as the path
 * appears in `openapi.json` (`{param}` placeholders). `applyOpenApiConventions` puts the entry in
 * place of the operation's summary and appends the generic notes (idempotency, rate limits).
 * The rules they state are those of docs/*.md (the API guide, entitlements, events, the public
 * interface) and of the code; they are written for API users, who do not have the repository.
 * An entry for a path the application does not serve is simply unused.
 */
export const OPERATION_DOCS: Record<string, string> = {
  // ---------------------------------------------------------------- admin: projects and keys
  'POST /api/admin/v1/projects':
    'Creates a project, the tenant that owns customers, plans, features, codes and keys. `autoCreateCustomerAtRedemption` (default `false`) lets a redemption or activation with `autoCreate: true` create a missing customer; `requireSignature` (default `false`) makes every public request carry a signature v1; `timeZone` (default `UTC`, an IANA zone name stored as sent) is the zone of calendar quotas whose quota and customer name none. The new project has no keys: create them with `POST /projects/{projectId}/keys`. Answers 201 with the project and its `prj_` id.',
  'GET /api/admin/v1/projects':
    'Lists the projects, newest first, as a page object (`page` from 1, `pageSize` 1 to 100, default 10). `search` is a case-insensitive substring match on the name. Deleted projects are not listed.',
  'GET /api/admin/v1/projects/{projectId}':
    'Answers one project with its settings. A deleted or unknown project id is `404 PROJECT_NOT_FOUND`.',
  'PATCH /api/admin/v1/projects/{projectId}':
    'Changes any of `name`, `autoCreateCustomerAtRedemption`, `requireSignature` and `timeZone` (an IANA zone name; a change applies to calendar periods from their next boundary); fields left out keep their value. Turning `requireSignature` on makes every public request of the project without signature headers fail with `401 SIGNATURE_REQUIRED` at once. Answers the updated project.',
  'DELETE /api/admin/v1/projects/{projectId}':
    'Deletes a project. The project is soft-deleted: its data is kept, but every one of its keys then answers `404 PROJECT_NOT_FOUND`, and the admin API and CLI no longer find it. Answers `{ success: true }`.',
  'POST /api/admin/v1/projects/{projectId}/keys':
    "Creates an API key for the project: `kind` `private` (`sk_` + 40 characters, for the project's server side, sent as `Authorization: Bearer`) or `public` (`pk_` + 40, for client applications, sent as `X-Service-Key`). The plaintext `key`, and for a public key its signing secret (`ss_` + 40) used for signature v1, are in this answer only: the service keeps a SHA-256 hash of the key and the secret encrypted. A project may hold several keys of each kind, so keys can be rotated without downtime. Answers 201.",
  'GET /api/admin/v1/projects/{projectId}/keys':
    'Lists every key of the project in id order, each with its kind, name, display prefix and `enabled` flag. Neither the key nor the signing secret is ever shown again after creation.',
  'PATCH /api/admin/v1/projects/{projectId}/keys/{keyId}':
    "Changes a key's `name` or `enabled` flag. A disabled key answers `403 API_KEY_DISABLED` to every request until it is enabled again; use this to retire a key after rolling out its successor. Answers the key, without secrets.",
  'DELETE /api/admin/v1/projects/{projectId}/keys/{keyId}':
    'Deletes a key for good: requests carrying it then answer `401 INVALID_API_KEY`. An unknown key id is `404 API_KEY_NOT_FOUND`. Answers `{ success: true }`.',

  // ---------------------------------------------------------------- features and plans
  'GET /api/private/v1/features':
    "Lists the project's features, newest first, as a page object (`page` from 1, `pageSize` 1 to 100, default 10). `search` is a case-insensitive substring match on the name or the slug.",
  'POST /api/private/v1/features':
    "Creates a feature: something a plan's quotas grant. A `metered` feature is counted in its `unit` and consumed with `POST /usage`; a boolean one (`metered: false`) is simply granted or not. `slug` (1 to 64 lower-case letters, digits, `_` or `-`, starting with a letter or a digit) is unique in the project (`409 SLUG_TAKEN`) and names the feature in entitlement checks and usage. Answers 201 with the feature.",
  'GET /api/private/v1/features/{featureId}':
    'Answers one feature of the project. A feature of another project is `404 FEATURE_NOT_FOUND`, as an unknown id.',
  'PATCH /api/private/v1/features/{featureId}':
    'Changes any of `slug`, `name`, `description`, `metered` and `unit`; fields left out keep their value, and `null` is refused. A new slug must be free in the project (`409 SLUG_TAKEN`). Answers the updated feature.',
  'DELETE /api/private/v1/features/{featureId}':
    "Deletes a feature. A feature that a quota of any plan still uses, that a customer's override names (in effect or not), or that a grant not ended (neither voided nor expired) gives, is `409 FEATURE_IN_USE`: remove those first. Ended grants of the feature are deleted with it. Answers `{ success: true }`.",
  'GET /api/private/v1/plans':
    "Lists the project's plans in id order (oldest first), as a page object (`page` from 1, default 1; `pageSize` 1 to 100, default 10). Each plan carries its quotas, in id order, each with its embedded feature. `search` is a case-insensitive substring match on the name or the slug.",
  'POST /api/private/v1/plans':
    'Creates a plan with its quotas. Plans of the same `group` form one chain per customer: at most one of them is in effect at a time, and `value` (at least 0, two decimals at most; 0 means free) ranks them and converts remaining time on an upgrade. `group` and `value` can never change afterwards. Each quota names a feature (at most one quota per feature), a `limit` (`null` for unlimited), a `priority` (higher is consumed first) and a `resetInterval` (ISO 8601 duration, `null` for never); `resetAnchor` `calendar` (default `run`) starts periods at local calendar units (`PT1M`, `PT1H`, `P1D`, `P1W`, `P1M`, `P3M`, `P6M`, `P1Y`), on `resetDayOfMonth` for `P1M`, `P3M`, `P6M`, in `resetTimeZone`, else the `timeZone` of the customer, else of the project; `thresholds` (percents of `limit`) announce usage crossing them. Reset fields that do not go together are `400 INVALID_RESET_ANCHOR`, checked after the fields and before anything else. A free plan is granted to every customer created afterwards. Answers 201 with the plan.',
  'GET /api/private/v1/plans/{planId}':
    'Answers one plan with its quotas and their features. A plan of another project is `404 PLAN_NOT_FOUND`, as an unknown id.',
  'PATCH /api/private/v1/plans/{planId}':
    "Changes a plan's `name`, `slug` or quotas. `quotas` replaces the whole list: a quota left out is deleted, a quota of a feature already in the plan keeps its id. A `group` or `value` different from the stored one is `409 PLAN_FIELD_IMMUTABLE` (a plan can never switch between free and paid). New limits and reset fields apply at once to the customers holding the plan. Reset fields that do not go together are `400 INVALID_RESET_ANCHOR`, checked after the fields and before the plan is looked up. Answers the updated plan.",
  'DELETE /api/private/v1/plans/{planId}':
    'Deletes a plan with its quotas. A plan that any subscription, code or code batch refers to is `409 PLAN_IN_USE`, so the history of who held it stays readable. Answers `{ success: true }`.',

  // ---------------------------------------------------------------- customers
  'GET /api/private/v1/customers':
    "Lists the project's customers, newest first (id descending), as a page object (`page` from 1, default 1; `pageSize` 1 to 100, default 10; out-of-range values are `400 VALIDATION_FAILED`, and a page past the end has an empty `data`). `search` (at most 128 characters) is a case-insensitive substring match on the username or any identifier value. Items carry the short form of identifiers and no credentials.",
  'POST /api/private/v1/customers':
    'Creates a customer and, in the same transaction, grants it every free plan of the project as a permanent subscription (in plan id order). `username` (8 to 16 characters of `A-Za-z0-9_.-`) is unique in the project, compared case-insensitively (`409 USERNAME_TAKEN`), and is mirrored as a read-only identifier of type `username`. `identifiers` adds others such as `email` (`409 IDENTIFIER_TAKEN` when a pair belongs to another customer); `password` creates a password credential for public login; `timeZone` (an IANA zone name, or `null`, the default, for the zone of the project) is the zone of its calendar quotas. Answers 201 with the customer in short form.',
  'POST /api/private/v1/customers/resolve':
    'Finds the one customer holding an identifier (`customer.type`, `customer.value`), for example the customer of an email or of your own user id. Type `username` is allowed and compared case-insensitively; other values are compared exactly. Answers the full record (credentials, identifiers with `readonly`), whose `id` serves the `{customerId}` endpoints; no match is `404 CUSTOMER_NOT_FOUND`.',
  'GET /api/private/v1/customers/{customerId}':
    'Answers the full record of one customer: flags, credentials (type 1 is a password; never the password itself) and identifiers with `readonly`, `createdAt` and `updatedAt`, the mirrored username first. A customer of another project is `404 CUSTOMER_NOT_FOUND`, as an unknown id.',
  'PATCH /api/private/v1/customers/{customerId}':
    'Updates a customer; every field is optional and `null` is refused but for `timeZone`. A new `username` also updates the mirrored `username` identifier; `password` sets or replaces the password credential; `enabled: false` makes logins answer `403 CUSTOMER_DISABLED` and entitlement checks `allowed: false`, and its tokens `403 CUSTOMER_DISABLED`; `enabled: true` on a disabled customer ends its sessions, so its old tokens answer `401 INVALID_CUSTOMER_TOKEN` for good. `identifiers` replaces the whole list of extra identifiers: pairs that stay keep their id. `timeZone` sets the zone of its calendar quotas (`null`: the zone of the project again; a change applies from the next boundary of each period). Setting a username or password clears `temporary` (set on customers created by a redemption or activation). Answers the full record.',
  'DELETE /api/private/v1/customers/{customerId}':
    'Deletes a customer with its identifiers, credentials, sessions (its tokens stop working) and subscriptions, in one transaction. Codes it redeemed keep their record, with the link to the customer cleared. Answers `{ success: true }`.',
  'GET /api/private/v1/customers/{customerId}/subscriptions':
    "Lists the customer's subscription windows in every plan group: the live ones (not cancelled, and not yet ended) first; `history=true` adds, after them, the windows that ended or were cancelled. Each window gives its plan and group, `validFrom`, `validTo` (`null` for permanent), `status` (`active`, or `cancelled` for a window cancelled before it started), `source` (`signup`, `code`, `activation`) and the `codeId` that granted it.",

  // ---------------------------------------------------------------- codes
  'POST /api/private/v1/codes':
    'Creates a batch of `count` codes (1 to 10,000, default 1) for one plan, each granting `duration` (ISO 8601, such as `P30D`; absent or `null` for a permanent grant) when redeemed. A code is 16 characters of Crockford base32 in four groups (`7KQ2-M9XD-4TRB-C1ZP`, 80 random bits); `expiresAt` (a date or a timestamp) stops it from being redeemed after that instant. Every code is in this answer in plaintext, with the batch id to list or export them later. Answers 201. With `kind: "campaign"` it creates one campaign code instead, which many customers redeem: `code` (3 to 32 letters, digits and single dashes, shown in upper case; absent or `null`: generated, `XXXX-XXXX-XXXX`), `planId`, `duration`, `maxRedemptions` (`null`: no cap), `perCustomerLimit` (default 1), `startsAt`, `expiresAt`, `eligibility` (`newCustomersOnly`, `notIfHeldPlanGroups`) and `note`; `count` is then an unknown field, as the campaign fields are in a batch. A code whose key (case, spaces and dashes ignored, `O` read as `0`, `I` and `L` as `1`) is that of a batch code of the project, or of a campaign code that is neither revoked nor expired, is `409 CODE_TAKEN`. Answers 201 with the code.',
  'GET /api/private/v1/codes':
    "Lists the project's codes, newest first, as a page object (`page` from 1, `pageSize` 1 to 100, default 10). Both kinds of code. Filters: `kind` (`batch`, `campaign`), `status` (`available`, `redeemed`, `revoked`, `expired`, `exhausted`, `scheduled`; derived from `expiresAt`, `startsAt` and the count at read time), `planId`, `batchId`, and `search`, a case-insensitive substring match on the code (dashes ignored) or the note.",
  'GET /api/private/v1/codes/export':
    'Exports every code of one batch (`batchId`) as RFC 4180 CSV (CRLF line ends) with the columns `code,status,plan_id,plan_name,duration,expires_at,redeemed_at,redeemed_by_customer_id`, for printing or handing to a distributor. An unknown batch is `404 CODE_NOT_FOUND`; errors are the JSON envelope, only the success is CSV.',
  'GET /api/private/v1/codes/{codeId}':
    'Answers one code: its plaintext, plan, duration, status, batch, note, expiry, and when and by which customer it was redeemed. A campaign code adds its terms, `redemptionCount` and `remainingRedemptions`. A code of another project is `404 CODE_NOT_FOUND`, as an unknown id.',
  'PATCH /api/private/v1/codes/{codeId}':
    'Changes a campaign code: `expiresAt`, `maxRedemptions` (`null`, or not below `redemptionCount`), `perCustomerLimit`, `eligibility` (replaced whole) and `note` at any time; `planId`, `duration`, `trial` and `startsAt` only until the first redemption (else `409 CODE_CHANGE_NOT_ALLOWED`, details naming the field; a value equal to the stored one is no change). A batch code cannot change (`409 CODE_CHANGE_NOT_ALLOWED`); a revoked code is `409 CODE_REVOKED`, an expired one `409 CODE_EXPIRED`. Answers the code.',
  'GET /api/private/v1/codes/{codeId}/redemptions':
    "Lists who redeemed a code, when, and the windows each redemption granted as they are now, newest first, as a page object (`page`, `pageSize` 1 to 100, default 10; filter `customerId`). A batch code's page holds its one redemption once redeemed. A deleted customer's records stay, with `customer: null` and no windows. A code of another project is `404 CODE_NOT_FOUND`.",
  'POST /api/private/v1/codes/{codeId}/revoke':
    'Revokes an available or expired code (or a campaign code in any state): redeeming it then answers `409 CODE_REVOKED`. Revoking a revoked code answers the same code again; a redeemed code cannot be revoked (`409 CODE_ALREADY_REDEEMED`), and the subscription it granted is unaffected. Answers the code.',

  // ---------------------------------------------------------------- redemption and activation
  'POST /api/private/v1/redemptions':
    "Redeems a code for a customer and grants the code's plan, in one transaction: everything or nothing, and of two concurrent redemptions of one code exactly one succeeds. The code is normalised (case, spaces and dashes ignored, `O` read as `0`, `I` and `L` as `1`) and checked in this order: `CODE_NOT_FOUND`, `CODE_REVOKED`, `CODE_EXPIRED`, `CODE_ALREADY_REDEEMED`; then the customer, named by an identifier: a missing one is `404 CUSTOMER_NOT_FOUND` unless `autoCreate: true` and the project's `autoCreateCustomerAtRedemption` both allow creating it (with the free plans granted first; a `username` identifier becomes its username, any other gets a generated one). The grant follows the chain rules of the plan's group: the same plan extends the customer's time, a higher-value plan takes effect at once with the remaining lower-value time converted by value ratio, a lower one waits until the better ones end; a timed grant under a permanent plan of equal or higher value is `409 PERMANENT_TAIL_CONFLICT`, a permanent grant under one is `409 REDUNDANT_PERMANENT_PURCHASE`, and a broken chain `400 INVALID_SUBSCRIPTION_CHAIN`/`INVALID_PLAN_VALUE`. A campaign code is checked for `CODE_NOT_YET_ACTIVE` and `CODE_EXHAUSTED` after `CODE_EXPIRED`, then, once the customer is known, `CODE_CUSTOMER_LIMIT_REACHED`, `409 TRIAL_ALREADY_USED` (a trial code, and the customer had a trial in its group before) and `403 CODE_NOT_ELIGIBLE` (details give the `reason` and `group`; a trial code refuses a customer holding a paid plan of its group: `HOLDS_PAID_PLAN`) before the chain rules; its cap is exact under concurrency (a cap taken meanwhile is `409 CODE_EXHAUSTED`, nothing written), and the answer adds `campaign` with the counts after this redemption. Answers 200 with the customer (`created` says whether this call created it) and the windows created; with `?dryRun=true` the same checks run and roll back, and the answer adds `dryRun: true`, `changes` (windows that would be ended, cancelled, moved and created) and `entitlementsAfter`.",
  'POST /api/private/v1/codes/redeem':
    'Alias of `POST /redemptions`, kept for clients written against it: the same body (`code`, `customer`, `autoCreate`), the same `?dryRun=true`, the same order of checks, chain rules, answer and errors. Prefer `POST /redemptions` in new code.',
  'POST /api/private/v1/subscriptions/activate':
    "Grants a plan to a customer without a code, for instance after a payment taken elsewhere: `planId` for `duration` (ISO 8601; `null` for a permanent grant). It runs the redemption engine in one transaction: the same customer lookup with `autoCreate` (which needs the project's `autoCreateCustomerAtRedemption` as well), the same chain rules (extension, upgrade with converted time, queued lesser plan) and the same conflicts `PERMANENT_TAIL_CONFLICT` and `REDUNDANT_PERMANENT_PURCHASE`. Windows it creates have `source: activation`. Answers 200 like a redemption; `?dryRun=true` changes nothing and adds `changes` and `entitlementsAfter`.",

  // ---------------------------------------------------------------- entitlements and usage
  'GET /api/private/v1/customers/{customerId}/entitlements':
    "Lists every feature of the project for one customer, granted or not, so a client can show limits and grey out what the customer's plans lack. A feature is granted when a plan in effect (in any group) has a quota for it; a metered feature has one bucket per plan group, each with its `limit`, `used` and `remaining` in the current period, and a `balance` summing them (`limit` and `remaining` `null` when a bucket is unlimited). Periods are computed from the start of the customer's unbroken run in the group plus whole `resetInterval`s, so renewals and upgrades do not move reset dates; `resetsAt` is the earliest period end and `accessEndsAt` when the last window granting the feature ends (`null` when permanent).",
  'POST /api/private/v1/entitlements/check':
    'Asks whether a customer (`customer` identifier or `customerId`) may use `amount` (default 1, 0 for "is it granted at all", at most 6 decimals; ignored for a boolean feature) of a feature (`feature` slug or `featureId`) now. It only reads: nothing is consumed (record usage with `POST /usage`). A refusal still answers 200, with `allowed: false` and `reason` `NOT_GRANTED`, `LIMIT_REACHED` or `CUSTOMER_DISABLED`; an unknown customer or feature is 404. The answer carries the balance, the buckets, `resetsAt` and `accessEndsAt`.',
  'POST /api/private/v1/usage':
    "Records `amount` of a metered feature used by a customer, at the server's time, exactly once per `eventId` (1 to 255 printable characters, unique per customer forever). The amount is taken from the buckets in order: higher quota `priority` first, then the period that ends first, then the window that ends first, then the lower plan id; a record may span several buckets and keeps its allocations. Refusals, in order: `CUSTOMER_NOT_FOUND`, `FEATURE_NOT_FOUND`, `USAGE_EVENT_CONFLICT` (the `eventId` already recorded with another feature or amount), `CUSTOMER_DISABLED`, `FEATURE_NOT_METERED`, `FEATURE_NOT_GRANTED`, and `409 QUOTA_EXCEEDED` (nothing recorded; `details` give `remaining` and `resetsAt`) unless `allowOverage: true` records the excess as overage. Answers 201 with the record and the balance after it; the same `eventId` again answers 200 with the original record, the balance now and `replayed: true`.",
  'POST /api/private/v1/usage/batch':
    'Records up to 100 usage events (`events`, each the body of `POST /usage`) in one request, for instance when flushing a buffer. Items are decided one after the other in list order, each on its own: one failure leaves the others recorded. Answers 200 with `results` in the same order, each with the `status` the single call would have answered and its `usage`, `balance` and `replayed`, or its `error`.',
  'POST /api/private/v1/usage/{usageId}/reverse':
    'Reverses a usage record, for example after a refunded or failed operation: exactly the allocations it took are given back to the periods it was recorded in, whenever the reversal happens. The record stays in the ledger with `reversedAt` set; reversing it again answers the same record. Answers 200 with the record and the balance now; an unknown id is `404 USAGE_NOT_FOUND`.',
  'GET /api/private/v1/customers/{customerId}/usage':
    "Lists a customer's usage ledger, newest first, as a page object (`page` from 1, `pageSize` 1 to 100, default 10). Filters: `featureId`, and `from` (inclusive) and `to` (exclusive) over `recordedAt`. Each record gives its `eventId`, amount, overage, allocations per plan group and period, and `reversedAt`.",
  'POST /api/private/v1/customers/{customerId}/grants':
    "Gives one customer an `amount` (greater than 0, at most 6 decimals and 10^12) of a metered feature (`feature` slug or `featureId`) outside its plans: a top-up, a goodwill credit, a promotion. While in effect (`effectiveAt` <= now < `expiresAt`, not voided) the grant is one more bucket of the feature, consumed in the same order as the plans' buckets (higher `priority` first, then what lapses first). `effectiveAt` defaults to now (a later one makes the grant `scheduled`); `expiresAt` (null: never) must be later than now and than `effectiveAt`; `priority` defaults to 0; `reason` (1 to 500 characters) and `metadata` (at most 20 string values) are yours. A grant never resets. Refusals, in order: `VALIDATION_FAILED`, `CUSTOMER_NOT_FOUND`, `FEATURE_NOT_FOUND`, `FEATURE_NOT_METERED`. Answers 201 `{ grant }` and records `grant.created`; `?dryRun=true` answers 200 with `dryRun: true`, `grant.id` null and `entitlementsAfter`, and changes nothing.",
  'GET /api/private/v1/customers/{customerId}/grants':
    "Lists a customer's grants, newest first, as a page object (`page` from 1, `pageSize` 1 to 100, default 10). Filters: `featureId`, and `status` as derived now (`voided`, `expired`, `scheduled`, `exhausted`, `active`). Each grant gives `amount = used + remaining + forfeited`.",
  'GET /api/private/v1/grants/{grantId}':
    'Answers one grant with its status and figures now: `used` (what records took, less reversals), `remaining` (0 once ended) and `forfeited` (what remained when it was voided or expired). A grant of another project is `404 GRANT_NOT_FOUND`, as an unknown id.',
  'POST /api/private/v1/grants/{grantId}/void':
    'Ends a grant at once (a scheduled one too) and forfeits what remains; `reason` is kept as `voidReason`. Voiding a voided grant answers it unchanged and records nothing; an expired grant is `409 GRANT_EXPIRED`. Answers 200 `{ grant }` and records `grant.voided`.',
  'PUT /api/private/v1/customers/{customerId}/overrides/{featureId}':
    "Sets the customer's one override of the feature, replacing any, in effect until replaced, deleted or its `expiresAt` (later than now; null: no end). `mode: \"deny\"`: not granted, whatever plans and grants say (`limit`, `resetInterval` and `priority` refused, even as null). `mode: \"set\"`: granted; on a metered feature one bucket with `limit` (required; null: unlimited) replaces the plans' buckets, grants still add, and usage already recorded in the period counts against it. Its period's `anchor`, and `resetInterval` and `priority` unless named, are copied from the feature's plan bucket first in the order of consumption (none: now, null and 0). On a boolean feature `limit`, `resetInterval` and `priority` are refused. Refusals, in order: `VALIDATION_FAILED` (the body), `CUSTOMER_NOT_FOUND`, `FEATURE_NOT_FOUND`, then `VALIDATION_FAILED` for the feature's kind. Answers 200 `{ override }` and records `override.set`; `?dryRun=true` adds `dryRun: true` and `entitlementsAfter` and changes nothing.",
  'GET /api/private/v1/customers/{customerId}/overrides':
    "Lists the customer's overrides in effect, as a plain array in feature id order. An override whose `expiresAt` has passed is not listed: the plans' answer applies again.",
  'GET /api/private/v1/customers/{customerId}/overrides/{featureId}':
    'Answers the override of the feature in effect for the customer. Refusals, in order: `CUSTOMER_NOT_FOUND`, `FEATURE_NOT_FOUND`, `OVERRIDE_NOT_FOUND` (none, or it has expired).',
  'DELETE /api/private/v1/customers/{customerId}/overrides/{featureId}':
    'Removes the override in effect: the plans\' answer applies again at once. Refusals, in order: `CUSTOMER_NOT_FOUND`, `FEATURE_NOT_FOUND`, `OVERRIDE_NOT_FOUND`. Answers 200 `{ override }` as it was and records `override.removed` with `reason: "deleted"`; `?dryRun=true` adds `dryRun: true` and `entitlementsAfter` and changes nothing.',
  // ---------------------------------------------------------------- public interface
  'POST /api/public/v1/auth/login':
    'Logs a customer in from a client application with an identifier (`type` may be `username`) and password, with the project\'s public key in `X-Service-Key` (and a signature v1 when the project requires one). Answers `{ token, tokenType: "Bearer", expiresAt, customer }`: send the token as `Authorization: Bearer` on the `/me` endpoints; it is valid 30 days (`CUSTOMER_TOKEN_TTL_DAYS`) until logout, or until the customer is disabled or deleted. A wrong password, an unknown customer and a customer without a password all answer the same `401 INVALID_CREDENTIALS` after the same work; a disabled customer is `403 CUSTOMER_DISABLED`. After 5 failures for one identifier (or 20 from one address) within 15 minutes, logins answer `429 RATE_LIMITED` with `Retry-After` until the window ends.',
  'POST /api/public/v1/auth/logout':
    'Revokes the customer token sent in `Authorization: Bearer`: it then answers `401 INVALID_CUSTOMER_TOKEN`. Other tokens of the same customer keep working. Answers `{ success: true }`.',
  'GET /api/public/v1/me':
    "Answers the logged-in customer's full record (credentials without secrets, identifiers), as the private read does. Needs the public key (`X-Service-Key`, signed when the project requires it) and the customer token; a token of another project's customer is `403 CUSTOMER_PROJECT_MISMATCH`.",
  'GET /api/public/v1/me/subscriptions':
    "Lists the logged-in customer's subscription windows, as the private list does: live ones first, and with `history=true` also those that ended or were cancelled. Each window gives its plan and group, `validFrom`, `validTo` (`null` for permanent), `status` and `source`, so an app can show what the customer holds and until when.",
  'POST /api/public/v1/me/password':
    "Sets the logged-in customer's password after proving the current one. Every other session of the customer ends; this token goes on working. A wrong current password is 401 INVALID_CREDENTIALS and counts as a failed login (429 RATE_LIMITED as for the login).",
  'POST /api/public/v1/me/redemptions':
    'Lets the logged-in customer redeem a code for itself (`{ code }`), for example from an in-app "enter your code" field. The rules are those of the private redemption: code normalisation, the order of code checks, the chain rules and their errors; no customer is ever created. `?dryRun=true` changes nothing and answers what would happen, with `entitlementsAfter` to show the customer what the code gives before it is used. Answers 200 like the private redemption.',
  'GET /api/public/v1/me/entitlements':
    "The logged-in customer's entitlements, read only: every feature of the project, granted or not, with balances, buckets, `resetsAt` and `accessEndsAt` as `GET /customers/{customerId}/entitlements` answers them, so a client app can show limits and grey out what the plan lacks. Needs the public key and the customer token; a disabled customer's token answers `403 CUSTOMER_DISABLED`.",
  'POST /api/public/v1/me/entitlements/check':
    'Asks whether the logged-in customer may use `amount` (default 1) of a feature (`feature` slug or `featureId`) now, as the private check does; it reads only. A refusal answers 200 with `allowed: false` and a `reason`. A `customer` in the body is refused with 400: the token names the customer.',

  // ---------------------------------------------------------------- info and probes
  'GET /api/private/v1/info':
    "Answers the project of the private key (id, name, `autoCreateCustomerAtRedemption`), how to call the private interface (base URL, `Authorization: Bearer`, the `X-Request-Id` and `Idempotency-Key` header names) and every private endpoint as `METHOD path`, read from the running application. Handy as a first call to check a key: an invalid key is `401 INVALID_API_KEY`, a disabled one `403 API_KEY_DISABLED`, a deleted project's `404 PROJECT_NOT_FOUND`.",
  'GET /api/public/v1/info':
    'Answers the project of the public key, the base URL of the public interface, the names of the key, customer authorization, request id and signature headers, and every public endpoint as `METHOD path`, read from the running application. A client application can read header names from here instead of hard-coding them.',
  'GET /healthz':
    'Liveness probe: answers 200 `{ status: "ok" }` while the process serves HTTP, without asking the database (use `/readyz` for that). Needs no credential.',
  'GET /readyz':
    'Readiness probe: answers 200 when the database answers and every migration is applied, `503 SERVICE_UNAVAILABLE` otherwise, so a load balancer sends no traffic to an instance that cannot serve it. Needs no credential.',

  // ---------------------------------------------------------------- webhooks and events
  'POST /api/private/v1/webhook-endpoints':
    "Registers a URL to receive the project's events as Standard Webhooks deliveries (headers `webhook-id`, `webhook-timestamp`, `webhook-signature`). `url` must be `https` and must not resolve to a loopback, private, link-local or metadata address (checked again at each delivery); `eventTypes` absent or empty means every type. Answers 201 with the endpoint and its signing `secret` (`whsec_...`), shown only in this answer: verify deliveries with it, for instance with the `standardwebhooks` library.",
  'GET /api/private/v1/webhook-endpoints':
    "Lists the project's webhook endpoints, newest first, as a page object (`page`, `pageSize` up to 100), each with its URL, event types, `enabled`, and for a disabled one `disabledReason` and `failingSince`. Secrets are never listed.",
  'GET /api/private/v1/webhook-endpoints/{endpointId}':
    'Answers one webhook endpoint, including why it was disabled when deliveries failed (`410 Gone` from the receiver, or 5 days of failed attempts). An unknown id is `404 WEBHOOK_ENDPOINT_NOT_FOUND`.',
  'PATCH /api/private/v1/webhook-endpoints/{endpointId}':
    'Changes any of `url`, `eventTypes`, `enabled` and `description`. The URL rules of creation apply; an unknown event type is 400. Set `enabled: true` to resume deliveries to an endpoint the service disabled. Answers the endpoint.',
  'DELETE /api/private/v1/webhook-endpoints/{endpointId}':
    'Deletes a webhook endpoint with its deliveries; no further deliveries are made to it. Answers `{ success: true }`.',
  'POST /api/private/v1/webhook-endpoints/{endpointId}/rotate-secret':
    "Replaces the endpoint's signing secret. For 24 hours deliveries carry signatures under both the new and the previous secret, so the receiver can switch without dropping any. Answers the endpoint with the new `secret` (shown only here) and `previousSecretExpiresAt`.",
  'POST /api/private/v1/webhook-endpoints/{endpointId}/test':
    "Sends a `webhook.test` event to the endpoint now, signed as any delivery, to check the receiver's URL and signature verification. The event is not stored and cannot be subscribed to. Answers 200 with `delivered`, the receiver's `status`, `error` and `durationMs`, whatever the receiver said.",
  'GET /api/private/v1/events':
    "Lists the project's events of the last 30 days, newest first, with cursor paging: `limit` (1 to 100, default 20) and the `cursor` from the previous page's `nextCursor` (`null` on the last page). Filters: `type` and `customerId`. Each event has its `evt_` id, type, `createdAt` and a `data` snapshot; events naming a customer carry `customerSeq`, which grows with each of that customer's events, so a receiver can drop a stale one.",
  'GET /api/private/v1/events/{eventId}':
    'Answers one event with its `data` as it is delivered. Events are kept 30 days; an unknown id is `404 EVENT_NOT_FOUND`.',
  'GET /api/private/v1/events/{eventId}/deliveries':
    "Lists an event's deliveries, one per endpoint, each with its attempts: status, time, the receiver's HTTP status code and the error, to see why a receiver did not get it. Failed deliveries are retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h.",
  'POST /api/private/v1/events/{eventId}/redeliver':
    'Delivers an event again to every endpoint enabled now whose event types take it, or only to `endpointId` when given, for instance after fixing a receiver. Deliveries are at least once: receivers deduplicate by `webhook-id`. Answers 202 with the number of deliveries queued.',
};
