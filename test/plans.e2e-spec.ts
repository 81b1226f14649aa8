import { randomBytes } from 'node:crypto';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError, ISO_MS } from './support/expect';
import { inlineShared } from './support/openapi';

const FEATURES = '/api/private/v1/features';
const PLANS = '/api/private/v1/plans';

describe('features, plans and quotas', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);
  let seq = 0;
  const slug = (prefix = 's') => `${prefix}-${++seq}`;

  async function createFeature(body: Record<string, unknown> = {}, auth = A()) {
    const res = await t.http
      .post(FEATURES)
      .set(auth)
      .send({ slug: slug('f'), name: 'Feature', ...body });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  async function createPlan(body: Record<string, unknown> = {}, auth = A()) {
    const res = await t.http
      .post(PLANS)
      .set(auth)
      .send({ slug: slug('p'), name: 'Plan', value: 0, group: 'main', ...body });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  /** Posts a plan body and expects 400 VALIDATION_FAILED naming `field` in the details. */
  async function expectPlanInvalid(body: Record<string, unknown>, field: string) {
    const res = await t.http
      .post(PLANS)
      .set(A())
      .send({ slug: slug('p'), name: 'Plan', value: 0, group: 'main', ...body });
    expectError(res, 400, 'VALIDATION_FAILED');
    expect(res.body.error.details).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
  }

  async function insertCustomer(projectId: string): Promise<number> {
    const rows = await t.dataSource.query(
      'INSERT INTO customers (project_id, username) VALUES ($1, $2) RETURNING id',
      [projectId, `cust${String(++seq).padStart(6, '0')}`],
    );
    return rows[0].id;
  }

  async function insertBatch(projectId: string, planId: number): Promise<number> {
    const rows = await t.dataSource.query(
      'INSERT INTO code_batches (project_id, plan_id, count) VALUES ($1, $2, 1) RETURNING id',
      [projectId, planId],
    );
    return rows[0].id;
  }

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'A' });
    b = await t.createProject({ name: 'B' });
  });
  afterAll(() => t.close());

  describe('features', () => {
    it('creates a feature with defaults and reads it back in the Feature shape', async () => {
      const res = await t.http.post(FEATURES).set(A()).send({ slug: 'storage', name: 'Storage' }).expect(201);
      const f = res.body.data;
      expect(f).toEqual({
        id: expect.any(Number),
        slug: 'storage',
        name: 'Storage',
        description: '',
        projectId: a.id,
        metered: false,
        unit: '',
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });
      const read = await t.http.get(`${FEATURES}/${f.id}`).set(A()).expect(200);
      expect(read.body).toEqual({ ok: true, requestId: read.headers['x-request-id'], data: f });
    });

    it('keeps every field given on creation', async () => {
      const f = await createFeature({
        name: 'API calls',
        description: 'Calls per month',
        metered: true,
        unit: 'calls',
      });
      expect(f).toMatchObject({
        name: 'API calls',
        description: 'Calls per month',
        metered: true,
        unit: 'calls',
      });
    });

    it.each([['a'], ['0'], ['a'.repeat(64)], ['a_b-c9'], ['9-lives']])('accepts the slug %j', async (s) => {
      const res = await t.http
        .post(FEATURES)
        .set(bearer((await t.createProject()).privateKey))
        .send({ slug: s, name: 'x' });
      expect(res.status).toBe(201);
    });

    it.each([[''], ['A'], ['Abc'], ['-a'], ['_a'], ['a'.repeat(65)], ['a b'], ['a.b'], ['é'], [123], [null]])(
      'refuses the slug %j with 400 VALIDATION_FAILED',
      async (s) => {
        const res = await t.http.post(FEATURES).set(A()).send({ slug: s, name: 'x' });
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details).toEqual(
          expect.arrayContaining([{ field: 'slug', message: expect.any(String) }]),
        );
      },
    );

    it.each([
      ['name', ''],
      ['name', 'n'.repeat(201)],
      ['name', null],
      ['description', 'd'.repeat(2001)],
      ['description', null],
      ['metered', 'yes'],
      ['unit', 'u'.repeat(33)],
      ['unit', 7],
    ])('refuses %s = %j', async (field, value) => {
      const res = await t.http
        .post(FEATURES)
        .set(A())
        .send({ slug: slug('f'), name: 'x', [field]: value });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details).toEqual(
        expect.arrayContaining([{ field, message: expect.any(String) }]),
      );
    });

    it('accepts the longest name, description and unit', async () => {
      await createFeature({ name: 'n'.repeat(200), description: 'd'.repeat(2000), unit: 'u'.repeat(32) });
    });

    it('refuses unknown fields with details', async () => {
      const res = await t.http
        .post(FEATURES)
        .set(A())
        .send({ slug: slug('f'), name: 'x', projectId: b.id });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details).toEqual([
        { field: 'projectId', message: 'projectId is not a known field' },
      ]);
    });

    it('409 SLUG_TAKEN for a slug already used in the project, on create and update; other projects may use it', async () => {
      const f = await createFeature({ slug: 'dup-feature' });
      expectError(
        await t.http.post(FEATURES).set(A()).send({ slug: 'dup-feature', name: 'x' }),
        409,
        'SLUG_TAKEN',
      );
      await createFeature({ slug: 'dup-feature' }, B());
      const other = await createFeature();
      expectError(
        await t.http.patch(`${FEATURES}/${other.id}`).set(A()).send({ slug: 'dup-feature' }),
        409,
        'SLUG_TAKEN',
      );
      // its own slug is no conflict
      await t.http.patch(`${FEATURES}/${f.id}`).set(A()).send({ slug: 'dup-feature' }).expect(200);
    });

    it('two concurrent creates of one slug: one 201, one 409 SLUG_TAKEN', async () => {
      for (let round = 0; round < 5; round++) {
        const s = slug('race-f');
        const [r1, r2] = await Promise.all([
          t.http.post(FEATURES).set(A()).send({ slug: s, name: 'one' }),
          t.http.post(FEATURES).set(A()).send({ slug: s, name: 'two' }),
        ]);
        expect([r1.status, r2.status].sort()).toEqual([201, 409]);
        expectError(r1.status === 409 ? r1 : r2, 409, 'SLUG_TAKEN');
      }
    });

    it('updates the given fields only, and an empty body changes nothing', async () => {
      const f = await createFeature({ name: 'Before', description: 'keep', unit: 'GB' });
      await new Promise((r) => setTimeout(r, 5));
      const res = await t.http
        .patch(`${FEATURES}/${f.id}`)
        .set(A())
        .send({ name: 'After', metered: true })
        .expect(200);
      expect(res.body.data).toEqual({
        ...f,
        name: 'After',
        metered: true,
        updatedAt: expect.stringMatching(ISO_MS),
      });
      expect(new Date(res.body.data.updatedAt).getTime()).toBeGreaterThan(new Date(f.updatedAt).getTime());
      const same = await t.http.patch(`${FEATURES}/${f.id}`).set(A()).send({}).expect(200);
      expect(same.body.data).toEqual(res.body.data);
    });

    it('refuses null and invalid values on update', async () => {
      const f = await createFeature();
      for (const body of [
        { name: null },
        { slug: 'Bad' },
        { description: null },
        { metered: null },
        { unknown: 1 },
      ]) {
        expectError(await t.http.patch(`${FEATURES}/${f.id}`).set(A()).send(body), 400, 'VALIDATION_FAILED');
      }
      expect((await t.http.get(`${FEATURES}/${f.id}`).set(A()).expect(200)).body.data).toEqual(f);
    });

    it('deletes a feature: { success: true }, then 404 FEATURE_NOT_FOUND', async () => {
      const f = await createFeature();
      const res = await t.http.delete(`${FEATURES}/${f.id}`).set(A()).expect(200);
      expect(res.body.data).toEqual({ success: true });
      expectError(await t.http.get(`${FEATURES}/${f.id}`).set(A()), 404, 'FEATURE_NOT_FOUND');
      expectError(await t.http.delete(`${FEATURES}/${f.id}`).set(A()), 404, 'FEATURE_NOT_FOUND');
      expectError(
        await t.http.patch(`${FEATURES}/${f.id}`).set(A()).send({ name: 'x' }),
        404,
        'FEATURE_NOT_FOUND',
      );
    });

    it('409 FEATURE_IN_USE while a quota uses the feature; deletable once the quota is gone', async () => {
      const f = await createFeature();
      const plan = await createPlan({ quotas: [{ featureId: f.id, limit: 5 }] });
      expectError(await t.http.delete(`${FEATURES}/${f.id}`).set(A()), 409, 'FEATURE_IN_USE');
      await t.http.get(`${FEATURES}/${f.id}`).set(A()).expect(200);
      await t.http.patch(`${PLANS}/${plan.id}`).set(A()).send({ quotas: [] }).expect(200);
      await t.http.delete(`${FEATURES}/${f.id}`).set(A()).expect(200);
    });

    it('a delete racing a plan that takes the feature: one of them wins cleanly, never a 500', async () => {
      for (let round = 0; round < 6; round++) {
        const f = await createFeature();
        const [del, create] = await Promise.all([
          t.http.delete(`${FEATURES}/${f.id}`).set(A()),
          t.http
            .post(PLANS)
            .set(A())
            .send({
              slug: slug('race'),
              name: 'x',
              value: 0,
              group: 'g',
              quotas: [{ featureId: f.id, limit: 1 }],
            }),
        ]);
        const outcome = [del.status, create.status];
        expect([
          [200, 404],
          [409, 201],
        ]).toContainEqual(outcome);
        if (del.status === 409) expectError(del, 409, 'FEATURE_IN_USE');
        if (create.status === 404) expectError(create, 404, 'FEATURE_NOT_FOUND');
      }
    });

    it('400 for an id that is not a positive integer, 404 for an unknown one', async () => {
      for (const id of ['abc', '0', '-1', '1.5', '99999999999']) {
        expectError(await t.http.get(`${FEATURES}/${id}`).set(A()), 400, 'VALIDATION_FAILED');
      }
      expectError(await t.http.get(`${FEATURES}/2147483647`).set(A()), 404, 'FEATURE_NOT_FOUND');
    });

    it('lists newest first with paging defaults, limits and search on name or slug', async () => {
      const p = await t.createProject();
      const auth = bearer(p.privateKey);
      const made = [];
      for (let i = 1; i <= 12; i++) {
        made.push(
          await createFeature({ slug: `feat-${i}`, name: i % 2 ? `Odd Thing ${i}` : `Even ${i}` }, auth),
        );
      }
      const first = await t.http.get(FEATURES).set(auth).expect(200);
      expect(first.body.data).toEqual({
        data: made.slice().reverse().slice(0, 10),
        total: 12,
        page: 1,
        pageSize: 10,
        totalPages: 2,
      });
      const second = await t.http.get(`${FEATURES}?page=2`).set(auth).expect(200);
      expect(second.body.data.data.map((f: any) => f.slug)).toEqual(['feat-2', 'feat-1']);
      const past = await t.http.get(`${FEATURES}?page=3`).set(auth).expect(200);
      expect(past.body.data).toEqual({ data: [], total: 12, page: 3, pageSize: 10, totalPages: 2 });

      const byName = await t.http.get(`${FEATURES}?search=odd%20THING&pageSize=100`).set(auth).expect(200);
      expect(byName.body.data.total).toBe(6);
      const bySlug = await t.http.get(`${FEATURES}?search=FEAT-1`).set(auth).expect(200);
      expect(bySlug.body.data.data.map((f: any) => f.slug).sort()).toEqual([
        'feat-1',
        'feat-10',
        'feat-11',
        'feat-12',
      ]);
      const wildcard = await t.http.get(`${FEATURES}?search=%25`).set(auth).expect(200);
      expect(wildcard.body.data.total).toBe(0);

      for (const q of ['page=0', 'pageSize=0', 'pageSize=101', 'page=1.5', 'pageSize=abc', 'other=1']) {
        expectError(await t.http.get(`${FEATURES}?${q}`).set(auth), 400, 'VALIDATION_FAILED');
      }
      expect(
        (await t.http.get(`${FEATURES}?pageSize=100`).set(auth).expect(200)).body.data.data,
      ).toHaveLength(12);
    });
  });

  describe('plans: create and read', () => {
    it('creates a plan with quotas: 201 and the Plan shape with embedded features', async () => {
      const storage = await createFeature({
        slug: slug('storage'),
        name: 'Storage',
        metered: true,
        unit: 'GB',
      });
      const seats = await createFeature({ slug: slug('seats'), name: 'Seats' });
      const res = await t.http
        .post(PLANS)
        .set(A())
        .send({
          slug: 'pro-monthly',
          name: 'Pro (monthly)',
          value: 9.99,
          group: 'pro',
          quotas: [
            { featureId: storage.id, limit: 100.5, priority: 2, resetInterval: 'P1M' },
            { featureId: seats.id, limit: 5 },
          ],
        })
        .expect(201);
      const plan = res.body.data;
      const quota = {
        id: expect.any(Number),
        planId: plan.id,
        // the reset fields a quota has when none is sent (docs/api-guide.md#features-plans-and-quotas)
        resetAnchor: 'run',
        resetDayOfMonth: null,
        resetTimeZone: null,
        thresholds: [],
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      };
      expect(plan).toEqual({
        id: expect.any(Number),
        slug: 'pro-monthly',
        name: 'Pro (monthly)',
        projectId: a.id,
        value: 9.99,
        group: 'pro',
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
        quotas: [
          {
            ...quota,
            featureId: storage.id,
            limit: 100.5,
            priority: 2,
            resetInterval: 'P1M',
            feature: storage,
          },
          { ...quota, featureId: seats.id, limit: 5, priority: 0, resetInterval: null, feature: seats },
        ],
      });
      const read = await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200);
      expect(read.body).toEqual({ ok: true, requestId: read.headers['x-request-id'], data: plan });
    });

    it('creates a plan without quotas', async () => {
      const plan = await createPlan({ value: 0 });
      expect(plan.quotas).toEqual([]);
      expect(plan.value).toBe(0);
    });

    it.each([[0], [1], [0.01], [10.5], [9.99], [999999999999.99]])('accepts the value %j', async (value) => {
      const plan = await createPlan({ value });
      expect(plan.value).toBe(value);
      expect((await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200)).body.data.value).toBe(value);
    });

    it.each([[-0.01], [-1], [1.005], [0.001], [1e-7], [1e12], ['10'], [null], [true], [{}]])(
      'refuses the value %j',
      async (value) => {
        await expectPlanInvalid({ value }, 'value');
      },
    );

    it('refuses a plan without value, group, name or slug', async () => {
      for (const field of ['value', 'group', 'name', 'slug']) {
        const body: Record<string, unknown> = { slug: slug('p'), name: 'Plan', value: 0, group: 'main' };
        delete body[field];
        const res = await t.http.post(PLANS).set(A()).send(body);
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details).toEqual(
          expect.arrayContaining([{ field, message: expect.any(String) }]),
        );
      }
    });

    it('accepts a group of 1 and 64 characters and refuses 0 and 65', async () => {
      expect((await createPlan({ group: 'g' })).group).toBe('g');
      expect((await createPlan({ group: 'g'.repeat(64) })).group).toBe('g'.repeat(64));
      await expectPlanInvalid({ group: 'g'.repeat(65) }, 'group');
      await expectPlanInvalid({ group: '' }, 'group');
      await expectPlanInvalid({ group: 5 }, 'group');
    });

    it('applies the slug rule and the name length to plans', async () => {
      await createPlan({ slug: 'x'.repeat(64) });
      for (const s of ['Pro', '-pro', 'x'.repeat(65), 'pro plan', ''])
        await expectPlanInvalid({ slug: s }, 'slug');
      await createPlan({ name: 'n'.repeat(200) });
      await expectPlanInvalid({ name: '' }, 'name');
      await expectPlanInvalid({ name: 'n'.repeat(201) }, 'name');
    });

    it('accepts resetInterval P1M, PT1H, P1D, null or none, and refuses P1X and other non-durations', async () => {
      const fs = [
        await createFeature(),
        await createFeature(),
        await createFeature(),
        await createFeature(),
        await createFeature(),
      ];
      const plan = await createPlan({
        quotas: [
          { featureId: fs[0].id, limit: 1, resetInterval: 'P1M' },
          { featureId: fs[1].id, limit: 1, resetInterval: 'PT1H' },
          { featureId: fs[2].id, limit: 1, resetInterval: 'P1D' },
          { featureId: fs[3].id, limit: 1, resetInterval: null },
          { featureId: fs[4].id, limit: 1 },
        ],
      });
      expect(plan.quotas.map((q: any) => q.resetInterval)).toEqual(['P1M', 'PT1H', 'P1D', null, null]);
      for (const resetInterval of [
        'P1X',
        'P0D',
        '1 month',
        '',
        'P',
        'PT',
        '-P1D',
        5,
        'P1' + 'D'.repeat(40),
      ]) {
        await expectPlanInvalid(
          { quotas: [{ featureId: fs[0].id, limit: 1, resetInterval }] },
          'quotas.0.resetInterval',
        );
      }
    });

    it('refuses bad quotas: duplicate feature, negative limit, fractional priority, unknown field', async () => {
      const f = await createFeature();
      const g = await createFeature();
      await expectPlanInvalid(
        {
          quotas: [
            { featureId: f.id, limit: 1 },
            { featureId: g.id, limit: 2 },
            { featureId: f.id, limit: 3 },
          ],
        },
        'quotas',
      );
      await expectPlanInvalid({ quotas: [{ featureId: f.id, limit: -1 }] }, 'quotas.0.limit');
      await expectPlanInvalid({ quotas: [{ featureId: f.id, limit: 0.00001 }] }, 'quotas.0.limit');
      await expectPlanInvalid({ quotas: [{ featureId: f.id, limit: '5' }] }, 'quotas.0.limit');
      await expectPlanInvalid({ quotas: [{ featureId: f.id }] }, 'quotas.0.limit');
      await expectPlanInvalid(
        { quotas: [{ featureId: f.id, limit: 1, priority: 1.5 }] },
        'quotas.0.priority',
      );
      await expectPlanInvalid(
        { quotas: [{ featureId: f.id, limit: 1, priority: null }] },
        'quotas.0.priority',
      );
      await expectPlanInvalid({ quotas: [{ featureId: 'x', limit: 1 }] }, 'quotas.0.featureId');
      await expectPlanInvalid({ quotas: [{ featureId: 0, limit: 1 }] }, 'quotas.0.featureId');
      await expectPlanInvalid({ quotas: [{ featureId: f.id, limit: 1, extra: true }] }, 'quotas.0.extra');
      await expectPlanInvalid({ quotas: null }, 'quotas');
      await expectPlanInvalid({ quotas: {} }, 'quotas');
      await expectPlanInvalid({ id: 5 }, 'id');
      // limit 0, four decimals and negative priority are fine
      const plan = await createPlan({
        quotas: [
          { featureId: f.id, limit: 0.1234, priority: -3 },
          { featureId: g.id, limit: 0 },
        ],
      });
      expect(plan.quotas.map((q: any) => [q.limit, q.priority])).toEqual([
        [0.1234, -3],
        [0, 0],
      ]);
    });

    it('odd bodies are 400 VALIDATION_FAILED, never a 500', async () => {
      const f = await createFeature();
      const bodies: Record<string, unknown>[] = [
        { quotas: [null] },
        { quotas: [1] },
        { quotas: ['x'] },
        { quotas: [[]] },
        { quotas: [{ featureId: f.id, limit: 1e300 }] },
        { quotas: [{ featureId: f.id, limit: 1, priority: 2147483648 }] },
        { quotas: [{ featureId: 2147483648, limit: 1 }] },
        { value: 1e21 },
        { name: ['x'] },
        { group: { a: 1 } },
        { slug: 'x'.repeat(10000) },
      ];
      for (const body of bodies) {
        const res = await t.http
          .post(PLANS)
          .set(A())
          .send({ slug: slug('p'), name: 'x', value: 0, group: 'g', ...body });
        expect({ body, status: res.status }).toEqual({ body, status: 400 });
        expectError(res, 400, 'VALIDATION_FAILED');
      }
      expectError(await t.http.get(`${PLANS}?search=a&search=b`).set(A()), 400, 'VALIDATION_FAILED');
      expectError(await t.http.post(PLANS).set(A()).send([]), 400, 'VALIDATION_FAILED');
    });

    it('404 FEATURE_NOT_FOUND for an unknown feature or one of another project, and nothing is created', async () => {
      const mine = await createFeature();
      const theirs = await createFeature({}, B());
      for (const featureId of [theirs.id, 2147483647]) {
        const s = slug('p');
        const res = await t.http
          .post(PLANS)
          .set(A())
          .send({
            slug: s,
            name: 'x',
            value: 0,
            group: 'g',
            quotas: [
              { featureId: mine.id, limit: 1 },
              { featureId, limit: 1 },
            ],
          });
        expectError(res, 404, 'FEATURE_NOT_FOUND');
        const listed = await t.http.get(`${PLANS}?search=${s}`).set(A()).expect(200);
        expect(listed.body.data.total).toBe(0);
      }
    });

    it('409 SLUG_TAKEN for a plan slug already used in the project; other projects may use it', async () => {
      await createPlan({ slug: 'dup-plan' });
      expectError(
        await t.http.post(PLANS).set(A()).send({ slug: 'dup-plan', name: 'x', value: 1, group: 'g' }),
        409,
        'SLUG_TAKEN',
      );
      await createPlan({ slug: 'dup-plan' }, B());
    });

    it('two concurrent creates of one plan slug: one 201, one 409 SLUG_TAKEN, never a 500', async () => {
      const f = await createFeature();
      for (let round = 0; round < 5; round++) {
        const s = slug('race-p');
        const body = { slug: s, name: 'x', value: 1, group: 'g', quotas: [{ featureId: f.id, limit: 1 }] };
        const [r1, r2] = await Promise.all([
          t.http.post(PLANS).set(A()).send(body),
          t.http.post(PLANS).set(A()).send(body),
        ]);
        expect([r1.status, r2.status].sort()).toEqual([201, 409]);
        expectError(r1.status === 409 ? r1 : r2, 409, 'SLUG_TAKEN');
        const listed = await t.http.get(`${PLANS}?search=${s}`).set(A()).expect(200);
        expect(listed.body.data.total).toBe(1);
      }
    });

    it('404 PLAN_NOT_FOUND for an unknown plan, 400 for a malformed id', async () => {
      expectError(await t.http.get(`${PLANS}/2147483647`).set(A()), 404, 'PLAN_NOT_FOUND');
      expectError(await t.http.get(`${PLANS}/abc`).set(A()), 400, 'VALIDATION_FAILED');
    });

    it('401 without a private key', async () => {
      expectError(await t.http.get(PLANS), 401, 'INVALID_API_KEY');
      expectError(await t.http.post(FEATURES).send({ slug: 'x', name: 'x' }), 401, 'INVALID_API_KEY');
      expectError(await t.http.get(PLANS).set(bearer(a.publicKey)), 401, 'INVALID_API_KEY');
    });
  });

  describe('plans: update', () => {
    it('changes name and slug; accepts the same group and value; keeps everything else', async () => {
      const plan = await createPlan({ value: 10.5, group: 'gold' });
      const s = slug('renamed');
      const res = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({ name: 'Renamed', slug: s, group: 'gold', value: 10.5 })
        .expect(200);
      expect(res.body.data).toEqual({
        ...plan,
        name: 'Renamed',
        slug: s,
        updatedAt: expect.stringMatching(ISO_MS),
      });
      const same = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({ value: 10.5, group: 'gold' })
        .expect(200);
      expect(same.body.data).toEqual(res.body.data);
      const empty = await t.http.patch(`${PLANS}/${plan.id}`).set(A()).send({}).expect(200);
      expect(empty.body.data).toEqual(res.body.data);
    });

    it('409 PLAN_FIELD_IMMUTABLE for a different group or value (free and paid included), changing nothing', async () => {
      const plan = await createPlan({ value: 10.5, group: 'gold' });
      const free = await createPlan({ value: 0, group: 'gold' });
      for (const [id, body] of [
        [plan.id, { group: 'silver' }],
        [plan.id, { value: 10.51 }],
        [plan.id, { value: 0 }],
        [free.id, { value: 1 }],
        [plan.id, { name: 'changed', group: 'Gold' }],
      ] as const) {
        expectError(await t.http.patch(`${PLANS}/${id}`).set(A()).send(body), 409, 'PLAN_FIELD_IMMUTABLE');
      }
      expect((await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200)).body.data).toEqual(plan);
      expect((await t.http.get(`${PLANS}/${free.id}`).set(A()).expect(200)).body.data).toEqual(free);
    });

    it('validates the update body like the create body', async () => {
      const plan = await createPlan();
      for (const body of [
        { name: null },
        { slug: 'Bad Slug' },
        { value: -1 },
        { value: 1.234 },
        { group: 'g'.repeat(65) },
        { quotas: null },
        { extra: 1 },
      ]) {
        expectError(await t.http.patch(`${PLANS}/${plan.id}`).set(A()).send(body), 400, 'VALIDATION_FAILED');
      }
      const f = await createFeature();
      const dup = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({
          quotas: [
            { featureId: f.id, limit: 1 },
            { featureId: f.id, limit: 2 },
          ],
        });
      expectError(dup, 400, 'VALIDATION_FAILED');
      expect(dup.body.error.details).toEqual(
        expect.arrayContaining([{ field: 'quotas', message: expect.any(String) }]),
      );
      const bad = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({ quotas: [{ featureId: f.id, limit: 1, resetInterval: 'P1X' }] });
      expectError(bad, 400, 'VALIDATION_FAILED');
      expect(bad.body.error.details).toEqual([
        { field: 'quotas.0.resetInterval', message: expect.any(String) },
      ]);
    });

    it("409 SLUG_TAKEN when renaming onto another plan's slug", async () => {
      const one = await createPlan();
      const two = await createPlan();
      expectError(
        await t.http.patch(`${PLANS}/${two.id}`).set(A()).send({ slug: one.slug }),
        409,
        'SLUG_TAKEN',
      );
    });

    it('replaces the quotas: kept features keep id and createdAt, others are deleted or created', async () => {
      const [f1, f2, f3] = [await createFeature(), await createFeature(), await createFeature()];
      const plan = await createPlan({
        quotas: [
          { featureId: f1.id, limit: 10, priority: 1, resetInterval: 'P1D' },
          { featureId: f2.id, limit: 20 },
        ],
      });
      const [q1, q2] = plan.quotas;
      await new Promise((r) => setTimeout(r, 5));
      const res = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({
          quotas: [
            { featureId: f3.id, limit: 30, resetInterval: 'PT1H' },
            { featureId: f1.id, limit: 15, priority: 1, resetInterval: 'P1D' },
          ],
        })
        .expect(200);
      const after = res.body.data;
      expect(after.quotas).toEqual([
        { ...q1, limit: 15, updatedAt: expect.stringMatching(ISO_MS) },
        {
          id: expect.any(Number),
          planId: plan.id,
          featureId: f3.id,
          limit: 30,
          priority: 0,
          resetInterval: 'PT1H',
          resetAnchor: 'run',
          resetDayOfMonth: null,
          resetTimeZone: null,
          thresholds: [],
          createdAt: expect.stringMatching(ISO_MS),
          updatedAt: expect.stringMatching(ISO_MS),
          feature: f3,
        },
      ]);
      expect(after.quotas[1].id).toBeGreaterThan(q2.id);
      expect(new Date(after.updatedAt).getTime()).toBeGreaterThan(new Date(plan.updatedAt).getTime());
      expect(new Date(after.quotas[0].updatedAt).getTime()).toBeGreaterThan(new Date(q1.updatedAt).getTime());
      const gone = await t.dataSource.query('SELECT id FROM quotas WHERE id = $1', [q2.id]);
      expect(gone).toEqual([]);
      // the read agrees, and a quota that is sent again unchanged keeps its updatedAt too
      const read = await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200);
      expect(read.body.data).toEqual(after);
      const again = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({
          quotas: after.quotas.map((q: any) => ({
            featureId: q.featureId,
            limit: q.limit,
            priority: q.priority,
            resetInterval: q.resetInterval,
          })),
        })
        .expect(200);
      expect(again.body.data).toEqual(after);
      // omitted priority and resetInterval mean 0 and null: the list is complete
      const reset = await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({ quotas: [{ featureId: f1.id, limit: 15 }] })
        .expect(200);
      expect(reset.body.data.quotas).toEqual([
        { ...after.quotas[0], priority: 0, resetInterval: null, updatedAt: expect.any(String) },
      ]);
      // an empty list removes every quota
      const none = await t.http.patch(`${PLANS}/${plan.id}`).set(A()).send({ quotas: [] }).expect(200);
      expect(none.body.data.quotas).toEqual([]);
    });

    it('a quota update with a foreign or unknown feature is 404 and changes nothing (one transaction)', async () => {
      const f1 = await createFeature();
      const plan = await createPlan({ quotas: [{ featureId: f1.id, limit: 1 }] });
      const theirs = await createFeature({}, B());
      for (const featureId of [theirs.id, 2147483647]) {
        const res = await t.http
          .patch(`${PLANS}/${plan.id}`)
          .set(A())
          .send({ name: 'should not stick', quotas: [{ featureId, limit: 2 }] });
        expectError(res, 404, 'FEATURE_NOT_FOUND');
      }
      expect((await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200)).body.data).toEqual(plan);
    });
  });

  describe('plans: delete', () => {
    it('deletes a plan and its quotas: { success: true }, then 404', async () => {
      const f = await createFeature();
      const plan = await createPlan({ quotas: [{ featureId: f.id, limit: 1 }] });
      const res = await t.http.delete(`${PLANS}/${plan.id}`).set(A()).expect(200);
      expect(res.body.data).toEqual({ success: true });
      expectError(await t.http.get(`${PLANS}/${plan.id}`).set(A()), 404, 'PLAN_NOT_FOUND');
      expectError(await t.http.delete(`${PLANS}/${plan.id}`).set(A()), 404, 'PLAN_NOT_FOUND');
      expectError(
        await t.http.patch(`${PLANS}/${plan.id}`).set(A()).send({ name: 'x' }),
        404,
        'PLAN_NOT_FOUND',
      );
      expect(await t.dataSource.query('SELECT id FROM quotas WHERE plan_id = $1', [plan.id])).toEqual([]);
      // the feature is free again
      await t.http.delete(`${FEATURES}/${f.id}`).set(A()).expect(200);
    });

    it('409 PLAN_IN_USE while a subscription refers to the plan', async () => {
      const plan = await createPlan({ group: 'subs' });
      const customerId = await insertCustomer(a.id);
      await t.dataSource.query(
        `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, source) VALUES ($1, $2, $3, $4, now(), 'signup')`,
        [a.id, customerId, plan.id, plan.group],
      );
      expectError(await t.http.delete(`${PLANS}/${plan.id}`).set(A()), 409, 'PLAN_IN_USE');
      await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200);
      await t.dataSource.query('DELETE FROM subscriptions WHERE plan_id = $1', [plan.id]);
      await t.http.delete(`${PLANS}/${plan.id}`).set(A()).expect(200);
    });

    it('409 PLAN_IN_USE while a code batch refers to the plan', async () => {
      const plan = await createPlan();
      await insertBatch(a.id, plan.id);
      expectError(await t.http.delete(`${PLANS}/${plan.id}`).set(A()), 409, 'PLAN_IN_USE');
    });

    it('409 PLAN_IN_USE while a code refers to the plan (its batch being of another plan)', async () => {
      const plan = await createPlan();
      const other = await createPlan();
      const batchId = await insertBatch(a.id, other.id);
      await t.dataSource.query(
        'INSERT INTO codes (project_id, batch_id, plan_id, code) VALUES ($1, $2, $3, $4)',
        [a.id, batchId, plan.id, randomBytes(8).toString('hex').toUpperCase()],
      );
      expectError(await t.http.delete(`${PLANS}/${plan.id}`).set(A()), 409, 'PLAN_IN_USE');
      expectError(await t.http.delete(`${PLANS}/${other.id}`).set(A()), 409, 'PLAN_IN_USE');
    });
  });

  describe('plans: list', () => {
    let p: TestProject;
    const made: any[] = [];

    beforeAll(async () => {
      p = await t.createProject();
      const f = await createFeature({ slug: 'bandwidth', name: 'Bandwidth' }, bearer(p.privateKey));
      for (let i = 1; i <= 12; i++) {
        made.push(
          await createPlan(
            {
              slug: `tier-${i}`,
              name: i % 3 === 0 ? `Gold Tier ${i}` : `Basic ${i}`,
              value: i,
              group: 'tiers',
              quotas: [{ featureId: f.id, limit: i }],
            },
            bearer(p.privateKey),
          ),
        );
      }
    });

    it('answers the page object with defaults page 1 and pageSize 10, plans in id order with their quotas', async () => {
      const res = await t.http.get(PLANS).set(bearer(p.privateKey)).expect(200);
      expect(res.body).toEqual({
        ok: true,
        requestId: res.headers['x-request-id'],
        data: { data: made.slice(0, 10), total: 12, page: 1, pageSize: 10, totalPages: 2 },
      });
      expect(res.body.data.data[0].quotas[0].feature.slug).toBe('bandwidth');
    });

    it('pages', async () => {
      const second = await t.http.get(`${PLANS}?page=2&pageSize=5`).set(bearer(p.privateKey)).expect(200);
      expect(second.body.data).toEqual({
        data: made.slice(5, 10),
        total: 12,
        page: 2,
        pageSize: 5,
        totalPages: 3,
      });
      const last = await t.http.get(`${PLANS}?page=2`).set(bearer(p.privateKey)).expect(200);
      expect(last.body.data.data).toEqual(made.slice(10));
      const past = await t.http.get(`${PLANS}?page=9`).set(bearer(p.privateKey)).expect(200);
      expect(past.body.data).toEqual({ data: [], total: 12, page: 9, pageSize: 10, totalPages: 2 });
      const all = await t.http.get(`${PLANS}?pageSize=100`).set(bearer(p.privateKey)).expect(200);
      expect(all.body.data.data).toEqual(made);
      const one = await t.http.get(`${PLANS}?pageSize=1`).set(bearer(p.privateKey)).expect(200);
      expect(one.body.data).toEqual({ data: [made[0]], total: 12, page: 1, pageSize: 1, totalPages: 12 });
    });

    it('searches the name or slug, case-insensitively, with wildcards taken literally', async () => {
      const gold = await t.http.get(`${PLANS}?search=gOLD%20tier`).set(bearer(p.privateKey)).expect(200);
      expect(gold.body.data.data.map((x: any) => x.slug)).toEqual(['tier-3', 'tier-6', 'tier-9', 'tier-12']);
      const slugs = await t.http.get(`${PLANS}?search=TIER-1`).set(bearer(p.privateKey)).expect(200);
      expect(slugs.body.data.data.map((x: any) => x.slug)).toEqual([
        'tier-1',
        'tier-10',
        'tier-11',
        'tier-12',
      ]);
      for (const q of ['%25', '_', 'nothing-like-this']) {
        expect(
          (await t.http.get(`${PLANS}?search=${q}`).set(bearer(p.privateKey)).expect(200)).body.data.total,
        ).toBe(0);
      }
    });

    it('refuses out-of-range paging and unknown parameters', async () => {
      for (const q of [
        'page=0',
        'page=-1',
        'pageSize=0',
        'pageSize=101',
        'page=1.5',
        'pageSize=x',
        `search=${'s'.repeat(129)}`,
        'sort=id',
      ]) {
        expectError(await t.http.get(`${PLANS}?${q}`).set(bearer(p.privateKey)), 400, 'VALIDATION_FAILED');
      }
    });
  });

  describe('tenancy', () => {
    it("another project's key never reads, changes, deletes or lists this project's features and plans", async () => {
      const f = await createFeature({ slug: slug('private-f') });
      const plan = await createPlan({ slug: slug('private-p'), quotas: [{ featureId: f.id, limit: 1 }] });

      expectError(await t.http.get(`${FEATURES}/${f.id}`).set(B()), 404, 'FEATURE_NOT_FOUND');
      expectError(
        await t.http.patch(`${FEATURES}/${f.id}`).set(B()).send({ name: 'hijacked' }),
        404,
        'FEATURE_NOT_FOUND',
      );
      expectError(await t.http.delete(`${FEATURES}/${f.id}`).set(B()), 404, 'FEATURE_NOT_FOUND');
      expectError(await t.http.get(`${PLANS}/${plan.id}`).set(B()), 404, 'PLAN_NOT_FOUND');
      expectError(
        await t.http.patch(`${PLANS}/${plan.id}`).set(B()).send({ name: 'hijacked' }),
        404,
        'PLAN_NOT_FOUND',
      );
      expectError(await t.http.delete(`${PLANS}/${plan.id}`).set(B()), 404, 'PLAN_NOT_FOUND');

      // B's own plan cannot take A's feature either
      const bPlan = await createPlan({}, B());
      expectError(
        await t.http
          .patch(`${PLANS}/${bPlan.id}`)
          .set(B())
          .send({ quotas: [{ featureId: f.id, limit: 1 }] }),
        404,
        'FEATURE_NOT_FOUND',
      );

      const bFeatures = await t.http.get(`${FEATURES}?pageSize=100`).set(B()).expect(200);
      const bPlans = await t.http.get(`${PLANS}?pageSize=100`).set(B()).expect(200);
      expect(bFeatures.body.data.data.every((x: any) => x.projectId === b.id)).toBe(true);
      expect(bPlans.body.data.data.every((x: any) => x.projectId === b.id)).toBe(true);
      expect(bFeatures.body.data.data.map((x: any) => x.id)).not.toContain(f.id);
      expect(bPlans.body.data.data.map((x: any) => x.id)).not.toContain(plan.id);
      expect((await t.http.get(`${PLANS}?search=${plan.slug}`).set(B()).expect(200)).body.data.total).toBe(0);
      expect((await t.http.get(`${FEATURES}?search=${f.slug}`).set(B()).expect(200)).body.data.total).toBe(0);

      // and A's data is untouched
      expect((await t.http.get(`${FEATURES}/${f.id}`).set(A()).expect(200)).body.data).toEqual(f);
      expect((await t.http.get(`${PLANS}/${plan.id}`).set(A()).expect(200)).body.data).toEqual(plan);
    });

    it('stores the project on every quota, on create and update, and the database refuses a plan or feature of another project', async () => {
      const quotaRows = (planId: number) =>
        t.dataSource.query(
          'SELECT feature_id, project_id FROM quotas WHERE plan_id = $1 ORDER BY feature_id',
          [planId],
        );
      const [f, g] = [await createFeature(), await createFeature()];
      const plan = await createPlan({ quotas: [{ featureId: f.id, limit: 1 }] });
      const bFeature = await createFeature({}, B());
      const bPlan = await createPlan({ quotas: [{ featureId: bFeature.id, limit: 1 }] }, B());
      expect(await quotaRows(plan.id)).toEqual([{ feature_id: f.id, project_id: a.id }]);
      expect(await quotaRows(bPlan.id)).toEqual([{ feature_id: bFeature.id, project_id: b.id }]);

      // an update that keeps one quota, changes it and adds another
      await t.http
        .patch(`${PLANS}/${plan.id}`)
        .set(A())
        .send({
          quotas: [
            { featureId: f.id, limit: 2 },
            { featureId: g.id, limit: 3 },
          ],
        })
        .expect(200);
      expect(await quotaRows(plan.id)).toEqual([
        { feature_id: f.id, project_id: a.id },
        { feature_id: g.id, project_id: a.id },
      ]);

      // the foreign keys include project_id: a quota cannot name another project's plan or feature
      const insert = (projectId: string, planId: number, featureId: number) =>
        t.dataSource.query(
          'INSERT INTO quotas (project_id, plan_id, feature_id, quota_limit) VALUES ($1, $2, $3, 1)',
          [projectId, planId, featureId],
        );
      await expect(insert(b.id, plan.id, bFeature.id)).rejects.toMatchObject({
        driverError: { constraint: 'quotas_plan_fk' },
      });
      await expect(insert(a.id, plan.id, bFeature.id)).rejects.toMatchObject({
        driverError: { constraint: 'quotas_feature_fk' },
      });

      // an insert of the previous version, without the column (during a rolling update): filled from the plan
      const h = await createFeature();
      await t.dataSource.query('INSERT INTO quotas (plan_id, feature_id, quota_limit) VALUES ($1, $2, 1)', [
        plan.id,
        h.id,
      ]);
      expect(await quotaRows(plan.id)).toContainEqual({ feature_id: h.id, project_id: a.id });
    });
  });

  describe('documentation', () => {
    it('documents the routes, the list order and the error codes in the OpenAPI document', async () => {
      const doc = inlineShared((await t.http.get('/docs-json').expect(200)).body);
      expect(Object.keys(doc.paths['/api/private/v1/plans']).sort()).toEqual(['get', 'post']);
      expect(Object.keys(doc.paths['/api/private/v1/plans/{planId}']).sort()).toEqual([
        'delete',
        'get',
        'patch',
      ]);
      expect(Object.keys(doc.paths['/api/private/v1/features/{featureId}']).sort()).toEqual([
        'delete',
        'get',
        'patch',
      ]);
      const search = doc.paths['/api/private/v1/plans'].get.parameters.find((x: any) => x.name === 'search');
      expect(search.description).toMatch(/id, ascending/);
      expect(Object.keys(doc.paths['/api/private/v1/plans/{planId}'].patch.responses)).toEqual(
        expect.arrayContaining(['200', '404', '409']),
      );
      expect(doc.components.schemas.PlanView.properties.quotas).toBeDefined();
    });
  });
});
