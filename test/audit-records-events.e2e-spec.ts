import { randomUUID } from 'node:crypto';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog } from './support/catalog';
import { expectError, ISO_MS } from './support/expect';
import { eventually, WebhookReceiver } from './support/webhook-receiver';

const P = '/api/private/v1';
const LOGIN = '/api/public/v1/auth/login';
const LOGOUT = '/api/public/v1/auth/logout';
const PASSWORD = 'correct horse battery';
const REDACTED = '[redacted]';

type Method = 'post' | 'patch' | 'put' | 'delete';
type AuditRecord = Record<string, any>;

/**
 * The audit records of webhook endpoints, redeliveries, grants, overrides and public logins and
 * logouts (docs/operations.md#audit-log), written through HTTP on real PostgreSQL and read back
 * through `GET /audit-events`: who (actor, request id, `Idempotency-Key`, address), which action
 * on which resource, exactly which fields from what to what; nothing for a write that changes no
 * audited field, a refused write, a dry run, an idempotent replay or a webhook test; and no secret
 * anywhere in a record.
 */
describe('audit records: webhooks, events, grants, overrides, logins', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let n = 0;
  const path = (name: string) => `/${name}-${++n}`;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await createTestApp({
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '1s,2500ms,5s',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      WEBHOOK_TIMEOUT_MS: '3000',
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
  });

  /** A write of the project's private key, with its own `X-Request-Id` and `Idempotency-Key`. */
  async function write(
    p: TestProject,
    method: Method,
    url: string,
    body?: object,
    ids = { requestId: `req-${randomUUID()}`, idempotencyKey: `idem-${randomUUID()}` },
  ) {
    const req = t.http[method](`${P}${url}`)
      .set(bearer(p.privateKey))
      .set('X-Request-Id', ids.requestId)
      .set('Idempotency-Key', ids.idempotencyKey);
    const res = await (body === undefined ? req : req.send(body));
    expect(res.headers['x-request-id']).toBe(ids.requestId);
    return Object.assign(res, { ids });
  }

  /** The project's records, newest first, filtered by `query` (every page). */
  async function audit(p: TestProject, query: Record<string, string | number> = {}): Promise<AuditRecord[]> {
    const records: AuditRecord[] = [];
    let cursor: string | null = null;
    do {
      const params: URLSearchParams = new URLSearchParams({
        ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])),
        limit: '100',
        ...(cursor ? { cursor } : {}),
      });
      const res: { status: number; body: any } = await t.http
        .get(`${P}/audit-events?${params.toString()}`)
        .set(bearer(p.privateKey));
      expect(res.status).toBe(200);
      records.push(...res.body.data.data);
      cursor = res.body.data.nextCursor;
    } while (cursor);
    return records;
  }

  const of = (p: TestProject, resourceType: string, resourceId: string | number) =>
    audit(p, { resourceType, resourceId: String(resourceId) });

  /** A record of a private key's write (`ids` the request's headers). */
  const byKey = (
    p: TestProject,
    ids: { requestId: string; idempotencyKey: string | null },
    action: string,
    resourceType: string,
    resourceId: string | number,
    changes: object | null,
  ) => ({
    id: expect.stringMatching(/^aud_[a-z2-7]{24}$/),
    at: expect.stringMatching(ISO_MS),
    projectId: p.id,
    actor: {
      type: 'private_key',
      keyId: p.privateKeyId,
      keyPrefix: p.privateKey.slice(0, 8),
      customerId: null,
    },
    action,
    resourceType,
    resourceId: String(resourceId),
    changes,
    requestId: ids.requestId,
    idempotencyKey: ids.idempotencyKey,
    ip: '127.0.0.1',
  });

  /** A record without its chain fields (sealed or not yet, whenever the sealer passes). */
  const unsealed = ({ seq, prevHash, hash, ...rest }: AuditRecord) => {
    expect([seq, prevHash, hash].every((v) => v === null) || typeof hash === 'string').toBe(true);
    return rest;
  };

  const created = (fields: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(fields).map(([k, to]) => [k, { from: null, to }]));

  describe('webhook endpoints', () => {
    it('created, updated, secret_rotated and deleted, each with exactly its changed fields; the secret named, never valued', async () => {
      const p = await t.createProject();
      const url = receiver.url(path('audited'));
      const made = await write(p, 'post', '/webhook-endpoints', {
        url,
        description: 'ops',
        eventTypes: ['code.revoked'],
      });
      expect(made.status).toBe(201);
      const ep = made.body.data as { id: string; secret: string; createdAt: string };

      const [first, ...none] = await of(p, 'webhook_endpoint', ep.id);
      expect(none).toEqual([]);
      expect(Object.keys(first).sort()).toEqual(
        [
          'action',
          'actor',
          'at',
          'changes',
          'hash',
          'id',
          'idempotencyKey',
          'ip',
          'prevHash',
          'projectId',
          'requestId',
          'resourceId',
          'resourceType',
          'seq',
        ].sort(),
      );
      expect(unsealed(first)).toEqual(
        byKey(
          p,
          made.ids,
          'webhook_endpoint.created',
          'webhook_endpoint',
          ep.id,
          created({
            url,
            description: 'ops',
            eventTypes: ['code.revoked'],
            enabled: true,
            secret: REDACTED,
          }),
        ),
      );

      // the values held: nothing changed, nothing recorded
      const same = await write(p, 'patch', `/webhook-endpoints/${ep.id}`, {
        url,
        description: 'ops',
        eventTypes: ['code.revoked'],
        enabled: true,
      });
      expect(same.status).toBe(200);
      expect(await of(p, 'webhook_endpoint', ep.id)).toHaveLength(1);

      const changed = await write(p, 'patch', `/webhook-endpoints/${ep.id}`, {
        description: 'ops team',
        eventTypes: ['code.revoked', 'customer.created'],
        enabled: false,
      });
      expect(changed.status).toBe(200);
      const [update] = await of(p, 'webhook_endpoint', ep.id);
      expect(unsealed(update)).toEqual(
        byKey(p, changed.ids, 'webhook_endpoint.updated', 'webhook_endpoint', ep.id, {
          description: { from: 'ops', to: 'ops team' },
          eventTypes: { from: ['code.revoked'], to: ['code.revoked', 'customer.created'] },
          enabled: { from: true, to: false },
        }),
      );

      // an idempotent replay runs nothing again: no second record
      const replay = await write(
        p,
        'patch',
        `/webhook-endpoints/${ep.id}`,
        { description: 'ops team', eventTypes: ['code.revoked', 'customer.created'], enabled: false },
        changed.ids,
      );
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(await of(p, 'webhook_endpoint', ep.id)).toHaveLength(2);

      // refused writes record nothing
      expectError(
        await write(p, 'patch', `/webhook-endpoints/${ep.id}`, { url: 'not a url' }),
        400,
        'VALIDATION_FAILED',
      );
      expectError(
        await write(p, 'patch', `/webhook-endpoints/${ep.id}`, { enabled: 'yes' }),
        400,
        'VALIDATION_FAILED',
      );
      expect(await of(p, 'webhook_endpoint', ep.id)).toHaveLength(2);

      const rotated = await write(p, 'post', `/webhook-endpoints/${ep.id}/rotate-secret`);
      expect(rotated.status).toBe(200);
      const newSecret = rotated.body.data.secret as string;
      expect(newSecret).toMatch(/^whsec_/);
      const [rotation] = await of(p, 'webhook_endpoint', ep.id);
      expect(unsealed(rotation)).toEqual(
        byKey(p, rotated.ids, 'webhook_endpoint.secret_rotated', 'webhook_endpoint', ep.id, {
          secret: { from: REDACTED, to: REDACTED },
        }),
      );

      const removed = await write(p, 'delete', `/webhook-endpoints/${ep.id}`);
      expect(removed.status).toBe(200);
      const records = await of(p, 'webhook_endpoint', ep.id);
      expect(records.map((r) => r.action)).toEqual([
        'webhook_endpoint.deleted',
        'webhook_endpoint.secret_rotated',
        'webhook_endpoint.updated',
        'webhook_endpoint.created',
      ]);
      expect(unsealed(records[0])).toEqual(
        byKey(p, removed.ids, 'webhook_endpoint.deleted', 'webhook_endpoint', ep.id, {
          url: { from: url, to: null },
          description: { from: 'ops team', to: null },
          eventTypes: { from: ['code.revoked', 'customer.created'], to: null },
          enabled: { from: false, to: null },
        }),
      );
      // a deleted endpoint: refused, nothing more
      expectError(await write(p, 'delete', `/webhook-endpoints/${ep.id}`), 404, 'WEBHOOK_ENDPOINT_NOT_FOUND');
      expect(await of(p, 'webhook_endpoint', ep.id)).toHaveLength(4);

      // no secret anywhere in the project's records
      const text = JSON.stringify(await audit(p));
      for (const secret of [ep.secret, newSecret])
        for (const part of [secret, secret.slice(6), secret.slice(6, 20)]) expect(text).not.toContain(part);
      expect(text).not.toContain('whsec_');
    });

    it('a webhook test records nothing', async () => {
      const p = await t.createProject();
      const made = await write(p, 'post', '/webhook-endpoints', { url: receiver.url(path('tested')) });
      expect(made.status).toBe(201);
      const test = await write(p, 'post', `/webhook-endpoints/${made.body.data.id}/test`);
      expect(test.status).toBe(200);
      expect(test.body.data.delivered).toBe(true);
      expect((await audit(p, { resourceType: 'webhook_endpoint' })).map((r) => r.action)).toEqual([
        'webhook_endpoint.created',
      ]);
      expect(await audit(p, { requestId: test.ids.requestId })).toEqual([]);
    });

    it('delivery disabling an endpoint (410 Gone) is webhook_endpoint.updated by the system, with the disable', async () => {
      const p = await t.createProject();
      const at = path('gone');
      receiver.respond(at, () => 410);
      const made = await write(p, 'post', '/webhook-endpoints', { url: receiver.url(at) });
      expect(made.status).toBe(201);
      const ep = made.body.data as { id: string };
      await t.http
        .post(`${P}/customers`)
        .set(bearer(p.privateKey))
        .send({ username: 'gone_user' })
        .expect(201);
      await eventually('the endpoint disabled', async () => {
        const data = (await t.http.get(`${P}/webhook-endpoints/${ep.id}`).set(bearer(p.privateKey))).body
          .data;
        return data.enabled === false;
      });
      // committed with the disable: there as soon as the endpoint reads disabled
      const [disabled, creation, ...none] = await of(p, 'webhook_endpoint', ep.id);
      expect(none).toEqual([]);
      expect(creation.action).toBe('webhook_endpoint.created');
      expect(unsealed(disabled)).toEqual({
        id: expect.stringMatching(/^aud_[a-z2-7]{24}$/),
        at: expect.stringMatching(ISO_MS),
        projectId: p.id,
        actor: { type: 'system', keyId: null, keyPrefix: null, customerId: null },
        action: 'webhook_endpoint.updated',
        resourceType: 'webhook_endpoint',
        resourceId: ep.id,
        changes: { enabled: { from: true, to: false } },
        requestId: null,
        idempotencyKey: null,
        ip: null,
      });
      expect(await audit(p, { actorType: 'system' })).toHaveLength(1);
    });
  });

  describe('events', () => {
    it('a redelivery is event.redelivered on the evt_ id, changes null, always; a refused one and a replay record nothing', async () => {
      const p = await t.createProject();
      const made = await write(p, 'post', '/webhook-endpoints', { url: receiver.url(path('redeliver')) });
      expect(made.status).toBe(201);
      await t.http
        .post(`${P}/customers`)
        .set(bearer(p.privateKey))
        .send({ username: 'redeliver_u' })
        .expect(201);
      const event = (await t.http.get(`${P}/events?limit=1`).set(bearer(p.privateKey)).expect(200)).body.data
        .data[0] as { id: string };
      expect(event.id).toMatch(/^evt_/);

      const redelivered = await write(p, 'post', `/events/${event.id}/redeliver`);
      expect(redelivered.status).toBe(202);
      const [record, ...none] = await of(p, 'event', event.id);
      expect(none).toEqual([]);
      expect(unsealed(record)).toEqual(
        byKey(p, redelivered.ids, 'event.redelivered', 'event', event.id, null),
      );

      const replay = await write(p, 'post', `/events/${event.id}/redeliver`, {}, redelivered.ids);
      expect(replay.status).toBe(202);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expectError(
        await write(p, 'post', `/events/${event.id}/redeliver`, {
          endpointId: 'we_aaaaaaaaaaaaaaaaaaaaaaaa',
        }),
        404,
        'WEBHOOK_ENDPOINT_NOT_FOUND',
      );
      expect(await of(p, 'event', event.id)).toHaveLength(1);

      // a second redelivery is recorded again, whatever it changes
      const again = await write(p, 'post', `/events/${event.id}/redeliver`);
      expect(again.status).toBe(202);
      expect((await of(p, 'event', event.id)).map((r) => r.requestId)).toEqual([
        again.ids.requestId,
        redelivered.ids.requestId,
      ]);
    });
  });

  describe('grants and overrides', () => {
    let p: TestProject;
    let setup: ReturnType<typeof catalog>;
    const A = () => bearer(p.privateKey);

    beforeAll(async () => {
      p = await t.createProject();
      setup = catalog(t, 'audit');
    });

    it('grant.created with every field that has a value (metadata {} included); grant.voided with voidedAt and voidReason', async () => {
      const f = await setup.feature(A());
      const c = await setup.customer(A());
      const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();

      // a dry run and a refused grant record nothing
      const dry = await write(p, 'post', `/customers/${c.id}/grants?dryRun=true`, {
        featureId: f.id,
        amount: 5,
      });
      expect(dry.status).toBe(200);
      expectError(
        await write(p, 'post', `/customers/${c.id}/grants`, { featureId: f.id, amount: -1 }),
        400,
        'VALIDATION_FAILED',
      );
      expect(await audit(p, { resourceType: 'grant' })).toEqual([]);

      const made = await write(p, 'post', `/customers/${c.id}/grants`, {
        featureId: f.id,
        amount: 500,
        expiresAt,
        reason: 'goodwill',
      });
      expect(made.status).toBe(201);
      const g = made.body.data.grant;
      const [record, ...none] = await of(p, 'grant', g.id);
      expect(none).toEqual([]);
      expect(unsealed(record)).toEqual(
        byKey(
          p,
          made.ids,
          'grant.created',
          'grant',
          g.id,
          created({
            customerId: c.id,
            featureId: f.id,
            amount: 500,
            priority: 0,
            effectiveAt: g.effectiveAt,
            expiresAt,
            reason: 'goodwill',
            metadata: {},
          }),
        ),
      );

      const withMetadata = await write(p, 'post', `/customers/${c.id}/grants`, {
        featureId: f.id,
        amount: 2.5,
        priority: 3,
        metadata: { ticket: 'T-1' },
      });
      expect(withMetadata.status).toBe(201);
      const g2 = withMetadata.body.data.grant;
      expect((await of(p, 'grant', g2.id))[0].changes).toEqual(
        created({
          customerId: c.id,
          featureId: f.id,
          amount: 2.5,
          priority: 3,
          effectiveAt: g2.effectiveAt,
          metadata: { ticket: 'T-1' },
        }),
      );

      const voided = await write(p, 'post', `/grants/${g.id}/void`, { reason: 'entered twice' });
      expect(voided.status).toBe(200);
      const voidedAt = voided.body.data.grant.voidedAt as string;
      expect(voidedAt).toMatch(ISO_MS);
      const [voidRecord] = await of(p, 'grant', g.id);
      expect(unsealed(voidRecord)).toEqual(
        byKey(p, voided.ids, 'grant.voided', 'grant', g.id, {
          voidedAt: { from: null, to: voidedAt },
          voidReason: { from: null, to: 'entered twice' },
        }),
      );

      // a void that changes nothing (already void), and an idempotent replay, record nothing
      const twice = await write(p, 'post', `/grants/${g.id}/void`, { reason: 'again' });
      expect(twice.status).toBe(200);
      const replay = await write(p, 'post', `/grants/${g.id}/void`, { reason: 'entered twice' }, voided.ids);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect((await of(p, 'grant', g.id)).map((r) => r.action)).toEqual(['grant.voided', 'grant.created']);

      // without a reason: voidedAt alone
      const bare = await write(p, 'post', `/grants/${g2.id}/void`);
      expect(bare.status).toBe(200);
      expect((await of(p, 'grant', g2.id))[0].changes).toEqual({
        voidedAt: { from: null, to: bare.body.data.grant.voidedAt },
      });
    });

    it('override.set against the one replaced (created when none), override.removed for DELETE; PUT to the values held records nothing', async () => {
      const metered = await setup.feature(A());
      const flag = await setup.feature(A(), false);
      const c = await setup.customer(A());
      const id = (featureId: number) => `${c.id}:${featureId}`;

      // metered, none before: each field that has a value, from null
      const dry = await write(p, 'put', `/customers/${c.id}/overrides/${metered.id}?dryRun=true`, {
        mode: 'set',
        limit: 100,
      });
      expect(dry.status).toBe(200);
      expect(await of(p, 'override', id(metered.id))).toEqual([]);
      const set = await write(p, 'put', `/customers/${c.id}/overrides/${metered.id}`, {
        mode: 'set',
        limit: 100,
        reason: 'pilot',
      });
      expect(set.status).toBe(200);
      const o = set.body.data.override;
      const [first, ...none] = await of(p, 'override', id(metered.id));
      expect(none).toEqual([]);
      expect(unsealed(first)).toEqual(
        byKey(
          p,
          set.ids,
          'override.set',
          'override',
          id(metered.id),
          created({
            mode: 'set',
            limit: 100,
            priority: 0,
            resetAnchor: 'run',
            anchor: o.anchor,
            reason: 'pilot',
          }),
        ),
      );

      // boolean: deny, the same deny again (nothing), then set with a reason (against the deny)
      const deny = await write(p, 'put', `/customers/${c.id}/overrides/${flag.id}`, { mode: 'deny' });
      expect(deny.status).toBe(200);
      expect((await of(p, 'override', id(flag.id)))[0].changes).toEqual(created({ mode: 'deny' }));
      const denyAgain = await write(p, 'put', `/customers/${c.id}/overrides/${flag.id}`, { mode: 'deny' });
      expect(denyAgain.status).toBe(200);
      expect(await of(p, 'override', id(flag.id))).toHaveLength(1);
      expectError(
        await write(p, 'put', `/customers/${c.id}/overrides/${flag.id}`, { mode: 'set', limit: 5 }),
        400,
        'VALIDATION_FAILED',
      );
      expect(await of(p, 'override', id(flag.id))).toHaveLength(1);
      const allow = await write(p, 'put', `/customers/${c.id}/overrides/${flag.id}`, {
        mode: 'set',
        reason: 'beta',
      });
      expect(allow.status).toBe(200);
      const [replaced] = await of(p, 'override', id(flag.id));
      expect(unsealed(replaced)).toEqual(
        byKey(p, allow.ids, 'override.set', 'override', id(flag.id), {
          mode: { from: 'deny', to: 'set' },
          reason: { from: null, to: 'beta' },
        }),
      );

      // DELETE: each field that had a value, to null; a dry run and a second DELETE record nothing
      const dryRemove = await write(p, 'delete', `/customers/${c.id}/overrides/${metered.id}?dryRun=true`);
      expect(dryRemove.status).toBe(200);
      const removed = await write(p, 'delete', `/customers/${c.id}/overrides/${metered.id}`);
      expect(removed.status).toBe(200);
      expectError(
        await write(p, 'delete', `/customers/${c.id}/overrides/${metered.id}`),
        404,
        'OVERRIDE_NOT_FOUND',
      );
      const records = await of(p, 'override', id(metered.id));
      expect(records.map((r) => r.action)).toEqual(['override.removed', 'override.set']);
      expect(unsealed(records[0])).toEqual(
        byKey(p, removed.ids, 'override.removed', 'override', id(metered.id), {
          mode: { from: 'set', to: null },
          limit: { from: 100, to: null },
          priority: { from: 0, to: null },
          resetAnchor: { from: 'run', to: null },
          anchor: { from: o.anchor, to: null },
          reason: { from: 'pilot', to: null },
        }),
      );
    });

    it('the grants and overrides a customer deletion takes along record nothing', async () => {
      const f = await setup.feature(A());
      const c = await setup.customer(A());
      const g = await write(p, 'post', `/customers/${c.id}/grants`, { featureId: f.id, amount: 10 });
      expect(g.status).toBe(201);
      const o = await write(p, 'put', `/customers/${c.id}/overrides/${f.id}`, { mode: 'deny' });
      expect(o.status).toBe(200);
      const deleted = await write(p, 'delete', `/customers/${c.id}`);
      expect(deleted.status).toBe(200);
      const ofDeletion = await audit(p, { requestId: deleted.ids.requestId });
      expect(ofDeletion.filter((r) => r.resourceType !== 'customer')).toEqual([]);
      expect(await of(p, 'grant', g.body.data.grant.id)).toHaveLength(1);
      expect(await of(p, 'override', `${c.id}:${f.id}`)).toHaveLength(1);
    });
  });

  describe('public login and logout', () => {
    it('customer.logged_in and customer.logged_out by the public key, naming the customer; failed logins record nothing; no password or token', async () => {
      const p = await t.createProject();
      const username = 'audit_login_1';
      const customerId = (
        await t.http
          .post(`${P}/customers`)
          .set(bearer(p.privateKey))
          .send({ username, password: PASSWORD })
          .expect(201)
      ).body.data.id as number;
      const login = (password: string, requestId: string) =>
        t.http
          .post(LOGIN)
          .set('X-Service-Key', p.publicKey)
          .set('X-Request-Id', requestId)
          .send({ identifier: { type: 'username', value: username }, password });
      const sessions = () => audit(p, { resourceType: 'customer', resourceId: String(customerId) });
      const before = (await sessions()).length;

      expectError(await login('wrong password!', 'login-failed'), 401, 'INVALID_CREDENTIALS');
      expect(await sessions()).toHaveLength(before);

      const ok = await login(PASSWORD, 'login-ok');
      expect(ok.status).toBe(200);
      const token = ok.body.data.token as string;
      const actor = {
        type: 'public_key',
        keyId: p.publicKeyId,
        keyPrefix: p.publicKey.slice(0, 8),
        customerId,
      };
      const [loggedIn] = await audit(p, { action: 'customer.logged_in' });
      expect(unsealed(loggedIn)).toEqual({
        id: expect.stringMatching(/^aud_[a-z2-7]{24}$/),
        at: expect.stringMatching(ISO_MS),
        projectId: p.id,
        actor,
        action: 'customer.logged_in',
        resourceType: 'customer',
        resourceId: String(customerId),
        changes: null,
        requestId: 'login-ok',
        idempotencyKey: null,
        ip: '127.0.0.1',
      });

      const out = await t.http
        .post(LOGOUT)
        .set('X-Service-Key', p.publicKey)
        .set('Authorization', `Bearer ${token}`)
        .set('X-Request-Id', 'logout-ok')
        .set('Idempotency-Key', 'logout-key');
      expect(out.status).toBe(200);
      const [loggedOut] = await sessions();
      expect(unsealed(loggedOut)).toEqual({
        ...unsealed(loggedIn),
        id: expect.stringMatching(/^aud_[a-z2-7]{24}$/),
        at: expect.stringMatching(ISO_MS),
        action: 'customer.logged_out',
        requestId: 'logout-ok',
        idempotencyKey: 'logout-key',
      });
      expect(loggedOut.id).not.toBe(loggedIn.id);

      // the token is gone: a second logout is refused and records nothing
      const refused = await t.http
        .post(LOGOUT)
        .set('X-Service-Key', p.publicKey)
        .set('Authorization', `Bearer ${token}`);
      expectError(refused, 401, 'INVALID_CUSTOMER_TOKEN');
      expect(await sessions()).toHaveLength(before + 2);

      const text = JSON.stringify(await audit(p));
      for (const secret of [PASSWORD, token, p.publicKey, p.privateKey]) expect(text).not.toContain(secret);
    });
  });
});
