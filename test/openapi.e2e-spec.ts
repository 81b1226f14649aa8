import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorResponseName, TAGS } from '../src/common/swagger/openapi-conventions';
import { OPERATION_DOCS } from '../src/common/swagger/operation-docs';
import { createTestApp, TestApp } from './support/app';
import { inlineShared } from './support/openapi';

type Json = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/**
 * The checked-in `openapi.json` (written by `npm run openapi`, diffed in CI) follows the
 * conventions of `src/common/swagger/openapi-conventions.ts` on every operation, and lists exactly
 * the operations the application serves.
 */
describe('openapi.json', () => {
  const shared: Json = JSON.parse(readFileSync(join(__dirname, '..', 'openapi.json'), 'utf8'));
  // each operation with its shared parameters and responses in place
  const doc: Json = inlineShared(shared);
  const operations = Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] as Json })),
  );
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('lists exactly the operations the application serves', async () => {
    const served = (await t.http.get('/docs-json').expect(200)).body as Json;
    const ids = (d: Json) =>
      Object.values<Json>(d.paths)
        .flatMap((item) => METHODS.filter((m) => item[m]).map((m) => item[m].operationId as string))
        .sort();
    expect(ids(doc)).toEqual(ids(served));
  });

  it('describes every operation, parameter and property', () => {
    for (const { path, method, op } of operations) {
      expect([path, method, typeof op.summary, typeof op.description]).toEqual([
        path,
        method,
        'string',
        'string',
      ]);
      for (const p of op.parameters ?? [])
        expect([path, p.name, typeof p.description]).toEqual([path, p.name, 'string']);
    }
    const undescribed: string[] = [];
    for (const [name, schema] of Object.entries<Json>(doc.components.schemas))
      for (const [prop, s] of Object.entries<Json>(schema.properties ?? {}))
        if (!s.description) undescribed.push(`${name}.${prop}`);
    expect(undescribed).toEqual([]);
  });

  it('gives every operation a description of its own, not its summary repeated', () => {
    const missing: string[] = [];
    const short: string[] = [];
    for (const { path, method, op } of operations) {
      const key = `${method.toUpperCase()} ${path}`;
      const summary = String(op.summary).replace(/\.?$/, '');
      if (!OPERATION_DOCS[key] || String(op.description).startsWith(summary)) missing.push(key);
      else expect([key, op.description.startsWith(OPERATION_DOCS[key])]).toEqual([key, true]);
      // a few sentences, not a line
      if ((OPERATION_DOCS[key] ?? '').split(/\.\s/).length < 2) short.push(key);
    }
    expect(missing).toEqual([]);
    expect(short).toEqual([]);
  });

  it('types ids as integers and timestamps as date-time, and requires no property that has a default', () => {
    for (const [name, schema] of Object.entries<Json>(doc.components.schemas)) {
      for (const [prop, s] of Object.entries<Json>(schema.properties ?? {})) {
        if (
          (prop === 'id' || /[a-z]Id$/.test(prop)) &&
          // string ids: project ids (`prj_...`), request ids, the caller's usage `eventId` and hold
          // `holdId`, webhook endpoints (`we_...`), events (`evt_...`) and audit records (`aud_...`,
          // naming any resource)
          !['projectId', 'requestId', 'eventId', 'holdId', 'endpointId'].includes(prop) &&
          !/^(Project|WebhookEndpoint|RotatedWebhookEndpoint|Event|AuditEventView|AuditBreakView)/.test(name)
        )
          expect([name, prop, s.type]).toEqual([name, prop, 'integer']);
        // (verify's `brokenAt` is where an audit chain breaks, not an instant)
        if ((/At$/.test(prop) && prop !== 'brokenAt') || prop === 'validFrom' || prop === 'validTo')
          expect([name, prop, s.format]).toEqual([name, prop, 'date-time']);
        if (s.default !== undefined) expect(schema.required ?? []).not.toContain(prop);
      }
    }
    expect(doc.components.schemas.RedeemCodeDto.required ?? []).not.toContain('autoCreate');
    expect(doc.components.schemas.GrantedSubscriptionView.properties.id.nullable).toBe(true);
    expect(doc.components.schemas.WindowChangeView.properties.id.nullable).toBe(true);
  });

  it('gives a page object a data array of items, not of arrays', () => {
    const list =
      doc.paths['/api/private/v1/customers'].get.responses['200'].content['application/json'].schema;
    expect(list.allOf[0]).toEqual({ $ref: '#/components/schemas/ApiSuccess' });
    const page = list.allOf[1].properties.data;
    expect(page.allOf[0]).toEqual({ $ref: '#/components/schemas/Page' });
    const data = page.allOf[1].properties.data;
    expect(data.type).toBe('array');
    expect(data.items).toEqual({ $ref: '#/components/schemas/CustomerListItem' });
    expect(doc.components.schemas.Page.required).toEqual(['total', 'page', 'pageSize', 'totalPages']);
  });

  /** The codes an operation's description lists as its own, by status (`Errors: 404 `A`, `B`; 409 `C`.`). */
  const ownCodes = (op: Json): Map<string, string[]> => {
    const line = /\n\nErrors: (.*)\.$/s.exec(String(op.description))?.[1] ?? '';
    return new Map(
      line
        .split('; ')
        .filter(Boolean)
        .map((part) => [part.split(' ')[0], [...part.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1])]),
    );
  };

  it('declares on each operation the error codes it can answer, each with an example of that code', () => {
    for (const { path, op } of operations) {
      const limited = /^\/api\/(private|public)\//.test(path);
      const idempotent = (op.parameters ?? []).some((p: Json) => p.name === 'Idempotency-Key');
      const codesAt = (status: string): string[] =>
        op.responses[status]?.content['application/json'].schema.allOf[1].properties.error.allOf[1].properties
          .code.enum ?? [];
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        expect(response.headers['X-Request-Id']).toBeDefined();
        if (Number(status) < 400) continue;
        const examples = response.content['application/json'].examples;
        expect(Object.keys(examples).sort()).toEqual(codesAt(status));
        for (const code of codesAt(status)) {
          expect(doc.components.examples[code].value.error.code).toBe(code);
          expect(response.description).toContain(`\`${code}\`: `);
        }
      }
      // the codes of its own are answered with the response of their status
      for (const [status, codes] of ownCodes(op)) {
        expect([path, status, codesAt(status)]).toEqual([path, status, expect.arrayContaining(codes)]);
        expect([path, status, [...codes].sort()]).toEqual([path, status, codes]);
      }
      expect(codesAt('400')).toContain('VALIDATION_FAILED');
      if (limited) {
        expect([path, codesAt('429')]).toEqual([path, expect.arrayContaining(['RATE_LIMITED'])]);
        expect(op.responses['429'].headers['Retry-After']).toBeDefined();
        const success = Object.keys(op.responses).find((status) => /^2/.test(status))!;
        expect(op.responses[success]).toMatchObject({
          headers: { 'RateLimit-Limit': expect.anything(), 'RateLimit-Remaining': expect.anything() },
        });
      }
      if (op.requestBody) {
        expect(codesAt('415')).toEqual(['UNSUPPORTED_MEDIA_TYPE']);
        expect(codesAt('400')).toEqual(expect.arrayContaining(['MALFORMED_JSON', 'VALIDATION_FAILED']));
      }
      if (idempotent) {
        expect(codesAt('422')).toEqual(['IDEMPOTENCY_KEY_REUSED']);
        expect(codesAt('409')).toContain('IDEMPOTENCY_KEY_IN_USE');
        const success = Object.keys(op.responses).find((status) => /^2/.test(status))!;
        expect(op.responses[success].headers['Idempotent-Replayed']).toBeDefined();
      }
    }
    // an operation lists its own codes; those every request of its kind can meet are said once
    const get = doc.paths['/api/private/v1/customers/{customerId}'].get;
    expect(Object.fromEntries(ownCodes(get))).toEqual({
      '401': ['API_KEY_EXPIRED', 'INVALID_API_KEY'],
      '403': ['API_KEY_DISABLED', 'INSUFFICIENT_SCOPE'],
      '404': ['CUSTOMER_NOT_FOUND', 'PROJECT_NOT_FOUND'],
    });
    const redeem = ownCodes(doc.paths['/api/private/v1/redemptions'].post);
    expect(redeem.get('400')).toContain('INVALID_SUBSCRIPTION_CHAIN');
    expect(redeem.get('403')).toEqual([
      'API_KEY_DISABLED',
      'CODE_NOT_ELIGIBLE',
      'CUSTOMER_PROJECT_MISMATCH',
      'INSUFFICIENT_SCOPE',
    ]);
    expect(redeem.get('409')).toContain('PERMANENT_TAIL_CONFLICT');
    expect(shared.info.description).toContain('`400 VALIDATION_FAILED`');
  });

  it('shares what repeats: error and success answers, headers and parameters are components', () => {
    const rawOperations = Object.entries<Json>(shared.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => ({ path, op: item[m] as Json })),
    );
    const answered = new Map<string, Set<string>>();
    for (const { path, op } of rawOperations) {
      const limited = /^\/api\/(private|public)\//.test(path);
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (Number(status) < 400) continue;
        // an error answer is the shared response of its status
        const name = String(response.$ref).replace('#/components/responses/', '');
        expect([op.operationId, status, name]).toEqual([
          op.operationId,
          status,
          errorResponseName(Number(status), limited),
        ]);
        const codes = answered.get(name) ?? new Set<string>();
        answered.set(name, codes);
        for (const code of ownCodes(op).get(status) ?? []) codes.add(code);
      }
    }
    // a shared error response lists every code an operation answers with it
    for (const [name, codes] of answered) {
      const listed: string[] =
        shared.components.responses[name].content['application/json'].schema.allOf[1].properties.error
          .allOf[1].properties.code.enum;
      for (const code of codes) expect([name, listed]).toEqual([name, expect.arrayContaining([code])]);
    }
    expect(shared.components.responses.NotFound.content['application/json'].schema.allOf[1]).toEqual({
      properties: {
        error: {
          allOf: [
            { $ref: '#/components/schemas/ApiErrorBody' },
            { properties: { code: { enum: expect.arrayContaining(['CUSTOMER_NOT_FOUND']) } } },
          ],
        },
      },
    });
    // a parameter written out in an operation is its own: no other operation declares it alike
    const inline = rawOperations.flatMap(({ op }) =>
      (op.parameters ?? []).filter((p: Json) => !p.$ref).map((p: Json) => JSON.stringify(p)),
    );
    expect(inline.filter((p, i) => inline.indexOf(p) !== i)).toEqual([]);
    for (const name of ['Idempotency-Key', 'page', 'pageSize', 'search'])
      expect(shared.components.parameters[name].name).toBe(name);
    // every header of a shared response is a reference to components.headers
    for (const response of Object.values<Json>(shared.components.responses))
      for (const header of Object.values<Json>(response.headers ?? {}))
        expect(header.$ref).toMatch(/^#\/components\/headers\//);
    const list = shared.paths['/api/private/v1/customers'].get.responses['200'];
    expect(list).toEqual({ $ref: '#/components/responses/CustomerListItemPage' });
  });

  it('declares every tag, with a description, in the order a reader needs them', () => {
    expect(shared.tags.map((tag: Json) => tag.name)).toEqual(TAGS.map((tag) => tag.name));
    expect(shared.tags.map((tag: Json) => tag.name).slice(0, 2)).toEqual(['Customers', 'Subscriptions']);
    expect(shared.tags.map((tag: Json) => tag.name).slice(-2)).toEqual([
      'Admin: projects and keys',
      'Health',
    ]);
    for (const tag of shared.tags) expect([tag.name, typeof tag.description]).toEqual([tag.name, 'string']);
    const declared = new Set(shared.tags.map((tag: Json) => tag.name));
    for (const { path, op } of operations)
      for (const tag of op.tags ?? []) expect([path, tag, declared.has(tag)]).toEqual([path, tag, true]);
  });

  it('states the security schemes as they are, and a server', () => {
    for (const scheme of Object.values<Json>(doc.components.securitySchemes))
      expect(scheme.bearerFormat).toBeUndefined();
    expect(doc.servers.length).toBeGreaterThan(0);
  });
});
