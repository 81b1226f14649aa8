import { Client } from 'pg';
import { Response } from 'supertest';
import { Statements } from '../src/database/statements';
import { HoldsService } from '../src/entitlements/holds.service';
import { bearer, createTestApp, TestApp, TestProject } from './support/app';
import { catalog } from './support/catalog';

const P = '/api/private/v1';
const DAY = 86_400_000;
const LIMIT = 5;
const UNKNOWN = 999_999_999;

/**
 * Holds, and commits, arriving together are decided in batches (docs/entitlements.md#holds,
 * "Batches"): one transaction a batch, one hold or commit per customer, each request answered as
 * it would be alone. Two identical worlds (one project each: the same catalog, customers in the
 * same roles) get the same requests: one sent one at a time, the other all at once. Every answer
 * must be the same, ids and instants aside. A customer's requests may be decided in another order
 * when batched, so a customer's answers are compared as a multiset; a customer with one request is
 * compared request for request. The transactions that wrote the rows (`xmin`) show that the
 * burst really was batched and the sequence was not.
 *
 * Requests sent together through supertest reach the service over several turns of the event loop,
 * so they would mostly make batches of one: `allAtOnce` holds each call of `HoldsService.create` or
 * `.commit` until all of them are there, then lets them in within one turn, as a busy instance sees
 * them (the way test/usage-batch.e2e-spec.ts does for consumes). Everything else is the real path.
 */
describe('holds and commits gathered into batches answer as one at a time', () => {
  let t: TestApp;
  let service: HoldsService;
  let setup: ReturnType<typeof catalog>;
  let pg: Client;
  // one instant for both worlds' windows: the same periods, the same resetsAt
  const since = new Date(Date.now() - DAY).toISOString();

  beforeAll(async () => {
    t = await createTestApp({ EVENTS_SCHEDULER_ENABLED: 'false' });
    service = t.app.get(HoldsService);
    setup = catalog(t, 'hb');
    pg = new Client({ connectionString: t.databaseUrl });
    await pg.connect();
  });
  afterAll(async () => {
    await pg?.end();
    await t?.close();
  });

  interface Customer {
    id: number;
    username: string;
  }

  /** One world: a project with a metered feature of LIMIT a month, and customers by role. */
  interface World {
    project: TestProject;
    auth: Record<string, string>;
    feature: { id: number; slug: string };
    customers: Record<string, Customer>;
  }

  const ROLES = [
    'one',
    'two',
    'overage',
    'multi',
    'replay',
    'disabled',
    'bare',
    'k1',
    'k2',
    'k3',
    'twice',
    'released',
    'over',
    'overOk',
    'eventTaken',
  ] as const;
  type Role = (typeof ROLES)[number];

  async function world(): Promise<World> {
    const project = await t.createProject();
    const auth = bearer(project.privateKey);
    const feature = await setup.feature(auth);
    const plan = await setup.plan(auth, 'tier', [
      { featureId: feature.id, limit: LIMIT, resetInterval: 'P1M' },
    ]);
    const customers: Record<string, Customer> = {};
    for (const role of ROLES) {
      const c = await setup.customer(auth);
      customers[role] = c;
      // `bare` is granted nothing
      if (role !== 'bare')
        await setup.windowOf(project.id, {
          customerId: c.id,
          planId: plan.id,
          group: 'tier',
          validFrom: since,
        });
    }
    await t.http
      .patch(`${P}/customers/${customers.disabled.id}`)
      .set(auth)
      .send({ enabled: false })
      .expect(200);
    return { project, auth, feature, customers };
  }

  /** One request of a list: the customer it is about (its role; none for an unknown one), and how to send it in a world. */
  interface Req {
    role: Role | 'unknown';
    holdId?: string;
    send: (w: World) => Promise<Response>;
  }

  const holdReq = (role: Req['role'], holdId: string, body: (w: World) => Record<string, unknown>): Req => ({
    role,
    holdId,
    send: (w) =>
      t.http
        .post(`${P}/usage/holds`)
        .set(w.auth)
        .send({ holdId, ...body(w) }),
  });
  const ids = (role: Role) => (w: World) => ({ customerId: w.customers[role].id, featureId: w.feature.id });
  const names = (role: Role) => (w: World) => ({
    customer: { type: 'username', value: w.customers[role].username },
    feature: w.feature.slug,
  });

  /** `send()`'s `count` calls of `method` let in to the service within one turn of the event loop, once all have arrived. */
  async function allAtOnce<T>(
    method: 'create' | 'commit',
    count: number,
    send: () => Promise<T>,
  ): Promise<T> {
    const original = (service[method] as (...args: any[]) => Promise<unknown>).bind(service);
    const held: Array<() => void> = [];
    let open = false;
    let arrived = false;
    const release = () => {
      open = true;
      for (const go of held.splice(0)) go();
    };
    const spy = jest.spyOn(service, method).mockImplementation(((...args: any[]) =>
      open
        ? original(...args)
        : new Promise((resolve, reject) => {
            held.push(() => void original(...args).then(resolve, reject));
            if (held.length === count) {
              arrived = true;
              release();
            }
          })) as any);
    // should a call never reach the service, the others go on (and the assertions tell)
    const timer = setTimeout(release, 5_000);
    try {
      const answers = await send();
      // let in together, not by the timer
      expect(spy).toHaveBeenCalledTimes(count);
      expect(arrived).toBe(true);
      return answers;
    } finally {
      clearTimeout(timer);
      spy.mockRestore();
    }
  }

  async function oneAtATime(w: World, list: Req[]): Promise<Response[]> {
    const out: Response[] = [];
    for (const r of list) out.push(await r.send(w));
    return out;
  }

  const together = (method: 'create' | 'commit', w: World, list: Req[]): Promise<Response[]> =>
    allAtOnce(method, list.length, () => Promise.all(list.map((r) => r.send(w))));

  /** An answer without its ids and instants (those differ between the worlds by nature). */
  function normalised(r: Response) {
    const error = r.body?.error;
    const data = r.body?.data;
    const hold = data?.hold;
    const usage = data?.usage;
    return {
      status: r.status,
      code: error?.code ?? null,
      // the message of HOLD_CONFLICT names the hold's id
      details: error?.details?.map(({ message: _message, ...rest }: any) => rest) ?? null,
      hold: hold && {
        amount: hold.amount,
        overage: hold.overage,
        allowOverage: hold.allowOverage,
        allocations: hold.allocations,
        status: hold.status,
        ended: hold.endedAt !== null,
        committed: hold.usageId !== null,
      },
      usage: usage && {
        eventId: usage.eventId,
        amount: usage.amount,
        overage: usage.overage,
        allocations: usage.allocations,
        reversedAt: usage.reversedAt,
      },
      balance: data?.balance ?? null,
      replayed: data?.replayed ?? false,
    };
  }

  /** Per role, its answers normalised, sorted (a multiset): the order within a customer may differ when batched. */
  function byRole(list: Req[], answers: Response[]): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const [i, r] of list.entries()) (out[r.role] ??= []).push(JSON.stringify(normalised(answers[i])));
    for (const k of Object.keys(out)) out[k].sort();
    return out;
  }

  const statuses = (list: Req[], answers: Response[], role: Req['role']) =>
    answers
      .filter((_, i) => list[i].role === role)
      .map((r) => `${r.status}${r.body?.error ? ` ${r.body.error.code}` : ''}`)
      .sort();

  const balanceOf = async (w: World, role: Role) => {
    const res = await t.http
      .post(`${P}/entitlements/check`)
      .set(w.auth)
      .send({ customerId: w.customers[role].id, featureId: w.feature.id, amount: 0 });
    expect(res.status).toBe(200);
    return res.body.data.balance;
  };

  /** How many transactions wrote the rows `ids` of `table` (their distinct `xmin`), and how many rows. */
  async function transactions(table: 'usage_holds' | 'usage_records', ids: number[]) {
    const { rows } = await pg.query(
      `SELECT count(DISTINCT xmin::text)::int AS txs, count(*)::int AS n FROM ${table} WHERE id = ANY ($1)`,
      [ids],
    );
    return rows[0] as { txs: number; n: number };
  }

  let seq: World;
  let bat: World;

  beforeAll(async () => {
    seq = await world();
    bat = await world();
  });

  it("one customer's holds sent together: each batch reads its state once, and decides one hold of it", async () => {
    const w = await world();
    const statements = t.app.get(Statements);
    const run = statements.run.bind(statements);
    // the requests of each batch's state statement (a hold's, as a check's: no event ids)
    const sizes: number[] = [];
    const spy = jest.spyOn(statements, 'run').mockImplementation((em, statement, values) => {
      if (/^entitlements\.state-batch-\w+-\w+-\d{4}-\d{2}$/.test(statement.name))
        sizes.push((values[0] as unknown[]).length);
      return run(em, statement, values);
    });
    try {
      const list = [1, 2, 3, 4].map((n) =>
        holdReq('k1', `once-${n}`, (x) => ({ ...ids('k1')(x), amount: 1 })),
      );
      const rs = await together('create', w, list);
      expect(rs.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    } finally {
      spy.mockRestore();
    }
    // four batches (the customer's other holds wait for a later one each time), each naming the
    // customer once, not once per hold still waiting
    expect(sizes).toEqual([1, 1, 1, 1]);
  });

  describe('holds in one batch', () => {
    let list: Req[];
    let one: Response[];
    let all: Response[];

    beforeAll(async () => {
      // made before: the batch replays it, and conflicts with it
      for (const w of [seq, bat])
        await holdReq('replay', 'pre-1', (x) => ({ ...ids('replay')(x), amount: 2 }))
          .send(w)
          .then((r) => expect(r.status).toBe(201));
      const amount =
        (n: number, more: Record<string, unknown> = {}) =>
        (f: (w: World) => object) =>
        (w: World) => ({
          ...f(w),
          amount: n,
          ...more,
        });
      list = [
        holdReq('one', 'one-1', amount(1)(ids('one'))),
        holdReq('multi', 'multi-1', amount(2)(ids('multi'))),
        holdReq('two', 'two-1', amount(LIMIT)(names('two'))),
        holdReq('replay', 'pre-1', amount(2)(ids('replay'))),
        holdReq('multi', 'multi-2', amount(2)(names('multi'))),
        holdReq('overage', 'over-1', amount(LIMIT + 2, { allowOverage: true })(ids('overage'))),
        holdReq('replay', 'pre-1', amount(3)(ids('replay'))),
        holdReq('unknown', 'nobody-1', (w) => ({ customerId: UNKNOWN, featureId: w.feature.id, amount: 1 })),
        holdReq('multi', 'multi-3', amount(2)(ids('multi'))),
        holdReq('disabled', 'disabled-1', amount(1)(ids('disabled'))),
        holdReq('bare', 'bare-1', amount(1)(ids('bare'))),
      ];
      one = await oneAtATime(seq, list);
      all = await together('create', bat, list);
    });

    it('sent one at a time, each answers as the rules say', () => {
      const s = (role: Req['role']) => statuses(list, one, role);
      expect(s('one')).toEqual(['201']);
      expect(s('two')).toEqual(['201']);
      expect(s('overage')).toEqual(['201']);
      // 2 + 2 of 5, then 2 more does not fit
      expect(one.filter((_, i) => list[i].role === 'multi').map((r) => r.status)).toEqual([201, 201, 409]);
      expect(s('replay')).toEqual(['200', '409 HOLD_CONFLICT']);
      expect(s('unknown')).toEqual(['404 CUSTOMER_NOT_FOUND']);
      expect(s('disabled')).toEqual(['403 CUSTOMER_DISABLED']);
      expect(s('bare')).toEqual(['403 FEATURE_NOT_GRANTED']);
    });

    it('all at once, every customer gets the same answers (status, code, hold, balance, replayed)', () => {
      expect(byRole(list, all)).toEqual(byRole(list, one));
      // a customer with one request: request for request
      for (const [i, r] of list.entries())
        if (list.filter((x) => x.role === r.role).length === 1)
          expect({ i, ...normalised(all[i]) }).toEqual({ i, ...normalised(one[i]) });
      // each new hold is the one its request named
      for (const answers of [one, all])
        for (const [i, r] of answers.entries())
          if (r.status === 201) expect(r.body.data.hold.holdId).toBe(list[i].holdId);
    });

    it('the customer of three holds of 2 against 5: two held, one QUOTA_EXCEEDED, used + held never beyond the limit', async () => {
      const multi = all.filter((_, i) => list[i].role === 'multi');
      expect(statuses(list, all, 'multi')).toEqual(['201', '201', '409 QUOTA_EXCEEDED']);
      expect(
        multi
          .filter((r) => r.status === 201)
          .map((r) => r.body.data.balance)
          .sort((x, y) => x.held - y.held),
      ).toEqual([
        { limit: LIMIT, used: 0, held: 2, remaining: 3, overage: 0 },
        { limit: LIMIT, used: 0, held: 4, remaining: 1, overage: 0 },
      ]);
      const refused = multi.find((r) => r.status === 409)!;
      expect(refused.body.error.details).toEqual([
        expect.objectContaining({ field: 'amount', remaining: 1 }),
      ]);
      for (const role of ROLES)
        expect([role, await balanceOf(bat, role)]).toEqual([role, await balanceOf(seq, role)]);
      expect(await balanceOf(bat, 'multi')).toEqual({
        limit: LIMIT,
        used: 0,
        held: 4,
        remaining: 1,
        overage: 0,
      });
    });

    it('the replay answers the hold made before, unchanged; the conflict holds nothing', async () => {
      for (const answers of [one, all]) {
        const replayed = answers.find((r, i) => list[i].role === 'replay' && r.status === 200)!;
        expect(replayed.body.data).toMatchObject({
          hold: { holdId: 'pre-1', amount: 2, status: 'held' },
          balance: { limit: LIMIT, used: 0, held: 2, remaining: 3, overage: 0 },
          replayed: true,
        });
      }
      for (const w of [seq, bat]) {
        const { rows } = await pg.query('SELECT count(*)::int AS n FROM usage_holds WHERE customer_id = $1', [
          w.customers.replay.id,
        ]);
        expect(rows).toEqual([{ n: 1 }]);
      }
    });

    it('refused holds held nothing, in either world', async () => {
      for (const w of [seq, bat]) {
        const { rows } = await pg.query(
          'SELECT count(*)::int AS n FROM usage_holds WHERE customer_id = ANY ($1)',
          [[w.customers.disabled.id, w.customers.bare.id]],
        );
        expect(rows).toEqual([{ n: 0 }]);
      }
    });

    it('batched: the new holds share fewer transactions than requests; one at a time: one transaction each', async () => {
      const created = (answers: Response[]) =>
        answers.filter((r) => r.status === 201).map((r) => r.body.data.hold.id as number);
      expect(created(one)).toHaveLength(5);
      expect(created(all)).toHaveLength(5);
      expect(await transactions('usage_holds', created(one))).toEqual({ txs: 5, n: 5 });
      const batched = await transactions('usage_holds', created(all));
      expect(batched.n).toBe(5);
      // one, two, overage and a first of multi in one batch; multi's second in a later one
      expect(batched.txs).toBeLessThan(5);
    });
  });

  describe('commits in one batch', () => {
    let list: Req[];
    let one: Response[];
    let all: Response[];
    const heldIn = new Map<World, Record<string, number>>();

    const commitReq = (
      role: Req['role'],
      hold: (w: World) => number,
      body: Record<string, unknown> = {},
    ): Req => ({
      role,
      send: (w) =>
        t.http
          .post(`${P}/usage/holds/${hold(w)}/commit`)
          .set(w.auth)
          .send(body),
    });
    const of = (role: Role) => (w: World) => heldIn.get(w)![role];

    beforeAll(async () => {
      for (const w of [seq, bat]) {
        const holds: Record<string, number> = {};
        const make = async (role: Role, amount: number) => {
          const res = await holdReq(role, `${role}-h`, (x) => ({ ...ids(role)(x), amount })).send(w);
          expect(res.status).toBe(201);
          holds[role] = res.body.data.hold.id;
        };
        for (const role of ['k1', 'k2', 'k3', 'twice', 'released', 'over', 'overOk', 'eventTaken'] as const)
          await make(role, 2);
        await t.http.post(`${P}/usage/holds/${holds.released}/release`).set(w.auth).expect(200);
        // the buckets of `over` and `overOk` emptied by a consume after their holds (2 held, 3 used)
        for (const role of ['over', 'overOk'] as const)
          await t.http
            .post(`${P}/usage`)
            .set(w.auth)
            .send({ ...ids(role)(w), amount: 3, eventId: `${role}-used` })
            .expect(201);
        await t.http
          .post(`${P}/usage`)
          .set(w.auth)
          .send({ ...ids('eventTaken')(w), amount: 1, eventId: 'taken' })
          .expect(201);
        heldIn.set(w, holds);
      }
      list = [
        commitReq('k1', of('k1'), { eventId: 'k1-custom' }),
        commitReq('twice', of('twice')),
        commitReq('k2', of('k2'), { amount: 1 }),
        commitReq('released', of('released')),
        // the same body: which of the two is decided first may differ when batched
        commitReq('twice', of('twice')),
        commitReq('unknown', () => UNKNOWN),
        // 3 > the 2 held, and the bucket gives back only the 2: refused
        commitReq('over', of('over'), { amount: 3, allowOverage: false }),
        // the same with overage allowed: 2 taken, 1 overage
        commitReq('overOk', of('overOk'), { amount: 3, allowOverage: true }),
        // more than held, and it fits
        commitReq('k3', of('k3'), { amount: 3 }),
        commitReq('eventTaken', of('eventTaken'), { eventId: 'taken' }),
      ];
      one = await oneAtATime(seq, list);
      all = await together('commit', bat, list);
    });

    it('sent one at a time, each answers as the rules say', () => {
      const s = (role: Req['role']) => statuses(list, one, role);
      for (const role of ['k1', 'k2', 'k3', 'overOk'] as const)
        expect([role, s(role)]).toEqual([role, ['201']]);
      expect(one.filter((_, i) => list[i].role === 'twice').map((r) => r.status)).toEqual([201, 200]);
      expect(s('released')).toEqual(['409 HOLD_FINALIZED']);
      expect(s('unknown')).toEqual(['404 HOLD_NOT_FOUND']);
      expect(s('over')).toEqual(['409 QUOTA_EXCEEDED']);
      expect(s('eventTaken')).toEqual(['409 USAGE_EVENT_CONFLICT']);
    });

    it('all at once, every commit gets the same answer (status, code, hold, usage record, balance, replayed)', () => {
      expect(byRole(list, all)).toEqual(byRole(list, one));
      for (const [i, r] of list.entries())
        if (list.filter((x) => x.role === r.role).length === 1)
          expect({ i, ...normalised(all[i]) }).toEqual({ i, ...normalised(one[i]) });
    });

    it('the records are right: amount, overage and eventId as committed, the hold committed to its record', () => {
      const answerOf = (answers: Response[], role: Role) => answers.find((r, i) => list[i].role === role)!;
      for (const answers of [one, all]) {
        const expected: Array<[Role, object]> = [
          ['k1', { eventId: 'k1-custom', amount: 2, overage: 0 }],
          ['k2', { eventId: 'k2-h', amount: 1, overage: 0 }],
          ['k3', { eventId: 'k3-h', amount: 3, overage: 0 }],
          ['overOk', { eventId: 'overOk-h', amount: 3, overage: 1 }],
        ];
        for (const [role, usage] of expected) {
          const r = answerOf(answers, role);
          expect([role, r.status, r.body.data.usage]).toEqual([role, 201, expect.objectContaining(usage)]);
          expect(r.body.data.hold).toMatchObject({
            status: 'committed',
            usageId: r.body.data.usage.id,
            endedAt: r.body.data.usage.recordedAt,
          });
        }
        const over = answerOf(answers, 'over');
        expect(over.body.error.details).toEqual([expect.objectContaining({ field: 'amount', remaining: 2 })]);
      }
    });

    it('the same hold committed twice at once: one 201, one 200 replayed, the same record, exactly one in the ledger', async () => {
      for (const [w, answers] of [
        [seq, one],
        [bat, all],
      ] as const) {
        const twice = answers.filter((_, i) => list[i].role === 'twice');
        expect(twice.map((r) => r.status).sort()).toEqual([200, 201]);
        const [first, again] = twice[0].status === 201 ? twice : [twice[1], twice[0]];
        expect(again.body.data).toEqual({ ...first.body.data, balance: expect.any(Object), replayed: true });
        expect(again.body.data.balance).toEqual(first.body.data.balance);
        const { rows } = await pg.query('SELECT id::int FROM usage_records WHERE customer_id = $1', [
          w.customers.twice.id,
        ]);
        expect(rows).toEqual([{ id: first.body.data.usage.id }]);
      }
    });

    it('the ledger and the holds agree in both worlds: refused commits recorded nothing and left their holds held', async () => {
      for (const role of ['k1', 'k2', 'k3', 'twice', 'released', 'over', 'overOk', 'eventTaken'] as const)
        expect([role, await balanceOf(bat, role)]).toEqual([role, await balanceOf(seq, role)]);
      for (const w of [seq, bat]) {
        const { rows } = await pg.query(
          `SELECT c.role, count(r.id)::int AS records
             FROM unnest($1::int[], $2::text[]) AS c(id, role)
             LEFT JOIN usage_records r ON r.customer_id = c.id
            GROUP BY c.role ORDER BY c.role`,
          [
            ['k1', 'k2', 'k3', 'twice', 'released', 'over', 'overOk', 'eventTaken'].map(
              (r) => w.customers[r].id,
            ),
            ['k1', 'k2', 'k3', 'twice', 'released', 'over', 'overOk', 'eventTaken'],
          ],
        );
        expect(Object.fromEntries(rows.map((r: any) => [r.role, r.records]))).toEqual({
          k1: 1,
          k2: 1,
          k3: 1,
          twice: 1,
          released: 0,
          // the consume before
          over: 1,
          overOk: 2,
          eventTaken: 1,
        });
        for (const role of ['over', 'eventTaken'] as const) {
          const res = await t.http
            .get(`${P}/usage/holds/${heldIn.get(w)![role]}`)
            .set(w.auth)
            .expect(200);
          expect([role, res.body.data.status]).toEqual([role, 'held']);
        }
      }
    });

    it('batched: the records share fewer transactions than commits, each with its hold; one at a time: one transaction each', async () => {
      const records = (answers: Response[]) =>
        answers.filter((r) => r.status === 201).map((r) => r.body.data.usage.id as number);
      const holds = (answers: Response[]) =>
        answers.filter((r) => r.status === 201).map((r) => r.body.data.hold.id as number);
      expect(records(one)).toHaveLength(5);
      expect(records(all)).toHaveLength(5);
      expect(await transactions('usage_records', records(one))).toEqual({ txs: 5, n: 5 });
      const batched = await transactions('usage_records', records(all));
      expect(batched.n).toBe(5);
      expect(batched.txs).toBeLessThan(5);
      // each hold was ended by the transaction that wrote its record
      const { rows } = await pg.query(
        `SELECT count(*)::int AS n FROM usage_holds h JOIN usage_records r ON r.id = h.usage_id
          WHERE h.id = ANY ($1) AND h.xmin::text = r.xmin::text`,
        [[...holds(one), ...holds(all)]],
      );
      expect(rows).toEqual([{ n: 10 }]);
    });
  });
});
