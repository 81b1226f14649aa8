import request from 'supertest';
import { SecretBox } from '../src/common/crypto/secret-box';
import { CustomersService } from '../src/customers/customers.service';
import { pruneInBatches } from '../src/database/prune';
import { IdempotencyService } from '../src/idempotency/idempotency.service';
import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import { expectError } from './support/expect';
import { inlineShared } from './support/openapi';

const CUSTOMERS = '/api/private/v1/customers';

describe('idempotency (docs/api-guide.md#idempotency)', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  const A = () => bearer(a.privateKey);
  const B = () => bearer(b.privateKey);
  let seq = 0;
  const newKey = () => `k-${Date.now().toString(36)}-${++seq}`;
  const uname = () => `idem${String(++seq).padStart(6, '0')}`;
  /** The request's fingerprint as the service stores it (keyed by its SECRET_ENCRYPTION_KEY). */
  const fingerprint = (method: string, path: string, body: unknown) =>
    t.app.get(IdempotencyService).fingerprint(method, path, body);

  const post = (key: string | undefined, body: object, auth = A()) => {
    const req = t.http.post(CUSTOMERS).set(auth);
    if (key !== undefined) req.set('Idempotency-Key', key);
    return req.send(body);
  };

  async function customersNamed(projectId: string, username: string): Promise<number> {
    const [{ n }] = await t.dataSource.query(
      'SELECT count(*)::int AS n FROM customers WHERE project_id = $1 AND lower(username) = lower($2)',
      [projectId, username],
    );
    return n;
  }

  /** The stored record, its answer decrypted with the service's SECRET_ENCRYPTION_KEY (`encrypted`: it was). */
  async function record(projectId: string, key: string) {
    const rows: Array<{
      fingerprint: string;
      response_status: number | null;
      response_body: unknown;
      fresh: boolean;
    }> = await t.dataSource.query(
      `SELECT fingerprint, response_status, response_body, expires_at > now() + interval '23 hours' AS fresh
           FROM idempotency_records WHERE project_id = $1 AND key = $2`,
      [projectId, key],
    );
    if (!rows[0]) return undefined;
    const { response_body: stored, ...rest } = rows[0];
    const encrypted = typeof stored === 'string' && /^v1\.[A-Za-z0-9+/=]+$/.test(stored);
    const box = new SecretBox(t.env.SECRET_ENCRYPTION_KEY);
    return { ...rest, encrypted, response_body: encrypted ? box.decrypt(stored) : stored };
  }

  async function waitUntil(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject({ name: 'A' });
    b = await t.createProject({ name: 'B' });
  });
  afterAll(() => t.close());

  describe('replay', () => {
    it('the same key and body twice: the same 201 and body, Idempotent-Replayed on the second, one customer', async () => {
      const key = newKey();
      const body = { username: 'someuser01' };
      const first = await post(key, body).set('X-Request-Id', 'first-request');
      expect(first.status).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(first.body.data.username).toBe('someuser01');

      const stored = await record(a.id, key);
      expect(stored).toEqual({
        fingerprint: fingerprint('POST', CUSTOMERS, body),
        response_status: 201,
        encrypted: true,
        response_body: first.text, // the exact JSON text that was sent
        fresh: true,
      });

      const second = await post(key, body).set('X-Request-Id', 'second-request');
      expect(second.status).toBe(201);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.headers['content-type']).toMatch(/^application\/json/);
      expect(second.text).toBe(first.text); // byte for byte
      expect(second.body).toEqual(first.body);
      expect(second.body.requestId).toBe('first-request'); // the stored body, as it was
      expect(second.headers['x-request-id']).toBe('second-request'); // the header is this request's
      expect(await customersNamed(a.id, 'someuser01')).toBe(1);
    });

    it('stored answers are encrypted: the codes of a batch (shown once) are not readable in the table, and the replay shows them', async () => {
      const plan = (
        await t.http
          .post('/api/private/v1/plans')
          .set(A())
          .send({ slug: `idem-${++seq}`, name: 'Idem', value: 1, group: 'tier' })
          .expect(201)
      ).body.data;
      const key = newKey();
      const body = { planId: plan.id, duration: 'P30D', count: 3 };
      const send = () => t.http.post('/api/private/v1/codes').set(A()).set('Idempotency-Key', key).send(body);
      const first = await send();
      expect(first.status).toBe(201);
      const codes: string[] = first.body.data.codes;
      expect(codes).toHaveLength(3);
      const [{ raw }] = await t.dataSource.query(
        'SELECT response_body::text AS raw FROM idempotency_records WHERE project_id = $1 AND key = $2',
        [a.id, key],
      );
      for (const code of codes) expect(raw).not.toContain(code);
      expect(await record(a.id, key)).toMatchObject({ encrypted: true, response_body: first.text });
      const replay = await send();
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(first.text);
    });

    it('an answer stored in plain text by an earlier version still replays as it was', async () => {
      const key = newKey();
      const body = { username: uname() };
      const text = JSON.stringify({
        ok: true,
        requestId: 'earlier',
        data: { id: 1, username: body.username },
      });
      await t.dataSource.query(
        `INSERT INTO idempotency_records (project_id, key, fingerprint, response_status, response_body, expires_at)
         VALUES ($1, $2, $3, 201, to_jsonb($4::text), now() + interval '1 hour')`,
        [a.id, key, fingerprint('POST', CUSTOMERS, body), text],
      );
      const replay = await post(key, body);
      expect(replay.status).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(text);
      expect(await customersNamed(a.id, body.username)).toBe(0);
    });

    it('PATCH is replayed too, and the order of the body keys does not matter', async () => {
      const c = (await post(undefined, { username: uname() }).expect(201)).body.data;
      const key = newKey();
      const first = await t.http
        .patch(`${CUSTOMERS}/${c.id}`)
        .set(A())
        .set('Idempotency-Key', key)
        .send({ enabled: false, password: 'first-pass-1' });
      expect(first.status).toBe(200);
      expect(first.body.data.enabled).toBe(false);
      // enabled again in between: a second run of the PATCH would disable it again
      await t.http.patch(`${CUSTOMERS}/${c.id}`).set(A()).send({ enabled: true }).expect(200);
      const again = await t.http
        .patch(`${CUSTOMERS}/${c.id}`)
        .set(A())
        .set('Idempotency-Key', key)
        .send({ password: 'first-pass-1', enabled: false });
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      const now = await t.http.get(`${CUSTOMERS}/${c.id}`).set(A()).expect(200);
      expect(now.body.data.enabled).toBe(true);
    });

    it('DELETE is replayed: the second answer is the stored 200, not a 404', async () => {
      const c = (await post(undefined, { username: uname() }).expect(201)).body.data;
      const key = newKey();
      const first = await t.http
        .delete(`${CUSTOMERS}/${c.id}`)
        .set(A())
        .set('Idempotency-Key', key)
        .expect(200);
      const again = await t.http.delete(`${CUSTOMERS}/${c.id}`).set(A()).set('Idempotency-Key', key);
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      expectError(await t.http.delete(`${CUSTOMERS}/${c.id}`).set(A()), 404, 'CUSTOMER_NOT_FOUND');
    });

    it('error answers are stored and replayed as they were: 409 USERNAME_TAKEN and 400 VALIDATION_FAILED', async () => {
      const name = uname();
      const taken = (await post(undefined, { username: name }).expect(201)).body.data;
      const key = newKey();
      const first = await post(key, { username: name });
      expectError(first, 409, 'USERNAME_TAKEN');
      expect((await record(a.id, key))?.response_status).toBe(409);
      // the name is free now: a second run would answer 201
      await t.http.delete(`${CUSTOMERS}/${taken.id}`).set(A()).expect(200);
      const again = await post(key, { username: name });
      expect(again.status).toBe(409);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      expect(await customersNamed(a.id, name)).toBe(0);

      const key400 = newKey();
      const invalid = await post(key400, { username: 'short' });
      expectError(invalid, 400, 'VALIDATION_FAILED');
      const invalidAgain = await post(key400, { username: 'short' });
      expect(invalidAgain.status).toBe(400);
      expect(invalidAgain.headers['idempotent-replayed']).toBe('true');
      expect(invalidAgain.text).toBe(invalid.text);
      expect(invalidAgain.body.error.details).toEqual(invalid.body.error.details);
    });

    it('5xx answers are not stored: the same key may be retried', async () => {
      const customers = t.app.get(CustomersService);
      const spy = jest.spyOn(customers, 'create').mockRejectedValueOnce(new Error('database fell over'));
      try {
        const key = newKey();
        const name = uname();
        const failed = await post(key, { username: name });
        expectError(failed, 500, 'INTERNAL_ERROR');
        expect(await record(a.id, key)).toBeUndefined();
        const retried = await post(key, { username: name });
        expect(retried.status).toBe(201);
        expect(retried.headers['idempotent-replayed']).toBeUndefined();
        expect(await customersNamed(a.id, name)).toBe(1);
        expect(spy).toHaveBeenCalledTimes(2);
      } finally {
        spy.mockRestore();
      }
    });

    it('works across replicas: another instance on the same database replays the answer', async () => {
      const replica = await t.startReplica();
      const key = newKey();
      const body = { username: uname() };
      const first = await post(key, body).expect(201);
      const again = await request(replica.getHttpServer())
        .post(CUSTOMERS)
        .set(A())
        .set('Idempotency-Key', key)
        .send(body);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      expect(await customersNamed(a.id, body.username)).toBe(1);
    });
  });

  describe('conflicts', () => {
    it('422 IDEMPOTENCY_KEY_REUSED for the same key with another body or on another path; nothing runs', async () => {
      const key = newKey();
      const c = (await post(key, { username: uname() }).expect(201)).body.data;
      const other = uname();
      expectError(await post(key, { username: other }), 422, 'IDEMPOTENCY_KEY_REUSED');
      expect(await customersNamed(a.id, other)).toBe(0);

      const patched = await t.http
        .patch(`${CUSTOMERS}/${c.id}`)
        .set(A())
        .set('Idempotency-Key', key)
        .send({ enabled: false });
      expectError(patched, 422, 'IDEMPOTENCY_KEY_REUSED');
      const still = await t.http.get(`${CUSTOMERS}/${c.id}`).set(A()).expect(200);
      expect(still.body.data.enabled).toBe(true);
      // the same path with a query string is another request too
      expectError(
        await t.http
          .post(`${CUSTOMERS}?x=1`)
          .set(A())
          .set('Idempotency-Key', key)
          .send({ username: c.username }),
        422,
        'IDEMPOTENCY_KEY_REUSED',
      );
      // the refusals did not touch the stored answer
      expect((await record(a.id, key))?.response_status).toBe(201);
    });

    it('409 IDEMPOTENCY_KEY_IN_USE while the first request is running, on another replica too, whatever the fingerprint; nothing is stored before it ends', async () => {
      const replica = await t.startReplica();
      const name = uname();
      const body = { username: name };
      const key = newKey();
      // the first request waits inside its transaction (holding the key) until the table is unlocked
      const lock = await t.dataSource.createQueryRunner();
      await lock.connect();
      await lock.startTransaction();
      let first: Promise<request.Response> | undefined;
      try {
        await lock.query('LOCK TABLE customers IN EXCLUSIVE MODE');
        first = new Promise((resolve, reject) => {
          post(key, body).then(resolve, reject);
        });
        await waitUntil(async () => {
          const [{ n }] = await t.dataSource.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND state = 'active'`,
          );
          return n === 1;
        });
        // running: nothing is written for the key before its work commits
        expect(await record(a.id, key)).toBeUndefined();
        const onReplica = (b: object) =>
          request(replica.getHttpServer()).post(CUSTOMERS).set(A()).set('Idempotency-Key', key).send(b);
        expectError(await onReplica(body), 409, 'IDEMPOTENCY_KEY_IN_USE');
        expectError(await onReplica({ username: uname() }), 409, 'IDEMPOTENCY_KEY_IN_USE');
        expectError(await post(key, body), 409, 'IDEMPOTENCY_KEY_IN_USE');
      } finally {
        await lock.commitTransaction();
        await lock.release();
      }
      expect((await first!).status).toBe(201);
      expect(await customersNamed(a.id, name)).toBe(1);
      // a 409 IN_USE is not an answer of the first request: the first's answer is the one stored
      expect(await record(a.id, key)).toMatchObject({ response_status: 201 });
    });

    it('keys are per project: project B runs normally with the key value of project A', async () => {
      const key = newKey();
      const name = uname();
      const inA = await post(key, { username: name }, A()).expect(201);
      const inB = await post(key, { username: name }, B());
      expect(inB.status).toBe(201);
      expect(inB.headers['idempotent-replayed']).toBeUndefined();
      expect(inB.body.data.projectId).toBe(b.id);
      expect(inB.body.data.id).not.toBe(inA.body.data.id);
      expect(await customersNamed(a.id, name)).toBe(1);
      expect(await customersNamed(b.id, name)).toBe(1);
      // and B's other body does not conflict with A's record
      expect((await post(key, { username: name }, A())).headers['idempotent-replayed']).toBe('true');
    });

    it('10 concurrent identical requests: exactly one customer; the others replay or get 409 IN_USE, never a 500', async () => {
      const key = newKey();
      const body = { username: uname() };
      const results = await Promise.all(Array.from({ length: 10 }, () => post(key, body)));
      for (const r of results) expect([201, 409]).toContain(r.status);
      const ran = results.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
      expect(ran).toHaveLength(1);
      for (const r of results.filter((x) => x.status === 201 && x !== ran[0])) {
        expect(r.headers['idempotent-replayed']).toBe('true');
        expect(r.text).toBe(ran[0].text);
      }
      for (const r of results.filter((x) => x.status === 409)) expectError(r, 409, 'IDEMPOTENCY_KEY_IN_USE');
      expect(await customersNamed(a.id, body.username)).toBe(1);
      // once the first has answered, every retry is a replay
      const later = await post(key, body);
      expect(later.status).toBe(201);
      expect(later.headers['idempotent-replayed']).toBe('true');
    });
  });

  describe('expiry', () => {
    it('an expired record is treated as absent: the request runs again and takes the key over', async () => {
      const key = newKey();
      const name = uname();
      await post(key, { username: name }).expect(201);
      await t.dataSource.query(
        `UPDATE idempotency_records SET expires_at = now() - interval '1 minute' WHERE project_id = $1 AND key = $2`,
        [a.id, key],
      );

      // the same request runs again (the username is now taken)...
      expectError(await post(key, { username: name }), 409, 'USERNAME_TAKEN');
      await t.dataSource.query(
        `UPDATE idempotency_records SET expires_at = now() - interval '1 minute' WHERE project_id = $1 AND key = $2`,
        [a.id, key],
      );
      // ...and another request is no longer a reuse of the key
      const otherBody = { username: uname() };
      const other = await post(key, otherBody);
      expect(other.status).toBe(201);
      expect(other.headers['idempotent-replayed']).toBeUndefined();
      expect(await record(a.id, key)).toEqual({
        fingerprint: fingerprint('POST', CUSTOMERS, otherBody),
        response_status: 201,
        encrypted: true,
        response_body: other.text,
        fresh: true,
      });
    });

    it('pruning deletes expired records and keeps live ones', async () => {
      const expired = newKey();
      const live = newKey();
      await t.dataSource.query(
        `INSERT INTO idempotency_records (project_id, key, fingerprint, response_status, response_body, expires_at)
         VALUES ($1, $2, $4, 201, to_jsonb('{}'::text), now() - interval '1 second'),
                ($1, $3, $4, 201, to_jsonb('{}'::text), now() + interval '1 hour')`,
        [a.id, expired, live, '1'.repeat(64)],
      );
      const pruned = await t.app.get(IdempotencyService).pruneExpired();
      expect(pruned).toBeGreaterThanOrEqual(1);
      expect(await record(a.id, expired)).toBeUndefined();
      expect(await record(a.id, live)).toBeDefined();
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM idempotency_records WHERE expires_at < now()',
      );
      expect(n).toBe(0);
    });

    it('the bounded prune deletes in batches until none is left, and only what matches', async () => {
      const keys = Array.from({ length: 7 }, () => newKey());
      const live = newKey();
      for (const key of keys)
        await t.dataSource.query(
          `INSERT INTO idempotency_records (project_id, key, fingerprint, response_status, response_body, expires_at)
           VALUES ($1, $2, $3, 201, to_jsonb('{}'::text), now() - interval '1 second')`,
          [a.id, key, '1'.repeat(64)],
        );
      await t.dataSource.query(
        `INSERT INTO idempotency_records (project_id, key, fingerprint, response_status, response_body, expires_at)
         VALUES ($1, $2, $3, 201, to_jsonb('{}'::text), now() + interval '1 hour')`,
        [a.id, live, '1'.repeat(64)],
      );
      // batches of 3: 3 + 3 + 1 of these 7 (and any other expired record of the suite)
      const pruned = await pruneInBatches(
        t.dataSource,
        { table: 'idempotency_records', condition: 'project_id = $1 AND expires_at < now()', values: [a.id] },
        3,
      );
      expect(pruned).toBe(7);
      for (const key of keys) expect(await record(a.id, key)).toBeUndefined();
      expect(await record(a.id, live)).toBeDefined();
    });
  });

  describe('which requests', () => {
    it.each([
      ['256 characters', 'k'.repeat(256)],
      ['a tab', 'has\ttab'],
      ['a non-ASCII character', 'clé'],
      ['an empty value', ''],
    ])('400 VALIDATION_FAILED on Idempotency-Key for a key with %s; nothing runs', async (_, key) => {
      const name = uname();
      const res = await post(key, { username: name });
      expectError(res, 400, 'VALIDATION_FAILED');
      expect(res.body.error.details).toEqual([{ field: 'Idempotency-Key', message: expect.any(String) }]);
      expect(await customersNamed(a.id, name)).toBe(0);
    });

    it('accepts 255 printable characters, and spaces inside a key', async () => {
      const key = '~!'.repeat(127) + 'z';
      expect(key).toHaveLength(255);
      await post(key, { username: uname() }).expect(201);
      expect(await record(a.id, key)).toBeDefined();
      const spaced = `order ${newKey()} retry`;
      await post(spaced, { username: uname() }).expect(201);
      expect(await record(a.id, spaced)).toBeDefined();
    });

    it('GET requests, requests without the header and non-private routes ignore it', async () => {
      await t.http.get(CUSTOMERS).set(A()).set('Idempotency-Key', 'k'.repeat(256)).expect(200);
      const key = newKey();
      await t.http.get(CUSTOMERS).set(A()).set('Idempotency-Key', key).expect(200);
      expect(await record(a.id, key)).toBeUndefined();

      const name = uname();
      await post(undefined, { username: name }).expect(201);
      const [{ n }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM idempotency_records WHERE project_id = $1',
        [a.id],
      );
      await post(undefined, { username: uname() }).expect(201);
      const [{ n: after }] = await t.dataSource.query(
        'SELECT count(*)::int AS n FROM idempotency_records WHERE project_id = $1',
        [a.id],
      );
      expect(after).toBe(n);

      const admin = await t.http
        .post('/api/admin/v1/projects')
        .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
        .set('Idempotency-Key', 'not valid here')
        .send({ name: 'Admin ignores it' });
      expect(admin.status).toBe(201);
    });

    it('documents the header on private POST, PATCH and DELETE only', async () => {
      const doc = inlineShared((await t.http.get('/docs-json').expect(200)).body);
      const hasHeader = (op: { parameters?: Array<{ name: string; in: string }> }) =>
        (op.parameters ?? []).some((p) => p.name === 'Idempotency-Key' && p.in === 'header');
      expect(hasHeader(doc.paths[CUSTOMERS].post)).toBe(true);
      expect(hasHeader(doc.paths[`${CUSTOMERS}/{customerId}`].patch)).toBe(true);
      expect(hasHeader(doc.paths[`${CUSTOMERS}/{customerId}`].delete)).toBe(true);
      expect(hasHeader(doc.paths[CUSTOMERS].get)).toBe(false);
      expect(hasHeader(doc.paths['/api/admin/v1/projects'].post)).toBe(false);
      const header = doc.paths[CUSTOMERS].post.parameters.filter(
        (p: { name: string }) => p.name === 'Idempotency-Key',
      );
      expect(header).toHaveLength(1); // not repeated by the replica of an earlier test
      // the documented pattern is the one enforced: spaces inside a key included, a tab not
      const pattern = new RegExp(header[0].schema.pattern);
      expect(pattern.test('order 42 retry')).toBe(true);
      expect(pattern.test('has\ttab')).toBe(false);
    });
  });
});
