import { Client } from 'pg';
import { Response } from 'supertest';
import { Statements } from '../src/database/statements';
import { runInTransaction, Transactions } from '../src/database/transactional';
import { EntitlementsService } from '../src/entitlements/entitlements.service';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { planNodes } from './support/database';
import { expectError, ISO_MS } from './support/expect';

/**
 * `POST /usage` gathers the consumes of one turn of the event loop into batches, one transaction
 * per batch (entitlements.service.ts, `consume`). These tests fire one burst of concurrent
 * consumes across two projects, every kind of answer of a consume mixed in, and check
 * that each request was answered as if it had been alone: the limits hold exactly, replays and
 * conflicts answer the one record, refusals record nothing, the ledger, the balances and the
 * `usage.limit_reached` events agree afterwards, and each project sees only its own. The
 * transaction that wrote each record (its `xmin`) shows that the burst really was batched.
 *
 * Requests sent together through supertest reach the service over several turns of the event loop
 * (each waits for its connection, its body, its key), so they would mostly make batches of one:
 * `allAtOnce` holds each consume at `EntitlementsService.consume` until all of them are there, then
 * lets them in within one turn, as a busy instance sees them. Everything else is the real path.
 */
describe('concurrent consumes gathered into batches (POST /usage)', () => {
  let t: TestApp;
  let a: TestProject;
  let b: TestProject;
  let service: EntitlementsService;
  let seq = 0;

  beforeAll(async () => {
    t = await createTestApp();
    a = await t.createProject();
    b = await t.createProject();
    service = t.app.get(EntitlementsService);
  });
  afterAll(() => t?.close());

  const api = (p: TestProject) => ({
    get: (url: string) => t.http.get(`/api/private/v1${url}`).set(bearer(p.privateKey)),
    post: (url: string, body: object) =>
      t.http.post(`/api/private/v1${url}`).set(bearer(p.privateKey)).send(body),
  });

  interface Customer {
    id: number;
    username: string;
    project: TestProject;
  }

  async function feature(
    p: TestProject,
    slug: string,
    metered = true,
  ): Promise<{ id: number; slug: string }> {
    const res = await api(p)
      .post('/features', { slug, name: slug, metered, unit: metered ? 'call' : '' })
      .expect(201);
    return res.body.data;
  }

  async function plan(
    p: TestProject,
    quotas: Array<{ featureId: number; limit: number | null }>,
  ): Promise<{ id: number }> {
    const slug = `plan-${++seq}`;
    const res = await api(p)
      .post('/plans', {
        slug,
        name: slug,
        value: 10,
        group: 'tier',
        quotas: quotas.map((q) => ({ ...q, resetInterval: 'P1M' })),
      })
      .expect(201);
    return res.body.data;
  }

  /** A customer of `p`, granted `planId` from now for 30 days through an activation (none: nothing granted). */
  async function customer(
    p: TestProject,
    planId?: number,
    username = `batch${String(++seq).padStart(6, '0')}`,
  ): Promise<Customer> {
    const res = await api(p).post('/customers', { username }).expect(201);
    if (planId !== undefined)
      await api(p)
        .post('/subscriptions/activate', {
          customer: { type: 'username', value: username },
          planId,
          duration: 'P30D',
        })
        .expect(200);
    return { id: res.body.data.id, username, project: p };
  }

  const byId = (c: { id: number }) => ({ customerId: c.id });
  const byUsername = (c: { username: string }) => ({ customer: { type: 'username', value: c.username } });

  /** One consume of the burst: who sends it, for which customer (`of`, when it names one that exists in its project). */
  interface Consume {
    tag: string;
    key: TestProject;
    of?: Customer;
    body: Record<string, unknown>;
  }

  /** Interleaves the groups (one of each in turn), so that every batch mixes customers, projects and answers. */
  const interleave = (groups: Consume[][]): Consume[] => {
    const out: Consume[] = [];
    for (let i = 0; out.length < groups.flat().length; i++)
      for (const g of groups) if (i < g.length) out.push(g[i]);
    return out;
  };

  /** `send()`'s `count` consumes let in to the service within one turn of the event loop, once all have arrived. */
  async function allAtOnce<T>(count: number, send: () => Promise<T>): Promise<T> {
    const consume = service.consume.bind(service);
    const held: Array<() => void> = [];
    let open = false;
    const release = () => {
      open = true;
      for (const go of held.splice(0)) go();
    };
    const spy = jest.spyOn(service, 'consume').mockImplementation((projectId, dto) =>
      open
        ? consume(projectId, dto)
        : new Promise((resolve, reject) => {
            held.push(() => void consume(projectId, dto).then(resolve, reject));
            if (held.length === count) release();
          }),
    );
    // should a consume never reach the service, the others go on (and the assertions tell)
    const timer = setTimeout(release, 5_000);
    try {
      return await send();
    } finally {
      clearTimeout(timer);
      spy.mockRestore();
    }
  }

  const fire = (list: Consume[]): Promise<Response[]> =>
    allAtOnce(list.length, () => Promise.all(list.map((c) => api(c.key).post('/usage', c.body))));

  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  const ascending = (xs: number[]) => [...xs].sort((x, y) => x - y);
  const statusesOf = (rs: Response[]) =>
    rs.map((r) => `${r.status}${r.body?.error ? ` ${r.body.error.code}` : ''}`).sort();
  const byUsageId = (xs: Array<{ id: number }>) => [...xs].sort((x, y) => x.id - y.id);

  /** The usage.limit_reached events of a project, oldest first. */
  const limitEvents = async (p: TestProject, customerId?: number): Promise<any[]> => {
    const filter = customerId === undefined ? '' : `&customerId=${customerId}`;
    const res = await api(p).get(`/events?type=usage.limit_reached&limit=100${filter}`).expect(200);
    return res.body.data.data;
  };

  /** Per transaction (`xmin`) that wrote usage records of `customers`: whose records, of which projects. */
  const transactionsOf = async (
    customers: number[],
  ): Promise<Array<{ tx: string; customers: number[]; projects: string[] }>> => {
    const rows: Array<{ tx: string; customers: number[]; projects: string[] }> = await t.dataSource.query(
      `SELECT xmin::text AS tx, array_agg(DISTINCT customer_id) AS customers, array_agg(DISTINCT project_id) AS projects
         FROM usage_records WHERE customer_id = ANY ($1) GROUP BY xmin::text`,
      [customers],
    );
    return rows.map((r) => ({
      tx: r.tx,
      customers: ascending(r.customers),
      projects: [...r.projects].sort(),
    }));
  };

  describe('one burst of 63 consumes across two projects', () => {
    const LIMIT = 5;
    let calls: { a: { id: number; slug: string }; b: { id: number; slug: string } };
    let flag: { id: number; slug: string };
    // A: limit 5 each, consumed 7 times by customerId
    let qa: Customer[];
    // B: limit 5, consumed 7 times by customerId
    let qb: Customer;
    // the same username in A and in B, each consumed 6 times by username with its own key
    let twinA: Customer;
    let twinB: Customer;
    // A: limit 5, 4 consumes by customerId and 4 by username at once (two loaders, two transactions)
    let shapes: Customer;
    // A: limit 100, one eventId sent 6 times at once, 4 with amount 1 and 2 with amount 2
    let replayed: Customer;
    // A: limit 5, 4 consumes of 2 with allowOverage
    let over: Customer;
    // A: granted the boolean feature, consumed on it
    let flagged: Customer;
    // A: nothing granted
    let bare: Customer;
    let sent: Consume[];
    let answers: Response[];

    /** The answers to the consumes tagged `tag`. */
    const answersOf = (tag: string) => answers.filter((_, i) => sent[i].tag === tag);
    /** The answers to the consumes naming `c` (in its own project). */
    const answersFor = (c: Customer) => answers.filter((_, i) => sent[i].of === c);
    const created = (rs: Response[]) => rs.filter((r) => r.status === 201);
    /** The consume an answer answers. */
    const sentOf = (r: Response): Consume => sent[answers.indexOf(r)];

    beforeAll(async () => {
      calls = { a: await feature(a, 'calls'), b: await feature(b, 'calls') };
      flag = await feature(a, 'flag', false);
      const small = await plan(a, [
        { featureId: calls.a.id, limit: LIMIT },
        { featureId: flag.id, limit: 0 },
      ]);
      const big = await plan(a, [{ featureId: calls.a.id, limit: 100 }]);
      const smallB = await plan(b, [{ featureId: calls.b.id, limit: LIMIT }]);
      qa = [await customer(a, small.id), await customer(a, small.id), await customer(a, small.id)];
      qb = await customer(b, smallB.id);
      twinA = await customer(a, small.id, 'twin.user');
      twinB = await customer(b, smallB.id, 'twin.user');
      shapes = await customer(a, small.id);
      replayed = await customer(a, big.id);
      over = await customer(a, small.id);
      flagged = await customer(a, small.id);
      bare = await customer(a);

      const one = (
        tag: string,
        key: TestProject,
        of: Customer | undefined,
        body: Record<string, unknown>,
      ) => ({
        tag,
        key,
        of,
        body: { feature: 'calls', amount: 1, eventId: `${tag}-${++seq}`, ...body },
      });
      const times = (n: number, make: (i: number) => Consume) => Array.from({ length: n }, (_, i) => make(i));
      const groups: Consume[][] = [
        ...qa.map((c, k) => times(7, () => one(`qa${k}`, a, c, byId(c)))),
        times(7, () => one('qb', b, qb, byId(qb))),
        times(6, () => one('twinA', a, twinA, byUsername(twinA))),
        times(6, () => one('twinB', b, twinB, byUsername(twinB))),
        times(8, (i) => one('shapes', a, shapes, i % 2 ? byUsername(shapes) : byId(shapes))),
        times(6, (i) =>
          one('replay', a, replayed, { ...byId(replayed), eventId: 'dup', amount: i < 4 ? 1 : 2 }),
        ),
        times(4, () => one('over', a, over, { ...byId(over), amount: 2, allowOverage: true })),
        [
          one('unknown', a, undefined, { customerId: 999_999_999 }),
          // project B's key naming A's customers, by id and by username: not found, nothing recorded
          one('crossId', b, undefined, { ...byId(qa[0]), eventId: 'cross-id' }),
          one('crossName', b, undefined, { ...byUsername(shapes), eventId: 'cross-name' }),
          one('boolean', a, flagged, { ...byId(flagged), feature: 'flag' }),
          one('notGranted', a, bare, byId(bare)),
        ],
      ];
      sent = interleave(groups);
      expect(sent).toHaveLength(63);
      answers = await fire(sent);
    });

    it('every customer with a limit of 5 gets exactly 5 × 201 (balances after: used 1, 2, 3, 4, 5) and the rest 409 QUOTA_EXCEEDED, whichever project and shape', async () => {
      for (const c of [...qa, qb, twinA, twinB, shapes]) {
        const rs = answersFor(c);
        const refused = rs.length - LIMIT;
        expect(statusesOf(rs)).toEqual([
          ...Array<string>(LIMIT).fill('201'),
          ...Array<string>(refused).fill('409 QUOTA_EXCEEDED'),
        ]);
        // each accepted consume saw all the ones before it, none saw the same state as another
        expect(ascending(created(rs).map((r) => r.body.data.balance.used))).toEqual([1, 2, 3, 4, 5]);
        for (const r of created(rs)) {
          expect(r.body.data.usage).toMatchObject({
            customerId: c.id,
            featureId: c.project === a ? calls.a.id : calls.b.id,
            amount: 1,
            overage: 0,
            reversedAt: null,
          });
          expect(r.body.data.usage.recordedAt).toMatch(ISO_MS);
        }
        for (const r of rs.filter((x) => x.status === 409)) {
          expectError(r, 409, 'QUOTA_EXCEEDED');
          expect(r.body.error.details).toEqual([expect.objectContaining({ field: 'amount', remaining: 0 })]);
        }
      }
      // by username, each key reached its own project's customer of that name
      expect(new Set(created(answersOf('twinA')).map((r) => r.body.data.usage.customerId))).toEqual(
        new Set([twinA.id]),
      );
      expect(new Set(created(answersOf('twinB')).map((r) => r.body.data.usage.customerId))).toEqual(
        new Set([twinB.id]),
      );
    });

    it('one eventId sent 6 times at once (4 × amount 1, 2 × amount 2): one 201, the same amount replays it (200), the other is 409 USAGE_EVENT_CONFLICT', async () => {
      const rs = answersOf('replay');
      const first = created(rs);
      expect(first).toHaveLength(1);
      const record = first[0].body.data.usage;
      expect(record).toMatchObject({ eventId: 'dup', customerId: replayed.id });
      // whichever amount went first: the others with it are replays, those with the other amount conflicts
      const same = rs.filter((r) => r !== first[0] && sentOf(r).body.amount === record.amount);
      const other = rs.filter((r) => sentOf(r).body.amount !== record.amount);
      expect(other).toHaveLength(record.amount === 1 ? 2 : 4);
      for (const r of same) {
        expect(r.status).toBe(200);
        expect(r.body.data).toEqual({ usage: record, balance: expect.any(Object), replayed: true });
        expect(r.body.data.balance).toEqual({
          limit: 100,
          used: record.amount,
          held: 0,
          remaining: 100 - record.amount,
          overage: 0,
        });
      }
      for (const r of other) expectError(r, 409, 'USAGE_EVENT_CONFLICT');
      const rows = await t.dataSource.query(
        'SELECT amount::float AS amount FROM usage_records WHERE customer_id = $1 AND event_id = $2',
        [replayed.id, 'dup'],
      );
      expect(rows).toEqual([{ amount: record.amount }]);
    });

    it('allowOverage beyond the limit: 4 × 2 against 5 are all 201, allocating 2, 2, 1, 0 with overage 0, 0, 1, 2', async () => {
      const rs = answersFor(over);
      expect(statusesOf(rs)).toEqual(['201', '201', '201', '201']);
      const usages = rs.map((r) => r.body.data.usage);
      for (const u of usages) expect(u.amount).toBe(2);
      expect(ascending(usages.map((u) => u.overage))).toEqual([0, 0, 1, 2]);
      expect(ascending(usages.map((u) => sum(u.allocations.map((x: any) => x.amount))))).toEqual([
        0, 1, 2, 2,
      ]);
      for (const u of usages) expect(sum(u.allocations.map((x: any) => x.amount)) + u.overage).toBe(2);
      // the balance each answered: overage grows only once the bucket is empty
      expect(
        rs.map((r) => r.body.data.balance).sort((x, y) => x.used - y.used || x.overage - y.overage),
      ).toEqual([
        { limit: 5, used: 2, held: 0, remaining: 3, overage: 0 },
        { limit: 5, used: 4, held: 0, remaining: 1, overage: 0 },
        { limit: 5, used: 5, held: 0, remaining: 0, overage: 1 },
        { limit: 5, used: 5, held: 0, remaining: 0, overage: 3 },
      ]);
    });

    it('the refusals of a single call answer inside a batch as alone, and record nothing', async () => {
      expectError(answersOf('unknown')[0], 404, 'CUSTOMER_NOT_FOUND');
      expectError(answersOf('crossId')[0], 404, 'CUSTOMER_NOT_FOUND');
      expectError(answersOf('crossName')[0], 404, 'CUSTOMER_NOT_FOUND');
      expectError(answersOf('boolean')[0], 400, 'FEATURE_NOT_METERED');
      expectError(answersOf('notGranted')[0], 403, 'FEATURE_NOT_GRANTED');
      const [{ n }] = await t.dataSource.query(
        `SELECT count(*)::int AS n FROM usage_records
          WHERE event_id IN ('cross-id', 'cross-name') OR customer_id = ANY ($1)`,
        [[flagged.id, bare.id]],
      );
      expect(n).toBe(0);
    });

    it('afterwards, for every customer, the ledger holds exactly the 201s and the balance is the sum of their allocations', async () => {
      const expectedUsed = new Map<Customer, number>([
        ...[...qa, qb, twinA, twinB, shapes].map((c): [Customer, number] => [c, LIMIT]),
        [over, LIMIT],
        [flagged, 0],
        [bare, 0],
      ]);
      const dup = created(answersOf('replay'))[0].body.data.usage.amount as number;
      expectedUsed.set(replayed, dup);
      for (const [c, used] of expectedUsed) {
        const mine = created(answersFor(c)).map((r) => r.body.data.usage);
        const page = (await api(c.project).get(`/customers/${c.id}/usage?pageSize=100`).expect(200)).body
          .data;
        expect(page.total).toBe(mine.length);
        expect(byUsageId(page.data)).toEqual(byUsageId(mine));
        const allocated = sum(page.data.flatMap((u: any) => u.allocations.map((x: any) => x.amount)));
        const overage = sum(page.data.map((u: any) => u.overage));
        expect(allocated).toBe(used);

        const list = (await api(c.project).get(`/customers/${c.id}/entitlements`).expect(200)).body.data;
        const own = c.project === a ? calls.a : calls.b;
        // each project's list shows only its own features
        expect(ascending(list.map((e: any) => e.feature.id))).toEqual(
          c.project === a ? ascending([calls.a.id, flag.id]) : [calls.b.id],
        );
        const entitlement = list.find((e: any) => e.feature.id === own.id);
        expect(entitlement.granted).toBe(c !== bare);
        expect(entitlement.balance).toMatchObject({ used: allocated, overage });
        const checked = await api(c.project).post('/entitlements/check', {
          customerId: c.id,
          feature: 'calls',
          amount: 0,
        });
        expect(checked.status).toBe(200);
        expect(checked.body.data.balance).toEqual(entitlement.balance);
      }
      expect(
        (await api(a).get(`/customers/${over.id}/entitlements`).expect(200)).body.data.find(
          (e: any) => e.feature.id === calls.a.id,
        ).balance,
      ).toEqual({ limit: 5, used: 5, held: 0, remaining: 0, overage: 3 });
    });

    it("each project sees only its own: the other's customers are not found, its records are only its 201s", async () => {
      expectError(await api(b).get(`/customers/${qa[0].id}/usage`), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await api(b).get(`/customers/${twinA.id}/entitlements`), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await api(a).get(`/customers/${twinB.id}/usage`), 404, 'CUSTOMER_NOT_FOUND');
      expectError(await api(a).get(`/customers/${qb.id}/entitlements`), 404, 'CUSTOMER_NOT_FOUND');
      const rows: Array<{ project_id: string; n: number }> = await t.dataSource.query(
        `SELECT project_id, count(*)::int AS n FROM usage_records
          WHERE feature_id IN ($1, $2) GROUP BY project_id`,
        [calls.a.id, calls.b.id],
      );
      const createdWith = (p: TestProject) => created(answers.filter((_, i) => sent[i].key === p)).length;
      // 3 × 5 + 5 + 5 + 1 + 4 in A; 5 + 5 in B
      expect(createdWith(a)).toBe(30);
      expect(createdWith(b)).toBe(10);
      expect(Object.fromEntries(rows.map((r) => [r.project_id, r.n]))).toEqual({ [a.id]: 30, [b.id]: 10 });
    });

    it("running totals follow each series in (recorded_at, id) order, also where one transaction wrote several of a customer's records", async () => {
      const features = [calls.a.id, calls.b.id];
      // the burst wrote several records of one customer in one transaction (one INSERT)
      const [{ shared }] = await t.dataSource.query(
        `SELECT count(*)::int AS shared FROM (SELECT 1 FROM usage_records WHERE feature_id = ANY ($1)
          GROUP BY customer_id, xmin::text HAVING count(*) > 1) s`,
        [features],
      );
      expect(shared).toBeGreaterThan(0);
      const allocations = await t.dataSource.query(
        `SELECT id, running::text, sum(amount) OVER w::text AS expected FROM usage_allocations
          WHERE feature_id = ANY ($1)
         WINDOW w AS (PARTITION BY customer_id, feature_id, plan_group ORDER BY recorded_at, id)`,
        [features],
      );
      expect(allocations.length).toBeGreaterThan(20);
      for (const row of allocations)
        expect({ id: row.id, running: Number(row.running) }).toEqual({
          id: row.id,
          running: Number(row.expected),
        });
      const records = await t.dataSource.query(
        `SELECT id, overage_running::text AS running, sum(overage) OVER w::text AS expected FROM usage_records
          WHERE feature_id = ANY ($1)
         WINDOW w AS (PARTITION BY customer_id, feature_id ORDER BY recorded_at, id)`,
        [features],
      );
      for (const row of records)
        expect({ id: row.id, running: Number(row.running) }).toEqual({
          id: row.id,
          running: Number(row.expected),
        });
      expect(records.some((r: { running: string }) => Number(r.running) > 0)).toBe(true);
    });

    it('usage.limit_reached: exactly one per customer whose bucket the burst emptied, in its own project only', async () => {
      const emptiedA = [...qa, twinA, shapes, over];
      const emptiedB = [qb, twinB];
      // the burst's events (another test's are of another feature)
      const eventsA = (await limitEvents(a)).filter((e) => e.data.feature.id === calls.a.id);
      const eventsB = (await limitEvents(b)).filter((e) => e.data.feature.id === calls.b.id);
      expect(ascending(eventsA.map((e) => e.data.customer.id))).toEqual(ascending(emptiedA.map((c) => c.id)));
      expect(ascending(eventsB.map((e) => e.data.customer.id))).toEqual(ascending(emptiedB.map((c) => c.id)));
      for (const [events, feature] of [
        [eventsA, calls.a],
        [eventsB, calls.b],
      ] as const)
        for (const e of events)
          expect(e.data).toMatchObject({
            feature: { id: feature.id, slug: 'calls' },
            bucket: { limit: 5, used: 5, remaining: 0, group: 'tier' },
          });
      // the customers left with quota have none
      expect(await limitEvents(a, replayed.id)).toEqual([]);
      expect(await limitEvents(a, flagged.id)).toEqual([]);
    });

    it('the burst was batched: some transactions wrote the records of several customers, of both projects', async () => {
      const txs = await transactionsOf([...qa, qb, twinA, twinB, shapes, replayed, over].map((c) => c.id));
      // at least one transaction served several customers, and one served both projects
      expect(Math.max(...txs.map((x) => x.customers.length))).toBeGreaterThan(1);
      expect(txs.some((x) => x.projects.length === 2)).toBe(true);
    });
  });

  it('usage.limit_reached: one transaction emptying the buckets of 8 customers of two projects records one event for each, and none more when consumed beyond', async () => {
    const slug = `emptied-${++seq}`;
    const customers: Customer[] = [];
    const features = new Map<TestProject, { id: number; slug: string }>();
    for (const [p, n] of [
      [a, 5],
      [b, 3],
    ] as const) {
      const f = await feature(p, slug);
      features.set(p, f);
      const pl = await plan(p, [{ featureId: f.id, limit: 3 }]);
      for (let i = 0; i < n; i++) customers.push(await customer(p, pl.id));
    }
    const consume = (c: Customer, amount: number, allowOverage = false) =>
      api(c.project).post('/usage', {
        customerId: c.id,
        feature: slug,
        amount,
        allowOverage,
        eventId: `x-${++seq}`,
      });

    // each customer emptied by one consume, all let in at once: one batch, one transaction
    const emptying = await allAtOnce(customers.length, () =>
      Promise.all(customers.map((c) => consume(c, 3))),
    );
    expect(emptying.map((r) => r.status)).toEqual(customers.map(() => 201));
    for (const r of emptying)
      expect(r.body.data.balance).toEqual({ limit: 3, used: 3, held: 0, remaining: 0, overage: 0 });
    const txs = await transactionsOf(customers.map((c) => c.id));
    expect(txs).toEqual([
      {
        tx: expect.any(String),
        customers: ascending(customers.map((c) => c.id)),
        projects: [a.id, b.id].sort(),
      },
    ]);

    // then beyond the limit with overage, and refused without, again all at once
    const beyond = await allAtOnce(2 * customers.length, () =>
      Promise.all(customers.flatMap((c) => [consume(c, 1, true), consume(c, 1)])),
    );
    expect(statusesOf(beyond)).toEqual([
      ...customers.map(() => '201'),
      ...customers.map(() => '409 QUOTA_EXCEEDED'),
    ]);

    for (const c of customers) {
      const events = await limitEvents(c.project, c.id);
      expect(events).toHaveLength(1);
      expect(events[0].data).toMatchObject({
        customer: { id: c.id, username: c.username },
        feature: { id: features.get(c.project)!.id, slug },
        bucket: { limit: 3, used: 3, remaining: 0 },
      });
    }
    // each event was recorded by the transaction that emptied its bucket
    const rows: Array<{ customer_id: number; tx: string }> = await t.dataSource.query(
      `SELECT customer_id, xmin::text AS tx FROM events
        WHERE type = 'usage.limit_reached' AND customer_id = ANY ($1) ORDER BY customer_id`,
      [customers.map((c) => c.id)],
    );
    expect(rows).toEqual(
      ascending(customers.map((c) => c.id)).map((id) => ({ customer_id: id, tx: txs[0].tx })),
    );
  });

  it("one customer's batch reads its state once: the plan of its state statement reads the customer once per consume, and once for its state", async () => {
    const slug = `once-${++seq}`;
    const f = await feature(a, slug);
    const pl = await plan(a, [{ featureId: f.id, limit: null }]);
    const c = await customer(a, pl.id);
    const dto = () => ({ customerId: c.id, feature: slug, amount: 1, eventId: `once-${++seq}` });
    const statements = t.app.get(Statements);
    const run = statements.run.bind(statements);
    const sent: Array<{ text: string; values: unknown[] }> = [];
    const spy = jest.spyOn(statements, 'run').mockImplementation((em, statement, values) => {
      if (statement.name.startsWith('entitlements.state-batch-')) sent.push({ text: statement.text, values });
      return run(em, statement, values);
    });
    try {
      const rs = await allAtOnce(8, () => Promise.all([...Array(8)].map(() => service.consume(a.id, dto()))));
      expect(rs.map((r) => r.status)).toEqual(Array(8).fill(201));
    } finally {
      spy.mockRestore();
    }
    expect(sent).toHaveLength(1);
    const [{ 'QUERY PLAN': plans }] = await t.dataSource.query(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${sent[0].text}`,
      sent[0].values,
    );
    const loops = planNodes(plans[0].Plan)
      .filter((node) => node['Relation Name'] === 'customers')
      .map((node) => node['Actual Loops'] as number);
    // each consume's customer (for its event id's record), then the state's, whose columns (the
    // windows, plans, grants, sums) are read for each row it yields: once, for the batch's lead
    expect(loops.sort((x, y) => x - y)).toEqual([1, 8]);
  });

  /**
   * What `work` sends on the connection of its transaction, one entry per round trip: a
   * statement's name, or its text (the connection that locks customers: other connections of the
   * pool serve the application's background work meanwhile).
   */
  async function roundTrips(work: () => Promise<unknown>): Promise<string[]> {
    const sent = new Map<Client, string[]>();
    // a statement's name by its text: with prepared statements off (a pooler) it is sent unnamed
    const names = new Map<string, string>();
    // a statement that carried the audit records (see src/database/riders.ts), unnamed: its own
    // text follows theirs
    const nameOf = (text: string): string => {
      const own = names.get(text);
      if (own !== undefined || !text.startsWith('WITH rider_')) return own ?? text;
      const carrier = [...names].find(([t]) => text.endsWith(t.replace(/^\s*WITH\s/, '')));
      return carrier ? `${carrier[1]}+audit` : text;
    };
    const statements = t.app.get(Statements);
    const run = statements.run.bind(statements);
    const runSpy = jest.spyOn(statements, 'run').mockImplementation((em, statement, values) => {
      names.set(statement.text, statement.name);
      return run(em, statement, values);
    });
    const query = Client.prototype.query;
    const spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (
      this: Client,
      ...args: any[]
    ) {
      const q = args[0] as string | { text: string; name?: string };
      const text = typeof q === 'string' ? q : q.text;
      sent.set(this, [...(sent.get(this) ?? []), (typeof q === 'object' && q.name) || nameOf(text)]);
      return (query as (...a: any[]) => any).apply(this, args);
    });
    try {
      await work();
    } finally {
      spy.mockRestore();
      runSpy.mockRestore();
    }
    // from its transaction's start to its end (the pool may lend the connection to other work before and after)
    const list =
      [...sent.values()].find((l) => l.some((x) => x.startsWith('entitlements.lock-batch-'))) ?? [];
    const lock = list.findIndex((x) => x.startsWith('entitlements.lock-batch-'));
    return list.slice(list.lastIndexOf('START TRANSACTION', lock), list.indexOf('COMMIT', lock) + 1);
  }

  it("one customer's consumes in one batch share its state, each answered from its own event id: replays, a conflict and new records", async () => {
    const slug = `shared-${++seq}`;
    const f = await feature(a, slug);
    const pl = await plan(a, [{ featureId: f.id, limit: 10 }]);
    const c = await customer(a, pl.id);
    const body = (eventId: string, amount = 1) => ({
      customerId: c.id,
      feature: slug,
      amount,
      eventId,
      allowOverage: true,
    });
    const earlier: Record<string, number> = {};
    for (const [eventId, amount] of [
      ['old-1', 1],
      ['old-2', 2],
      ['old-3', 1],
    ] as const) {
      const res = await api(a).post('/usage', body(eventId, amount)).expect(201);
      earlier[eventId] = res.body.data.usage.id;
    }
    // used 4 of 10: a new one, a replay, a new one, a replay, a conflict (another amount), a new
    // one, and one past the limit (its overage 1)
    const sent = [
      body('new-1'),
      body('old-1'),
      body('new-2', 2),
      body('old-2', 2),
      body('old-3', 3),
      body('new-3'),
      body('new-4', 3),
    ];
    const rs = await allAtOnce(sent.length, () => Promise.all(sent.map((x) => api(a).post('/usage', x))));
    expect(rs.map((r) => r.status)).toEqual([201, 200, 201, 200, 409, 201, 201]);
    expect(rs[1].body.data.usage).toMatchObject({ id: earlier['old-1'], eventId: 'old-1', amount: 1 });
    expect(rs[3].body.data.usage).toMatchObject({ id: earlier['old-2'], eventId: 'old-2', amount: 2 });
    expectError(rs[4], 409, 'USAGE_EVENT_CONFLICT');
    expect(rs[4].body.error.details[0].message).toContain(`usage ${earlier['old-3']}`);
    // the new ones in the batch's order, each on the balance the ones before it left
    expect([0, 2, 5, 6].map((k) => rs[k].body.data.balance.used)).toEqual([5, 7, 8, 10]);
    expect(rs[6].body.data.balance).toEqual({ limit: 10, used: 10, held: 0, remaining: 0, overage: 1 });
    // written together: one transaction holds the four new records (the three before, one each)
    const txs = await transactionsOf([c.id]);
    const news = await t.dataSource.query(
      "SELECT DISTINCT xmin::text AS tx FROM usage_records WHERE customer_id = $1 AND event_id LIKE 'new-%'",
      [c.id],
    );
    expect(news).toHaveLength(1);
    expect(txs).toHaveLength(4);
  });

  it('a batch of consumes is one transaction of five round trips: begin, lock, state, insert (with its audit records), commit', async () => {
    const slug = `trips-${++seq}`;
    const f = await feature(a, slug);
    const pl = await plan(a, [{ featureId: f.id, limit: 10 }]);
    const customers = [await customer(a, pl.id), await customer(a, pl.id), await customer(a, pl.id)];
    const dto = (c: Customer) => ({ customerId: c.id, feature: slug, amount: 1, eventId: `trip-${++seq}` });
    // the first consume of each customer sums its periods (a statement more); then they are guessed
    for (const c of customers) expect((await service.consume(a.id, dto(c))).status).toBe(201);
    // the ledger's statements name the current month (they read it month by month)
    const month = new Date().toISOString().slice(0, 7);
    const expected = [
      'START TRANSACTION',
      'entitlements.lock-batch-id',
      `entitlements.state-batch-id-slug-event-${month}`,
      // the records and, riding with them, their audit records
      `usage.insert-many-${month}+audit`,
      'COMMIT',
    ];
    expect(await roundTrips(() => service.consume(a.id, dto(customers[0])))).toEqual(expected);
    // three at once: one batch, the same round trips
    const sent = await roundTrips(() =>
      allAtOnce(customers.length, () => Promise.all(customers.map((c) => service.consume(a.id, dto(c))))),
    );
    expect(sent).toEqual(expected);
  });

  it("a consume inside a caller's unit of work runs alone in that transaction: it commits or rolls back with it", async () => {
    const slug = `joined-${++seq}`;
    const f = await feature(a, slug);
    const pl = await plan(a, [{ featureId: f.id, limit: 3 }]);
    const c = await customer(a, pl.id);
    const transactions: Transactions = t.app.get(Transactions);
    const body = { customerId: c.id, feature: slug, amount: 1, eventId: `joined-${++seq}` };

    // rolled back with the caller's work: nothing recorded, the event id still free
    await expect(
      runInTransaction(transactions, async () => {
        expect((await service.consume(a.id, body)).status).toBe(201);
        throw new Error('the caller fails after the consume');
      }),
    ).rejects.toThrow('the caller fails after the consume');
    let ledger = await api(a).get(`/customers/${c.id}/usage`).expect(200);
    expect(ledger.body.data.data).toEqual([]);

    // committed with it: the record was written by the caller's own transaction
    const { outcome, tx } = await runInTransaction(transactions, async () => {
      const [{ tx }] = (await transactions.tx.query('SELECT txid_current()::text AS tx')) as Array<{
        tx: string;
      }>;
      return { outcome: await service.consume(a.id, body), tx };
    });
    expect(outcome.status).toBe(201);
    expect(outcome.body.balance).toEqual({ limit: 3, used: 1, held: 0, remaining: 2, overage: 0 });
    expect(await transactionsOf([c.id])).toEqual([{ tx, customers: [c.id], projects: [a.id] }]);
    ledger = await api(a).get(`/customers/${c.id}/usage`).expect(200);
    expect(ledger.body.data.data).toHaveLength(1);
    // and the same event id afterwards is a replay of that record
    const again = await service.consume(a.id, body);
    expect(again.status).toBe(200);
    expect(again.body.usage.id).toBe(outcome.body.usage.id);
  });
});
