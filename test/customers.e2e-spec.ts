import * as bcrypt from 'bcrypt';
import request from 'supertest';
import { searchWindows, TrigramStats } from '../src/customers/customers.service';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError, ISO_MS } from './support/expect';
import { insertPlan as insertPlanRow } from './support/fixtures';

describe('customers', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);
  let seq = 0;
  const uname = (prefix = 'user') => `${prefix}${String(++seq).padStart(6, '0')}`.slice(0, 16);

  async function createCustomer(body: Record<string, unknown> = {}, auth = A()) {
    const res = await t.http
      .post('/api/private/v1/customers')
      .set(auth)
      .send({ username: uname(), ...body });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  const insertPlan = (projectId: string, slug: string, value: number, group: string) =>
    insertPlanRow(t.dataSource, { projectId, slug, name: slug.toUpperCase(), value, group });

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'A' });
    b = await t.createProject({ name: 'B' });
  });
  afterAll(() => t.close());

  describe('create', () => {
    it('answers 201 with the short representation, the mirrored username identifier and defaults', async () => {
      const res = await t.http
        .post('/api/private/v1/customers')
        .set(A())
        .send({ username: 'Ada_Lovelace', identifiers: [{ type: 'email', value: 'ada@example.com' }] })
        .expect(201);
      const c = res.body.data;
      expect(c).toEqual({
        id: expect.any(Number),
        username: 'Ada_Lovelace',
        projectId: a.id,
        enabled: true,
        temporary: false,
        timeZone: null,
        identifiers: [
          { id: expect.any(Number), type: 'username', value: 'Ada_Lovelace' },
          { id: expect.any(Number), type: 'email', value: 'ada@example.com' },
        ],
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });
      expect(c.credentials).toBeUndefined();
    });

    it('stores the password as a bcrypt credential of type 1', async () => {
      const c = await createCustomer({ password: 'correct horse' });
      const full = await t.http.get(`/api/private/v1/customers/${c.id}`).set(A()).expect(200);
      expect(full.body.data.credentials).toEqual([
        { id: expect.any(Number), type: 1, createdAt: expect.stringMatching(ISO_MS) },
      ]);
      const [row] = await t.dataSource.query(
        'SELECT secret_hash FROM customer_credentials WHERE customer_id = $1',
        [c.id],
      );
      expect(row.secret_hash).toMatch(/^\$2[aby]\$/);
      expect(await bcrypt.compare('correct horse', row.secret_hash)).toBe(true);
      expect(JSON.stringify(full.body)).not.toContain(row.secret_hash);
    });

    it('documents the credential type: an integer, 1 for a password', async () => {
      const doc = (await t.http.get('/docs-json').expect(200)).body;
      const type = doc.components.schemas.CredentialView.properties.type;
      expect(type).toMatchObject({ type: 'integer', enum: [1] });
      expect(type.description).toMatch(/`1` is a password/);
    });

    it.each([
      ['username of 7 characters', { username: 'abcdefg' }, 'username'],
      ['username of 17 characters', { username: 'a'.repeat(17) }, 'username'],
      ['username starting with _', { username: '_abcdefgh' }, 'username'],
      ['username with a space', { username: 'abc defgh' }, 'username'],
      ['missing username', {}, 'username'],
      [
        'identifier type of 17 characters',
        { identifiers: [{ type: 'a'.repeat(17), value: 'x' }] },
        'identifiers.0.type',
      ],
      ['identifier type username', { identifiers: [{ type: 'username', value: 'x' }] }, 'identifiers.0.type'],
      [
        'identifier type with capitals',
        { identifiers: [{ type: 'Email', value: 'x' }] },
        'identifiers.0.type',
      ],
      [
        'identifier value of 129 characters',
        { identifiers: [{ type: 'email', value: 'v'.repeat(129) }] },
        'identifiers.0.value',
      ],
      ['empty identifier value', { identifiers: [{ type: 'email', value: '' }] }, 'identifiers.0.value'],
      ['password of 7 characters', { password: 'short12' }, 'password'],
      ['enabled not boolean', { enabled: 'yes' }, 'enabled'],
      ['unknown field', { nickname: 'x' }, 'nickname'],
      [
        'unknown nested field',
        { identifiers: [{ type: 'email', value: 'x', extra: 1 }] },
        'identifiers.0.extra',
      ],
    ])('400 VALIDATION_FAILED for %s', async (_, patch, field) => {
      const body = { username: 'valid_name', ...patch } as Record<string, unknown>;
      if (!('username' in patch) && Object.keys(patch).length === 0) delete body.username;
      const res = await t.http.post('/api/private/v1/customers').set(A()).send(body);
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      const [{ n }] = await t.dataSource.query(
        `SELECT count(*)::int AS n FROM customers WHERE username = 'valid_name'`,
      );
      expect(n).toBe(0);
    });

    it('accepts the boundaries: username of 8 and 16, type of 16, value of 128', async () => {
      await createCustomer({ username: 'abcdefgh' });
      await createCustomer({
        username: 'p'.repeat(16),
        identifiers: [{ type: 't'.repeat(16), value: 'v'.repeat(128) }],
      });
    });

    it('409 USERNAME_TAKEN case-insensitively, 409 IDENTIFIER_TAKEN, and nothing half-written', async () => {
      await createCustomer({
        username: 'Unique_Name1',
        identifiers: [{ type: 'email', value: 'taken@example.com' }],
      });
      expectError(
        await t.http.post('/api/private/v1/customers').set(A()).send({ username: 'unique_name1' }),
        409,
        'USERNAME_TAKEN',
      );
      const res = await t.http
        .post('/api/private/v1/customers')
        .set(A())
        .send({ username: 'other_name1', identifiers: [{ type: 'email', value: 'taken@example.com' }] });
      expectError(res, 409, 'IDENTIFIER_TAKEN');
      const rows = await t.dataSource.query(`SELECT 1 FROM customers WHERE username = 'other_name1'`);
      expect(rows).toHaveLength(0);
      // the same username and identifier are free in another project
      await createCustomer(
        { username: 'unique_name1', identifiers: [{ type: 'email', value: 'taken@example.com' }] },
        B(),
      );
    });

    it('400 for the same pair twice in one request; several identifiers of one type are fine', async () => {
      const dup = [
        { type: 'email', value: 'x@example.com' },
        { type: 'email', value: 'x@example.com' },
      ];
      expectError(
        await t.http.post('/api/private/v1/customers').set(A()).send({ username: uname(), identifiers: dup }),
        400,
        'VALIDATION_FAILED',
      );
      const c = await createCustomer({
        identifiers: [
          { type: 'email', value: 'one@example.com' },
          { type: 'email', value: 'two@example.com' },
        ],
      });
      expect(c.identifiers).toHaveLength(3);
    });

    it('concurrent creates of one username: one 201 and the others 409, never a 500', async () => {
      const name = uname('race');
      const results = await Promise.all(
        Array.from({ length: 8 }, () =>
          t.http.post('/api/private/v1/customers').set(A()).send({ username: name }),
        ),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
      results
        .filter((r) => r.status === 409)
        .forEach((r) => expect(r.body.error.code).toBe('USERNAME_TAKEN'));
    });

    it('grants every free plan of the project as a permanent subscription', async () => {
      const p = await t.createProject();
      const free1 = await insertPlan(p.id, 'free-a', 0, 'alpha');
      const free2 = await insertPlan(p.id, 'free-b', 0, 'beta');
      await insertPlan(p.id, 'paid', 10, 'alpha');
      const c = await createCustomer({}, bearer(p.privateKey));
      const subs = await t.http
        .get(`/api/private/v1/customers/${c.id}/subscriptions`)
        .set(bearer(p.privateKey))
        .expect(200);
      expect(subs.body.data).toEqual([
        expect.objectContaining({
          planId: free1,
          planName: 'FREE-A',
          group: 'alpha',
          validTo: null,
          status: 'active',
          source: 'signup',
          codeId: null,
        }),
        expect.objectContaining({
          planId: free2,
          planName: 'FREE-B',
          group: 'beta',
          validTo: null,
          status: 'active',
          source: 'signup',
          codeId: null,
        }),
      ]);
      expect(new Date(subs.body.data[0].validFrom).getTime()).toBeLessThanOrEqual(Date.now());
    });
  });

  describe('read and resolve', () => {
    it('reads the full record: credentials, identifiers with readonly and timestamps', async () => {
      const c = await createCustomer({ identifiers: [{ type: 'external_user_id', value: 'ext-1' }] });
      const res = await t.http.get(`/api/private/v1/customers/${c.id}`).set(A()).expect(200);
      expect(res.body.data).toEqual({
        id: c.id,
        username: c.username,
        projectId: a.id,
        enabled: true,
        temporary: false,
        timeZone: null,
        createdAt: c.createdAt,
        updatedAt: c.updatedAt,
        credentials: [],
        identifiers: [
          {
            id: expect.any(Number),
            type: 'username',
            value: c.username,
            readonly: true,
            createdAt: expect.stringMatching(ISO_MS),
            updatedAt: expect.stringMatching(ISO_MS),
          },
          {
            id: expect.any(Number),
            type: 'external_user_id',
            value: 'ext-1',
            readonly: false,
            createdAt: expect.stringMatching(ISO_MS),
            updatedAt: expect.stringMatching(ISO_MS),
          },
        ],
      });
    });

    it('resolves by any identifier, by username case-insensitively, else 404', async () => {
      const c = await createCustomer({
        username: 'Resolve_Me1',
        identifiers: [{ type: 'email', value: 'r@example.com' }],
      });
      const byEmail = await t.http
        .post('/api/private/v1/customers/resolve')
        .set(A())
        .send({ customer: { type: 'email', value: 'r@example.com' } })
        .expect(200);
      expect(byEmail.body.data.id).toBe(c.id);
      expect(
        byEmail.body.data.identifiers.every((i: { readonly: boolean }) => typeof i.readonly === 'boolean'),
      ).toBe(true);
      expect(byEmail.body.data.credentials).toEqual([]);
      const byName = await t.http
        .post('/api/private/v1/customers/resolve')
        .set(A())
        .send({ customer: { type: 'username', value: 'resolve_me1' } })
        .expect(200);
      expect(byName.body.data.id).toBe(c.id);
      expectError(
        await t.http
          .post('/api/private/v1/customers/resolve')
          .set(A())
          .send({ customer: { type: 'email', value: 'nobody@example.com' } }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await t.http
          .post('/api/private/v1/customers/resolve')
          .set(A())
          .send({ customer: { type: 'email' } }),
        400,
        'VALIDATION_FAILED',
      );
      const long = await t.http
        .post('/api/private/v1/customers/resolve')
        .set(A())
        .send({ customer: { type: 'email', value: 'v'.repeat(129) } });
      expectError(long, 400, 'VALIDATION_FAILED');
      expect(long.body.error.details[0].field).toBe('customer.value');
    });

    it('400 for a non-numeric id, 404 for an unknown one', async () => {
      expectError(await t.http.get('/api/private/v1/customers/abc').set(A()), 400, 'VALIDATION_FAILED');
      expectError(await t.http.get('/api/private/v1/customers/99999999').set(A()), 404, 'CUSTOMER_NOT_FOUND');
    });
  });

  describe('update', () => {
    it('keeps the mirrored identifier in step with the username and clears temporary', async () => {
      const c = await createCustomer();
      await t.dataSource.query('UPDATE customers SET temporary = true WHERE id = $1', [c.id]);
      const res = await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(A())
        .send({ username: 'Renamed_User1' })
        .expect(200);
      expect(res.body.data.username).toBe('Renamed_User1');
      expect(res.body.data.temporary).toBe(false);
      const mirrored = res.body.data.identifiers.filter((i: { type: string }) => i.type === 'username');
      expect(mirrored).toEqual([
        expect.objectContaining({ value: 'Renamed_User1', readonly: true, id: c.identifiers[0].id }),
      ]);
      const resolved = await t.http
        .post('/api/private/v1/customers/resolve')
        .set(A())
        .send({ customer: { type: 'username', value: 'Renamed_User1' } })
        .expect(200);
      expect(resolved.body.data.id).toBe(c.id);
    });

    it('clears temporary when only a password is set, and not on other changes', async () => {
      const c = await createCustomer();
      await t.dataSource.query('UPDATE customers SET temporary = true WHERE id = $1', [c.id]);
      const enabled = await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(A())
        .send({ enabled: true })
        .expect(200);
      expect(enabled.body.data.temporary).toBe(true);
      const res = await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(A())
        .send({ password: 'a-new-password' })
        .expect(200);
      expect(res.body.data.temporary).toBe(false);
      expect(res.body.data.username).toBe(c.username);
    });

    it('replaces the extra identifiers, keeping ids of the pairs that stay', async () => {
      const c = await createCustomer({
        identifiers: [
          { type: 'email', value: 'keep@example.com' },
          { type: 'email', value: 'drop@example.com' },
        ],
      });
      const keepId = c.identifiers.find((i: { value: string }) => i.value === 'keep@example.com').id;
      const res = await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(A())
        .send({
          identifiers: [
            { type: 'email', value: 'keep@example.com' },
            { type: 'phone', value: '+100' },
          ],
        })
        .expect(200);
      const ids = res.body.data.identifiers;
      expect(ids.map((i: { type: string; value: string }) => `${i.type}:${i.value}`)).toEqual([
        `username:${c.username}`,
        'email:keep@example.com',
        'phone:+100',
      ]);
      expect(ids.find((i: { value: string }) => i.value === 'keep@example.com').id).toBe(keepId);
    });

    it('changes the password: the old one no longer verifies; creates one when absent', async () => {
      const c = await createCustomer({ password: 'first-password' });
      await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(A())
        .send({ password: 'second-password' })
        .expect(200);
      const [row] = await t.dataSource.query(
        'SELECT secret_hash FROM customer_credentials WHERE customer_id = $1',
        [c.id],
      );
      expect(await bcrypt.compare('first-password', row.secret_hash)).toBe(false);
      expect(await bcrypt.compare('second-password', row.secret_hash)).toBe(true);
      const d = await createCustomer();
      const res = await t.http
        .patch(`/api/private/v1/customers/${d.id}`)
        .set(A())
        .send({ password: 'brand-new-pw' })
        .expect(200);
      expect(res.body.data.credentials).toHaveLength(1);
    });

    it('disables and refuses taken usernames and identifiers without changing anything', async () => {
      const c = await createCustomer({ identifiers: [{ type: 'email', value: 'mine@example.com' }] });
      const other = await createCustomer({ identifiers: [{ type: 'email', value: 'theirs@example.com' }] });
      const off = await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(A())
        .send({ enabled: false })
        .expect(200);
      expect(off.body.data.enabled).toBe(false);
      expectError(
        await t.http
          .patch(`/api/private/v1/customers/${c.id}`)
          .set(A())
          .send({ username: other.username.toUpperCase(), enabled: true }),
        409,
        'USERNAME_TAKEN',
      );
      // the same case too: the mirrored identifier would collide first if it were written first
      expectError(
        await t.http
          .patch(`/api/private/v1/customers/${c.id}`)
          .set(A())
          .send({ username: other.username, enabled: true }),
        409,
        'USERNAME_TAKEN',
      );
      expectError(
        await t.http
          .patch(`/api/private/v1/customers/${c.id}`)
          .set(A())
          .send({ identifiers: [{ type: 'email', value: 'theirs@example.com' }] }),
        409,
        'IDENTIFIER_TAKEN',
      );
      const after = await t.http.get(`/api/private/v1/customers/${c.id}`).set(A()).expect(200);
      expect(after.body.data.enabled).toBe(false);
      expect(after.body.data.username).toBe(c.username);
      expect(after.body.data.identifiers.map((i: { value: string }) => i.value)).toContain(
        'mine@example.com',
      );
      expectError(
        await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send({ username: 'short' }),
        400,
        'VALIDATION_FAILED',
      );
      for (const body of [
        { username: null },
        { enabled: null },
        { password: null },
        { identifiers: null },
        { identifiers: [[]] },
        { identifiers: ['x'] },
      ]) {
        expectError(
          await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send(body),
          400,
          'VALIDATION_FAILED',
        );
      }
      expectError(
        await t.http
          .post('/api/private/v1/customers')
          .set(A())
          .send({ username: uname(), identifiers: [[]] }),
        400,
        'VALIDATION_FAILED',
      );
      // on create, null stands for absent, as for the other optional fields there (it was a 500)
      const noIdentifiers = await t.http
        .post('/api/private/v1/customers')
        .set(A())
        .send({ username: uname(), identifiers: null })
        .expect(201);
      expect(noIdentifiers.body.data.identifiers.map((i: { type: string }) => i.type)).toEqual(['username']);
      expectError(
        await t.http.patch('/api/private/v1/customers/99999999').set(A()).send({ enabled: true }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
    });
  });

  describe('delete', () => {
    it('removes the customer with identifiers, credentials and subscriptions; the redeemed code keeps its record', async () => {
      const plan = await insertPlan(a.id, `freebie${++seq}`, 0, `g${seq}`);
      const c = await createCustomer({
        password: 'some-password',
        identifiers: [{ type: 'email', value: 'gone@example.com' }],
      });
      const [batch] = await t.dataSource.query(
        'INSERT INTO code_batches (project_id, plan_id, count) VALUES ($1, $2, 1) RETURNING id',
        [a.id, plan],
      );
      const [code] = await t.dataSource.query(
        `INSERT INTO codes (project_id, batch_id, plan_id, code, status, redeemed_by_customer_id, redeemed_at) VALUES ($1, $2, $3, $4, 'redeemed', $5, now()) RETURNING id`,
        [a.id, batch.id, plan, `DEL${String(seq).padStart(13, '0')}`, c.id],
      );
      const res = await t.http.delete(`/api/private/v1/customers/${c.id}`).set(A()).expect(200);
      expect(res.body.data).toEqual({ success: true });
      expectError(await t.http.get(`/api/private/v1/customers/${c.id}`).set(A()), 404, 'CUSTOMER_NOT_FOUND');
      for (const table of ['customer_identifiers', 'customer_credentials', 'subscriptions']) {
        const rows = await t.dataSource.query(`SELECT 1 FROM ${table} WHERE customer_id = $1`, [c.id]);
        expect(rows).toHaveLength(0);
      }
      const [kept] = await t.dataSource.query(
        'SELECT status, redeemed_by_customer_id FROM codes WHERE id = $1',
        [code.id],
      );
      expect(kept).toEqual({ status: 'redeemed', redeemed_by_customer_id: null });
      expectError(
        await t.http.delete(`/api/private/v1/customers/${c.id}`).set(A()),
        404,
        'CUSTOMER_NOT_FOUND',
      );
    });
  });

  describe('list', () => {
    let p: TestProject;
    beforeAll(async () => {
      p = await t.createProject();
      const auth = bearer(p.privateKey);
      for (let i = 1; i <= 12; i++) {
        await t.http
          .post('/api/private/v1/customers')
          .set(auth)
          .send({
            username: `lister${String(i).padStart(4, '0')}`,
            identifiers: i === 5 ? [{ type: 'email', value: 'Needle_In@Haystack.example' }] : [],
          })
          .expect(201);
      }
    });

    it('pages newest first with the defaults page 1 and pageSize 10, list items in short form', async () => {
      const res = await t.http.get('/api/private/v1/customers').set(bearer(p.privateKey)).expect(200);
      const page = res.body.data;
      expect(page).toMatchObject({ total: 12, page: 1, pageSize: 10, totalPages: 2 });
      expect(page.data).toHaveLength(10);
      expect(page.data[0].username).toBe('lister0012');
      expect(page.data[0]).toEqual({
        id: expect.any(Number),
        username: 'lister0012',
        projectId: p.id,
        enabled: true,
        temporary: false,
        timeZone: null,
        identifiers: [{ id: expect.any(Number), type: 'username', value: 'lister0012' }],
        createdAt: expect.stringMatching(ISO_MS),
        updatedAt: expect.stringMatching(ISO_MS),
      });
      const second = await t.http
        .get('/api/private/v1/customers?page=2')
        .set(bearer(p.privateKey))
        .expect(200);
      expect(second.body.data.data.map((c: { username: string }) => c.username)).toEqual([
        'lister0002',
        'lister0001',
      ]);
      const past = await t.http.get('/api/private/v1/customers?page=9').set(bearer(p.privateKey)).expect(200);
      expect(past.body.data).toMatchObject({ data: [], total: 12, page: 9 });
    });

    it('keeps the total exact through creations (also concurrent and direct), deletions and failures', async () => {
      const q = await t.createProject();
      const auth = bearer(q.privateKey);
      const total = async () =>
        (await t.http.get('/api/private/v1/customers').set(auth).expect(200)).body.data.total;
      const made = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          t.http
            .post('/api/private/v1/customers')
            .set(auth)
            .send({ username: `counted${String(i).padStart(4, '0')}` }),
        ),
      );
      expect(made.map((r) => r.status)).toEqual(Array(8).fill(201));
      expect(await total()).toBe(8);
      await t.http.post('/api/private/v1/customers').set(auth).send({ username: 'counted0000' }).expect(409);
      await t.dataSource.query(
        `INSERT INTO customers (project_id, username) VALUES ($1, 'direct0001'), ($1, 'direct0002')`,
        [q.id],
      );
      expect(await total()).toBe(10);
      await t.http.delete(`/api/private/v1/customers/${made[0].body.data.id}`).set(auth).expect(200);
      expect(await total()).toBe(9);
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM customers WHERE project_id = $1',
        [q.id],
      );
      expect(n).toBe(9);
    });

    it('accepts pageSize 1 and 100, refuses 0, 101, page 0 and non-integers', async () => {
      await t.http.get('/api/private/v1/customers?pageSize=1').set(bearer(p.privateKey)).expect(200);
      await t.http.get('/api/private/v1/customers?pageSize=100').set(bearer(p.privateKey)).expect(200);
      for (const q of [
        'pageSize=0',
        'pageSize=101',
        'page=0',
        'page=1.5',
        'page=x',
        'pageSize=',
        'unknown=1',
      ]) {
        expectError(
          await t.http.get(`/api/private/v1/customers?${q}`).set(bearer(p.privateKey)),
          400,
          'VALIDATION_FAILED',
        );
      }
    });

    it('searches the username or any identifier value, case-insensitively, with wildcards taken literally', async () => {
      const s = (q: string) =>
        t.http.get(`/api/private/v1/customers?search=${encodeURIComponent(q)}`).set(bearer(p.privateKey));
      expect((await s('LISTER001')).body.data.data.map((c: { username: string }) => c.username)).toEqual([
        'lister0012',
        'lister0011',
        'lister0010',
      ]);
      const byIdentifier = (await s('needle_in')).body.data;
      expect(byIdentifier.total).toBe(1);
      expect(byIdentifier.data[0].username).toBe('lister0005');
      expect((await s('%')).body.data.total).toBe(0);
      expect((await s('lister_')).body.data.total).toBe(0);
    });
  });

  describe('search', () => {
    type Found = { total: number; data: Array<{ id: number; username: string }> };
    let p: TestProject;
    const P = () => bearer(p.privateKey);
    const search = async (term: string, extra = '', http = t.http, auth = P()): Promise<Found> =>
      (
        await http
          .get(`/api/private/v1/customers?search=${encodeURIComponent(term)}${extra}`)
          .set(auth)
          .expect(200)
      ).body.data;
    const names = (found: Found) => found.data.map((c) => c.username);
    const make = async (username: string, identifiers: Array<{ type: string; value: string }> = []) =>
      (await t.http.post('/api/private/v1/customers').set(P()).send({ username, identifiers }).expect(201))
        .body.data as { id: number };
    const patch = (id: number, body: Record<string, unknown>) =>
      t.http.patch(`/api/private/v1/customers/${id}`).set(P()).send(body).expect(200);
    const trigramStats = async (): Promise<TrigramStats | undefined> => {
      const [row] = await t.dataSource.query(
        `SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats_ext_exprs
          WHERE statistics_name = 'customer_search_trgm_stats' AND NOT inherited`,
      );
      return row?.elems
        ? {
            frequencies: new Map(row.elems.map((e: string, i: number) => [e, row.freqs[i]])),
            unlisted: row.freqs[row.elems.length],
          }
        : undefined;
    };

    beforeAll(async () => {
      p = await t.createProject();
    });

    it('finds an identifier added by PATCH, and no longer once it is replaced or removed', async () => {
      const c = await make('patched0001');
      expect((await search('Added-Later')).total).toBe(0);
      await patch(c.id, { identifiers: [{ type: 'email', value: 'added-later@patch.example' }] });
      expect(names(await search('Added-Later'))).toEqual(['patched0001']);
      await patch(c.id, { identifiers: [{ type: 'email', value: 'replaced@patch.example' }] });
      expect((await search('added-later')).total).toBe(0);
      expect(names(await search('REPLACED@'))).toEqual(['patched0001']);
      await patch(c.id, { identifiers: [] });
      expect((await search('replaced@')).total).toBe(0);
      expect(names(await search('patched0001'))).toEqual(['patched0001']);
    });

    it('finds a renamed customer by its new username, not by the old one', async () => {
      const c = await make('oldname0001', [{ type: 'email', value: 'keeps@rename.example' }]);
      await patch(c.id, { username: 'NewName0001' });
      expect((await search('oldname0001')).total).toBe(0);
      expect(names(await search('newname0001'))).toEqual(['NewName0001']);
      expect(names(await search('keeps@rename'))).toEqual(['NewName0001']);
    });

    it('drops a deleted customer from the page and the total', async () => {
      const first = await make('deleted0001');
      await make('deleted0002');
      expect((await search('deleted000')).total).toBe(2);
      await t.http.delete(`/api/private/v1/customers/${first.id}`).set(P()).expect(200);
      const after = await search('deleted000');
      expect({ total: after.total, names: names(after) }).toEqual({ total: 1, names: ['deleted0002'] });
    });

    it('never matches across two values of one customer', async () => {
      await make('spanfirst01', [
        { type: 'email', value: 'secondvalue@span.example' },
        { type: 'phone', value: '+4412345' },
      ]);
      for (const term of [
        'first01second',
        'first01 second',
        'first01\nsecond',
        'first01\u001fsecond',
        'example+44',
        '\u001f+44',
        'e\u001f',
      ]) {
        expect({ term, total: (await search(term)).total }).toEqual({ term, total: 0 });
      }
      for (const term of ['spanfirst01', 'second', 'span.example', '+4412345']) {
        expect({ term, found: names(await search(term)) }).toEqual({ term, found: ['spanfirst01'] });
      }
    });

    it('finds a value that holds the separator character of the search documents', async () => {
      await make('oddvalue01', [{ type: 'note', value: 'left\u001fRight' }]);
      expect(names(await search('t\u001fr'))).toEqual(['oddvalue01']);
      expect(names(await search('\u001f'))).toEqual(['oddvalue01']);
      expect(names(await search('right'))).toEqual(['oddvalue01']);
      expect((await search('leftright')).total).toBe(0);
      expect((await search('e01\u001fleft')).total).toBe(0);
    });

    it('takes %, _ and \\ in a term literally', async () => {
      await make('literal0001', [{ type: 'coupon', value: '50%_OFF\\now' }]);
      await make('literal0002', [{ type: 'coupon', value: '50xxOFFxnow' }]);
      expect(names(await search('50%_off\\'))).toEqual(['literal0001']);
      expect(names(await search('%_'))).toEqual(['literal0001']);
      expect(names(await search('f\\N'))).toEqual(['literal0001']);
      expect(names(await search('off'))).toEqual(['literal0002', 'literal0001']);
      for (const term of ['50__off', '50%off', '50_%off', '\\\\', 'f\\\\n', 'literal000_']) {
        expect({ term, total: (await search(term)).total }).toEqual({ term, total: 0 });
      }
    });

    it('counts a customer once when several of its values match; pages newest first; a page past the end is empty', async () => {
      for (let i = 1; i <= 5; i++)
        await make(`twins00000${i}`, [
          { type: 'email', value: `twins00000${i}@twins.example` },
          { type: 'external_id', value: `TWINS-${i}` },
        ]);
      const first = await search('twins', '&pageSize=2');
      expect({ total: first.total, names: names(first) }).toEqual({
        total: 5,
        names: ['twins000005', 'twins000004'],
      });
      expect(names(await search('twins', '&pageSize=2&page=3'))).toEqual(['twins000001']);
      for (const page of ['4', '10000000000']) {
        const past = await search('twins', `&pageSize=2&page=${page}`);
        expect({ total: past.total, data: past.data }).toEqual({ total: 5, data: [] });
      }
      expect((await search('TWINS-3')).total).toBe(1);
    });

    it('keeps the documents in step with identifiers written directly, also by concurrent transactions', async () => {
      const c = await make('direct00001');
      await t.dataSource.query(
        `INSERT INTO customer_identifiers (project_id, customer_id, type, value) VALUES ($1, $2, 'email', 'first@direct.example')`,
        [p.id, c.id],
      );
      expect(names(await search('first@direct'))).toEqual(['direct00001']);
      await t.dataSource.query(
        `UPDATE customer_identifiers SET value = 'moved@direct.example' WHERE customer_id = $1 AND type = 'email'`,
        [c.id],
      );
      expect((await search('first@direct')).total).toBe(0);
      expect(names(await search('moved@direct'))).toEqual(['direct00001']);
      // two transactions add an identifier each: the second waits for the first, then writes both
      const [one, two] = [t.dataSource.createQueryRunner(), t.dataSource.createQueryRunner()];
      try {
        await one.startTransaction();
        await two.startTransaction();
        await one.query(
          `INSERT INTO customer_identifiers (project_id, customer_id, type, value) VALUES ($1, $2, 'a', 'concurrent-one')`,
          [p.id, c.id],
        );
        const second = two.query(
          `INSERT INTO customer_identifiers (project_id, customer_id, type, value) VALUES ($1, $2, 'b', 'concurrent-two')`,
          [p.id, c.id],
        );
        await new Promise((r) => setTimeout(r, 200));
        await one.commitTransaction();
        await second;
        await two.commitTransaction();
      } finally {
        await one.release();
        await two.release();
      }
      expect(names(await search('concurrent-one'))).toEqual(['direct00001']);
      expect(names(await search('concurrent-two'))).toEqual(['direct00001']);
      await t.dataSource.query(
        `DELETE FROM customer_identifiers WHERE customer_id = $1 AND type IN ('a', 'email')`,
        [c.id],
      );
      expect((await search('concurrent-one')).total).toBe(0);
      expect((await search('moved@direct')).total).toBe(0);
      expect(names(await search('concurrent-two'))).toEqual(['direct00001']);
    });

    it('finds the same customers when only the rare part of a term drives the index scan (after ANALYZE)', async () => {
      const q = await t.createProject();
      // 60 customers sharing most of their trigrams (nrwq, box, example), 3 of them on @box2.
      await t.dataSource.query(
        `WITH c AS (INSERT INTO customers (project_id, username) SELECT $1, 'nrwq' || lpad(g::text, 5, '0') FROM generate_series(1, 60) g RETURNING id, username)
         INSERT INTO customer_identifiers (project_id, customer_id, type, value, readonly)
         SELECT $1, c.id, v.type, v.value, v.readonly FROM c, LATERAL (VALUES
           ('username', c.username, true),
           ('email', c.username || '@box' || (substr(c.username, 5)::int % 20) || '.example', false)) AS v(type, value, readonly)`,
        [q.id],
      );
      await t.http
        .post('/api/private/v1/customers')
        .set(bearer(q.privateKey))
        .send({ username: 'decoy00001', identifiers: [{ type: 'email', value: 'decoy@mybox2.example' }] })
        .expect(201);
      await t.dataSource.query('ANALYZE customer_search');
      const stats = await trigramStats();
      for (const term of ['@box2.', 'NRWQ00042@BOX'])
        expect({ term, windows: searchWindows(term, stats).length > 0 }).toEqual({ term, windows: true });
      const replica = request((await t.startReplica()).getHttpServer()); // a fresh copy of the statistics
      for (const http of [replica, t.http]) {
        const box2 = await search('@box2.', '', http, bearer(q.privateKey));
        expect({ total: box2.total, names: names(box2) }).toEqual({
          total: 3,
          names: ['nrwq00042', 'nrwq00022', 'nrwq00002'],
        });
        expect(names(await search('NRWQ00042@BOX', '', http, bearer(q.privateKey)))).toEqual(['nrwq00042']);
        expect((await search('mybox2.', '', http, bearer(q.privateKey))).total).toBe(1);
        expect((await search('nrwq000', '', http, bearer(q.privateKey))).total).toBe(60);
      }
    });

    it('leaves every customer of the database with the document of its identifier values', async () => {
      // (a customer inserted directly without identifiers has no document: nothing can match it)
      const [{ n }] = await t.dataSource.query(
        `SELECT count(*)::int AS n FROM customers c LEFT JOIN customer_search s ON s.customer_id = c.id
          WHERE (s.customer_id IS NOT NULL AND s.project_id <> c.project_id)
             OR coalesce(s.doc, '') <> (SELECT coalesce(string_agg(lower(i.value), chr(31) ORDER BY i.id), '') FROM customer_identifiers i WHERE i.customer_id = c.id)`,
      );
      expect(n).toBe(0);
      const [{ orphans }] = await t.dataSource.query(
        'SELECT count(*)::int AS orphans FROM customer_search s WHERE NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = s.customer_id)',
      );
      expect(orphans).toBe(0);
    });
  });

  describe('tenancy', () => {
    it("project B's key never reads, changes, lists or resolves project A's customers", async () => {
      const c = await createCustomer({ identifiers: [{ type: 'email', value: 'private-to-a@example.com' }] });
      expectError(await t.http.get(`/api/private/v1/customers/${c.id}`).set(B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(
        await t.http.patch(`/api/private/v1/customers/${c.id}`).set(B()).send({ enabled: false }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await t.http.delete(`/api/private/v1/customers/${c.id}`).set(B()),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await t.http.get(`/api/private/v1/customers/${c.id}/subscriptions`).set(B()),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await t.http
          .post('/api/private/v1/customers/resolve')
          .set(B())
          .send({ customer: { type: 'email', value: 'private-to-a@example.com' } }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      expectError(
        await t.http
          .post('/api/private/v1/customers/resolve')
          .set(B())
          .send({ customer: { type: 'username', value: c.username } }),
        404,
        'CUSTOMER_NOT_FOUND',
      );
      const listed = await t.http
        .get(`/api/private/v1/customers?search=${c.username}&pageSize=100`)
        .set(B())
        .expect(200);
      expect(listed.body.data.total).toBe(0);
      const still = await t.http.get(`/api/private/v1/customers/${c.id}`).set(A()).expect(200);
      expect(still.body.data.enabled).toBe(true);
    });

    it('stores the project on every credential, on create and update, and the database refuses a customer of another project', async () => {
      const credentialRows = (customerId: number) =>
        t.dataSource.query('SELECT type, project_id FROM customer_credentials WHERE customer_id = $1', [
          customerId,
        ]);
      const created = await createCustomer({ password: 'created-with-pw' });
      const later = await createCustomer();
      const inB = await createCustomer({ password: 'created-in-b' }, B());
      expect(await credentialRows(created.id)).toEqual([{ type: 1, project_id: a.id }]);
      expect(await credentialRows(inB.id)).toEqual([{ type: 1, project_id: b.id }]);
      expect(await credentialRows(later.id)).toEqual([]);

      // a password set by update: replaced on one customer, created on the other
      await t.http
        .patch(`/api/private/v1/customers/${created.id}`)
        .set(A())
        .send({ password: 'replaced-pw' })
        .expect(200);
      await t.http
        .patch(`/api/private/v1/customers/${later.id}`)
        .set(A())
        .send({ password: 'set-by-update' })
        .expect(200);
      expect(await credentialRows(created.id)).toEqual([{ type: 1, project_id: a.id }]);
      expect(await credentialRows(later.id)).toEqual([{ type: 1, project_id: a.id }]);

      // the foreign key includes project_id: a credential cannot name another project's customer
      await expect(
        t.dataSource.query(
          `INSERT INTO customer_credentials (project_id, customer_id, type, secret_hash) VALUES ($1, $2, 2, 'x')`,
          [b.id, later.id],
        ),
      ).rejects.toMatchObject({ driverError: { constraint: 'customer_credentials_customer_fk' } });

      // an insert of the previous version, without the column (during a rolling update): filled from the customer
      await t.dataSource.query(
        `INSERT INTO customer_credentials (customer_id, type, secret_hash) VALUES ($1, 2, 'x')`,
        [inB.id],
      );
      expect(await credentialRows(inB.id)).toContainEqual({ type: 2, project_id: b.id });
    });
  });
});
