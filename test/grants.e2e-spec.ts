import { Clock } from '../src/common/clock';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog, clockSetter } from './support/catalog';
import { expectError, ISO_MS } from './support/expect';

const P = '/api/private/v1';
const DAY = 24 * 3_600_000;

/**
 * Grants (docs/entitlements.md): their private interface through HTTP on a real PostgreSQL:
 * create, list, read and void, statuses over time (the application's `Clock` set to the instant
 * under test), refusals and their order, tenancy, `Idempotency-Key`, dry runs and events.
 * Consumption from grants is tested with the entitlements.
 */
describe('grants', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  let clock: Clock;
  let setup: ReturnType<typeof catalog>;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);
  const NOW = new Date('2026-03-10T12:00:00.000Z');

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject();
    b = await t.createProject();
    clock = t.app.get(Clock);
    setup = catalog(t, 'grant');
  });
  afterAll(() => t.close());
  beforeEach(() => setNow(NOW));
  afterEach(() => jest.restoreAllMocks());

  const setNow = (at: string | Date) => clockSetter(clock)(at);
  const at = (ms: number) => new Date(NOW.getTime() + ms).toISOString();

  const feature = (metered = true, auth = A()) => setup.feature(auth, metered);
  const customer = (auth = A()) => setup.customer(auth);

  const grant = (customerId: number, body: Record<string, unknown>, auth = A(), query = '') =>
    t.http.post(`${P}/customers/${customerId}/grants${query}`).set(auth).send(body);
  const voidGrant = (grantId: number | string, body: Record<string, unknown> = {}, auth = A()) =>
    t.http.post(`${P}/grants/${grantId}/void`).set(auth).send(body);
  const getGrant = (grantId: number | string, auth = A()) => t.http.get(`${P}/grants/${grantId}`).set(auth);
  const list = (customerId: number, query = '', auth = A()) =>
    t.http.get(`${P}/customers/${customerId}/grants${query}`).set(auth);
  const rows = async (customerId: number) =>
    (
      await t.dataSource.query('SELECT count(*)::int AS n FROM grants WHERE customer_id = $1', [customerId])
    )[0].n as number;
  const events = async (type: string, customerId: number) => {
    const res = await t.http.get(`${P}/events?type=${type}&customerId=${customerId}`).set(A());
    expect(res.status).toBe(200);
    return res.body.data.data as Array<{ type: string; data: any }>;
  };

  describe('create', () => {
    it('answers 201 { grant } with every field of the view, defaults filled in', async () => {
      const f = await feature();
      const c = await customer();
      const res = await grant(c.id, { featureId: f.id, amount: 500 });
      expect(res.status).toBe(201);
      expect(res.body.data).toEqual({
        grant: {
          id: expect.any(Number),
          customerId: c.id,
          featureId: f.id,
          amount: 500,
          used: 0,
          remaining: 500,
          forfeited: 0,
          priority: 0,
          effectiveAt: NOW.toISOString(),
          expiresAt: null,
          status: 'active',
          reason: null,
          metadata: {},
          createdAt: NOW.toISOString(),
          voidedAt: null,
          voidReason: null,
        },
      });
    });

    it('takes the feature by slug, and every optional field as given (times normalised to UTC ms)', async () => {
      const f = await feature();
      const c = await customer();
      const res = await grant(c.id, {
        feature: f.slug,
        amount: 12.345678,
        effectiveAt: '2026-03-11T14:00:00+02:00',
        expiresAt: '2026-04-01T00:00:00Z',
        priority: -2147483648,
        reason: 'goodwill',
        metadata: { ticket: 'SUP-1', k: '' },
      });
      expect(res.status).toBe(201);
      expect(res.body.data.grant).toMatchObject({
        featureId: f.id,
        amount: 12.345678,
        remaining: 12.345678,
        effectiveAt: '2026-03-11T12:00:00.000Z',
        expiresAt: '2026-04-01T00:00:00.000Z',
        priority: -2147483648,
        status: 'scheduled',
        reason: 'goodwill',
        metadata: { ticket: 'SUP-1', k: '' },
      });
      expect(res.body.data.grant.createdAt).toMatch(ISO_MS);
    });

    it('keeps a past effectiveAt as given', async () => {
      const f = await feature();
      const c = await customer();
      const res = await grant(c.id, { featureId: f.id, amount: 1, effectiveAt: '2026-01-01T00:00:00.000Z' });
      expect(res.status).toBe(201);
      expect(res.body.data.grant).toMatchObject({
        effectiveAt: '2026-01-01T00:00:00.000Z',
        status: 'active',
      });
    });

    it('a disabled customer may receive a grant', async () => {
      const f = await feature();
      const c = await customer();
      await t.http.patch(`${P}/customers/${c.id}`).set(A()).send({ enabled: false }).expect(200);
      expect((await grant(c.id, { featureId: f.id, amount: 1 })).status).toBe(201);
    });
  });

  describe('values: 400 VALIDATION_FAILED naming the field, nothing written', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['amount 0', { amount: 0 }, 'amount'],
      ['amount negative', { amount: -1 }, 'amount'],
      ['amount 7 decimals', { amount: 1.0000001 }, 'amount'],
      ['amount above 10^12', { amount: 1_000_000_000_001 }, 'amount'],
      ['amount missing', { amount: undefined }, 'amount'],
      ['amount a string', { amount: '5' }, 'amount'],
      ['amount null', { amount: null }, 'amount'],
      ['effectiveAt without a zone', { effectiveAt: '2026-03-11T00:00:00' }, 'effectiveAt'],
      ['effectiveAt a bare date', { effectiveAt: '2026-03-11' }, 'effectiveAt'],
      ['effectiveAt not a date', { effectiveAt: '2026-02-30T00:00:00Z' }, 'effectiveAt'],
      ['effectiveAt null', { effectiveAt: null }, 'effectiveAt'],
      ['expiresAt now', { expiresAt: '2026-03-10T12:00:00.000Z' }, 'expiresAt'],
      ['expiresAt in the past', { expiresAt: '2026-03-01T00:00:00Z' }, 'expiresAt'],
      [
        'expiresAt not after effectiveAt',
        { effectiveAt: '2026-04-01T00:00:00Z', expiresAt: '2026-04-01T00:00:00Z' },
        'expiresAt',
      ],
      ['priority beyond int32', { priority: 2147483648 }, 'priority'],
      ['priority not an integer', { priority: 1.5 }, 'priority'],
      ['priority null', { priority: null }, 'priority'],
      ['reason empty', { reason: '' }, 'reason'],
      ['reason of 501 characters', { reason: 'x'.repeat(501) }, 'reason'],
      [
        'metadata of 21 keys',
        { metadata: Object.fromEntries([...Array(21).keys()].map((i) => [`k${i}`, 'v'])) },
        'metadata',
      ],
      ['metadata key of 41 characters', { metadata: { ['k'.repeat(41)]: 'v' } }, 'metadata'],
      ['metadata empty key', { metadata: { '': 'v' } }, 'metadata'],
      ['metadata value not a string', { metadata: { k: 1 } }, 'metadata'],
      ['metadata value of 501 characters', { metadata: { k: 'x'.repeat(501) } }, 'metadata'],
      ['metadata an array', { metadata: ['v'] }, 'metadata'],
      ['an unknown field', { colour: 'red' }, 'colour'],
    ];
    it.each(cases)('%s', async (_, change, field) => {
      const f = await feature();
      const c = await customer();
      const res = await grant(c.id, { featureId: f.id, amount: 10, ...change });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      expect(await rows(c.id)).toBe(0);
    });

    it('a feature both by slug and by id, or by neither, is refused', async () => {
      const f = await feature();
      const c = await customer();
      expectError(
        await grant(c.id, { featureId: f.id, feature: f.slug, amount: 1 }),
        400,
        'VALIDATION_FAILED',
      );
      expectError(await grant(c.id, { amount: 1 }), 400, 'VALIDATION_FAILED');
      expect(await rows(c.id)).toBe(0);
    });

    it('metadata at the limits is accepted: 20 keys of 40 characters, values of 500', async () => {
      const f = await feature();
      const c = await customer();
      const metadata = Object.fromEntries(
        [...Array(20).keys()].map((i) => [`${String(i).padStart(2, '0')}${'k'.repeat(38)}`, 'v'.repeat(500)]),
      );
      const res = await grant(c.id, {
        featureId: f.id,
        amount: 1_000_000_000_000,
        metadata,
        reason: 'r'.repeat(500),
      });
      expect(res.status).toBe(201);
      expect(res.body.data.grant.metadata).toEqual(metadata);
    });
  });

  describe('order of refusals', () => {
    it('body, then CUSTOMER_NOT_FOUND, then FEATURE_NOT_FOUND, then FEATURE_NOT_METERED', async () => {
      const boolean = await feature(false);
      const c = await customer();
      // a bad body wins over an unknown customer and feature
      expectError(await grant(999999, { featureId: 999999, amount: 0 }), 400, 'VALIDATION_FAILED');
      expectError(await grant(999999, { featureId: 999999, amount: 1 }), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await grant(c.id, { featureId: 999999, amount: 1 }), 404, 'FEATURE_NOT_FOUND');
      expectError(await grant(c.id, { feature: 'no-such-feature', amount: 1 }), 404, 'FEATURE_NOT_FOUND');
      expectError(await grant(c.id, { featureId: boolean.id, amount: 1 }), 400, 'FEATURE_NOT_METERED');
      expect(await rows(c.id)).toBe(0);
    });

    it('a non-positive-integer id in the path is 400 VALIDATION_FAILED', async () => {
      expectError(await grant(0 as number, { amount: 1, featureId: 1 }), 400, 'VALIDATION_FAILED');
      expectError(await getGrant('abc'), 400, 'VALIDATION_FAILED');
      expectError(await voidGrant('-1'), 400, 'VALIDATION_FAILED');
    });
  });

  describe('statuses over time, amount = used + remaining + forfeited', () => {
    it('scheduled, then active, then expired with the remainder forfeited', async () => {
      const f = await feature();
      const c = await customer();
      const created = await grant(c.id, {
        featureId: f.id,
        amount: 40,
        effectiveAt: at(DAY),
        expiresAt: at(3 * DAY),
      });
      const id = created.body.data.grant.id as number;
      expect(created.body.data.grant).toMatchObject({
        status: 'scheduled',
        used: 0,
        remaining: 40,
        forfeited: 0,
      });

      setNow(at(DAY - 1));
      expect((await getGrant(id)).body.data.status).toBe('scheduled');
      setNow(at(DAY));
      expect((await getGrant(id)).body.data).toMatchObject({ status: 'active', remaining: 40, forfeited: 0 });
      setNow(at(3 * DAY - 1));
      expect((await getGrant(id)).body.data.status).toBe('active');
      setNow(at(3 * DAY));
      expect((await getGrant(id)).body.data).toMatchObject({
        status: 'expired',
        used: 0,
        remaining: 0,
        forfeited: 40,
      });
    });

    it('exhausted when nothing remains (used written as consumes would)', async () => {
      const f = await feature();
      const c = await customer();
      const id = (await grant(c.id, { featureId: f.id, amount: 5 })).body.data.grant.id as number;
      await t.dataSource.query('UPDATE grants SET used = 2 WHERE id = $1', [id]);
      expect((await getGrant(id)).body.data).toMatchObject({
        status: 'active',
        used: 2,
        remaining: 3,
        forfeited: 0,
      });
      await t.dataSource.query('UPDATE grants SET used = 5 WHERE id = $1', [id]);
      expect((await getGrant(id)).body.data).toMatchObject({
        status: 'exhausted',
        used: 5,
        remaining: 0,
        forfeited: 0,
      });
    });
  });

  describe('void', () => {
    it('ends the grant at once, forfeits the remainder, keeps the reason; a repeat answers it unchanged', async () => {
      const f = await feature();
      const c = await customer();
      const id = (await grant(c.id, { featureId: f.id, amount: 10 })).body.data.grant.id as number;
      await t.dataSource.query('UPDATE grants SET used = 4 WHERE id = $1', [id]);
      setNow(at(1000));
      const res = await voidGrant(id, { reason: 'issued by mistake' });
      expect(res.status).toBe(200);
      expect(res.body.data.grant).toMatchObject({
        id,
        status: 'voided',
        used: 4,
        remaining: 0,
        forfeited: 6,
        voidedAt: at(1000),
        voidReason: 'issued by mistake',
      });
      setNow(at(5000));
      const again = await voidGrant(id, { reason: 'another reason' });
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual(res.body.data);
      expect((await getGrant(id)).body.data).toEqual(res.body.data.grant);
      expect(await events('grant.voided', c.id)).toHaveLength(1);
    });

    it('a scheduled grant can be voided; voidReason null when no reason is given', async () => {
      const f = await feature();
      const c = await customer();
      const id = (await grant(c.id, { featureId: f.id, amount: 10, effectiveAt: at(DAY) })).body.data.grant
        .id;
      const res = await voidGrant(id);
      expect(res.status).toBe(200);
      expect(res.body.data.grant).toMatchObject({ status: 'voided', forfeited: 10, voidReason: null });
    });

    it('an expired grant is 409 GRANT_EXPIRED; a voided one answers 200 even after its expiry', async () => {
      const f = await feature();
      const c = await customer();
      const expiring = (await grant(c.id, { featureId: f.id, amount: 10, expiresAt: at(DAY) })).body.data
        .grant.id;
      const voided = (await grant(c.id, { featureId: f.id, amount: 10, expiresAt: at(DAY) })).body.data.grant
        .id;
      expect((await voidGrant(voided)).status).toBe(200);
      setNow(at(DAY));
      expectError(await voidGrant(expiring), 409, 'GRANT_EXPIRED');
      expect((await getGrant(expiring)).body.data.voidedAt).toBeNull();
      expect((await voidGrant(voided)).body.data.grant.status).toBe('voided');
    });

    it('an unknown grant is 404 GRANT_NOT_FOUND; a bad body is refused before (400)', async () => {
      expectError(await voidGrant(999999), 404, 'GRANT_NOT_FOUND');
      expectError(await voidGrant(999999, { reason: '' }), 400, 'VALIDATION_FAILED');
    });
  });

  describe('list', () => {
    it('newest first as a page object; filters featureId and status (derived now); unknown status 400', async () => {
      const f = await feature();
      const g = await feature();
      const c = await customer();
      const ids: number[] = [];
      for (const body of [
        { featureId: f.id, amount: 1 }, // active
        { featureId: f.id, amount: 1, effectiveAt: at(DAY) }, // scheduled
        { featureId: g.id, amount: 1, expiresAt: at(DAY / 2) }, // expired at +1 day
        { featureId: f.id, amount: 2 }, // exhausted
        { featureId: g.id, amount: 1 }, // voided
      ])
        ids.push((await grant(c.id, body)).body.data.grant.id);
      await t.dataSource.query('UPDATE grants SET used = 2 WHERE id = $1', [ids[3]]);
      await voidGrant(ids[4]);
      setNow(at(DAY - 1));

      const all = await list(c.id);
      expect(all.status).toBe(200);
      expect(all.body.data).toMatchObject({ total: 5, page: 1, pageSize: 10, totalPages: 1 });
      expect(all.body.data.data.map((x: { id: number }) => x.id)).toEqual([...ids].reverse());

      const byStatus = async (status: string) =>
        (await list(c.id, `?status=${status}`)).body.data.data.map((x: { id: number }) => x.id);
      expect(await byStatus('active')).toEqual([ids[0]]);
      expect(await byStatus('scheduled')).toEqual([ids[1]]);
      expect(await byStatus('expired')).toEqual([ids[2]]);
      expect(await byStatus('exhausted')).toEqual([ids[3]]);
      expect(await byStatus('voided')).toEqual([ids[4]]);
      setNow(at(DAY));
      expect(await byStatus('active')).toEqual([ids[1], ids[0]]);
      expect(await byStatus('scheduled')).toEqual([]);

      const byFeature = await list(c.id, `?featureId=${g.id}`);
      expect(byFeature.body.data.data.map((x: { id: number }) => x.id)).toEqual([ids[4], ids[2]]);
      const page2 = await list(c.id, '?page=2&pageSize=2');
      expect(page2.body.data).toMatchObject({ total: 5, page: 2, pageSize: 2, totalPages: 3 });
      expect(page2.body.data.data.map((x: { id: number }) => x.id)).toEqual([ids[2], ids[1]]);

      expectError(await list(c.id, '?status=finished'), 400, 'VALIDATION_FAILED');
      expectError(await list(c.id, '?pageSize=101'), 400, 'VALIDATION_FAILED');
      expectError(await list(c.id, '?search=x'), 400, 'VALIDATION_FAILED');
      expectError(await list(999999), 404, 'CUSTOMER_NOT_FOUND');
    });
  });

  describe('tenancy', () => {
    it("another project's customer, feature and grant are 404, and never listed", async () => {
      const f = await feature();
      const c = await customer();
      const id = (await grant(c.id, { featureId: f.id, amount: 3 })).body.data.grant.id;
      const cb = await customer(B());
      expectError(await grant(c.id, { featureId: f.id, amount: 1 }, B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await grant(cb.id, { featureId: f.id, amount: 1 }, B()), 404, 'FEATURE_NOT_FOUND');
      expectError(await grant(cb.id, { feature: f.slug, amount: 1 }, B()), 404, 'FEATURE_NOT_FOUND');
      expectError(await list(c.id, '', B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await getGrant(id, B()), 404, 'GRANT_NOT_FOUND');
      expectError(await voidGrant(id, {}, B()), 404, 'GRANT_NOT_FOUND');
      expect((await list(cb.id, '', B())).body.data.total).toBe(0);
      expect((await getGrant(id)).body.data.status).toBe('active');
    });
  });

  describe('Idempotency-Key', () => {
    it('a create replayed with its key answers the first grant and writes one row, one event', async () => {
      const f = await feature();
      const c = await customer();
      const send = () =>
        t.http
          .post(`${P}/customers/${c.id}/grants`)
          .set({ ...A(), 'Idempotency-Key': `grant-${c.id}` })
          .send({ featureId: f.id, amount: 7 });
      const first = await send();
      const second = await send();
      expect(first.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body.data).toEqual(first.body.data);
      expect(await rows(c.id)).toBe(1);
      expect(await events('grant.created', c.id)).toHaveLength(1);
    });

    it('a void replayed with its key answers the first', async () => {
      const f = await feature();
      const c = await customer();
      const id = (await grant(c.id, { featureId: f.id, amount: 7 })).body.data.grant.id;
      const send = () =>
        t.http
          .post(`${P}/grants/${id}/void`)
          .set({ ...A(), 'Idempotency-Key': `void-${id}` })
          .send({ reason: 'x' });
      const first = await send();
      const second = await send();
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.body).toEqual(first.body);
    });
  });

  describe('dry run', () => {
    it('answers 200 { grant (id null), dryRun, entitlementsAfter }, writes nothing and records no event', async () => {
      const f = await feature();
      const c = await customer();
      const res = await grant(c.id, { featureId: f.id, amount: 9, reason: 'try' }, A(), '?dryRun=true');
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        grant: { id: null, customerId: c.id, featureId: f.id, amount: 9, status: 'active', reason: 'try' },
        dryRun: true,
      });
      const after = res.body.data.entitlementsAfter as Array<{ feature: { id: number }; buckets: any[] }>;
      expect(Array.isArray(after)).toBe(true);
      const mine = after.find((e) => e.feature.id === f.id)!;
      expect(mine).toBeDefined();
      expect(mine).toMatchObject({ granted: true });
      expect(mine.buckets).toEqual([expect.objectContaining({ source: 'grant', grantId: null, limit: 9 })]);
      expect(await rows(c.id)).toBe(0);
      expect(await events('grant.created', c.id)).toHaveLength(0);
    });

    it('refuses as the real call would', async () => {
      const boolean = await feature(false);
      const c = await customer();
      expectError(
        await grant(c.id, { featureId: boolean.id, amount: 1 }, A(), '?dryRun=true'),
        400,
        'FEATURE_NOT_METERED',
      );
      expectError(
        await grant(999999, { featureId: boolean.id, amount: 1 }, A(), '?dryRun=true'),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await grant(c.id, { featureId: boolean.id, amount: 1 }, A(), '?dryRun=yes'),
        400,
        'VALIDATION_FAILED',
      );
    });
  });

  describe('events', () => {
    it('grant.created and grant.voided once each, with the customer and the grant as the API shows it', async () => {
      const f = await feature();
      const c = await customer();
      const created = (await grant(c.id, { featureId: f.id, amount: 3, metadata: { a: 'b' } })).body.data
        .grant;
      setNow(at(60_000));
      const voided = (await voidGrant(created.id, { reason: 'done' })).body.data.grant;
      const [made] = await events('grant.created', c.id);
      expect(made.data).toEqual({
        customer: { id: c.id, username: c.username },
        customerSeq: expect.any(Number),
        grant: created,
      });
      const voids = await events('grant.voided', c.id);
      expect(voids).toHaveLength(1);
      expect(voids[0].data).toEqual({
        customer: { id: c.id, username: c.username },
        customerSeq: expect.any(Number),
        grant: voided,
      });
    });

    it('webhook endpoints and GET /events accept the six types of grants and overrides', async () => {
      const types = [
        'grant.created',
        'grant.voided',
        'grant.expired',
        'grant.exhausted',
        'override.set',
        'override.removed',
      ];
      // a URL refused on its own: the event types are judged without creating an endpoint
      const res = await t.http
        .post(`${P}/webhook-endpoints`)
        .set(A())
        .send({ url: 'not a url', eventTypes: types });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).not.toContain('eventTypes');
      for (const type of types)
        expect((await t.http.get(`${P}/events?type=${type}`).set(A())).status).toBe(200);
    });

    it('a refused call records none', async () => {
      const boolean = await feature(false);
      const c = await customer();
      await grant(c.id, { featureId: boolean.id, amount: 1 });
      expect(await events('grant.created', c.id)).toHaveLength(0);
    });
  });

  describe('deleting', () => {
    it('a feature with a grant not ended is 409 FEATURE_IN_USE; once every grant ended it goes, and they with it', async () => {
      const f = await feature();
      const c = await customer();
      const active = (await grant(c.id, { featureId: f.id, amount: 1 })).body.data.grant.id;
      const expiring = (await grant(c.id, { featureId: f.id, amount: 1, expiresAt: at(DAY) })).body.data.grant
        .id;
      const scheduled = (await grant(c.id, { featureId: f.id, amount: 1, effectiveAt: at(2 * DAY) })).body
        .data.grant.id;
      const del = () => t.http.delete(`${P}/features/${f.id}`).set(A());
      expectError(await del(), 409, 'FEATURE_IN_USE');
      await voidGrant(active);
      expectError(await del(), 409, 'FEATURE_IN_USE');
      await voidGrant(scheduled);
      expectError(await del(), 409, 'FEATURE_IN_USE');
      setNow(at(DAY));
      expect(expiring).toBeDefined();
      expect((await del()).status).toBe(200);
      expect(await rows(c.id)).toBe(0);
    });

    it("a customer's deletion deletes its grants, with no grant event", async () => {
      const f = await feature();
      const c = await customer();
      const id = (await grant(c.id, { featureId: f.id, amount: 1 })).body.data.grant.id;
      await t.http.delete(`${P}/customers/${c.id}`).set(A()).expect(200);
      expect(await rows(c.id)).toBe(0);
      expectError(await getGrant(id), 404, 'GRANT_NOT_FOUND');
      const types = (
        await t.dataSource.query('SELECT type FROM events WHERE customer_id = $1 ORDER BY customer_seq', [
          c.id,
        ])
      ).map((r: { type: string }) => r.type);
      expect(types).toEqual(['customer.created', 'grant.created', 'customer.deleted']);
    });
  });
});
