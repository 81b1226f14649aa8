import fc from 'fast-check';
import { ERROR_STATUS } from '../../src/common/errors/error-codes';
import { API_ROOTS } from '../../src/common/routes/api-prefixes';
import { inlineShared } from './openapi';

/**
 * Building blocks of the fuzz suite (test/fuzz.e2e-spec.ts): the operations of the OpenAPI
 * document, generators of hostile inputs, JSON text with tokens JSON.stringify cannot write, and
 * the check of one answer against the envelope rule.
 */

// ---------------------------------------------------------------------------------------------
// Operations, from the app's own OpenAPI document

export type Interface = 'private' | 'public' | 'admin';

export interface QueryParam {
  name: string;
  schema: Record<string, unknown>;
}

export interface Operation {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** OpenAPI template, e.g. `/api/private/v1/customers/{customerId}`. */
  template: string;
  /** `METHOD template`. */
  key: string;
  iface: Interface;
  /** Needs a customer token besides the public key. */
  customer: boolean;
  pathParams: string[];
  queryParams: QueryParam[];
  /** The resolved JSON schema of the request body, when there is one. */
  bodySchema?: Schema;
  /** Content types of the 2xx answers (`application/json`, or e.g. `text/csv` for an export). */
  successTypes: string[];
}

export type Schema = Record<string, any>;

const SKIPPED = [/^\/metrics/, /^\/healthz/, /^\/readyz/, /^\/docs/];

export function operationsOf(shared: any): Operation[] {
  // the shared parameters and responses in place: each operation's own list
  const doc = inlineShared(shared);
  const out: Operation[] = [];
  for (const [template, item] of Object.entries<any>(doc.paths ?? {})) {
    if (SKIPPED.some((re) => re.test(template))) continue;
    for (const [m, op] of Object.entries<any>(item)) {
      const method = m.toUpperCase() as Operation['method'];
      if (!['GET', 'POST', 'PATCH', 'PUT', 'DELETE'].includes(method)) continue;
      const schemes = new Set<string>((op.security ?? []).flatMap((s: object) => Object.keys(s)));
      const iface: Interface | undefined =
        schemes.has('adminToken') || template.startsWith(`${API_ROOTS.admin}/`)
          ? 'admin'
          : schemes.has('publicKey') || template.startsWith(`${API_ROOTS.public}/`)
            ? 'public'
            : schemes.has('privateKey') || template.startsWith(`${API_ROOTS.private}/`)
              ? 'private'
              : undefined;
      if (!iface) throw new Error(`Cannot tell the interface of ${method} ${template}`);
      const params: any[] = [...(item.parameters ?? []), ...(op.parameters ?? [])];
      const bodyRef = op.requestBody?.content?.['application/json']?.schema;
      const successTypes = Object.entries<any>(op.responses ?? {})
        .filter(([status]) => /^2/.test(status))
        .flatMap(([, r]) => Object.keys(r.content ?? { 'application/json': {} }));
      out.push({
        method,
        template,
        key: `${method} ${template}`,
        iface,
        customer: schemes.has('customerToken'),
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        bodySchema: bodyRef ? resolveSchema(doc, bodyRef) : undefined,
        successTypes: successTypes.length ? successTypes : ['application/json'],
      });
    }
  }
  return out;
}

/** `$ref` and single-element `allOf` replaced by what they point to, recursively. */
export function resolveSchema(doc: any, schema: Schema, depth = 0): Schema {
  if (depth > 10 || !schema) return schema ?? {};
  if (schema.$ref) {
    const name = String(schema.$ref).split('/').pop()!;
    return resolveSchema(doc, { ...doc.components.schemas[name], ...omit(schema, '$ref') }, depth + 1);
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) {
    return resolveSchema(
      doc,
      { ...omit(schema, 'allOf'), ...resolveSchema(doc, schema.allOf[0], depth + 1) },
      depth + 1,
    );
  }
  const out: Schema = { ...schema };
  if (schema.properties) {
    out.properties = Object.fromEntries(
      Object.entries<Schema>(schema.properties).map(([k, v]) => [k, resolveSchema(doc, v, depth + 1)]),
    );
  }
  if (schema.items) out.items = resolveSchema(doc, schema.items, depth + 1);
  return out;
}

const omit = (o: Schema, key: string) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));

/** A plausible body from a schema alone (examples, defaults, bounds): for operations the suite has no recipe for. */
export function exampleOf(schema: Schema): unknown {
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined && !(Array.isArray(schema.default) && schema.items)) return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  switch (schema.type) {
    case 'object':
    case undefined:
      if (!schema.properties) return {};
      return Object.fromEntries(Object.entries<Schema>(schema.properties).map(([k, v]) => [k, exampleOf(v)]));
    case 'array':
      return schema.items ? [exampleOf(schema.items)] : [];
    case 'boolean':
      return false;
    case 'number':
    case 'integer':
      return schema.minimum ?? 1;
    case 'string':
      return 'x'.repeat(Math.max(1, Number(schema.minLength ?? 1)));
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------------------------
// JSON text with raw tokens

/**
 * A value JSON.stringify cannot write (`-0`, `1e400`, a literal beyond double precision, nesting
 * 100,000 deep that would overflow the stringifier): a placeholder string, swapped for the raw
 * text after stringifying.
 */
export class Raw {
  constructor(readonly text: string) {}
  toJSON() {
    return `\u0001RAW${rawTexts.push(this.text) - 1}\u0001`;
  }
  toString() {
    return `Raw(${this.text.length > 60 ? this.text.slice(0, 60) + `...(${this.text.length} chars)` : this.text})`;
  }
}
const rawTexts: string[] = [];

/** JSON text of a value that may hold `Raw` tokens. */
export function jsonText(value: unknown): string {
  rawTexts.length = 0;
  const text = JSON.stringify(value) ?? 'null';
  return text.replace(/"\\u0001RAW(\d+)\\u0001"/g, (_, i: string) => rawTexts[Number(i)]);
}

const nested = (depth: number, open: string, leaf: string, close: string) =>
  open.repeat(depth) + leaf + close.repeat(depth);

// ---------------------------------------------------------------------------------------------
// Generators

const SPECIAL_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  '\ud83d',
  '\ufeff',
  '\u202e\u0041',
  '💩👩‍👩‍👧',
  'Ａｄａ',
  'İı',
  'ß',
  '%',
  '%00',
  '\\',
  '_%',
  "'; DROP TABLE customers; --",
  '${jndi:x}',
  '<script>',
  'null',
  'true',
  '1',
  '-1',
  '0',
  '1e3',
  '2147483648',
  'NaN',
  'P1D',
  'P0D',
  'P99999999999Y',
  'PT0.5S',
  'P1Y2M3W4DT5H6M7.8S',
  '-P1D',
  'P',
  'username',
  'email',
  'ABCD-EFGH-JKMN-PQRS',
  '7KQ2-M9XD-4TRB-C1ZP',
  '2030-01-01T00:00:00.000Z',
  '2030-02-30T00:00:00Z',
  '0000-01-01',
  '9999-12-31T23:59:59.999999999+14:00',
  '275760-09-13T00:00:00.000Z',
  '1970-01-01T00:00:00Z',
  'private',
  'public',
  'available',
  '__proto__',
  'constructor',
];

/** Long strings: just over common limits, and big. */
const longString = fc.oneof(
  fc.constantFrom(9, 17, 33, 65, 101, 129, 201, 256, 501, 2001, 10_000).map((n) => 'x'.repeat(n)),
  fc.constantFrom(65, 129, 20_000).map((n) => '\u00e9'.repeat(n)),
  fc.constantFrom(65, 129).map((n) => '😀'.repeat(n)),
  fc.constantFrom(33, 129).map((n) => '9'.repeat(n)),
  fc.constant('a'.repeat(600_000)),
);

export const stringArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.constantFrom('\ud800', '\udc00', 'a', '\u0000', 'é'), { maxLength: 8 })
      .map((a) => a.join('')),
  },
  { weight: 1, arbitrary: longString },
);

export const numberArb: fc.Arbitrary<number | Raw> = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    1,
    -1,
    0.5,
    -0.5,
    1.005,
    0.0001,
    0.00001,
    1e-7,
    2,
    10,
    100,
    101,
    10_000,
    10_001,
    2 ** 31 - 1,
    2 ** 31,
    -(2 ** 31),
    2 ** 32,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 53),
    1e15,
    1e21,
    1e300,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    999999999999.99,
    999999999999.995,
    1_000_000_000_000,
  ),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc
    .constantFrom(
      '-0',
      '1e400',
      '-1e400',
      '1e-400',
      '123456789012345678901234567890',
      '0.1e1',
      '1E2',
      '1.0',
      '-0.0',
      '5e-324',
    )
    .map((t) => new Raw(t)),
);

/** A key of a generated object: ordinary, hostile or a name of a real field. */
export const keyArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '',
    ' ',
    '\u0000',
    '\ud800',
    'id',
    'projectId',
    'username',
    'password',
    'identifiers',
    'customer',
    'type',
    'value',
    'code',
    'planId',
    'featureId',
    'quotas',
    'limit',
    'priority',
    'resetInterval',
    'slug',
    'name',
    'group',
    'duration',
    'count',
    'expiresAt',
    'note',
    'enabled',
    'kind',
    'autoCreate',
    'identifier',
    'requireSignature',
    'autoCreateCustomerAtRedemption',
    'metered',
    'unit',
    'description',
  ),
  fc.string({ maxLength: 10 }),
);

/** Very deep or very wide JSON, as raw text. */
const hugeJson: fc.Arbitrary<Raw> = fc.oneof(
  fc.constantFrom(64, 1000, 20_000, 200_000).map((d) => new Raw(nested(d, '[', '', ']'))),
  fc.constantFrom(64, 1000, 20_000, 100_000).map((d) => new Raw(nested(d, '{"a":', '1', '}'))),
  fc.constantFrom(64, 5000).map((d) => new Raw(nested(d, '{"customer":', '{}', '}'))),
  fc.constantFrom(10_000, 100_000).map((n) => new Raw('[' + Array(n).fill('0').join(',') + ']')),
  fc
    .constantFrom(5_000, 50_000)
    .map((n) => new Raw('{' + Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',') + '}')),
  fc.constant(new Raw('{"a":1,"a":2,"a":{"b":3}}')),
  fc.constant(new Raw('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}')),
);

export const scalarArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  numberArb,
  stringArb,
);

/** Any JSON value: scalars, arrays, objects (with hostile keys), nesting, huge values. */
export const jsonArb: fc.Arbitrary<unknown> = fc.letrec<{
  value: unknown;
  arr: unknown[];
  obj: Record<string, unknown>;
}>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 5 },
    { weight: 4, arbitrary: scalarArb },
    { weight: 2, arbitrary: tie('arr') },
    { weight: 3, arbitrary: tie('obj') },
  ),
  arr: fc.array(tie('value'), { maxLength: 5 }),
  obj: fc.dictionary(keyArb, tie('value'), { maxKeys: 6 }),
})).value;

export const bodyValueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: jsonArb },
  { weight: 1, arbitrary: hugeJson },
);

/** Text sent as `application/json` that is not JSON, or is JSON only in odd ways. */
export const rawTextArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '{',
    '}',
    '[',
    '{"a":',
    '{"a":1,}',
    '[1,]',
    "{'a':1}",
    '{a:1}',
    'undefined',
    'NaN',
    'Infinity',
    '-Infinity',
    '+1',
    '01',
    '.5',
    '0x10',
    '{"a":1}}',
    '{"a":1} trailing',
    '\ufeff{}',
    '\ufeff',
    '{"a":"\\x41"}',
    '{"a":"\\u12"}',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
    '"\\u0000"',
    '{"a":"\n"}',
    '{"a":1}\u0000',
    '\u0000',
    'null',
    'true',
    'false',
    '0',
    '""',
    '[]',
    '{}',
    ' ',
    '\r\n',
    '{"a":1}\n{"b":2}',
    '// comment\n{}',
    '{"a":1 /* c */}',
    '\u00ff\u00fe{\u0000}\u0000',
    '<xml/>',
    'a=1&b=2',
    '{"a":tru}',
    '{"a":nul}',
    '{"a":-}',
    '{"a":1e}',
    '{"a":"\\',
    '["\ud800"]',
  ),
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }),
  fc.constantFrom(100, 100_000).map((n) => '{'.repeat(n)),
  fc.constant('"' + 'x'.repeat(1024 * 1024 + 10) + '"'),
);

export const contentTypeArb: fc.Arbitrary<string> = fc.constantFrom(
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=xyz',
  'application/xml',
  'application/octet-stream',
  'application/jsonx',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'application/json; charset=unknown-8bit',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'application/json;;;',
  'application/json; charset="utf-8"; x=',
  '*/*',
  'json',
  ';',
  '',
);

/** Printable header values (what an HTTP client can send). */
export const headerValueArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'Bearer',
    'Bearer ',
    'Bearer  ',
    'bearer x',
    'Basic dXNlcjpwYXNz',
    'null',
    '0',
    '-1',
    'é',
    '\u00ff',
  ),
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 80 }),
  fc.constantFrom(129, 256, 4000).map((n) => 'A'.repeat(n)),
);

/** Path segment candidates (already URL-encoded where they need it). */
export const JUNK_PATH_SEGMENTS = [
  '0',
  '-1',
  '1.5',
  '1e3',
  '01',
  '+1',
  '0x10',
  ' 1',
  '1 ',
  '%201',
  'abc',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  'true',
  String(2 ** 31 - 1),
  String(2 ** 31),
  String(2 ** 32),
  String(2 ** 53),
  String(2 ** 53 + 1),
  '9'.repeat(11),
  '9'.repeat(400),
  '1'.repeat(2000),
  '%00',
  '%2F',
  '%2F..%2F',
  '%252F',
  '%25',
  '%',
  '%zz',
  '%E0%A4%A',
  '%C0%AF',
  '%FF',
  '%ED%A0%80',
  '..',
  '.',
  '%2e%2e',
  '%F0%9F%92%A9',
  encodeURIComponent('ü'),
  encodeURIComponent("'; DROP TABLE x; --"),
  '__proto__',
  'constructor',
  'prj_',
  'prj_' + 'a'.repeat(22),
  'prj_' + 'a'.repeat(300),
  'PRJ_K3V7Q2M9X4T6B8N5C1ZD',
  '1;2',
  '1,2',
  '[1]',
  '%5B1%5D',
  '{1}',
  '*',
  '~',
  '$',
  '@',
  'sk_x',
];

/** Query values, URL-encoded (or deliberately malformed). */
export const queryValueArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    '%20',
    '1',
    '0',
    '-1',
    '1.5',
    '1e3',
    '1e1',
    '0x1',
    '+5',
    '%2B5',
    '05',
    ' 1',
    '2147483647',
    '2147483648',
    '9007199254740993',
    '9'.repeat(400),
    'NaN',
    'Infinity',
    '-0',
    'true',
    'false',
    'TRUE',
    'yes',
    '1%00',
    'null',
    'undefined',
    'abc',
    '%00',
    '%zz',
    '%',
    '%E0%A4%A',
    '%ED%A0%80',
    '%FF',
    '%5B%5D',
    '[]',
    '{}',
    'a'.repeat(3000),
    '%25',
    '%5C',
    '_',
    '%25%5F',
    'available',
    'redeemed',
    'revoked',
    'expired',
    'AVAILABLE',
    encodeURIComponent('💩'),
    encodeURIComponent('ö'),
    '&',
    '=',
    '==',
    '%26',
  ),
  fc.string({ maxLength: 20 }).map(encodeURIComponent),
  fc
    .string({ unit: 'binary', maxLength: 10 })
    .map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))),
);

export const GENERIC_QUERY_NAMES = [
  'page',
  'pageSize',
  'search',
  'status',
  'history',
  'dryRun',
  'planId',
  'batchId',
  'customerId',
  'sort',
  'limit',
  'offset',
  '__proto__',
  'constructor',
  'page[]',
  'page[a]',
  'pageSize[]',
  'search[0]',
  'a[b][c]',
  '',
  '%00',
  'dryRun[]',
];

// ---------------------------------------------------------------------------------------------
// Fixed examples, tried on every operation before the random inputs

/** One value of each wrong kind, for every field of a valid body. */
export const WRONG_VALUES: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 31,
  2 ** 53,
  '',
  'a\u0000b',
  '\ud800',
  'x'.repeat(10_000),
  [],
  {},
];

export const EXAMPLE_QUERY_VALUES = [
  '',
  '%00',
  'a%00b',
  '-1',
  '0',
  '1.5',
  '1e3',
  '2147483648',
  '9'.repeat(400),
  'abc',
  '%zz',
  'a'.repeat(3000),
  'true',
  '%ED%A0%80',
];

export const EXAMPLE_PATH_SEGMENTS = [
  '0',
  '-1',
  String(2 ** 31),
  String(2 ** 53),
  'abc',
  '1e3',
  '9'.repeat(400),
  '%00',
  'prj_%00',
  '%zz',
  '%2F',
  '%ED%A0%80',
];

export const EXAMPLE_BODIES: unknown[] = [
  null,
  [],
  {},
  '',
  0,
  'a\u0000b',
  Object.defineProperty({}, '__proto__', { value: { polluted: true }, enumerable: true }),
  new Raw(nested(1500, '[', '', ']')),
  new Raw(nested(3000, '{"a":', '1', '}')),
];

// ---------------------------------------------------------------------------------------------
// Mutations of a valid body

export type Mutation =
  | { kind: 'drop'; at: number }
  | { kind: 'set'; at: number; value: unknown }
  | { kind: 'extra'; at: number; key: string; value: unknown }
  | { kind: 'wrap'; at: number; how: 'array' | 'object' | 'string' };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('set' as const),
    at: fc.nat(),
    value: fc.oneof(
      { weight: 5, arbitrary: scalarArb },
      { weight: 2, arbitrary: jsonArb },
      { weight: 1, arbitrary: hugeJson },
    ),
  }),
  fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.oneof(numberArb, longString) }),
  fc.record({ kind: fc.constant('extra' as const), at: fc.nat(), key: keyArb, value: scalarArb }),
  fc.record({
    kind: fc.constant('wrap' as const),
    at: fc.nat(),
    how: fc.constantFrom('array' as const, 'object' as const, 'string' as const),
  }),
);

type Path = (string | number)[];

/** Every position in a value, the root first (`Mutation.at` indexes this list). */
export function pathsOf(value: unknown, prefix: Path = []): Path[] {
  const out: Path[] = [prefix];
  if (value instanceof Raw || value === null || typeof value !== 'object') return out;
  for (const key of Object.keys(value))
    out.push(
      ...pathsOf((value as Record<string, unknown>)[key], [
        ...prefix,
        Array.isArray(value) ? Number(key) : key,
      ]),
    );
  return out;
}

const define = (target: any, key: string | number, value: unknown) =>
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });

/** A deep copy that keeps `Raw` tokens and own `__proto__` keys. */
export function deepCopy<T>(value: T): T {
  if (value === null || typeof value !== 'object' || value instanceof Raw) return value;
  if (Array.isArray(value)) return value.map(deepCopy) as T;
  const out = {};
  for (const key of Object.keys(value)) define(out, key, deepCopy((value as Record<string, unknown>)[key]));
  return out as T;
}

/** Applies mutations to a deep copy of `body` (own `__proto__` keys stay own keys). */
export function mutate(body: unknown, mutations: Mutation[]): unknown {
  let root: unknown = deepCopy(body);
  for (const m of mutations) {
    const paths = pathsOf(root);
    const path = paths[m.at % paths.length];
    const parent = path.slice(0, -1).reduce<any>((o, k) => o[k], root);
    const last = path[path.length - 1];
    const current = path.length ? parent[last] : root;
    const replace = (value: unknown) => {
      if (path.length === 0) root = value;
      else define(parent, last, value);
    };
    switch (m.kind) {
      case 'drop':
        if (path.length === 0) break;
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else delete parent[last];
        break;
      case 'set':
        replace(deepCopy(m.value));
        break;
      case 'extra':
        if (current && typeof current === 'object' && !(current instanceof Raw) && !Array.isArray(current))
          define(current, m.key, deepCopy(m.value));
        else if (Array.isArray(current)) current.push(deepCopy(m.value));
        else if (path.length && parent && !Array.isArray(parent)) define(parent, m.key, deepCopy(m.value));
        break;
      case 'wrap':
        replace(
          m.how === 'array'
            ? [current]
            : m.how === 'object'
              ? { value: current }
              : (JSON.stringify(current) ?? ''),
        );
        break;
    }
  }
  return root;
}

// ---------------------------------------------------------------------------------------------
// The rule

export interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface Received {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

const ERROR_KEYS = new Set(['code', 'message', 'details']);
/**
 * What an `error.details` item may hold besides `field` and `message`: the extra keys
 * `ErrorDetail` (src/common/errors/error-codes.ts) names for a few codes (`QUOTA_EXCEEDED`'s
 * `remaining` and `resetsAt`, a hold's `status`, ...).
 */
const DETAIL_EXTRA_KEYS = new Set(['remaining', 'resetsAt', 'reason', 'group', 'required', 'status']);

/** What is wrong with one answer, or `[]`. */
export function violations(op: Operation, res: Received): string[] {
  const problems: string[] = [];
  const { status } = res;
  if (status >= 500) problems.push(`status ${status} (never a 5xx)`);
  else if (!((status >= 200 && status < 300) || (status >= 400 && status < 500)))
    problems.push(`status ${status} (neither 2xx nor 4xx)`);
  const type = String(res.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  if (status >= 200 && status < 300 && type !== 'application/json') {
    if (!op.successTypes.includes(type))
      problems.push(`2xx with content type "${type}", documented: ${op.successTypes.join(', ')}`);
    return problems;
  }
  if (type !== 'application/json') return [...problems, `content type "${type}", not application/json`];
  let body: any;
  try {
    body = JSON.parse(res.text);
  } catch {
    return [...problems, 'body is not JSON'];
  }
  const header = res.headers['x-request-id'];
  const replayed = res.headers['idempotent-replayed'] === 'true';
  if (typeof body?.requestId !== 'string' || body.requestId === '')
    problems.push('requestId is not a non-empty string');
  else if (!replayed && body.requestId !== header)
    problems.push(`requestId ${body.requestId} differs from X-Request-Id ${String(header)}`);
  if (status < 300) {
    if (body?.ok !== true) problems.push('2xx without ok: true');
    return problems;
  }
  const keys = Object.keys(body ?? {})
    .sort()
    .join(',');
  if (keys !== 'error,ok,requestId')
    problems.push(`envelope keys are [${keys}], expected [error,ok,requestId]`);
  if (body?.ok !== false) problems.push('ok is not false');
  const error = body?.error;
  if (!error || typeof error !== 'object') return [...problems, 'error is not an object'];
  for (const key of Object.keys(error)) if (!ERROR_KEYS.has(key)) problems.push(`unexpected error.${key}`);
  if (typeof error.code !== 'string' || !/^[A-Z_]+$/.test(error.code))
    problems.push(`error.code ${JSON.stringify(error.code)} is not UPPER_CASE`);
  else if ((ERROR_STATUS as Record<string, number>)[error.code] !== status) {
    problems.push(
      `error.code ${error.code} has status ${(ERROR_STATUS as Record<string, number>)[error.code]} in the table, answered ${status}`,
    );
  }
  if (typeof error.message !== 'string' || error.message.trim() === '')
    problems.push('error.message is not a non-empty string');
  if (error.details !== undefined) {
    if (!Array.isArray(error.details)) problems.push('error.details is not an array');
    else
      for (const d of error.details) {
        const ok =
          d &&
          typeof d === 'object' &&
          Object.keys(d).every((k) => k === 'field' || k === 'message' || DETAIL_EXTRA_KEYS.has(k)) &&
          typeof d.field === 'string' &&
          typeof d.message === 'string' &&
          d.message !== '';
        if (!ok) {
          problems.push(
            `error.details item ${JSON.stringify(d)} is not { field, message } (and ErrorDetail's keys)`,
          );
          break;
        }
      }
  }
  return problems;
}

/** A readable account of one exchange, for a failure message (long values cut). */
export function describeExchange(sent: Sent, res: Received | undefined, serverErrors: string[]): string {
  const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}... (${s.length} chars)` : s);
  return [
    `${sent.method} ${cut(sent.url, 400)}`,
    `headers: ${cut(JSON.stringify(sent.headers), 600)}`,
    `body: ${sent.body === undefined ? '(none)' : cut(JSON.stringify(sent.body), 800)}`,
    res
      ? `answer: ${res.status} ${String(res.headers['content-type'] ?? '')} ${cut(res.text, 600)}`
      : 'answer: (none)',
    ...serverErrors.map((e) => `server logged: ${cut(e, 1500)}`),
  ].join('\n  ');
}
