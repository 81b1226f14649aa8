import { STATUS_CODES } from 'node:http';
import type { OpenAPIObject } from '@nestjs/swagger';
import { ERROR_HELP, ERROR_MESSAGES, ERROR_STATUS, ErrorCode } from '../errors/error-codes';
import { PAGE_SCHEMA, PAGE_SCHEMA_REF } from './api-responses';
import { OPERATION_DOCS } from './operation-docs';
import { PROPERTY_DOCS } from './property-docs';

/**
 * The conventions every operation of the OpenAPI document follows, applied once to the whole
 * document after Nest has built it, so that a new endpoint inherits them without restating
 * anything: ids are integers and timestamps `date-time`; a property with a default is not
 * required; every property and operation is described; every error response lists its codes
 * with their meaning and one correct example each; the errors every request can meet (malformed
 * body, wrong media type, rate limit, idempotency, internal error) are declared where they can
 * happen; every response declares the headers it carries.
 */

type Json = Record<string, any>;

const ERROR_SCHEMA_REF = '#/components/schemas/ApiErrorResponse';
const ERROR_BODY_REF = '#/components/schemas/ApiErrorBody';
const SUCCESS_SCHEMA_REF = '#/components/schemas/ApiSuccess';
const REQUEST_ID_EXAMPLE = '6f1c2f9e-7d0a-4a55-9d3b-1b7f9a0c1e22';
const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const MAX_INT4 = 2147483647;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

const HEADERS: Json = {
  'X-Request-Id': {
    description:
      'Identifier of this request: the `X-Request-Id` the client sent (1 to 128 characters of `A-Za-z0-9._:-`) or a new UUID; the same value as `requestId` in the body, and in the log lines of the request.',
    schema: { type: 'string', maxLength: 128, example: REQUEST_ID_EXAMPLE },
  },
  'Idempotent-Replayed': {
    description:
      'Sent only by an operation that takes an `Idempotency-Key`: `true` when this answer is the stored answer of an earlier request with the same key; absent otherwise.',
    schema: { type: 'string', enum: ['true'] },
  },
  'RateLimit-Limit': {
    description:
      'Requests allowed in the current window, for the tighter of the per-key and per-address limits (sent when rate limits are on: `RATE_LIMIT_ENABLED`).',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_INT4, example: 600 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window (sent when rate limits are on).',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_INT4, example: 599 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends (sent when rate limits are on).',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_INT4, example: 42 },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: MAX_INT4, example: 42 },
  },
};

/** How an operation's description introduces the error codes it can answer, by status. */
const ERRORS_LEAD = 'Errors: ';

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

/** A path that counts against the rate limits (docs/operations.md#rate-limits): it carries RateLimit-*. */
const isRateLimited = (path: string) => path.startsWith('/api/private/') || path.startsWith('/api/public/');

const exampleDetails: Partial<Record<ErrorCode, Json[]>> = {
  VALIDATION_FAILED: [{ field: 'customer.value', message: 'value must be at most 128 characters' }],
};

function errorExample(code: ErrorCode): Json {
  const error: Json = {
    code,
    message: code === 'VALIDATION_FAILED' ? 'value must be at most 128 characters' : ERROR_MESSAGES[code],
  };
  if (exampleDetails[code]) error.details = exampleDetails[code];
  return { ok: false, requestId: REQUEST_ID_EXAMPLE, error };
}

/**
 * One shared error response: every code of one status that the operations of one kind (rate
 * limited or not) can answer, each with its meaning and one example; its schema narrows
 * `error.code` to those codes, so that a typed client knows them.
 */
export function errorResponse(codes: readonly ErrorCode[], extraHeaders: string[] = []): Json {
  const sorted = [...new Set(codes)].sort();
  const headers: Json = { 'X-Request-Id': headerRef('X-Request-Id') };
  for (const name of extraHeaders) headers[name] = headerRef(name);
  return {
    description: sorted.map((code) => `\`${code}\`: ${ERROR_HELP[code].when}`).join('\n\n'),
    headers,
    content: {
      'application/json': {
        // the error body's code narrowed to these codes (beside the body, so that an example's
        // `message` and `details` are still properties of the schema that narrows it)
        schema: {
          allOf: [
            { $ref: ERROR_SCHEMA_REF },
            {
              properties: {
                error: { allOf: [{ $ref: ERROR_BODY_REF }, { properties: { code: { enum: sorted } } }] },
              },
            },
          ],
        },
        examples: Object.fromEntries(sorted.map((code) => [code, { $ref: `#/components/examples/${code}` }])),
      },
    },
  };
}

/**
 * The name of the shared error response (`components.responses`) of a status: its reason phrase
 * (`NotFound`, `Conflict`), `.unmetered` for the paths outside the rate limits (the admin interface,
 * the probes), whose answers carry no `RateLimit-*` headers.
 */
export function errorResponseName(status: number, limited: boolean): string {
  return (STATUS_CODES[status] ?? String(status)).replace(/[^A-Za-z]/g, '') + (limited ? '' : '.unmetered');
}

/** The codes each shared error response gathers, from every operation that references it. */
type ErrorGroups = Map<string, { status: number; limited: boolean; codes: Set<ErrorCode> }>;

/** The shared error responses, each with the headers its answers carry. */
function errorResponses(groups: ErrorGroups): Json {
  const responses: Json = {};
  for (const [name, { status, limited, codes }] of groups) {
    const headers = limited ? ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] : [];
    // a stored error answer is replayed too: declared wherever one can be (not on 429s, 5xx, or a
    // status whose only codes are the idempotency key's own refusals)
    if (limited && status < 500 && status !== 429 && ![...codes].every((c) => c.startsWith('IDEMPOTENCY_')))
      headers.push('Idempotent-Replayed');
    if (status === 429) headers.push('Retry-After');
    responses[name] = errorResponse([...codes], headers);
  }
  return responses;
}

const sortedByKey = (object: Json): Json =>
  Object.fromEntries(Object.entries(object).sort(([a], [b]) => a.localeCompare(b)));

/**
 * Every parameter that several operations declare alike (the `Idempotency-Key`, paging `page` and
 * `pageSize`, `search`, the path ids, the signature headers) becomes one `components.parameters`
 * entry, named after the parameter, that the operations reference. A parameter of the same name
 * but another meaning keeps a name of its own (`name.in`, then a number).
 */
function shareParameters(d: Json): Json {
  const uses = new Map<string, number>();
  const each = (visit: (op: Json) => void) => {
    for (const item of Object.values<Json>(d.paths ?? {}))
      for (const method of METHODS) if (item[method]) visit(item[method]);
  };
  each((op) => {
    for (const param of op.parameters ?? []) {
      if (param.$ref) continue;
      const key = JSON.stringify(param);
      uses.set(key, (uses.get(key) ?? 0) + 1);
    }
  });
  const names = new Map<string, string>();
  const shared: Json = {};
  for (const [key, count] of uses) {
    if (count < 2) continue;
    const param = JSON.parse(key) as Json;
    let name = String(param.name);
    if (shared[name]) name = `${param.name}.${param.in}`;
    for (let n = 2; shared[name]; n++) name = `${param.name}.${param.in}${n}`;
    shared[name] = param;
    names.set(key, name);
  }
  each((op) => {
    if (!op.parameters) return;
    op.parameters = op.parameters.map((param: Json) => {
      const name = names.get(JSON.stringify(param));
      return name ? { $ref: `#/components/parameters/${name}` } : param;
    });
  });
  return sortedByKey(shared);
}

/**
 * The success answers become `components.responses` too, one per model, that the operations
 * reference: `<Model>` (data is the model), `<Model>List` (an array of them), `<Model>Page` (a
 * page object of them), `.unmetered` when outside the rate limits, a number after the name when
 * two operations describe the same model's answer in other words. Their schema is `ApiSuccess`
 * (`ok`, `requestId`) with that `data`. An answer of another shape (CSV, the probes) stays where
 * it is.
 */
function shareSuccessResponses(d: Json): Json {
  const shared: Json = {};
  for (const item of Object.values<Json>(d.paths ?? {}))
    for (const method of METHODS) {
      const responses: Json = item[method]?.responses ?? {};
      for (const [status, response] of Object.entries<Json>(responses)) {
        const media = response.content?.['application/json'];
        const data = media?.schema?.properties?.data;
        if (Number(status) >= 300 || !data || !media.schema.properties.requestId) continue;
        const model = (ref?: string) => ref?.replace('#/components/schemas/', '');
        let base: string | undefined;
        if (data.$ref) base = model(data.$ref);
        else if (data.type === 'array' && data.items?.$ref) base = `${model(data.items.$ref)}List`;
        else if (data.allOf?.[0]?.$ref === PAGE_SCHEMA_REF && data.allOf[1]?.properties?.data?.items?.$ref)
          base = `${model(data.allOf[1].properties.data.items.$ref)}Page`;
        if (!base) continue;
        if (!response.headers?.['RateLimit-Limit']) base += '.unmetered';
        const shape = {
          ...response,
          content: { ...response.content, 'application/json': { ...media, schema: envelopeOf(data) } },
        };
        let name = base;
        for (let n = 2; shared[name] && JSON.stringify(shared[name]) !== JSON.stringify(shape); n++)
          name = `${base}-${n}`;
        shared[name] = shape;
        responses[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  return shared;
}

/** An envelope: `ApiSuccess` (`ok`, `requestId`, `data`) and the type of this `data`. */
function envelopeOf(data: Json): Json {
  return { allOf: [{ $ref: SUCCESS_SCHEMA_REF }, { required: ['data'], properties: { data } }] };
}

/** What every success answer holds beside its `data`. */
const SUCCESS_SCHEMA: Json = {
  type: 'object',
  description: 'A success answer: `{ ok: true, requestId, data }`, `data` being the answer of the operation.',
  required: ['ok', 'requestId', 'data'],
  properties: {
    ok: { type: 'boolean', enum: [true], example: true, description: '`true` on success.' },
    requestId: {
      type: 'string',
      maxLength: 128,
      example: REQUEST_ID_EXAMPLE,
      description: 'Identifier of the request, also in the `X-Request-Id` header.',
    },
    // each response narrows it to the answer of its operation
    data: { description: 'The answer of the operation.' },
  },
};

/**
 * The tags, declared with a description in the order a reader needs them: the resources a
 * private key manages, from customers to webhooks, then the public API, the admin interface and
 * the probes. An operation under a tag not listed here fails the build, so that a new group gets
 * a description and a place.
 */
export const TAGS: ReadonlyArray<{ name: string; description: string }> = [
  {
    name: 'Customers',
    description:
      'The customers of a project: create, find, resolve by identifier, update, delete (private key).',
  },
  {
    name: 'Subscriptions',
    description: "A customer's subscription windows, live and past, per plan group.",
  },
  {
    name: 'Plans',
    description: 'The plans a customer can hold: their group, duration and quotas per feature.',
  },
  {
    name: 'Features',
    description: 'The features plans grant and meter, each with its unit and reset period.',
  },
  {
    name: 'Private: codes',
    description: 'Redeemable codes: create in batches, list, export as CSV, revoke.',
  },
  {
    name: 'Redemptions',
    description: 'Redeem a code or activate a plan for a customer, extending their subscription chain.',
  },
  {
    name: 'Entitlements',
    description:
      'What a customer may do now (entitlements, checks) and the usage they record against quotas.',
  },
  {
    name: 'Private: events',
    description: "The project's events (what changed, and when) and their deliveries to webhook endpoints.",
  },
  {
    name: 'Private: webhooks',
    description: 'Webhook endpoints: where events are delivered, signed with a secret of their own.',
  },
  {
    name: 'Private: audit log',
    description:
      "The project's audit log: who changed what, through which key and request; export and verify.",
  },
  {
    name: 'Public',
    description:
      'The public API (public key `pk_...`, optionally signed): customer login and logout, their own entitlements and usage.',
  },
  { name: 'Info', description: 'What the key in hand gives access to: its project, limits and endpoints.' },
  {
    name: 'Admin: audit log',
    description: "The operators' reads of any project's audit log, a deleted project's included.",
  },
  {
    name: 'Admin: projects and keys',
    description: "The operators' interface (`ADMIN_TOKEN`): projects and their API keys.",
  },
  { name: 'Health', description: 'Liveness and readiness probes for the platform; no credential.' },
];

function declareTags(d: Json): Json[] {
  const known = new Set(TAGS.map((tag) => tag.name));
  for (const [path, item] of Object.entries<Json>(d.paths ?? {}))
    for (const method of METHODS)
      for (const tag of item[method]?.tags ?? [])
        if (!known.has(tag))
          throw new Error(`openapi: ${method.toUpperCase()} ${path} has tag "${tag}", not declared in TAGS`);
  return TAGS.map((tag) => ({ ...tag }));
}

/** The codes an error response built by `ApiErrors` (or by this file) lists. */
function codesOf(response: Json): ErrorCode[] {
  const schema = response?.content?.['application/json']?.schema;
  if (!schema?.allOf || schema.allOf[0]?.$ref !== ERROR_SCHEMA_REF) return [];
  return (schema.allOf[1]?.properties?.error?.properties?.code?.enum ?? []) as ErrorCode[];
}

/** Walks every schema object reachable from `node`, with the name of the property it describes. */
function walkSchemas(node: unknown, visit: (schema: Json, owner: string) => void, owner = ''): void {
  if (!node || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const item of node) walkSchemas(item, visit, owner);
    return;
  }
  const schema = node as Json;
  visit(schema, owner);
  if (schema.properties)
    for (const value of Object.values(schema.properties)) walkSchemas(value, visit, owner);
  for (const key of ['items', 'allOf', 'oneOf', 'anyOf', 'not', 'additionalProperties'])
    walkSchemas(schema[key], visit, owner);
}

const INTEGER_NAMES = new Set(['id', 'page', 'pageSize', 'total', 'totalPages', 'count']);
const isIdName = (name: string) =>
  name === 'id' || (/Id$/.test(name) && name !== 'projectId' && name !== 'requestId');
const isTimestampName = (name: string) => /At$/.test(name) || name === 'validFrom' || name === 'validTo';

/** Ids and counts are PostgreSQL `integer` columns (int4): say so, with their range. */
function int4(schema: Json, minimum: number): void {
  schema.format ??= 'int32';
  schema.minimum ??= minimum;
  schema.maximum ??= MAX_INT4;
}

/** Types, formats, required lists and descriptions of the properties of one object schema. */
function fixObjectSchema(schema: Json, schemaName: string): void {
  const properties: Json | undefined = schema.properties;
  if (!properties) return;
  for (const [name, prop] of Object.entries<Json>(properties)) {
    if (prop.$ref) {
      // a description beside a $ref is ignored by OpenAPI 3.0 tools: wrap it
      const description = prop.description ?? PROPERTY_DOCS[`${schemaName}.${name}`] ?? PROPERTY_DOCS[name];
      if (description)
        properties[name] = {
          allOf: [{ $ref: prop.$ref }],
          description,
          ...(prop.nullable ? { nullable: true } : {}),
        };
      continue;
    }
    if (prop.type === 'number' && (isIdName(name) || INTEGER_NAMES.has(name))) prop.type = 'integer';
    if (prop.type === 'integer' && (isIdName(name) || INTEGER_NAMES.has(name)))
      int4(prop, isIdName(name) ? 1 : 0);
    if (prop.type === 'array' && prop.items?.type === 'number' && /Ids$/.test(name))
      prop.items.type = 'integer';
    if (prop.type === 'string' && isTimestampName(name) && !prop.format) prop.format = 'date-time';
    // a slug's pattern allows at most 64 characters: say it as a length too
    if ((name === 'slug' || name === 'feature') && prop.type === 'string' && prop.pattern)
      prop.maxLength ??= 64;
    // an integer enum (a credential's kind): a 32-bit integer within its values
    if (prop.type === 'integer' && Array.isArray(prop.enum) && prop.enum.length) {
      prop.format ??= 'int32';
      prop.minimum ??= Math.min(...(prop.enum as number[]));
      prop.maximum ??= Math.max(...(prop.enum as number[]));
    }
    // OpenAPI 3.0: a nullable enum lists `null` among its values, or `null` (its example too) is invalid
    if (prop.nullable && Array.isArray(prop.enum) && !prop.enum.includes(null)) prop.enum.push(null);
    if (!prop.description) {
      const description = PROPERTY_DOCS[`${schemaName}.${name}`] ?? PROPERTY_DOCS[name];
      if (description) prop.description = description;
    }
  }
  if (Array.isArray(schema.required)) {
    schema.required = schema.required.filter((name: string) => properties[name]?.default === undefined);
    if (schema.required.length === 0) delete schema.required;
  }
}

/** Applies the conventions to a document built by `SwaggerModule.createDocument`. */
export function applyOpenApiConventions(doc: OpenAPIObject): OpenAPIObject {
  const d = doc as Json;
  d.components ??= {};
  d.components.headers = { ...(d.components.headers ?? {}), ...HEADERS };
  const used = new Set<ErrorCode>();

  for (const [name, schema] of Object.entries<Json>(d.components.schemas ?? {}))
    walkSchemas(schema, (s) => fixObjectSchema(s, name));

  const groups: ErrorGroups = new Map();
  for (const [path, item] of Object.entries<Json>(d.paths ?? {})) {
    for (const method of METHODS) {
      const op: Json | undefined = item[method];
      if (!op) continue;
      fixOperation(path, op, used, groups, OPERATION_DOCS[`${method.toUpperCase()} ${path}`]);
    }
  }
  d.components.schemas = { ...d.components.schemas, ApiSuccess: SUCCESS_SCHEMA, Page: PAGE_SCHEMA };
  d.components.responses = sortedByKey({
    ...(d.components.responses ?? {}),
    ...errorResponses(groups),
    ...shareSuccessResponses(d),
  });
  d.components.parameters = { ...(d.components.parameters ?? {}), ...shareParameters(d) };
  d.tags = declareTags(d);
  d.components.examples = {
    ...(d.components.examples ?? {}),
    ...Object.fromEntries(
      // no summary: it would repeat the message, and the example's name is its code
      [...used].sort().map((code) => [code, { value: errorExample(code) }]),
    ),
  };
  return doc;
}

function fixOperation(path: string, op: Json, used: Set<ErrorCode>, groups: ErrorGroups, doc?: string): void {
  for (const param of op.parameters ?? []) {
    if (param.schema?.type === 'number' && (isIdName(param.name) || INTEGER_NAMES.has(param.name)))
      param.schema.type = 'integer';
    if (param.schema?.type === 'integer' && (isIdName(param.name) || INTEGER_NAMES.has(param.name)))
      int4(param.schema, isIdName(param.name) ? 1 : 0);
    if (!param.description) param.description = PROPERTY_DOCS[param.name];
    // project ids are `prj_` + 20 characters (a varchar(24) column); anything longer is not found
    if (param.name === 'projectId' && param.schema?.type === 'string') param.schema.maxLength ??= 24;
    // likewise webhook endpoint ids (`we_` + 24, varchar(27)) and event ids (`evt_` + 24, varchar(28))
    if (param.name === 'endpointId' && param.schema?.type === 'string') param.schema.maxLength ??= 27;
    if (param.name === 'eventId' && param.in === 'path' && param.schema?.type === 'string')
      param.schema.maxLength ??= 28;
    // the usage list's bounds are validated as ISO 8601 timestamps
    if ((param.name === 'from' || param.name === 'to') && param.schema?.type === 'string')
      param.schema.format ??= 'date-time';
  }
  if (op.requestBody?.content) {
    for (const media of Object.values<Json>(op.requestBody.content))
      walkSchemas(media.schema, (s) => fixObjectSchema(s, ''));
  }

  // an operation without a security requirement needs no credential (the probes): say so
  op.security ??= [];
  const api = path.startsWith('/api/');
  const limited = isRateLimited(path);
  const idempotent = (op.parameters ?? []).some(
    (p: Json) => p.in === 'header' && p.name === IDEMPOTENCY_HEADER,
  );
  const hasBody = Boolean(op.requestBody);

  // The errors every request of this kind can meet, whatever its handler.
  // (a U+0000 in the path or query is refused on every route: 400 VALIDATION_FAILED)
  const extra: ErrorCode[] = ['VALIDATION_FAILED'];
  if (api) extra.push('INTERNAL_ERROR');
  if (limited) extra.push('RATE_LIMITED');
  if (hasBody)
    extra.push('MALFORMED_JSON', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE', 'VALIDATION_FAILED');
  if (idempotent) extra.push('IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED', 'VALIDATION_FAILED');

  const byStatus = new Map<number, ErrorCode[]>();
  for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
    const codes = codesOf(response);
    if (codes.length) byStatus.set(Number(status), codes);
  }
  for (const code of extra) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const rateHeaders = limited ? ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] : [];
  const answers: string[] = [];
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const name = errorResponseName(status, limited);
    const group = groups.get(name) ?? { status, limited, codes: new Set<ErrorCode>() };
    groups.set(name, group);
    for (const code of codes) {
      group.codes.add(code);
      used.add(code);
    }
    op.responses[String(status)] = { $ref: `#/components/responses/${name}` };
    const own = [...new Set(codes)].filter((code) => !extra.includes(code)).sort();
    if (own.length) answers.push(`${status} ${own.map((code) => `\`${code}\``).join(', ')}`);
  }
  for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
    if (Number(status) >= 400) continue;
    response.headers = { ...(response.headers ?? {}), 'X-Request-Id': headerRef('X-Request-Id') };
    for (const name of rateHeaders) response.headers[name] = headerRef(name);
    // on every answer of the rate-limited API (see the error responses): one shared response per model
    if (limited) response.headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
  }
  op.responses = Object.fromEntries(
    Object.entries<Json>(op.responses).sort(([a], [b]) => a.localeCompare(b)),
  );

  // the operation's own text (operation-docs.ts); else a description written on the handler;
  // else the summary as a sentence (a test requires an entry for every served operation)
  if (doc) op.description = doc;
  else if (!op.description) op.description = op.summary ? String(op.summary).replace(/\.?$/, '.') : '';
  // the shared error response of a status lists the codes of every operation: say which are this one's
  if (answers.length) op.description += `\n\n${ERRORS_LEAD}${answers.join('; ')}.`;
}
