import type { OpenAPIObject } from '@nestjs/swagger';
import { ERROR_HELP, ERROR_MESSAGES, ERROR_STATUS, ErrorCode } from '../errors/error-codes';
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
      '`true` when this answer is the stored answer of an earlier request with the same `Idempotency-Key`; absent otherwise.',
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

/** One error response: every code of one status, each with its meaning, and one example per code. */
export function errorResponse(codes: readonly ErrorCode[], extraHeaders: string[] = []): Json {
  const sorted = [...new Set(codes)].sort();
  const headers: Json = { 'X-Request-Id': headerRef('X-Request-Id') };
  for (const name of extraHeaders) headers[name] = headerRef(name);
  return {
    description: sorted.map((code) => `\`${code}\`: ${ERROR_HELP[code].when}`).join('\n\n'),
    headers,
    content: {
      'application/json': {
        schema: {
          allOf: [
            { $ref: ERROR_SCHEMA_REF },
            {
              type: 'object',
              properties: {
                error: {
                  allOf: [
                    { $ref: ERROR_BODY_REF },
                    {
                      type: 'object',
                      properties: { code: { type: 'string', enum: sorted, description: 'The error code.' } },
                    },
                  ],
                },
              },
            },
          ],
        },
        examples: Object.fromEntries(sorted.map((code) => [code, { $ref: `#/components/examples/${code}` }])),
      },
    },
  };
}

/** The codes an error response built by `ApiErrors` (or by this file) lists. */
function codesOf(response: Json): ErrorCode[] {
  const schema = response?.content?.['application/json']?.schema;
  if (!schema?.allOf || schema.allOf[0]?.$ref !== ERROR_SCHEMA_REF) return [];
  const error = schema.allOf[1]?.properties?.error;
  return (error?.properties?.code?.enum ?? error?.allOf?.[1]?.properties?.code?.enum ?? []) as ErrorCode[];
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
    if (name === 'slug' && prop.type === 'string' && prop.pattern) prop.maxLength ??= 64;
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

  for (const [path, item] of Object.entries<Json>(d.paths ?? {})) {
    for (const method of METHODS) {
      const op: Json | undefined = item[method];
      if (!op) continue;
      fixOperation(path, op, used, OPERATION_DOCS[`${method.toUpperCase()} ${path}`]);
    }
  }
  d.components.examples = {
    ...(d.components.examples ?? {}),
    ...Object.fromEntries(
      [...used].sort().map((code) => [code, { summary: ERROR_MESSAGES[code], value: errorExample(code) }]),
    ),
  };
  return doc;
}

function fixOperation(path: string, op: Json, used: Set<ErrorCode>, doc?: string): void {
  for (const param of op.parameters ?? []) {
    if (param.schema?.type === 'number' && (isIdName(param.name) || INTEGER_NAMES.has(param.name)))
      param.schema.type = 'integer';
    if (param.schema?.type === 'integer' && (isIdName(param.name) || INTEGER_NAMES.has(param.name)))
      int4(param.schema, isIdName(param.name) ? 1 : 0);
    if (!param.description) param.description = PROPERTY_DOCS[param.name];
    // project ids are `prj_` + 20 characters (a varchar(24) column); anything longer is not found
    if (param.name === 'projectId' && param.schema?.type === 'string') param.schema.maxLength ??= 24;
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
  for (const [status, codes] of byStatus) {
    const headers = [...rateHeaders];
    if (idempotent && status < 500 && status !== 429 && !codes.every((c) => c.startsWith('IDEMPOTENCY_')))
      headers.push('Idempotent-Replayed');
    if (status === 429) headers.push('Retry-After');
    op.responses[String(status)] = errorResponse(codes, headers);
    for (const code of codes) used.add(code);
  }
  for (const [status, response] of Object.entries<Json>(op.responses ?? {})) {
    if (Number(status) >= 400) continue;
    response.headers = { ...(response.headers ?? {}), 'X-Request-Id': headerRef('X-Request-Id') };
    for (const name of rateHeaders) response.headers[name] = headerRef(name);
    if (idempotent) response.headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
  }
  op.responses = Object.fromEntries(
    Object.entries<Json>(op.responses).sort(([a], [b]) => a.localeCompare(b)),
  );

  // the operation's own text (operation-docs.ts); else a description written on the handler;
  // else the summary as a sentence (a test requires an entry for every served operation)
  if (doc) op.description = doc;
  else if (!op.description) op.description = op.summary ? String(op.summary).replace(/\.?$/, '.') : '';
  const notes: string[] = [];
  if (idempotent)
    notes.push(
      'Idempotent: send an `Idempotency-Key` to make a retry safe; the same key with the same request replays the stored answer (`Idempotent-Replayed: true`) for 24 hours.',
    );
  if (limited)
    notes.push(
      'Rate limited per key and per client address when rate limits are on; every answer then carries `RateLimit-*` headers, and a 429 `Retry-After`.',
    );
  if (notes.length && !String(op.description).includes(notes[0]))
    op.description = [op.description, ...notes].join('\n\n');
}
