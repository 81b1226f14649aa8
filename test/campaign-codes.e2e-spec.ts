import request from 'supertest';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError, ISO_MS } from './support/expect';
import { insertPlan as insertPlanRow } from './support/fixtures';

/** Campaign codes (docs/api-guide.md#campaign-codes): one code for many customers under a cap. */
const PRIVATE = '/api/private/v1';
const GENERATED = /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;
const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

describe('campaign codes', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  let pro: number;
  let basic: number;
  let addon: number;
  let planB: number;
  let seq = 0;

  const insertPlan = (projectId: string, name: string, value: number, group: string) =>
    insertPlanRow(t.dataSource, { projectId, name, value, group });
  const post = (path: string, body: object, p: TestProject = a) =>
    t.http.post(`${PRIVATE}${path}`).set(bearer(p.privateKey)).send(body);
  const patch = (path: string, body: object, p: TestProject = a) =>
    t.http.patch(`${PRIVATE}${path}`).set(bearer(p.privateKey)).send(body);
  const get = (path: string, p: TestProject = a) => t.http.get(`${PRIVATE}${path}`).set(bearer(p.privateKey));
  const campaign = (body: object, p: TestProject = a) => post('/codes', { kind: 'campaign', ...body }, p);
  const newCampaign = async (body: object, p: TestProject = a) => {
    const res = await campaign({ planId: pro, duration: 'P30D', ...body }, p);
    expect(res.status).toBe(201);
    return res.body.data;
  };
  const username = () => `camp_${String(++seq).padStart(6, '0')}`;
  const redeem = (code: string, user: string, extra: object = {}, query = '') =>
    post(`/redemptions${query}`, {
      code,
      customer: { type: 'username', value: user },
      autoCreate: true,
      ...extra,
    });
  const newCustomer = async () => {
    const name = username();
    const res = await post('/customers', { username: name });
    expect(res.status).toBe(201);
    return { id: res.body.data.id as number, username: name };
  };
  const count = async (sql: string, params: unknown[]) =>
    (await t.dataSource.query(sql, params))[0].n as number;
  const events = (projectId: string, type: string) =>
    count(`SELECT count(*)::int AS n FROM events WHERE project_id = $1 AND type = $2`, [projectId, type]);
  const codeRows = () => count(`SELECT count(*)::int AS n FROM codes`, []);

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'Campaigns A', autoCreateCustomerAtRedemption: true });
    b = await t.createProject({ name: 'Campaigns B', autoCreateCustomerAtRedemption: true });
    await insertPlan(a.id, 'Free', 0, 'tier');
    basic = await insertPlan(a.id, 'Basic', 10, 'tier');
    pro = await insertPlan(a.id, 'Pro', 20, 'tier');
    addon = await insertPlan(a.id, 'Addon', 5, 'addon');
    planB = await insertPlan(b.id, 'Pro of B', 20, 'tier');
  }, 30_000);
  afterAll(() => t.close());

  describe('creating', () => {
    it('answers 201 with the code, its string in upper case, and the defaults', async () => {
      const startsAt = inDays(-1);
      const expiresAt = inDays(60);
      const res = await campaign({
        code: 'launch-50',
        planId: pro,
        duration: 'P30D',
        maxRedemptions: 100,
        startsAt,
        expiresAt,
        eligibility: { notIfHeldPlanGroups: ['addon', 'vip', 'addon'] },
        note: 'Launch week',
      }).expect(201);
      expect(res.body.data).toEqual({
        id: expect.any(Number),
        kind: 'campaign',
        code: 'LAUNCH-50',
        planId: pro,
        planName: 'Pro',
        duration: 'P30D',
        permanent: false,
        trial: false,
        status: 'available',
        batchId: null,
        note: 'Launch week',
        startsAt,
        expiresAt,
        maxRedemptions: 100,
        perCustomerLimit: 1,
        eligibility: { newCustomersOnly: false, notIfHeldPlanGroups: ['addon', 'vip'] },
        redemptionCount: 0,
        remainingRedemptions: 100,
        redeemedAt: null,
        redeemedByCustomerId: null,
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });
      const again = await get(`/codes/${res.body.data.id}`).expect(200);
      expect(again.body.data).toEqual(res.body.data);
    });

    it('generates XXXX-XXXX-XXXX when the code is absent or null; a date means UTC midnight', async () => {
      const absent = await newCampaign({ expiresAt: '2099-01-01' });
      const nulled = await newCampaign({ code: null, duration: null });
      expect(absent.code).toMatch(GENERATED);
      expect(nulled.code).toMatch(GENERATED);
      expect(absent.expiresAt).toBe('2099-01-01T00:00:00.000Z');
      expect(nulled).toMatchObject({
        permanent: true,
        duration: null,
        maxRedemptions: null,
        remainingRedemptions: null,
      });
    });

    it('one namespace per project: the same key is 409 CODE_TAKEN, another project may use it', async () => {
      await newCampaign({ code: 'SPRING-SALE' });
      for (const code of ['spring-sa1e', 'SPRINGSALE', 'spr1ng-sale'])
        expectError(await campaign({ code, planId: pro }), 409, 'CODE_TAKEN');
      expect((await newCampaign({ code: 'spring-sale', planId: planB }, b)).code).toBe('SPRING-SALE');
      const batch = (await post('/codes', { planId: basic }).expect(201)).body.data;
      expectError(await campaign({ code: batch.codes[0], planId: pro }), 409, 'CODE_TAKEN');
      expectError(await campaign({ code: batch.codes[0].toLowerCase(), planId: pro }), 409, 'CODE_TAKEN');
    });

    it('a revoked or expired code frees its key; an exhausted one keeps it', async () => {
      const first = await newCampaign({ code: 'FREED-1' });
      await post(`/codes/${first.id}/revoke`, {}).expect(200);
      await newCampaign({ code: 'freed-1' });
      const expired = await newCampaign({ code: 'FREED-2' });
      await t.dataSource.query(`UPDATE codes SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        expired.id,
      ]);
      await newCampaign({ code: 'FREED-2' });
      const full = await newCampaign({ code: 'KEPT-1', maxRedemptions: 1 });
      await redeem(full.code, username()).expect(200);
      expectError(await campaign({ code: 'KEPT-1', planId: pro }), 409, 'CODE_TAKEN');
    });

    it('bad input is 400 VALIDATION_FAILED naming the field and writes nothing', async () => {
      const before = await codeRows();
      const cases: Array<[object, string]> = [
        [{ kind: 'coupon', planId: pro }, 'kind'],
        [{ planId: pro, code: 'ab' }, 'code'],
        [{ planId: pro, code: 'a--b' }, 'code'],
        [{ planId: pro, code: 'x'.repeat(33) }, 'code'],
        [{ planId: pro, code: 'no spaces' }, 'code'],
        [{ planId: pro, count: 2 }, 'count'],
        [{ planId: pro, maxRedemptions: 0 }, 'maxRedemptions'],
        [{ planId: pro, maxRedemptions: 2_147_483_648 }, 'maxRedemptions'],
        [{ planId: pro, perCustomerLimit: 1001 }, 'perCustomerLimit'],
        [{ planId: pro, perCustomerLimit: null }, 'perCustomerLimit'],
        [{ planId: pro, startsAt: '2030-01-01T00:00:00' }, 'startsAt'],
        [{ planId: pro, expiresAt: inDays(-1) }, 'expiresAt'],
        [{ planId: pro, startsAt: inDays(10), expiresAt: inDays(5) }, 'expiresAt'],
        [
          {
            planId: pro,
            eligibility: { notIfHeldPlanGroups: Array.from({ length: 21 }, (_, i) => `g${i}`) },
          },
          'eligibility.notIfHeldPlanGroups',
        ],
        [{ planId: pro, eligibility: { notIfHeldPlanGroups: [''] } }, 'eligibility.notIfHeldPlanGroups'],
        [{ planId: pro, note: 'n'.repeat(501) }, 'note'],
        [{ planId: pro, trial: true, duration: null }, 'duration'],
      ];
      for (const [body, field] of cases) {
        const res = await campaign(body);
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      }
      // campaign fields in a batch are unknown fields
      for (const field of ['maxRedemptions', 'perCustomerLimit', 'startsAt', 'eligibility', 'trial']) {
        const res = await post('/codes', {
          planId: pro,
          [field]: field === 'eligibility' ? {} : field === 'trial' ? false : 1,
        });
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details).toContainEqual({ field, message: `${field} is not a known field` });
      }
      for (const field of ['code', 'maxRedemptions', 'startsAt']) {
        const res = await post('/codes', { planId: pro, [field]: null });
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details).toContainEqual({ field, message: `${field} is not a known field` });
      }
      expectError(await campaign({ planId: 999_999 }), 404, 'PLAN_NOT_FOUND');
      const free = (
        await t.dataSource.query(`SELECT id FROM plans WHERE project_id = $1 AND value = 0`, [a.id])
      )[0].id;
      const trialOfFree = await campaign({ planId: free, trial: true, duration: 'P7D' });
      expectError(trialOfFree, 400, 'VALIDATION_FAILED');
      expect(trialOfFree.body.error.details[0].field).toBe('planId');
      expect(await codeRows()).toBe(before);
    });
  });

  describe('redeeming', () => {
    it('through the private routes: the answer adds campaign; code.redeemed is told; the record is kept', async () => {
      const code = await newCampaign({ code: 'WELCOME-10', maxRedemptions: 10, perCustomerLimit: 2 });
      const user = username();
      const first = await redeem('welcome10', user).expect(200);
      expect(first.body.data.campaign).toEqual({
        codeId: code.id,
        code: 'WELCOME-10',
        trial: false,
        redemptionCount: 1,
        maxRedemptions: 10,
        remainingRedemptions: 9,
        customerRedemptions: 1,
        perCustomerLimit: 2,
      });
      const second = await post('/codes/redeem', {
        code: 'we1come-1o',
        customer: { type: 'username', value: user },
      }).expect(200);
      expect(second.body.data.campaign).toMatchObject({ redemptionCount: 2, customerRedemptions: 2 });
      expectError(await redeem('WELCOME-10', user), 409, 'CODE_CUSTOMER_LIMIT_REACHED');

      const view = (await get(`/codes/${code.id}`).expect(200)).body.data;
      expect(view).toMatchObject({ redemptionCount: 2, remainingRedemptions: 8, status: 'available' });
      const windows = await t.dataSource.query(
        `SELECT id, source, code_id FROM subscriptions WHERE code_id = $1 ORDER BY id`,
        [code.id],
      );
      expect(windows).toHaveLength(2);
      expect(windows.every((w: { source: string }) => w.source === 'code')).toBe(true);

      const page = (await get(`/codes/${code.id}/redemptions`).expect(200)).body.data;
      expect(page).toMatchObject({ page: 1, pageSize: 10, total: 2, totalPages: 1 });
      expect(page.data[0]).toEqual({
        id: expect.any(Number),
        codeId: code.id,
        customer: { id: first.body.data.customer.id, username: user },
        redeemedAt: expect.stringMatching(ISO_MS),
        windows: [expect.objectContaining({ id: second.body.data.subscriptions[0].id, planId: pro })],
      });
      expect(page.data[1].windows[0].id).toBe(first.body.data.subscriptions[0].id);
      const events = await t.dataSource.query(
        `SELECT data FROM events WHERE project_id = $1 AND type = 'code.redeemed' AND data->'code'->>'id' = $2 ORDER BY id`,
        [a.id, String(code.id)],
      );
      expect(events.map((e: { data: any }) => e.data.code.redemptionCount).sort()).toEqual([1, 2]);
    });

    it('the lookup: the code holding the key, else the newest with it', async () => {
      const old = await newCampaign({ code: 'LOOKUP-1', duration: 'P1D' });
      await post(`/codes/${old.id}/revoke`, {}).expect(200);
      expectError(await redeem('LOOKUP-1', username()), 409, 'CODE_REVOKED');
      const fresh = await newCampaign({ code: 'LOOKUP-1', duration: 'P2D' });
      const res = await redeem('lookup1', username()).expect(200);
      expect(res.body.data.campaign.codeId).toBe(fresh.id);
      expectError(await redeem('NO-SUCH-CODE', username()), 404, 'CODE_NOT_FOUND');
    });

    it('a dry run answers the same and counts nothing; a dry run at the cap is CODE_EXHAUSTED', async () => {
      const code = await newCampaign({ maxRedemptions: 1 });
      const dry = await redeem(code.code, username(), {}, '?dryRun=true').expect(200);
      expect(dry.body.data.dryRun).toBe(true);
      expect(dry.body.data.campaign).toMatchObject({
        redemptionCount: 1,
        remainingRedemptions: 0,
        customerRedemptions: 1,
      });
      expect((await get(`/codes/${code.id}`)).body.data.redemptionCount).toBe(0);
      expect((await get(`/codes/${code.id}/redemptions`)).body.data.total).toBe(0);
      await redeem(code.code, username()).expect(200);
      expectError(await redeem(code.code, username(), {}, '?dryRun=true'), 409, 'CODE_EXHAUSTED');
    });

    it('an Idempotency-Key replay counts nothing', async () => {
      const code = await newCampaign({ maxRedemptions: 5 });
      const body = { code: code.code, customer: { type: 'username', value: username() }, autoCreate: true };
      const key = `idem-${Date.now()}`;
      const first = await post('/redemptions', body).set('Idempotency-Key', key).expect(200);
      const replay = await post('/redemptions', body).set('Idempotency-Key', key).expect(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.data).toEqual(first.body.data);
      expect((await get(`/codes/${code.id}`)).body.data.redemptionCount).toBe(1);
      expect(
        await count(`SELECT count(*)::int AS n FROM code_redemptions WHERE code_id = $1`, [code.id]),
      ).toBe(1);
    });

    it('exactly M of N concurrent redeemers win across two replicas; the count never passes M', async () => {
      const M = 5;
      const N = 16;
      const code = await newCampaign({ maxRedemptions: M, duration: 'P7D' });
      const replica = await t.startReplica();
      try {
        const other = request(replica.getHttpServer());
        const answers = await Promise.all(
          Array.from({ length: N }, (_, i) =>
            (i % 2 ? other : t.http)
              .post(`${PRIVATE}/redemptions`)
              .set(bearer(a.privateKey))
              .send({ code: code.code, customer: { type: 'username', value: username() }, autoCreate: true }),
          ),
        );
        const won = answers.filter((r) => r.status === 200);
        const lost = answers.filter((r) => r.status !== 200);
        expect(won).toHaveLength(M);
        for (const r of lost) expectError(r, 409, 'CODE_EXHAUSTED');
        expect(won.map((r) => r.body.data.campaign.redemptionCount).sort((x, y) => x - y)).toEqual([
          1, 2, 3, 4, 5,
        ]);
        const [row] = await t.dataSource.query(`SELECT redemption_count FROM codes WHERE id = $1`, [code.id]);
        expect(row.redemption_count).toBe(M);
        expect(
          await count(`SELECT count(*)::int AS n FROM code_redemptions WHERE code_id = $1`, [code.id]),
        ).toBe(M);
        expect(
          await count(`SELECT count(*)::int AS n FROM subscriptions WHERE code_id = $1`, [code.id]),
        ).toBe(M);
        expect((await get(`/codes/${code.id}`)).body.data.status).toBe('exhausted');
      } finally {
        await replica.close();
      }
    }, 60_000);

    it('perCustomerLimit holds under concurrent redemptions by one customer', async () => {
      const code = await newCampaign({ perCustomerLimit: 2, duration: 'P1D' });
      const c = await newCustomer();
      const answers = await Promise.all(
        Array.from({ length: 6 }, () =>
          post('/redemptions', { code: code.code, customer: { type: 'username', value: c.username } }),
        ),
      );
      const ok = answers.filter((r) => r.status === 200);
      expect(ok).toHaveLength(2);
      for (const r of answers.filter((x) => x.status !== 200))
        expectError(r, 409, 'CODE_CUSTOMER_LIMIT_REACHED');
      expect(ok.map((r) => r.body.data.campaign.customerRedemptions).sort()).toEqual([1, 2]);
    }, 30_000);

    it('the order of refusals', async () => {
      const expiredAt = `UPDATE codes SET expires_at = now() - interval '1 second' WHERE id = $1`;
      // revoked before expired
      const revoked = await newCampaign({});
      await post(`/codes/${revoked.id}/revoke`, {}).expect(200);
      await t.dataSource.query(expiredAt, [revoked.id]);
      expectError(await redeem(revoked.code, username()), 409, 'CODE_REVOKED');
      // expired before not yet active
      const late = await newCampaign({ startsAt: inDays(1) });
      await t.dataSource.query(expiredAt, [late.id]);
      expectError(await redeem(late.code, username()), 409, 'CODE_EXPIRED');
      // not yet active before exhausted
      const scheduled = await newCampaign({ startsAt: inDays(1), maxRedemptions: 1 });
      await t.dataSource.query(`UPDATE codes SET redemption_count = 1 WHERE id = $1`, [scheduled.id]);
      expectError(await redeem(scheduled.code, username()), 409, 'CODE_NOT_YET_ACTIVE');
      // exhausted before the customer
      const full = await newCampaign({ maxRedemptions: 1 });
      await redeem(full.code, username()).expect(200);
      expectError(await redeem(full.code, username(), { autoCreate: false }), 409, 'CODE_EXHAUSTED');
      // the customer before its limit
      const limited = await newCampaign({ eligibility: { newCustomersOnly: true } });
      expectError(await redeem(limited.code, username(), { autoCreate: false }), 404, 'CUSTOMER_NOT_FOUND');
      // the limit before eligibility
      const user = username();
      await redeem(limited.code, user).expect(200); // a new customer is eligible; now it holds Pro
      expectError(await redeem(limited.code, user), 409, 'CODE_CUSTOMER_LIMIT_REACHED');
      // eligibility before the chain rules
      const permanent = await newCampaign({ duration: null, eligibility: { newCustomersOnly: true } });
      const holder = username();
      await post('/subscriptions/activate', {
        customer: { type: 'username', value: holder },
        autoCreate: true,
        planId: pro,
      }).expect(200);
      expectError(await redeem(permanent.code, holder), 403, 'CODE_NOT_ELIGIBLE');
      // refused calls count nothing
      for (const c of [revoked, late, scheduled, limited, permanent])
        expect(
          await count(`SELECT count(*)::int AS n FROM code_redemptions WHERE code_id = $1`, [c.id]),
        ).toBe(c.id === limited.id ? 1 : 0);
    }, 30_000);

    it('eligibility: NOT_NEW_CUSTOMER and HELD_PLAN_GROUP, with the group; free windows never count', async () => {
      const forNew = await newCampaign({ eligibility: { newCustomersOnly: true } });
      const free = await newCustomer(); // holds only its sign-up (free) window
      await redeem(forNew.code, free.username).expect(200);
      const paid = username();
      await post('/subscriptions/activate', {
        customer: { type: 'username', value: paid },
        autoCreate: true,
        planId: basic,
        duration: 'PT1S',
      }).expect(200);
      await new Promise((r) => setTimeout(r, 1100)); // an ended window still counts
      const res = await redeem(forNew.code, paid);
      expectError(res, 403, 'CODE_NOT_ELIGIBLE');
      expect(res.body.error.details).toEqual([
        { field: 'code', message: expect.any(String), reason: 'NOT_NEW_CUSTOMER', group: 'tier' },
      ]);
      const notHolders = await newCampaign({
        planId: addon,
        eligibility: { notIfHeldPlanGroups: ['vip', 'tier', 'addon'] },
      });
      const held = await redeem(notHolders.code, paid);
      expectError(held, 403, 'CODE_NOT_ELIGIBLE');
      expect(held.body.error.details[0]).toMatchObject({ reason: 'HELD_PLAN_GROUP', group: 'tier' });
      await redeem(notHolders.code, username()).expect(200); // created by the call: new
    }, 30_000);

    it('the public route redeems campaign codes for the logged-in customer', async () => {
      const code = await newCampaign({ maxRedemptions: 3 });
      const name = username();
      await post('/customers', { username: name, password: 'correct horse battery' }).expect(201);
      const login = await t.http
        .post('/api/public/v1/auth/login')
        .set('X-Service-Key', a.publicKey)
        .send({ identifier: { type: 'username', value: name }, password: 'correct horse battery' })
        .expect(200);
      const me = (query = '') =>
        t.http
          .post(`/api/public/v1/me/redemptions${query}`)
          .set('X-Service-Key', a.publicKey)
          .set('Authorization', `Bearer ${login.body.data.token}`)
          .send({ code: code.code.toLowerCase() });
      const dry = await me('?dryRun=true').expect(200);
      expect(dry.body.data.campaign).toMatchObject({ redemptionCount: 1 });
      const res = await me().expect(200);
      expect(res.body.data.campaign).toMatchObject({
        codeId: code.id,
        redemptionCount: 1,
        customerRedemptions: 1,
      });
      expectError(await me(), 409, 'CODE_CUSTOMER_LIMIT_REACHED');
    });
  });

  describe('managing', () => {
    it('GET /codes: both kinds newest first; kind, the six statuses and search', async () => {
      const p = await t.createProject({ name: 'Campaign lists' });
      const plan = await insertPlan(p.id, 'Gold', 30, 'tier');
      await post('/codes', { planId: plan, note: 'batch one' }, p).expect(201);
      const mk = async (body: object) =>
        (await campaign({ planId: plan, duration: 'P1D', ...body }, p).expect(201)).body.data;
      const available = await mk({ code: 'AVAIL-1', note: 'spring promo' });
      const scheduled = await mk({ code: 'SCHED-1', startsAt: inDays(2) });
      const exhausted = await mk({ code: 'FULL-1', maxRedemptions: 1 });
      await t.dataSource.query(`UPDATE codes SET redemption_count = 1 WHERE id = $1`, [exhausted.id]);
      const expired = await mk({ code: 'OLD-1' });
      await t.dataSource.query(`UPDATE codes SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        expired.id,
      ]);
      const revoked = await mk({ code: 'GONE-1' });
      await post(`/codes/${revoked.id}/revoke`, {}, p).expect(200);

      const list = async (query: string) =>
        (await get(`/codes?${query}`, p).expect(200)).body.data.data.map(
          (c: { id: number; kind: string }) => c.id,
        );
      const all = (await get('/codes', p).expect(200)).body.data;
      expect(all.total).toBe(6);
      expect(all.data[5].kind).toBe('batch');
      expect(all.data.slice(0, 5).map((c: { id: number }) => c.id)).toEqual([
        revoked.id,
        expired.id,
        exhausted.id,
        scheduled.id,
        available.id,
      ]);
      expect(await list('kind=campaign')).toHaveLength(5);
      expect(await list('kind=batch')).toEqual([all.data[5].id]);
      expect(await list('status=available')).toEqual([available.id, all.data[5].id]);
      expect(await list('status=scheduled')).toEqual([scheduled.id]);
      expect(await list('status=exhausted')).toEqual([exhausted.id]);
      expect(await list('status=expired')).toEqual([expired.id]);
      expect(await list('status=revoked')).toEqual([revoked.id]);
      expect(await list('status=redeemed')).toEqual([]);
      expect(await list('search=avail1')).toEqual([available.id]);
      expect(await list('search=sched-1')).toEqual([scheduled.id]);
      expect(await list('search=spring')).toEqual([available.id]);
      expect(await list('search=batch%20one')).toEqual([all.data[5].id]);
      expectError(await get('/codes?kind=coupon', p), 400, 'VALIDATION_FAILED');
      expectError(await get('/codes?status=gone', p), 400, 'VALIDATION_FAILED');
    });

    it('PATCH: the rules and their order', async () => {
      const code = await newCampaign({ maxRedemptions: 5, note: 'first' });
      expectError(await patch(`/codes/${code.id}`, {}), 400, 'VALIDATION_FAILED');
      for (const body of [
        { code: 'X-1' },
        { kind: 'batch' },
        { count: 2 },
        { planId: null },
        { perCustomerLimit: null },
      ]) {
        const res = await patch(`/codes/${code.id}`, body);
        expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
      }
      expectError(await patch('/codes/999999', { note: 'x' }), 404, 'CODE_NOT_FOUND');
      const batch = (await post('/codes', { planId: basic }).expect(201)).body.data;
      const [{ id: batchCodeId }] = await t.dataSource.query(`SELECT id FROM codes WHERE batch_id = $1`, [
        batch.batchId,
      ]);
      const refused = await patch(`/codes/${batchCodeId}`, { note: 'x' });
      expectError(refused, 409, 'CODE_CHANGE_NOT_ALLOWED');
      expect(refused.body.error.details[0].field).toBe('note');

      // before the first redemption every field may change
      const changed = await patch(`/codes/${code.id}`, {
        planId: basic,
        duration: 'P10D',
        note: null,
      }).expect(200);
      expect(changed.body.data).toMatchObject({
        planId: basic,
        planName: 'Basic',
        duration: 'P10D',
        note: null,
      });
      await redeem(code.code, username()).expect(200);
      const late = await patch(`/codes/${code.id}`, { note: 'n', planId: pro });
      expectError(late, 409, 'CODE_CHANGE_NOT_ALLOWED');
      expect(late.body.error.details[0].field).toBe('planId');
      // a value equal to the stored one is no change
      await patch(`/codes/${code.id}`, { planId: basic, duration: 'P10D' }).expect(200);
      const ok = await patch(`/codes/${code.id}`, {
        maxRedemptions: null,
        perCustomerLimit: 3,
        eligibility: { newCustomersOnly: true },
        expiresAt: inDays(9),
      }).expect(200);
      expect(ok.body.data).toMatchObject({
        maxRedemptions: null,
        remainingRedemptions: null,
        perCustomerLimit: 3,
        eligibility: { newCustomersOnly: true, notIfHeldPlanGroups: [] },
      });
      expectError(await patch(`/codes/${code.id}`, { maxRedemptions: 0 }), 400, 'VALIDATION_FAILED');
      await patch(`/codes/${code.id}`, { maxRedemptions: 1 }).expect(200); // not below redemptionCount 1
      const order = await newCampaign({ startsAt: inDays(1) });
      const bad = await patch(`/codes/${order.id}`, { expiresAt: inDays(0.5) });
      expectError(bad, 400, 'VALIDATION_FAILED');
      expect(bad.body.error.details[0].field).toBe('expiresAt');
      const expiring = await newCampaign({});
      await t.dataSource.query(`UPDATE codes SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        expiring.id,
      ]);
      expectError(await patch(`/codes/${expiring.id}`, { note: 'x' }), 409, 'CODE_EXPIRED');
      await post(`/codes/${expiring.id}/revoke`, {}).expect(200);
      expectError(await patch(`/codes/${expiring.id}`, { note: 'x' }), 409, 'CODE_REVOKED');
    });

    it('maxRedemptions below redemptionCount is refused', async () => {
      const code = await newCampaign({ perCustomerLimit: 3 });
      const user = username();
      await redeem(code.code, user).expect(200);
      await redeem(code.code, user).expect(200);
      const res = await patch(`/codes/${code.id}`, { maxRedemptions: 1 });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details[0].field).toBe('maxRedemptions');
    });

    it('revoking twice answers the same and tells code.revoked once; what was granted stays', async () => {
      const p = await t.createProject({ name: 'Campaign revoke', autoCreateCustomerAtRedemption: true });
      const plan = await insertPlan(p.id, 'Gold', 30, 'tier');
      const code = (await campaign({ planId: plan, duration: 'P1D' }, p).expect(201)).body.data;
      const granted = await post(
        '/redemptions',
        {
          code: code.code,
          customer: { type: 'username', value: username() },
          autoCreate: true,
        },
        p,
      ).expect(200);
      const first = await post(`/codes/${code.id}/revoke`, {}, p).expect(200);
      const second = await post(`/codes/${code.id}/revoke`, {}, p).expect(200);
      expect(first.body.data.status).toBe('revoked');
      expect(second.body.data).toEqual(first.body.data);
      expect(await events(p.id, 'code.revoked')).toBe(1);
      const [w] = await t.dataSource.query(`SELECT status FROM subscriptions WHERE id = $1`, [
        granted.body.data.subscriptions[0].id,
      ]);
      expect(w.status).toBe('active');
    });

    it('code.exhausted once per cap value; a PATCH never tells it', async () => {
      const p = await t.createProject({ name: 'Campaign exhausted', autoCreateCustomerAtRedemption: true });
      const plan = await insertPlan(p.id, 'Gold', 30, 'tier');
      const code = (await campaign({ planId: plan, duration: 'P1D', maxRedemptions: 1 }, p).expect(201)).body
        .data;
      const take = () =>
        post(
          '/redemptions',
          { code: code.code, customer: { type: 'username', value: username() }, autoCreate: true },
          p,
        );
      await take().expect(200);
      expectError(await take(), 409, 'CODE_EXHAUSTED');
      await patch(`/codes/${code.id}`, { maxRedemptions: 2 }, p).expect(200);
      await patch(`/codes/${code.id}`, { maxRedemptions: 1 }, p).expect(200);
      await patch(`/codes/${code.id}`, { maxRedemptions: 2 }, p).expect(200);
      await take().expect(200);
      const rows = await t.dataSource.query(
        `SELECT unique_key, data FROM events WHERE project_id = $1 AND type = 'code.exhausted' ORDER BY id`,
        [p.id],
      );
      rows.sort((x: { unique_key: string }, y: { unique_key: string }) =>
        x.unique_key.localeCompare(y.unique_key),
      );
      expect(rows.map((r: { unique_key: string }) => r.unique_key)).toEqual([
        `code.exhausted:${code.id}:1`,
        `code.exhausted:${code.id}:2`,
      ]);
      expect(rows[1].data.code).toMatchObject({ id: code.id, redemptionCount: 2, status: 'exhausted' });
      expect(rows[1].data.customer).toBeUndefined();
    });

    it('deleting a customer keeps its redemption records (customer null, windows []) and the count', async () => {
      const code = await newCampaign({});
      const c = await newCustomer();
      await redeem(code.code, c.username).expect(200);
      await t.http.delete(`${PRIVATE}/customers/${c.id}`).set(bearer(a.privateKey)).expect(200);
      const page = (await get(`/codes/${code.id}/redemptions`).expect(200)).body.data;
      expect(page.data).toEqual([
        {
          id: expect.any(Number),
          codeId: code.id,
          customer: null,
          redeemedAt: expect.stringMatching(ISO_MS),
          windows: [],
        },
      ]);
      expect((await get(`/codes/${code.id}`)).body.data.redemptionCount).toBe(1);
    });

    it("the redemptions page: paged, filtered by customerId; a batch code's page holds its one redemption", async () => {
      const code = await newCampaign({});
      const users = [await newCustomer(), await newCustomer(), await newCustomer()];
      for (const u of users) await redeem(code.code, u.username).expect(200);
      const page = (await get(`/codes/${code.id}/redemptions?pageSize=2&page=2`).expect(200)).body.data;
      expect(page).toMatchObject({ page: 2, pageSize: 2, total: 3, totalPages: 2 });
      expect(page.data.map((r: any) => r.customer.id)).toEqual([users[0].id]);
      const one = (await get(`/codes/${code.id}/redemptions?customerId=${users[1].id}`)).body.data;
      expect(one.data.map((r: any) => r.customer.username)).toEqual([users[1].username]);
      expectError(await get(`/codes/${code.id}/redemptions?pageSize=101`), 400, 'VALIDATION_FAILED');

      const batch = (await post('/codes', { planId: basic }).expect(201)).body.data;
      const [{ id: batchCodeId }] = await t.dataSource.query(`SELECT id FROM codes WHERE batch_id = $1`, [
        batch.batchId,
      ]);
      expect((await get(`/codes/${batchCodeId}/redemptions`)).body.data.data).toEqual([]);
      const redeemed = await redeem(batch.codes[0], users[2].username).expect(200);
      expect((await get(`/codes/${batchCodeId}`)).body.data.kind).toBe('batch');
      const batchPage = (await get(`/codes/${batchCodeId}/redemptions`).expect(200)).body.data;
      expect(batchPage.data).toEqual([
        {
          id: batchCodeId,
          codeId: batchCodeId,
          customer: { id: users[2].id, username: users[2].username },
          redeemedAt: expect.stringMatching(ISO_MS),
          windows: [expect.objectContaining({ id: redeemed.body.data.subscriptions[0].id })],
        },
      ]);
    });

    it('a plan with campaign codes is 409 PLAN_IN_USE on delete', async () => {
      const plan = await insertPlan(a.id, 'Held', 15, 'other');
      await newCampaign({ planId: plan });
      expectError(
        await t.http.delete(`${PRIVATE}/plans/${plan}`).set(bearer(a.privateKey)),
        409,
        'PLAN_IN_USE',
      );
    });

    it("tenancy: another project's key gets 404 CODE_NOT_FOUND on every route and id", async () => {
      const code = await newCampaign({ code: 'MINE-ONLY' });
      expectError(await get(`/codes/${code.id}`, b), 404, 'CODE_NOT_FOUND');
      expectError(await patch(`/codes/${code.id}`, { note: 'x' }, b), 404, 'CODE_NOT_FOUND');
      expectError(await post(`/codes/${code.id}/revoke`, {}, b), 404, 'CODE_NOT_FOUND');
      expectError(await get(`/codes/${code.id}/redemptions`, b), 404, 'CODE_NOT_FOUND');
      expectError(
        await post(
          '/redemptions',
          { code: 'MINE-ONLY', customer: { type: 'username', value: username() }, autoCreate: true },
          b,
        ),
        404,
        'CODE_NOT_FOUND',
      );
      expect((await get('/codes?kind=campaign&search=mine', b)).body.data.data).toEqual([]);
      expect((await get(`/codes/${code.id}`)).body.data.note).toBeNull(); // untouched
    });
  });
});
