import { createHash, randomBytes } from 'node:crypto';
import canonicalize from 'canonicalize';
import { NestExpressApplication } from '@nestjs/platform-express';
import { AuditRetention } from '../src/audit/audit-retention';
import { AuditSealer } from '../src/audit/audit-sealer';
import { AuditRepository, PROJECTS_WITH_UNSEALED } from '../src/audit/audit.repository';
import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import { buffersTouched, explainedForBuffers } from './support/database';
import { expectError, ISO_MS } from './support/expect';
import { eventually } from './support/webhook-receiver';

/**
 * The audit log's storage, reads, sealing, verify and retention (docs/operations.md#audit-log).
 * Records are seeded with SQL straight into `audit_events` (what the writer inserts), so each
 * test knows exactly what its project holds. The first instance's sealer is stopped: tests seal
 * with `sealAll()` or with replicas of their own.
 */
describe('audit log', () => {
  let t: TestApp;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  const DAY = 86_400_000;

  beforeAll(async () => {
    t = await createTestApp({ AUDIT_RETENTION_DAYS: '1' });
    await t.app.get(AuditSealer).onModuleDestroy();
  });
  afterAll(async () => {
    await t?.close();
  });

  interface Seed {
    at?: string;
    actorType?: string;
    actorKeyId?: number | null;
    actorKeyPrefix?: string | null;
    actorCustomerId?: number | null;
    action?: string;
    resourceType?: string;
    resourceId?: string;
    changes?: object | null;
    requestId?: string | null;
    idempotencyKey?: string | null;
    ip?: string | null;
  }

  const newId = () =>
    'aud_' + Array.from(randomBytes(24), (b) => 'abcdefghijklmnopqrstuvwxyz234567'[b % 32]).join('');

  /** A project of its own, with no record but those a test seeds (the writer's are removed). */
  async function project(): Promise<TestProject> {
    const p = await t.createProject();
    await t.dataSource.query('DELETE FROM audit_events WHERE project_id = $1', [p.id]);
    return p;
  }

  /** Inserts records in the order given (so in that written order); answers their ids. */
  async function seed(projectId: string, rows: Seed[]): Promise<string[]> {
    const ids: string[] = [];
    for (const r of rows) {
      const id = newId();
      await t.dataSource.query(
        `INSERT INTO audit_events (id, project_id, at, actor_type, actor_key_id, actor_key_prefix, actor_customer_id,
                                   action, resource_type, resource_id, changes, request_id, idempotency_key, ip)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [
          id,
          projectId,
          r.at ?? new Date().toISOString(),
          r.actorType ?? 'private_key',
          r.actorKeyId === undefined ? 7 : r.actorKeyId,
          r.actorKeyPrefix === undefined ? 'sk_abcde' : r.actorKeyPrefix,
          r.actorCustomerId ?? null,
          r.action ?? 'customer.updated',
          r.resourceType ?? 'customer',
          r.resourceId ?? '1',
          r.changes === undefined ? { enabled: { from: true, to: false } } : JSON.stringify(r.changes),
          r.requestId === undefined ? 'req-1' : r.requestId,
          r.idempotencyKey ?? null,
          r.ip === undefined ? '203.0.113.9' : r.ip,
        ],
      );
      ids.push(id);
    }
    return ids;
  }

  /** `n` records in one statement, `at` one millisecond apart from `from`, in that written order. */
  async function seedMany(projectId: string, n: number, from: Date): Promise<void> {
    await t.dataSource.query(
      `INSERT INTO audit_events (id, project_id, at, actor_type, action, resource_type, resource_id, changes)
       SELECT 'aud_' || substr(md5(random()::text || g), 1, 24), $1, $2::timestamptz + make_interval(secs => g / 1000.0),
              'system', 'usage.recorded', 'usage', g::text, jsonb_build_object('amount', jsonb_build_object('from', null, 'to', g))
         FROM generate_series(1, $3) g ORDER BY g`,
      [projectId, from, n],
    );
  }

  /** Seals everything committed, as passes of the first instance's sealer would. */
  async function sealAll(): Promise<void> {
    const sealer = t.app.get(AuditSealer);
    while (await sealer.runOnce());
  }

  const get = (p: TestProject, path: string) =>
    t.http.get(`/api/private/v1/audit-events${path}`).set(bearer(p.privateKey));
  const list = async (p: TestProject, query = '') => {
    const res = await get(p, query).expect(200);
    return res.body.data as { data: any[]; nextCursor: string | null };
  };
  const ids = (page: { data: any[] }) => page.data.map((r) => r.id);
  const verify = async (p: TestProject) => (await get(p, '/verify').expect(200)).body.data;

  const hashOf = (record: Record<string, unknown>) => {
    const { hash: _hash, ...rest } = record;
    return createHash('sha256').update(canonicalize(rest)!, 'utf8').digest('hex');
  };

  /** A forger's edit of a record's seal (its `prev_hash` or `hash`), the record named by its id. */
  const rewriteSeal = (column: 'prev_hash' | 'hash', id: string, value: string) =>
    t.dataSource.query(
      `UPDATE audit_seals SET ${column} = $2 WHERE position = (SELECT position FROM audit_events WHERE id = $1)`,
      [id, value],
    );

  const rowsOf = (projectId: string) =>
    t.dataSource.query(
      `SELECT a.id, a.position::text, s.seq::int, s.prev_hash, s.hash
         FROM audit_events a LEFT JOIN audit_seals s ON s.position = a.position
        WHERE a.project_id = $1 ORDER BY a.position`,
      [projectId],
    ) as Promise<
      { id: string; position: string; seq: number | null; prev_hash: string | null; hash: string | null }[]
    >;

  describe('reading', () => {
    let p: TestProject;
    let a: string, b: string, c: string, d: string, e: string;

    beforeAll(async () => {
      p = await project();
      [a, b, c, d, e] = await seed(p.id, [
        { at: '2026-01-01T10:00:00.001Z', action: 'customer.created', resourceId: '1', requestId: 'req-a' },
        {
          at: '2026-01-02T10:00:00.000Z',
          action: 'plan.updated',
          resourceType: 'plan',
          resourceId: '5',
          actorKeyId: 8,
          requestId: 'req-b',
        },
        {
          at: '2026-01-02T10:00:00.000Z',
          action: 'plan.updated',
          resourceType: 'plan',
          resourceId: '6',
          actorKeyId: 8,
          requestId: 'req-b',
        },
        {
          at: '2026-01-03T10:00:00.000Z',
          actorType: 'admin',
          actorKeyId: null,
          actorKeyPrefix: null,
          action: 'project.updated',
          resourceType: 'project',
          resourceId: p.id,
          requestId: 'req-d',
        },
        {
          at: '2026-01-01T12:00:00.000Z',
          actorType: 'public_key',
          actorKeyId: 9,
          actorKeyPrefix: 'pk_abcde',
          actorCustomerId: 1,
          action: 'customer.logged_in',
          resourceId: '1',
          changes: null,
          requestId: 'req-e',
          idempotencyKey: 'idem-e',
        },
      ]);
    });

    it('lists newest first by at, the later written first among equal instants', async () => {
      const page = await list(p);
      expect(ids(page)).toEqual([d, c, b, e, a]);
      expect(page.nextCursor).toBeNull();
    });

    it('answers each record as the spec shapes it', async () => {
      const res = await get(p, `/${e}`).expect(200);
      expect(res.body.data).toEqual({
        id: e,
        at: '2026-01-01T12:00:00.000Z',
        projectId: p.id,
        actor: { type: 'public_key', keyId: 9, keyPrefix: 'pk_abcde', customerId: 1 },
        action: 'customer.logged_in',
        resourceType: 'customer',
        resourceId: '1',
        changes: null,
        requestId: 'req-e',
        idempotencyKey: 'idem-e',
        ip: '203.0.113.9',
        seq: null,
        prevHash: null,
        hash: null,
      });
      expect((await get(p, `/${a}`).expect(200)).body.data).toMatchObject({
        at: '2026-01-01T10:00:00.001Z',
        actor: { type: 'private_key', keyId: 7, keyPrefix: 'sk_abcde', customerId: null },
        changes: { enabled: { from: true, to: false } },
        idempotencyKey: null,
      });
      expect((await get(p, `/${d}`).expect(200)).body.data.actor).toEqual({
        type: 'admin',
        keyId: null,
        keyPrefix: null,
        customerId: null,
      });
      expect((await list(p)).data[0]).toEqual((await get(p, `/${d}`)).body.data);
      expect((await list(p)).data[0].at).toMatch(ISO_MS);
    });

    it('pages with the cursor, the filters sent again', async () => {
      const first = await list(p, '?limit=2');
      expect(ids(first)).toEqual([d, c]);
      const second = await list(p, `?limit=2&cursor=${first.nextCursor}`);
      expect(ids(second)).toEqual([b, e]);
      const third = await list(p, `?limit=2&cursor=${second.nextCursor}`);
      expect(ids(third)).toEqual([a]);
      expect(third.nextCursor).toBeNull();

      const filtered = await list(p, '?resourceType=plan&limit=1');
      expect(ids(filtered)).toEqual([c]);
      const rest = await list(p, `?resourceType=plan&limit=1&cursor=${filtered.nextCursor}`);
      expect(ids(rest)).toEqual([b]);
      expect(rest.nextCursor).toBeNull();

      // every page of one size joins into the whole list
      const all: string[] = [];
      for (let cursor: string | null = ''; cursor !== null;) {
        const page = await list(p, `?limit=1${cursor ? `&cursor=${cursor}` : ''}`);
        all.push(...ids(page));
        cursor = page.nextCursor;
      }
      expect(all).toEqual([d, c, b, e, a]);
    });

    it('filters on each field', async () => {
      expect(ids(await list(p, '?resourceType=customer'))).toEqual([e, a]);
      expect(ids(await list(p, '?resourceType=plan&resourceId=6'))).toEqual([c]);
      expect(ids(await list(p, `?resourceId=${p.id}`))).toEqual([d]);
      expect(ids(await list(p, '?action=plan.updated'))).toEqual([c, b]);
      expect(ids(await list(p, '?action=customer.deleted'))).toEqual([]);
      expect(ids(await list(p, '?actorType=admin'))).toEqual([d]);
      expect(ids(await list(p, '?actorType=public_key'))).toEqual([e]);
      expect(ids(await list(p, '?actorKeyId=8'))).toEqual([c, b]);
      expect(ids(await list(p, '?requestId=req-b'))).toEqual([c, b]);
      // from inclusive, to exclusive
      expect(ids(await list(p, '?from=2026-01-02T10:00:00.000Z'))).toEqual([d, c, b]);
      expect(ids(await list(p, '?to=2026-01-02T10:00:00.000Z'))).toEqual([e, a]);
      expect(ids(await list(p, '?from=2026-01-01T12:00:00.000Z&to=2026-01-03T10:00:00.000Z'))).toEqual([
        c,
        b,
        e,
      ]);
      expect(ids(await list(p, '?from=2026-01-02T11:00:00%2B01:00&to=2026-01-02T10:00:00.001Z'))).toEqual([
        c,
        b,
      ]);
      expect(ids(await list(p, '?actorType=private_key&resourceType=customer&requestId=req-a'))).toEqual([a]);
    });

    it('refuses bad query parameters with 400 VALIDATION_FAILED naming them', async () => {
      const bad = async (query: string, field: string) => {
        const res = await get(p, query);
        expectError(res, 400, 'VALIDATION_FAILED');
        expect(res.body.error.details.map((x: { field: string }) => x.field)).toContain(field);
      };
      await bad('?limit=0', 'limit');
      await bad('?limit=101', 'limit');
      await bad('?limit=x', 'limit');
      await bad('?resourceType=invoice', 'resourceType');
      await bad('?action=customer.exploded', 'action');
      await bad('?action=customer.created&action=customer.updated', 'action');
      await bad('?actorType=robot', 'actorType');
      await bad('?actorKeyId=0', 'actorKeyId');
      await bad('?actorKeyId=1.5', 'actorKeyId');
      await bad('?from=yesterday', 'from');
      await bad('?to=2026-13-01T00:00:00Z', 'to');
      await bad('?type=customer.created', 'type');
      await bad('?page=2', 'page');
      await bad('?cursor=not%20a%20cursor', 'cursor');
      const cursor = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      await bad(`?cursor=${cursor(['0'])}`, 'cursor');
      await bad(`?cursor=${cursor(['12', '1'])}`, 'cursor');
      await bad(`?cursor=${cursor([12])}`, 'cursor');
      await bad(`?cursor=${cursor(['99999999999999999999'])}`, 'cursor');
      await bad(`?cursor=${cursor(['9223372036854775808'])}`, 'cursor');
      await bad(`?cursor=${cursor({ position: '1' })}`, 'cursor');
      await bad('?cursor=bm90IGpzb24', 'cursor');
    });

    it('answers 404 AUDIT_EVENT_NOT_FOUND for an unknown id and for a record of another project', async () => {
      expectError(await get(p, '/aud_aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'AUDIT_EVENT_NOT_FOUND');
      expectError(await get(p, '/export-not'), 404, 'AUDIT_EVENT_NOT_FOUND');
      const q = await project();
      const [theirs] = await seed(q.id, [{}]);
      expectError(await get(p, `/${theirs}`), 404, 'AUDIT_EVENT_NOT_FOUND');
      expect((await get(q, `/${theirs}`).expect(200)).body.data.id).toBe(theirs);
      // nor does a key list, export or page through another project's records
      expect(ids(await list(p))).not.toContain(theirs);
      expect(ids(await list(q))).toEqual([theirs]);
      const mine = await list(p, '?limit=1');
      expect(ids(await list(q, `?cursor=${mine.nextCursor}`))).toEqual([]);
      expect((await get(p, '/export')).text).not.toContain(theirs);
    });

    it('exports NDJSON oldest first, with the filters', async () => {
      const res = await get(p, '/export').expect(200);
      expect(res.headers['content-type']).toBe('application/x-ndjson');
      const lines = (res.text as string).split('\n');
      expect(lines.pop()).toBe('');
      const records = lines.map((l) => JSON.parse(l));
      expect(records.map((r) => r.id)).toEqual([a, e, b, c, d]);
      expect(records[4]).toEqual((await get(p, `/${d}`)).body.data);

      const filtered = await get(p, '/export?resourceType=plan').expect(200);
      expect(
        (filtered.text as string)
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).id),
      ).toEqual([b, c]);
      const none = await get(p, '/export?action=hold.created').expect(200);
      expect(none.headers['content-type']).toBe('application/x-ndjson');
      expect(none.text).toBe('');
      expectError(await get(p, '/export?limit=5'), 400, 'VALIDATION_FAILED');
      expectError(await get(p, '/export?actorType=robot'), 400, 'VALIDATION_FAILED');
    });

    it('exports more records than one page reads, in order', async () => {
      const q = await project();
      await seedMany(q.id, 2345, new Date('2026-02-01T00:00:00Z'));
      const res = await get(q, '/export').expect(200);
      const records = (res.text as string)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(records).toHaveLength(2345);
      expect(records.map((r) => Number(r.resourceId))).toEqual(Array.from({ length: 2345 }, (_, i) => i + 1));
      const from = '2026-02-01T00:00:01.000Z'; // g = 1000 onwards
      const tail = (await get(q, `/export?from=${from}`).expect(200)).text.trim().split('\n');
      expect(tail).toHaveLength(1346);
      expect(JSON.parse(tail[0]).resourceId).toBe('1000');
    });
  });

  describe('the admin interface', () => {
    const adminGet = (projectId: string, path = '') =>
      t.http.get(`/api/admin/v1/projects/${projectId}/audit-events${path}`).set(admin);

    it('reads any project, a deleted one included; an unknown project is 404 PROJECT_NOT_FOUND', async () => {
      const p = await project();
      const [x, y] = await seed(p.id, [
        {
          at: '2026-01-01T00:00:00.000Z',
          action: 'project.created',
          resourceType: 'project',
          resourceId: p.id,
        },
        {
          at: '2026-01-02T00:00:00.000Z',
          action: 'project.deleted',
          resourceType: 'project',
          resourceId: p.id,
        },
      ]);
      const read = async () => {
        const page = (await adminGet(p.id).expect(200)).body.data;
        expect(ids(page)).toEqual([y, x]);
        expect(ids((await adminGet(p.id, '?limit=1').expect(200)).body.data)).toEqual([y]);
        expect(ids((await adminGet(p.id, '?action=project.created').expect(200)).body.data)).toEqual([x]);
        expect((await adminGet(p.id, `/${x}`).expect(200)).body.data).toEqual(page.data[1]);
        const exported = await adminGet(p.id, '/export').expect(200);
        expect(exported.headers['content-type']).toBe('application/x-ndjson');
        expect(
          (exported.text as string)
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l).id),
        ).toEqual([x, y]);
        expect((await adminGet(p.id, '/verify').expect(200)).body.data).toEqual({
          valid: true,
          checked: 0,
          unsealed: 2,
          brokenAt: null,
        });
      };
      await read();
      await t.http.delete(`/api/admin/v1/projects/${p.id}`).set(admin).expect(200);
      await t.http.get(`/api/admin/v1/projects/${p.id}`).set(admin).expect(404);
      // the writer's own record of the deletion, if any, is not what this test reads
      await t.dataSource.query('DELETE FROM audit_events WHERE project_id = $1 AND id <> ALL($2)', [
        p.id,
        [x, y],
      ]);
      await read();

      // another project's record through this project's path is not found
      const q = await project();
      const [theirs] = await seed(q.id, [{}]);
      expectError(await adminGet(p.id, `/${theirs}`), 404, 'AUDIT_EVENT_NOT_FOUND');
      expectError(await adminGet(p.id, '/aud_aaaaaaaaaaaaaaaaaaaaaaaa'), 404, 'AUDIT_EVENT_NOT_FOUND');

      const unknown = 'prj_' + 'x'.repeat(20);
      for (const path of ['', `/${x}`, '/export', '/verify'])
        expectError(await adminGet(unknown, path), 404, 'PROJECT_NOT_FOUND');
      expectError(await adminGet(p.id, '?actorType=robot'), 400, 'VALIDATION_FAILED');
      expectError(
        await t.http.get(`/api/admin/v1/projects/${p.id}/audit-events`).set(bearer(p.privateKey)),
        401,
        'INVALID_ADMIN_TOKEN',
      );
    });
  });

  describe('sealing and verify', () => {
    it('chains each record: seq in the order written, prevHash the hash before, hash over the record as answered', async () => {
      const p = await project();
      await seed(p.id, [
        {
          at: '2026-01-05T00:00:00.000Z',
          changes: { name: { from: 'a', to: 'ü 😀 "q"' }, value: { from: 1.5, to: 1e21 } },
        },
        { at: '2026-01-04T00:00:00.000Z', changes: null, ip: null, requestId: null },
        { at: '2026-01-06T00:00:00.000Z' },
      ]);
      expect((await verify(p)).unsealed).toBe(3);
      /** Each record's row version: sealing writes the seal beside the record, never the record again. */
      const versions = () =>
        t.dataSource.query(
          `SELECT id, xmin::text AS version FROM audit_events WHERE project_id = $1 ORDER BY id`,
          [p.id],
        );
      const written = await versions();
      await sealAll();
      expect(await versions()).toEqual(written);
      const exported = (await get(p, '/export').expect(200)).text
        .trim()
        .split('\n')
        .map((l: string) => JSON.parse(l));
      const byPosition = await rowsOf(p.id);
      expect(byPosition.map((r) => r.seq)).toEqual([1, 2, 3]);
      const records = await Promise.all(byPosition.map(async (r) => (await get(p, `/${r.id}`)).body.data));
      expect(records.map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(records[0].prevHash).toBeNull();
      expect(records[1].prevHash).toBe(records[0].hash);
      expect(records[2].prevHash).toBe(records[1].hash);
      for (const r of records) {
        expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
        expect(r.hash).toBe(hashOf(r));
      }
      // the export answers the same records
      expect(exported.sort((x: any, y: any) => x.seq - y.seq)).toEqual(records);
      expect(await verify(p)).toEqual({ valid: true, checked: 3, unsealed: 0, brokenAt: null });

      // later records continue the chain
      await seed(p.id, [{}, {}]);
      expect(await verify(p)).toEqual({ valid: true, checked: 3, unsealed: 2, brokenAt: null });
      await sealAll();
      const more = await rowsOf(p.id);
      expect(more.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(more[3].prev_hash).toBe(more[2].hash);
      expect(await verify(p)).toEqual({ valid: true, checked: 5, unsealed: 0, brokenAt: null });
    });

    it('takes a record deleted before it was sealed off the queue, the chain going on without it', async () => {
      const p = await project();
      const [, gone] = await seed(p.id, [{}, {}, {}]);
      await t.dataSource.query('DELETE FROM audit_events WHERE id = $1', [gone]);
      await sealAll();
      expect((await rowsOf(p.id)).map((r) => r.seq)).toEqual([1, 2]);
      expect(
        await t.dataSource.query('SELECT count(*)::int AS n FROM audit_unsealed WHERE project_id = $1', [
          p.id,
        ]),
      ).toEqual([{ n: 0 }]);
      expect(await verify(p)).toEqual({ valid: true, checked: 2, unsealed: 0, brokenAt: null });
    });

    async function sealed(n: number) {
      const p = await project();
      await seedMany(p.id, n, new Date('2026-03-01T00:00:00Z'));
      await sealAll();
      const rows = await rowsOf(p.id);
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      expect(await verify(p)).toEqual({ valid: true, checked: n, unsealed: 0, brokenAt: null });
      return { p, rows };
    }

    it('finds a record changed since it was sealed: HASH_MISMATCH at its seq', async () => {
      const { p, rows } = await sealed(5);
      await t.dataSource.query(
        `UPDATE audit_events SET changes = '{"amount":{"from":null,"to":999}}' WHERE id = $1`,
        [rows[2].id],
      );
      expect(await verify(p)).toEqual({
        valid: false,
        checked: 5,
        unsealed: 0,
        brokenAt: { id: rows[2].id, seq: 3, reason: 'HASH_MISMATCH' },
      });
      // a later break is not reported before the first
      await t.dataSource.query(`UPDATE audit_events SET ip = '10.0.0.1' WHERE id = $1`, [rows[4].id]);
      expect((await verify(p)).brokenAt).toEqual({ id: rows[2].id, seq: 3, reason: 'HASH_MISMATCH' });
      // a prevHash changed alone changes what the hash covers
      const { p: q, rows: theirs } = await sealed(3);
      await rewriteSeal('prev_hash', theirs[1].id, 'f'.repeat(64));
      expect((await verify(q)).brokenAt).toEqual({ id: theirs[1].id, seq: 2, reason: 'HASH_MISMATCH' });
    });

    it('finds a record deleted in the middle: MISSING, the walk going on', async () => {
      const { p, rows } = await sealed(6);
      await t.dataSource.query('DELETE FROM audit_events WHERE id = $1', [rows[2].id]);
      await t.dataSource.query('DELETE FROM audit_events WHERE id = $1', [rows[3].id]);
      expect(await verify(p)).toEqual({
        valid: false,
        checked: 4,
        unsealed: 0,
        brokenAt: { id: null, seq: 3, reason: 'MISSING' },
      });
      const { p: q, rows: first } = await sealed(3);
      await t.dataSource.query('DELETE FROM audit_events WHERE id = $1', [first[0].id]);
      expect((await verify(q)).brokenAt).toEqual({ id: null, seq: 1, reason: 'MISSING' });
    });

    it('finds the last records deleted: MISSING against the chain head', async () => {
      const { p, rows } = await sealed(4);
      await t.dataSource.query('DELETE FROM audit_events WHERE id = ANY($1)', [[rows[2].id, rows[3].id]]);
      expect(await verify(p)).toEqual({
        valid: false,
        checked: 2,
        unsealed: 0,
        brokenAt: { id: null, seq: 3, reason: 'MISSING' },
      });
    });

    it('finds a record rewritten with a hash of its own: LINK_BROKEN', async () => {
      const { p, rows } = await sealed(4);
      // the forger recomputes the record's hash over a prevHash of its choosing
      await rewriteSeal('prev_hash', rows[2].id, 'e'.repeat(64));
      const forged = (await get(p, `/${rows[2].id}`)).body.data;
      await rewriteSeal('hash', rows[2].id, hashOf(forged));
      expect(await verify(p)).toEqual({
        valid: false,
        checked: 4,
        unsealed: 0,
        brokenAt: { id: rows[2].id, seq: 3, reason: 'LINK_BROKEN' },
      });
      // a record's content rewritten with its hash breaks the link of the next one
      const { p: q, rows: theirs } = await sealed(3);
      await t.dataSource.query(`UPDATE audit_events SET resource_id = 'x' WHERE id = $1`, [theirs[0].id]);
      const rewritten = (await get(q, `/${theirs[0].id}`)).body.data;
      await rewriteSeal('hash', theirs[0].id, hashOf(rewritten));
      expect((await verify(q)).brokenAt).toEqual({ id: theirs[1].id, seq: 2, reason: 'LINK_BROKEN' });
    });

    it('verifies a chain longer than one page', async () => {
      const { p } = await sealed(4321);
      await seed(p.id, [{}]);
      expect(await verify(p)).toEqual({ valid: true, checked: 4321, unsealed: 1, brokenAt: null });
    });
  });

  describe('the sealer past a large backlog', () => {
    it('finds the projects with unsealed records with one probe each, whatever the backlog', async () => {
      const big = await project();
      const small = await project();
      await seed(small.id, [{}]);
      /** The projects found, and the buffers the statement touched finding them. */
      const ask = async () => {
        await t.dataSource.query('ANALYZE audit_unsealed');
        const found = await t.app.get(AuditRepository).projectsWithUnsealed(1000);
        const explained = await t.dataSource.query(explainedForBuffers(PROJECTS_WITH_UNSEALED), [1000]);
        return { found, buffers: buffersTouched(explained) };
      };

      await seedMany(big.id, 20_000, new Date('2026-02-01T00:00:00.000Z'));
      const before = await ask();
      expect(before.found).toEqual(expect.arrayContaining([big.id, small.id]));
      expect(new Set(before.found).size).toBe(before.found.length);
      // 40,000 more unsealed records of the big project: the same probes (a read of every entry
      // would touch hundreds of index pages more)
      await seedMany(big.id, 40_000, new Date('2026-02-02T00:00:00.000Z'));
      const after = await ask();
      expect(after.found.sort()).toEqual(before.found.sort());
      expect(after.buffers).toBeLessThanOrEqual(before.buffers + 5);
      // the other tests' sealing need not wade through them
      await t.dataSource.query('DELETE FROM audit_unsealed WHERE project_id IN ($1, $2)', [big.id, small.id]);
      await t.dataSource.query('DELETE FROM audit_events WHERE project_id IN ($1, $2)', [big.id, small.id]);
    });
  });

  describe('sealers on several replicas', () => {
    let replicas: NestExpressApplication[] = [];
    afterAll(async () => {
      for (const r of replicas) await r.get(AuditSealer).onModuleDestroy();
    });

    it('seal within seconds and make one gapless chain per project together', async () => {
      const p = await project();
      const q = await project();
      // recent: the replicas' retention, run at their start, keeps them
      await seedMany(p.id, 3500, new Date());
      await seed(q.id, [{}, {}, {}]);
      replicas = [
        await t.startReplica({ AUDIT_SEAL_INTERVAL_MS: '50' }),
        await t.startReplica({ AUDIT_SEAL_INTERVAL_MS: '50' }),
      ];
      // records written while they run are sealed too
      for (let i = 0; i < 20; i++) {
        await seedMany(p.id, 50, new Date());
        await seed(q.id, [{}]);
      }
      // within 5 s of the last commit (the spec's bound, at a tenth of the default interval here)
      await eventually(
        'every record sealed',
        async () => (await verify(p)).unsealed === 0 && (await verify(q)).unsealed === 0,
        5_000,
      );
      for (const [project, n] of [
        [p, 4500],
        [q, 23],
      ] as const) {
        const rows = await rowsOf(project.id);
        // one chain: 1..n, in the order written, each linked to the one before
        expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
        rows.forEach((r, i) => expect(r.prev_hash).toBe(i === 0 ? null : rows[i - 1].hash));
        expect(await verify(project)).toEqual({ valid: true, checked: n, unsealed: 0, brokenAt: null });
      }
    });
  });

  describe('retention', () => {
    it('deletes only sealed records past the retention, from the start of each chain, in bounded statements', async () => {
      const now = new Date();
      const old = new Date(now.getTime() - 3 * DAY);
      const p = await project();
      await seedMany(p.id, 5007, old);
      await seed(p.id, [{ at: now.toISOString() }, { at: now.toISOString() }]);
      // another project's chain: an old record after a recent one stays with it
      const q = await project();
      const [qOld, qNew, qOldAgain] = await seed(q.id, [
        { at: old.toISOString() },
        { at: now.toISOString() },
        { at: old.toISOString() },
      ]);
      await sealAll();
      const before = await rowsOf(p.id);
      // written after sealing: old but not sealed, it stays
      const [unsealedOld] = await seed(p.id, [{ at: old.toISOString() }]);

      const repository = t.app.get(AuditRepository);
      const statements = jest.spyOn(repository, 'pruneChainStart');
      try {
        // (other tests' sealed records may be past the retention too)
        expect(await t.app.get(AuditRetention).runOnce(now)).toBeGreaterThanOrEqual(5008);
        const deleted = await Promise.all(statements.mock.results.map((r) => r.value as Promise<number>));
        expect(Math.max(...deleted)).toBeLessThanOrEqual(5000);
        const ofP = statements.mock.calls.flatMap(([projectId], i) =>
          projectId === p.id ? [deleted[i]] : [],
        );
        expect(ofP).toEqual([5000, 7]);
      } finally {
        statements.mockRestore();
      }

      const left = await rowsOf(p.id);
      expect(left.map((r) => r.id)).toEqual([before[5007].id, before[5008].id, unsealedOld]);
      expect(left.map((r) => r.seq)).toEqual([5008, 5009, null]);
      expect(
        await t.dataSource.query(
          'SELECT seq::int, pruned_seq::int, pruned_hash FROM audit_chain_heads WHERE project_id = $1',
          [p.id],
        ),
      ).toEqual([{ seq: 5009, pruned_seq: 5007, pruned_hash: before[5006].hash }]);
      expect(await verify(p)).toEqual({ valid: true, checked: 2, unsealed: 1, brokenAt: null });
      expect((await rowsOf(q.id)).map((r) => r.id)).toEqual([qNew, qOldAgain]);
      expect(qOld).toBeDefined();
      expect(await verify(q)).toEqual({ valid: true, checked: 2, unsealed: 0, brokenAt: null });

      // nothing more to do; a record past the chain start's link is still checked
      expect(await t.app.get(AuditRetention).runOnce(now)).toBe(0);
      await rewriteSeal('prev_hash', before[5007].id, 'd'.repeat(64));
      const forged = (await get(p, `/${before[5007].id}`)).body.data;
      await rewriteSeal('hash', before[5007].id, hashOf(forged));
      expect((await verify(p)).brokenAt).toEqual({ id: before[5007].id, seq: 5008, reason: 'LINK_BROKEN' });
    });

    it('deletes a whole chain that is past the retention, verify staying valid', async () => {
      const p = await project();
      await seedMany(p.id, 10, new Date(Date.now() - 2 * DAY));
      await sealAll();
      const rows = await rowsOf(p.id);
      expect(await t.app.get(AuditRetention).runOnce(new Date())).toBeGreaterThanOrEqual(10);
      expect(await rowsOf(p.id)).toEqual([]);
      expect(
        await t.dataSource.query(
          'SELECT pruned_seq::int, pruned_hash FROM audit_chain_heads WHERE project_id = $1',
          [p.id],
        ),
      ).toEqual([{ pruned_seq: 10, pruned_hash: rows[9].hash }]);
      expect(await verify(p)).toEqual({ valid: true, checked: 0, unsealed: 0, brokenAt: null });
      await seed(p.id, [{}]);
      await sealAll();
      expect((await rowsOf(p.id))[0].seq).toBe(11);
      expect(await verify(p)).toEqual({ valid: true, checked: 1, unsealed: 0, brokenAt: null });
    });
  });
});
