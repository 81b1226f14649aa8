import * as bcrypt from 'bcrypt';
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
    const res = await t.http.post('/api/private/v1/customers').set(auth).send({ username: uname(), ...body });
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
      expect(full.body.data.credentials).toEqual([{ id: expect.any(Number), type: 1, createdAt: expect.stringMatching(ISO_MS) }]);
      const [row] = await t.dataSource.query('SELECT secret_hash FROM customer_credentials WHERE customer_id = $1', [c.id]);
      expect(row.secret_hash).toMatch(/^\$2[aby]\$/);
      expect(await bcrypt.compare('correct horse', row.secret_hash)).toBe(true);
      expect(JSON.stringify(full.body)).not.toContain(row.secret_hash);
    });

    it.each([
      ['username of 7 characters', { username: 'abcdefg' }, 'username'],
      ['username of 17 characters', { username: 'a'.repeat(17) }, 'username'],
      ['username starting with _', { username: '_abcdefgh' }, 'username'],
      ['username with a space', { username: 'abc defgh' }, 'username'],
      ['missing username', {}, 'username'],
      ['identifier type of 17 characters', { identifiers: [{ type: 'a'.repeat(17), value: 'x' }] }, 'identifiers.0.type'],
      ['identifier type username', { identifiers: [{ type: 'username', value: 'x' }] }, 'identifiers.0.type'],
      ['identifier type with capitals', { identifiers: [{ type: 'Email', value: 'x' }] }, 'identifiers.0.type'],
      ['identifier value of 129 characters', { identifiers: [{ type: 'email', value: 'v'.repeat(129) }] }, 'identifiers.0.value'],
      ['empty identifier value', { identifiers: [{ type: 'email', value: '' }] }, 'identifiers.0.value'],
      ['password of 7 characters', { password: 'short12' }, 'password'],
      ['enabled not boolean', { enabled: 'yes' }, 'enabled'],
      ['unknown field', { nickname: 'x' }, 'nickname'],
      ['unknown nested field', { identifiers: [{ type: 'email', value: 'x', extra: 1 }] }, 'identifiers.0.extra'],
    ])('400 VALIDATION_FAILED for %s', async (_, patch, field) => {
      const body = { username: 'valid_name', ...patch } as Record<string, unknown>;
      if (!('username' in patch) && Object.keys(patch).length === 0) delete body.username;
      const res = await t.http.post('/api/private/v1/customers').set(A()).send(body);
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
      const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM customers WHERE username = 'valid_name'`);
      expect(n).toBe(0);
    });

    it('accepts the boundaries: username of 8 and 16, type of 16, value of 128', async () => {
      await createCustomer({ username: 'abcdefgh' });
      await createCustomer({ username: 'p'.repeat(16), identifiers: [{ type: 't'.repeat(16), value: 'v'.repeat(128) }] });
    });

    it('409 USERNAME_TAKEN case-insensitively, 409 IDENTIFIER_TAKEN, and nothing half-written', async () => {
      await createCustomer({ username: 'Unique_Name1', identifiers: [{ type: 'email', value: 'taken@example.com' }] });
      expectError(await t.http.post('/api/private/v1/customers').set(A()).send({ username: 'unique_name1' }), 409, 'USERNAME_TAKEN');
      const res = await t.http
        .post('/api/private/v1/customers')
        .set(A())
        .send({ username: 'other_name1', identifiers: [{ type: 'email', value: 'taken@example.com' }] });
      expectError(res, 409, 'IDENTIFIER_TAKEN');
      const rows = await t.dataSource.query(`SELECT 1 FROM customers WHERE username = 'other_name1'`);
      expect(rows).toHaveLength(0);
      // the same username and identifier are free in another project
      await createCustomer({ username: 'unique_name1', identifiers: [{ type: 'email', value: 'taken@example.com' }] }, B());
    });

    it('400 for the same pair twice in one request; several identifiers of one type are fine', async () => {
      const dup = [{ type: 'email', value: 'x@example.com' }, { type: 'email', value: 'x@example.com' }];
      expectError(await t.http.post('/api/private/v1/customers').set(A()).send({ username: uname(), identifiers: dup }), 400, 'VALIDATION_FAILED');
      const c = await createCustomer({ identifiers: [{ type: 'email', value: 'one@example.com' }, { type: 'email', value: 'two@example.com' }] });
      expect(c.identifiers).toHaveLength(3);
    });

    it('concurrent creates of one username: one 201 and the others 409, never a 500', async () => {
      const name = uname('race');
      const results = await Promise.all(
        Array.from({ length: 8 }, () => t.http.post('/api/private/v1/customers').set(A()).send({ username: name })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
      results.filter((r) => r.status === 409).forEach((r) => expect(r.body.error.code).toBe('USERNAME_TAKEN'));
    });

    it('grants every free plan of the project as a permanent subscription', async () => {
      const p = await t.createProject();
      const free1 = await insertPlan(p.id, 'free-a', 0, 'alpha');
      const free2 = await insertPlan(p.id, 'free-b', 0, 'beta');
      await insertPlan(p.id, 'paid', 10, 'alpha');
      const c = await createCustomer({}, bearer(p.privateKey));
      const subs = await t.http.get(`/api/private/v1/customers/${c.id}/subscriptions`).set(bearer(p.privateKey)).expect(200);
      expect(subs.body.data).toEqual([
        expect.objectContaining({ planId: free1, planName: 'FREE-A', group: 'alpha', validTo: null, status: 'active', source: 'signup', codeId: null }),
        expect.objectContaining({ planId: free2, planName: 'FREE-B', group: 'beta', validTo: null, status: 'active', source: 'signup', codeId: null }),
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
        createdAt: c.createdAt,
        updatedAt: c.updatedAt,
        credentials: [],
        identifiers: [
          { id: expect.any(Number), type: 'username', value: c.username, readonly: true, createdAt: expect.stringMatching(ISO_MS), updatedAt: expect.stringMatching(ISO_MS) },
          { id: expect.any(Number), type: 'external_user_id', value: 'ext-1', readonly: false, createdAt: expect.stringMatching(ISO_MS), updatedAt: expect.stringMatching(ISO_MS) },
        ],
      });
    });

    it('resolves by any identifier, by username case-insensitively, else 404', async () => {
      const c = await createCustomer({ username: 'Resolve_Me1', identifiers: [{ type: 'email', value: 'r@example.com' }] });
      const byEmail = await t.http.post('/api/private/v1/customers/resolve').set(A()).send({ customer: { type: 'email', value: 'r@example.com' } }).expect(200);
      expect(byEmail.body.data.id).toBe(c.id);
      expect(byEmail.body.data.identifiers.every((i: { readonly: boolean }) => typeof i.readonly === 'boolean')).toBe(true);
      expect(byEmail.body.data.credentials).toEqual([]);
      const byName = await t.http.post('/api/private/v1/customers/resolve').set(A()).send({ customer: { type: 'username', value: 'resolve_me1' } }).expect(200);
      expect(byName.body.data.id).toBe(c.id);
      expectError(await t.http.post('/api/private/v1/customers/resolve').set(A()).send({ customer: { type: 'email', value: 'nobody@example.com' } }), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await t.http.post('/api/private/v1/customers/resolve').set(A()).send({ customer: { type: 'email' } }), 400, 'VALIDATION_FAILED');
      const long = await t.http.post('/api/private/v1/customers/resolve').set(A()).send({ customer: { type: 'email', value: 'v'.repeat(129) } });
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
      const res = await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send({ username: 'Renamed_User1' }).expect(200);
      expect(res.body.data.username).toBe('Renamed_User1');
      expect(res.body.data.temporary).toBe(false);
      const mirrored = res.body.data.identifiers.filter((i: { type: string }) => i.type === 'username');
      expect(mirrored).toEqual([expect.objectContaining({ value: 'Renamed_User1', readonly: true, id: c.identifiers[0].id })]);
      const resolved = await t.http.post('/api/private/v1/customers/resolve').set(A()).send({ customer: { type: 'username', value: 'Renamed_User1' } }).expect(200);
      expect(resolved.body.data.id).toBe(c.id);
    });

    it('replaces the extra identifiers, keeping ids of the pairs that stay', async () => {
      const c = await createCustomer({ identifiers: [{ type: 'email', value: 'keep@example.com' }, { type: 'email', value: 'drop@example.com' }] });
      const keepId = c.identifiers.find((i: { value: string }) => i.value === 'keep@example.com').id;
      const res = await t.http
        .patch(`/api/private/v1/customers/${c.id}`)
        .set(A())
        .send({ identifiers: [{ type: 'email', value: 'keep@example.com' }, { type: 'phone', value: '+100' }] })
        .expect(200);
      const ids = res.body.data.identifiers;
      expect(ids.map((i: { type: string; value: string }) => `${i.type}:${i.value}`)).toEqual([`username:${c.username}`, 'email:keep@example.com', 'phone:+100']);
      expect(ids.find((i: { value: string }) => i.value === 'keep@example.com').id).toBe(keepId);
    });

    it('changes the password: the old one no longer verifies; creates one when absent', async () => {
      const c = await createCustomer({ password: 'first-password' });
      await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send({ password: 'second-password' }).expect(200);
      const [row] = await t.dataSource.query('SELECT secret_hash FROM customer_credentials WHERE customer_id = $1', [c.id]);
      expect(await bcrypt.compare('first-password', row.secret_hash)).toBe(false);
      expect(await bcrypt.compare('second-password', row.secret_hash)).toBe(true);
      const d = await createCustomer();
      const res = await t.http.patch(`/api/private/v1/customers/${d.id}`).set(A()).send({ password: 'brand-new-pw' }).expect(200);
      expect(res.body.data.credentials).toHaveLength(1);
    });

    it('disables and refuses taken usernames and identifiers without changing anything', async () => {
      const c = await createCustomer({ identifiers: [{ type: 'email', value: 'mine@example.com' }] });
      const other = await createCustomer({ identifiers: [{ type: 'email', value: 'theirs@example.com' }] });
      const off = await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send({ enabled: false }).expect(200);
      expect(off.body.data.enabled).toBe(false);
      expectError(await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send({ username: other.username.toUpperCase(), enabled: true }), 409, 'USERNAME_TAKEN');
      expectError(await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send({ identifiers: [{ type: 'email', value: 'theirs@example.com' }] }), 409, 'IDENTIFIER_TAKEN');
      const after = await t.http.get(`/api/private/v1/customers/${c.id}`).set(A()).expect(200);
      expect(after.body.data.enabled).toBe(false);
      expect(after.body.data.username).toBe(c.username);
      expect(after.body.data.identifiers.map((i: { value: string }) => i.value)).toContain('mine@example.com');
      expectError(await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send({ username: 'short' }), 400, 'VALIDATION_FAILED');
      for (const body of [{ username: null }, { enabled: null }, { password: null }, { identifiers: null }, { identifiers: [[]] }, { identifiers: ['x'] }]) {
        expectError(await t.http.patch(`/api/private/v1/customers/${c.id}`).set(A()).send(body), 400, 'VALIDATION_FAILED');
      }
      expectError(await t.http.post('/api/private/v1/customers').set(A()).send({ username: uname(), identifiers: [[]] }), 400, 'VALIDATION_FAILED');
      expectError(await t.http.patch('/api/private/v1/customers/99999999').set(A()).send({ enabled: true }), 404, 'CUSTOMER_NOT_FOUND');
    });
  });

  describe('delete', () => {
    it('removes the customer with identifiers, credentials and subscriptions; the redeemed code keeps its record', async () => {
      const plan = await insertPlan(a.id, `freebie${++seq}`, 0, `g${seq}`);
      const c = await createCustomer({ password: 'some-password', identifiers: [{ type: 'email', value: 'gone@example.com' }] });
      const [batch] = await t.dataSource.query('INSERT INTO code_batches (project_id, plan_id, count) VALUES ($1, $2, 1) RETURNING id', [a.id, plan]);
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
      const [kept] = await t.dataSource.query('SELECT status, redeemed_by_customer_id FROM codes WHERE id = $1', [code.id]);
      expect(kept).toEqual({ status: 'redeemed', redeemed_by_customer_id: null });
      expectError(await t.http.delete(`/api/private/v1/customers/${c.id}`).set(A()), 404, 'CUSTOMER_NOT_FOUND');
    });
  });

  describe('list', () => {
    let p: TestProject;
    beforeAll(async () => {
      p = await t.createProject();
      const auth = bearer(p.privateKey);
      for (let i = 1; i <= 12; i++) {
        await t.http.post('/api/private/v1/customers').set(auth).send({
          username: `lister${String(i).padStart(4, '0')}`,
          identifiers: i === 5 ? [{ type: 'email', value: 'Needle_In@Haystack.example' }] : [],
        }).expect(201);
      }
    });

    it('pages newest first with the defaults page 1 and pageSize 10, list items in short form', async () => {
      const res = await t.http.get('/api/private/v1/customers').set(bearer(p.privateKey)).expect(200);
      const page = res.body.data;
      expect(page).toMatchObject({ total: 12, page: 1, pageSize: 10, totalPages: 2 });
      expect(page.data).toHaveLength(10);
      expect(page.data[0].username).toBe('lister0012');
      expect(page.data[0]).toEqual({
        id: expect.any(Number), username: 'lister0012', projectId: p.id, enabled: true, temporary: false,
        identifiers: [{ id: expect.any(Number), type: 'username', value: 'lister0012' }],
        createdAt: expect.stringMatching(ISO_MS), updatedAt: expect.stringMatching(ISO_MS),
      });
      const second = await t.http.get('/api/private/v1/customers?page=2').set(bearer(p.privateKey)).expect(200);
      expect(second.body.data.data.map((c: { username: string }) => c.username)).toEqual(['lister0002', 'lister0001']);
      const past = await t.http.get('/api/private/v1/customers?page=9').set(bearer(p.privateKey)).expect(200);
      expect(past.body.data).toMatchObject({ data: [], total: 12, page: 9 });
    });

    it('keeps the total exact through creations (also concurrent and direct), deletions and failures', async () => {
      const q = await t.createProject();
      const auth = bearer(q.privateKey);
      const total = async () => (await t.http.get('/api/private/v1/customers').set(auth).expect(200)).body.data.total;
      const made = await Promise.all(
        Array.from({ length: 8 }, (_, i) => t.http.post('/api/private/v1/customers').set(auth).send({ username: `counted${String(i).padStart(4, '0')}` })),
      );
      expect(made.map((r) => r.status)).toEqual(Array(8).fill(201));
      expect(await total()).toBe(8);
      await t.http.post('/api/private/v1/customers').set(auth).send({ username: 'counted0000' }).expect(409);
      await t.dataSource.query(`INSERT INTO customers (project_id, username) VALUES ($1, 'direct0001'), ($1, 'direct0002')`, [q.id]);
      expect(await total()).toBe(10);
      await t.http.delete(`/api/private/v1/customers/${made[0].body.data.id}`).set(auth).expect(200);
      expect(await total()).toBe(9);
      const [{ n }] = await t.dataSource.query('SELECT count(*)::int AS n FROM customers WHERE project_id = $1', [q.id]);
      expect(n).toBe(9);
    });

    it('accepts pageSize 1 and 100, refuses 0, 101, page 0 and non-integers', async () => {
      await t.http.get('/api/private/v1/customers?pageSize=1').set(bearer(p.privateKey)).expect(200);
      await t.http.get('/api/private/v1/customers?pageSize=100').set(bearer(p.privateKey)).expect(200);
      for (const q of ['pageSize=0', 'pageSize=101', 'page=0', 'page=1.5', 'page=x', 'pageSize=', 'unknown=1']) {
        expectError(await t.http.get(`/api/private/v1/customers?${q}`).set(bearer(p.privateKey)), 400, 'VALIDATION_FAILED');
      }
    });

    it('searches the username or any identifier value, case-insensitively, with wildcards taken literally', async () => {
      const s = (q: string) => t.http.get(`/api/private/v1/customers?search=${encodeURIComponent(q)}`).set(bearer(p.privateKey));
      expect((await s('LISTER001')).body.data.data.map((c: { username: string }) => c.username)).toEqual(['lister0012', 'lister0011', 'lister0010']);
      const byIdentifier = (await s('needle_in')).body.data;
      expect(byIdentifier.total).toBe(1);
      expect(byIdentifier.data[0].username).toBe('lister0005');
      expect((await s('%')).body.data.total).toBe(0);
      expect((await s('lister_')).body.data.total).toBe(0);
    });
  });

  describe('tenancy', () => {
    it("project B's key never reads, changes, lists or resolves project A's customers", async () => {
      const c = await createCustomer({ identifiers: [{ type: 'email', value: 'private-to-a@example.com' }] });
      expectError(await t.http.get(`/api/private/v1/customers/${c.id}`).set(B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await t.http.patch(`/api/private/v1/customers/${c.id}`).set(B()).send({ enabled: false }), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await t.http.delete(`/api/private/v1/customers/${c.id}`).set(B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await t.http.get(`/api/private/v1/customers/${c.id}/subscriptions`).set(B()), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await t.http.post('/api/private/v1/customers/resolve').set(B()).send({ customer: { type: 'email', value: 'private-to-a@example.com' } }), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await t.http.post('/api/private/v1/customers/resolve').set(B()).send({ customer: { type: 'username', value: c.username } }), 404, 'CUSTOMER_NOT_FOUND');
      const listed = await t.http.get(`/api/private/v1/customers?search=${c.username}&pageSize=100`).set(B()).expect(200);
      expect(listed.body.data.total).toBe(0);
      const still = await t.http.get(`/api/private/v1/customers/${c.id}`).set(A()).expect(200);
      expect(still.body.data.enabled).toBe(true);
    });
  });
});
