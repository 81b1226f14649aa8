import request from 'supertest';
import { runCli } from '../src/cli';
import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import { insertPlan } from './support/fixtures';

/**
 * The audit records of writes (docs/operations.md#audit-log): one per change, in the change's
 * own transaction, with who, through which request, and which audited fields from what to what.
 */
const PRIVATE = '/api/private/v1';

interface Row {
  action: string;
  resource_type: string;
  resource_id: string;
  changes: Record<string, { from: unknown; to: unknown }> | null;
  actor_type: string;
  actor_key_id: number | null;
  actor_key_prefix: string | null;
  actor_customer_id: number | null;
  request_id: string | null;
  idempotency_key: string | null;
  ip: string | null;
  at: Date;
}

describe('audit records of writes', () => {
  let t: TestApp;
  let a: TestProject;
  let pro: number;
  let seq = 0;

  const post = (path: string, body: object, headers: Record<string, string> = {}) =>
    t.http.post(`${PRIVATE}${path}`).set(bearer(a.privateKey)).set(headers).send(body);
  const patch = (path: string, body: object) =>
    t.http.patch(`${PRIVATE}${path}`).set(bearer(a.privateKey)).send(body);
  const del = (path: string) => t.http.delete(`${PRIVATE}${path}`).set(bearer(a.privateKey));
  const username = () => `audit_${String(++seq).padStart(5, '0')}`;

  /** The project's records, in the order written. */
  const records = async (filter: { type?: string; id?: string | number } = {}): Promise<Row[]> =>
    t.dataSource.query(
      `SELECT * FROM audit_events WHERE project_id = $1
          AND ($2::text IS NULL OR resource_type = $2) AND ($3::text IS NULL OR resource_id = $3)
        ORDER BY position`,
      [a.id, filter.type ?? null, filter.id === undefined ? null : String(filter.id)],
    );
  const total = async () => (await records()).length;

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'Audit A', autoCreateCustomerAtRedemption: true });
    pro = await insertPlan(t.dataSource, { projectId: a.id, name: 'Pro', value: 20, group: 'tier' });
  });
  afterAll(() => t.close());

  it('customer.created: who, which request, each field with a value; the password redacted', async () => {
    const name = username();
    const res = await post(
      '/customers',
      {
        username: name,
        password: 'correct horse battery',
        identifiers: [{ type: 'email', value: `${name}@x.io` }],
      },
      { 'X-Request-Id': 'audit-req-1', 'Idempotency-Key': 'audit-idem-1' },
    );
    expect(res.status).toBe(201);
    const [row] = await records({ type: 'customer', id: res.body.data.id });
    expect(row).toMatchObject({
      action: 'customer.created',
      actor_type: 'private_key',
      actor_key_id: a.privateKeyId,
      actor_key_prefix: a.privateKey.slice(0, 8),
      actor_customer_id: null,
      request_id: 'audit-req-1',
      idempotency_key: 'audit-idem-1',
      ip: '127.0.0.1',
    });
    expect(row.changes).toEqual({
      username: { from: null, to: name },
      enabled: { from: null, to: true },
      temporary: { from: null, to: false },
      identifiers: { from: null, to: [{ type: 'email', value: `${name}@x.io` }] },
      password: { from: null, to: '[redacted]' },
    });
    expect(JSON.stringify(row)).not.toContain('correct horse');

    // an idempotent replay records nothing more
    const before = await total();
    const again = await post(
      '/customers',
      {
        username: name,
        password: 'correct horse battery',
        identifiers: [{ type: 'email', value: `${name}@x.io` }],
      },
      { 'Idempotency-Key': 'audit-idem-1' },
    );
    expect(again.status).toBe(201);
    expect(await total()).toBe(before);
  });

  it('record ids sort in PostgreSQL in the order the records were written, a millisecond apart or more', async () => {
    const made: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await post('/customers', { username: username() }).expect(201);
      made.push(String(res.body.data.id));
      await new Promise((r) => setTimeout(r, 2));
    }
    const rows: { id: string; resource_id: string }[] = await t.dataSource.query(
      `SELECT id, resource_id FROM audit_events
        WHERE project_id = $1 AND resource_type = 'customer' AND resource_id = ANY ($2) ORDER BY id`,
      [a.id, made],
    );
    expect(rows.map((r) => r.resource_id)).toEqual(made);
    for (const r of rows) expect(r.id).toMatch(/^aud_[a-z2-7]{24}$/);
  });

  it('customer.updated tells only what changed; the same values again record nothing; delete tells what was', async () => {
    const created = await post('/customers', { username: username() });
    const id = created.body.data.id as number;
    expect((await patch(`/customers/${id}`, { enabled: false, password: 'another secret 1' })).status).toBe(
      200,
    );
    const updated = (await records({ type: 'customer', id })).filter((r) => r.action === 'customer.updated');
    expect(updated).toHaveLength(1);
    expect(updated[0].changes).toEqual({
      enabled: { from: true, to: false },
      password: { from: null, to: '[redacted]' },
    });
    const before = await total();
    expect((await patch(`/customers/${id}`, { enabled: false })).status).toBe(200);
    expect(await total()).toBe(before);

    expect((await del(`/customers/${id}`)).status).toBe(200);
    const [deleted] = (await records({ type: 'customer', id })).filter(
      (r) => r.action === 'customer.deleted',
    );
    expect(deleted.changes).toEqual({
      username: { from: created.body.data.username, to: null },
      enabled: { from: false, to: null },
      temporary: { from: false, to: null },
    });
  });

  it('a refused write and a dry run leave no record', async () => {
    const before = await total();
    expect((await post('/customers', { username: 'x' })).status).toBe(400);
    expect((await patch('/customers/999999', { enabled: false })).status).toBe(404);
    const dry = await post('/subscriptions/activate?dryRun=true', {
      customer: { type: 'username', value: username() },
      planId: pro,
      autoCreate: true,
    });
    expect(dry.status).toBe(200);
    expect(await total()).toBe(before);
  });

  it('feature and plan: created, updated (quotas by id), deleted', async () => {
    const feature = await post('/features', {
      slug: `calls-${seq}`,
      name: 'Calls',
      metered: true,
      unit: 'call',
    });
    expect(feature.status).toBe(201);
    const fid = feature.body.data.id as number;
    const plan = await post('/plans', {
      slug: `audit-plan-${seq}`,
      name: 'Audit plan',
      value: 5,
      group: `g${seq}`,
      quotas: [{ featureId: fid, limit: 100, resetInterval: 'P1M' }],
    });
    expect(plan.status).toBe(201);
    const pid = plan.body.data.id as number;
    const [fc] = await records({ type: 'feature', id: fid });
    expect(fc).toMatchObject({ action: 'feature.created' });
    expect(fc.changes).toEqual({
      slug: { from: null, to: `calls-${seq}` },
      name: { from: null, to: 'Calls' },
      metered: { from: null, to: true },
      unit: { from: null, to: 'call' },
    });
    const quota = {
      featureId: fid,
      limit: 100,
      priority: 0,
      resetInterval: 'P1M',
      resetAnchor: 'run',
      resetDayOfMonth: null,
      resetTimeZone: null,
      thresholds: [],
    };
    const [pc] = await records({ type: 'plan', id: pid });
    expect(pc.changes).toMatchObject({
      name: { from: null, to: 'Audit plan' },
      value: { from: null, to: 5 },
    });
    expect(pc.changes!.quotas).toEqual({ from: null, to: [expect.objectContaining(quota)] });

    expect(
      (await patch(`/plans/${pid}`, { quotas: [{ featureId: fid, limit: 200, resetInterval: 'P1M' }] }))
        .status,
    ).toBe(200);
    const [pu] = (await records({ type: 'plan', id: pid })).filter((r) => r.action === 'plan.updated');
    expect(Object.keys(pu.changes!)).toEqual(['quotas']);
    expect((pu.changes!.quotas.to as Array<{ limit: number }>)[0].limit).toBe(200);

    expect((await del(`/plans/${pid}`)).status).toBe(200);
    expect((await del(`/features/${fid}`)).status).toBe(200);
    expect((await records({ type: 'plan', id: pid })).map((r) => r.action)).toEqual([
      'plan.created',
      'plan.updated',
      'plan.deleted',
    ]);
    expect((await records({ type: 'feature', id: fid })).map((r) => r.action)).toEqual([
      'feature.created',
      'feature.deleted',
    ]);
  });

  it('a redemption that creates its customer: customer.created first, then code.redeemed; no code text anywhere', async () => {
    const batch = await post('/codes', { planId: pro, duration: 'P30D', count: 1, note: 'audit' });
    expect(batch.status).toBe(201);
    const [bc] = await records({ type: 'code_batch', id: batch.body.data.batchId });
    expect(bc.changes).toEqual({
      planId: { from: null, to: pro },
      duration: { from: null, to: 'P30D' },
      count: { from: null, to: 1 },
      note: { from: null, to: 'audit' },
    });
    const code = batch.body.data.codes[0] as string;
    const name = username();
    const before = (await records()).length;
    const res = await post('/redemptions', {
      code,
      customer: { type: 'username', value: name },
      autoCreate: true,
    });
    expect(res.status).toBe(200);
    const rows = (await records()).slice(before);
    expect(rows.map((r) => r.action)).toEqual(['customer.created', 'code.redeemed']);
    expect(rows[1].changes).toEqual({
      status: { from: 'available', to: 'redeemed' },
      redeemedByCustomerId: { from: null, to: res.body.data.customer.id },
    });
    expect(rows[0].at).toEqual(rows[1].at);
    const all = JSON.stringify(await records());
    expect(all).not.toContain(code.replace(/-/g, ''));
    expect(all).not.toContain(code);
  });

  it('campaign codes: created, updated, redeemed (the count), revoked', async () => {
    const made = await post('/codes', { kind: 'campaign', planId: pro, duration: 'P7D', maxRedemptions: 2 });
    expect(made.status).toBe(201);
    const id = made.body.data.id as number;
    expect((await patch(`/codes/${id}`, { note: 'spring' })).status).toBe(200);
    const r1 = await post('/redemptions', {
      code: made.body.data.code,
      customer: { type: 'username', value: username() },
      autoCreate: true,
    });
    const r2 = await post('/redemptions', {
      code: made.body.data.code,
      customer: { type: 'username', value: username() },
      autoCreate: true,
    });
    expect([r1.status, r2.status]).toEqual([200, 200]);
    const rows = await records({ type: 'code', id });
    expect(rows.map((r) => r.action)).toEqual([
      'code.created',
      'code.updated',
      'code.redeemed',
      'code.redeemed',
    ]);
    expect(rows[0].changes).toMatchObject({
      maxRedemptions: { from: null, to: 2 },
      trial: { from: null, to: false },
    });
    expect(rows[1].changes).toEqual({ note: { from: null, to: 'spring' } });
    expect(rows[2].changes).toEqual({ redemptionCount: { from: 0, to: 1 } });
    expect(rows[3].changes).toEqual({
      status: { from: 'available', to: 'exhausted' },
      redemptionCount: { from: 1, to: 2 },
    });
    expect((await post(`/codes/${id}/revoke`, {})).status).toBe(200);
    expect((await post(`/codes/${id}/revoke`, {})).status).toBe(200);
    const revoked = (await records({ type: 'code', id })).filter((r) => r.action === 'code.revoked');
    expect(revoked).toHaveLength(1);
    expect(revoked[0].changes).toEqual({ status: { from: 'exhausted', to: 'revoked' } });
  });

  it('subscription.activated names the granted window; validTo absent when permanent', async () => {
    const name = username();
    const res = await post('/subscriptions/activate', {
      customer: { type: 'username', value: name },
      planId: pro,
      autoCreate: true,
    });
    expect(res.status).toBe(200);
    const window = (
      res.body.data.subscriptions as Array<{ id: number; planId: number; validFrom: string }>
    ).find((w) => w.planId === pro)!;
    const [row] = await records({ type: 'subscription', id: window.id });
    expect(row.action).toBe('subscription.activated');
    expect(row.changes).toEqual({
      customerId: { from: null, to: res.body.data.customer.id },
      planId: { from: null, to: pro },
      validFrom: { from: null, to: window.validFrom },
    });
  });

  it('usage.recorded for each new record, usage.reversed once', async () => {
    const feature = await post('/features', { slug: `tokens-${seq}`, name: 'Tokens', metered: true });
    const fid = feature.body.data.id as number;
    const plan = await post('/plans', {
      slug: `metered-${seq}`,
      name: 'Metered',
      value: 0,
      group: `m${seq}`,
      quotas: [{ featureId: fid, limit: 10, resetInterval: 'P1M' }],
    });
    const customer = await post('/customers', { username: username() });
    const cid = customer.body.data.id as number;
    await post('/subscriptions/activate', {
      customer: { type: 'id', value: String(cid) },
      planId: plan.body.data.id,
    });
    const used = await post('/usage', { customerId: cid, featureId: fid, amount: 3, eventId: `ev-${seq}` });
    expect(used.status).toBe(201);
    const usageId = used.body.data.usage.id as number;
    const replay = await post('/usage', { customerId: cid, featureId: fid, amount: 3, eventId: `ev-${seq}` });
    expect(replay.status).toBe(200);
    const [recorded, ...rest] = await records({ type: 'usage', id: usageId });
    expect(rest).toHaveLength(0);
    expect(recorded.action).toBe('usage.recorded');
    expect(recorded.changes).toEqual({
      customerId: { from: null, to: cid },
      featureId: { from: null, to: fid },
      eventId: { from: null, to: `ev-${seq}` },
      amount: { from: null, to: 3 },
      overage: { from: null, to: 0 },
    });
    expect((await post(`/usage/${usageId}/reverse`, {})).status).toBe(200);
    expect((await post(`/usage/${usageId}/reverse`, {})).status).toBe(200);
    const reversed = (await records({ type: 'usage', id: usageId })).filter(
      (r) => r.action === 'usage.reversed',
    );
    expect(reversed).toHaveLength(1);
    expect(Object.keys(reversed[0].changes!)).toEqual(['reversedAt']);
    expect(reversed[0].changes!.reversedAt.from).toBeNull();
  });

  it('project and api_key: by the admin interface and by the CLI; no key or secret in any record', async () => {
    const own = await records({ type: 'project', id: a.id });
    expect(own[0]).toMatchObject({ action: 'project.created', actor_type: 'admin', actor_key_id: null });
    expect(own[0].changes).toEqual({
      name: { from: null, to: 'Audit A' },
      autoCreateCustomerAtRedemption: { from: null, to: true },
      requireSignature: { from: null, to: false },
      timeZone: { from: null, to: 'UTC' },
    });
    const [key] = await records({ type: 'api_key', id: a.privateKeyId });
    expect(key.action).toBe('api_key.created');
    expect(key.changes).toMatchObject({
      kind: { from: null, to: 'private' },
      prefix: { from: null, to: a.privateKey.slice(0, 8) },
      enabled: { from: null, to: true },
      scopes: { from: null, to: ['*'] },
    });
    expect(key.changes).not.toHaveProperty('expiresAt');

    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const changed = await t.http
      .patch(`/api/admin/v1/projects/${a.id}/keys/${a.publicKeyId}`)
      .set(admin)
      .send({ name: 'web app' });
    expect(changed.status).toBe(200);
    const [updated] = (await records({ type: 'api_key', id: a.publicKeyId })).filter(
      (r) => r.action === 'api_key.updated',
    );
    expect(updated).toMatchObject({ actor_type: 'admin', ip: '127.0.0.1' });
    expect(updated.changes).toEqual({ name: { from: null, to: 'web app' } });

    const io = {
      env: { ...t.env, DATABASE_URL: t.databaseUrl },
      stdout: () => undefined,
      stderr: () => undefined,
    };
    expect(
      await runCli(['projects:update', a.id, '--require-signature', 'false', '--name', 'Audit A2'], io),
    ).toBe(0);
    const [renamed] = (await records({ type: 'project', id: a.id })).filter(
      (r) => r.action === 'project.updated',
    );
    expect(renamed).toMatchObject({ actor_type: 'cli', request_id: null, ip: null, idempotency_key: null });
    expect(renamed.changes).toEqual({ name: { from: 'Audit A', to: 'Audit A2' } });

    const all = JSON.stringify(await records());
    for (const secret of [a.privateKey, a.publicKey]) expect(all).not.toContain(secret);
    const hashes: Array<{ key_hash: string }> = await t.dataSource.query(
      'SELECT key_hash FROM api_keys WHERE project_id = $1',
      [a.id],
    );
    for (const { key_hash } of hashes) expect(all).not.toContain(key_hash.trim());
  });

  it('100 concurrent writes over two replicas give exactly 100 records', async () => {
    const replica = await t.startReplica();
    const second = request(replica.getHttpServer());
    try {
      const before = await total();
      const names = Array.from({ length: 100 }, () => username());
      const results = await Promise.all(
        names.map((name, i) =>
          (i % 2 ? second : t.http)
            .post(`${PRIVATE}/customers`)
            .set(bearer(a.privateKey))
            .send({ username: name }),
        ),
      );
      expect(results.every((r) => r.status === 201)).toBe(true);
      expect((await total()) - before).toBe(100);
      // both replicas seal; the project's chain holds every record, gapless
      let verify = await t.http.get(`${PRIVATE}/audit-events/verify`).set(bearer(a.privateKey));
      for (let i = 0; i < 100 && verify.body.data.unsealed > 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        verify = await t.http.get(`${PRIVATE}/audit-events/verify`).set(bearer(a.privateKey));
      }
      expect(verify.body.data).toEqual({ valid: true, checked: await total(), unsealed: 0, brokenAt: null });
    } finally {
      await replica.close();
    }
  });
});
