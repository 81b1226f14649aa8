import {
  ENDPOINT_CONCURRENCY,
  PROMPT_ANSWER_MS,
  UNPROVEN_ENDPOINT_CONCURRENCY,
} from '../src/events/delivery.worker';
import { CLAIM_DUE } from '../src/events/events.repository';
import { bearer, createTestApp, TestApp } from './support/app';
import { buffersTouched, explainedForBuffers } from './support/database';
import { eventually, sleep, WebhookReceiver } from './support/webhook-receiver';

/**
 * One endpoint's backlog does not hold up another's (docs/events.md#how-it-works-and-how-it-scales-with-replicas):
 * a receiver that never answers gets at most ENDPOINT_CONCURRENCY posts at a time from a worker,
 * and a fast receiver of the same project gets its deliveries within a few poll intervals,
 * whatever the slow one's backlog, not after the slow one's timeouts.
 */
describe('webhook delivery: a slow receiver does not slow the others', () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  const POLL_MS = 100;
  const TIMEOUT_MS = 8000;

  beforeAll(async () => {
    receiver = await new WebhookReceiver().start();
    t = await createTestApp({
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_POLL_INTERVAL_MS: String(POLL_MS),
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_RETRY_SCHEDULE: '1s,1s',
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.stop();
  });

  type Post = (url: string, body: object) => ReturnType<TestApp['http']['post']>;

  /**
   * A new endpoint at `path` of the receiver, then 30 new customers of the project: their 30
   * deliveries to it once all arrived, and the time that took.
   */
  async function promptReceiver(post: Post, path: string) {
    await post('/webhook-endpoints', { url: receiver.url(path) }).expect(201);
    const started = Date.now();
    for (let i = 0; i < 30; i++)
      await post('/customers', { username: `prompt${path.slice(1)}_${i}` }).expect(201);
    const arrivals = await eventually(
      `the 30 deliveries to ${path}`,
      () => (receiver.at(path).length >= 30 ? receiver.at(path) : null),
      TIMEOUT_MS,
    );
    return { arrivals, elapsed: Date.now() - started };
  }

  it('a receiver that never answers, with a backlog of 120 deliveries, leaves a fast one of the same project prompt', async () => {
    const p = await t.createProject();
    const post = (url: string, body: object) =>
      t.http.post(`/api/private/v1${url}`).set(bearer(p.privateKey)).send(body);
    receiver.respond('/never', () => 'hang');
    await post('/webhook-endpoints', { url: receiver.url('/never') }).expect(201);
    for (let i = 0; i < 120; i++) await post('/customers', { username: `backlog_${i}` }).expect(201);
    // the worker is now holding posts to the silent receiver, with more of its deliveries due
    await eventually('posts to the silent receiver', () => receiver.at('/never').length > 0);

    const { arrivals: fast, elapsed } = await promptReceiver(post, '/fast');
    // each arrives within a few poll intervals of its event (a generous bound for a busy machine),
    // far sooner than the silent receiver's posts time out
    const delays = fast.map((r) => r.at - Date.parse(r.body.timestamp));
    expect(Math.max(...delays)).toBeLessThan(20 * POLL_MS);
    expect(elapsed).toBeLessThan(TIMEOUT_MS / 2);
    expect(new Set(fast.map((r) => r.headers['webhook-id'])).size).toBe(30);
    expect(fast.every((r) => r.body.type === 'customer.created')).toBe(true);

    // the silent receiver, which never answered, never held more than a few of the worker's posts
    expect(receiver.at('/never').length).toBeLessThanOrEqual(UNPROVEN_ENDPOINT_CONCURRENCY);
    await sleep(2 * POLL_MS);
    expect(receiver.at('/never').length).toBeLessThanOrEqual(UNPROVEN_ENDPOINT_CONCURRENCY);
  });

  it('five receivers that never answer, each with a backlog, get a few posts each: a fast one stays prompt', async () => {
    const p = await t.createProject();
    const post = (url: string, body: object) =>
      t.http.post(`/api/private/v1${url}`).set(bearer(p.privateKey)).send(body);
    const down = ['/down1', '/down2', '/down3', '/down4', '/down5'];
    for (const path of down) {
      receiver.respond(path, () => 'hang');
      await post('/webhook-endpoints', { url: receiver.url(path) }).expect(201);
    }
    for (let i = 0; i < 40; i++) await post('/customers', { username: `backlog_down_${i}` }).expect(201);
    await eventually('posts to every receiver that is down', () =>
      down.every((path) => receiver.at(path).length > 0),
    );

    const { arrivals: prompt, elapsed } = await promptReceiver(post, '/prompt');
    // 4 × 32 posts would hold all 128 places until they time out; at 4 each, 20 do
    expect(elapsed).toBeLessThan(TIMEOUT_MS / 2);
    expect(Math.max(...prompt.map((r) => r.at - Date.parse(r.body.timestamp)))).toBeLessThan(20 * POLL_MS);
    for (const path of down)
      expect(receiver.at(path).length).toBeLessThanOrEqual(UNPROVEN_ENDPOINT_CONCURRENCY);
  });

  it('five receivers that answer, but slowly, each with a backlog, get a few posts each: a fast one stays prompt', async () => {
    const p = await t.createProject();
    const post = (url: string, body: object) =>
      t.http.post(`/api/private/v1${url}`).set(bearer(p.privateKey)).send(body);
    const slow = ['/slow1', '/slow2', '/slow3', '/slow4', '/slow5'];
    const SLOW_MS = 3 * PROMPT_ANSWER_MS;
    for (const path of slow) {
      receiver.respond(path, () => ({ status: 204, afterMs: SLOW_MS }));
      await post('/webhook-endpoints', { url: receiver.url(path) }).expect(201);
    }
    for (let i = 0; i < 40; i++) await post('/customers', { username: `backlog_slow_${i}` }).expect(201);
    // each has answered a post with a success, slowly, and has more deliveries due: were that
    // success enough, each would be given up to 32 places, held 3 s a post
    await eventually('an answer from every slow receiver', () =>
      slow.every((path) => receiver.answered(path) > 0),
    );

    const { arrivals: prompt, elapsed } = await promptReceiver(post, '/beside');
    expect(elapsed).toBeLessThan(SLOW_MS);
    expect(Math.max(...prompt.map((r) => r.at - Date.parse(r.body.timestamp)))).toBeLessThan(20 * POLL_MS);
    for (const path of slow)
      expect(receiver.peakOpen(path)).toBeLessThanOrEqual(UNPROVEN_ENDPOINT_CONCURRENCY);
  });
});

/**
 * The claim's cost does not grow with the backlog of an endpoint at its limit: the worker's claim
 * visits each endpoint with pending deliveries once and reads only as many of its due deliveries
 * as it has free places (none for an endpoint at its limit).
 */
describe('webhook delivery: a claim past a large backlog', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ WEBHOOK_ALLOW_INSECURE_URLS: 'true', WEBHOOK_WORKER_ENABLED: 'false' });
  });
  afterAll(() => t?.close());

  /** `count` due deliveries of new events to `endpointId`, written by SQL (the backlog of a silent receiver). */
  const backlog = (projectId: string, endpointId: string, count: number, tag: string) =>
    t.dataSource.query(
      `WITH ev AS (
         INSERT INTO events (id, project_id, type, data, unique_key)
         SELECT 'evt_' || $3 || lpad(g::text, 20, '0'), $1, 'customer.created', '{}'::jsonb, NULL
           FROM generate_series(1, $4::int) g RETURNING id, created_at)
       INSERT INTO webhook_deliveries (project_id, event_id, event_created_at, endpoint_id, next_attempt_at)
       SELECT $1, ev.id, ev.created_at, $2, now() - interval '1 minute' FROM ev`,
      [projectId, endpointId, tag, count],
    );

  /** What `text` answers with the claim's parameters, in a transaction rolled back (nothing claimed). */
  async function rolledBack<T>(
    text: string,
    inFlight: Array<[string, number]>,
    proven: string[],
  ): Promise<T[]> {
    const params = [
      16,
      30,
      ENDPOINT_CONCURRENCY,
      inFlight.map(([e]) => e),
      inFlight.map(([, n]) => n),
      UNPROVEN_ENDPOINT_CONCURRENCY,
      proven,
    ];
    const runner = t.dataSource.createQueryRunner();
    await runner.startTransaction();
    try {
      return (await runner.query(text, params, true)).records as T[];
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  }

  /** The endpoints of what one claim takes, and the buffers the claim statement touches. */
  async function claimOnce(inFlight: Array<[string, number]>, proven: string[]) {
    const claimed = await rolledBack<{ endpoint_id: string }>(CLAIM_DUE.text, inFlight, proven);
    const buffers = buffersTouched(await rolledBack(explainedForBuffers(CLAIM_DUE.text), inFlight, proven));
    return { buffers, endpoints: claimed.map((c) => c.endpoint_id) };
  }

  it('an endpoint at its limit with 20,000 due deliveries costs a probe: the others are claimed at once', async () => {
    const p = await t.createProject();
    const endpoint = async (path: string) =>
      (
        await t.http
          .post('/api/private/v1/webhook-endpoints')
          .set(bearer(p.privateKey))
          .send({ url: `http://127.0.0.1:9/${path}` })
          .expect(201)
      ).body.data.id as string;
    const silent = await endpoint('silent');
    const prompt = await endpoint('prompt');
    await backlog(p.id, silent, 20_000, 's');
    await backlog(p.id, prompt, 5, 'p');
    await t.dataSource.query('ANALYZE webhook_deliveries');

    const answering = [silent, prompt];
    const atLimit = await claimOnce([[silent, ENDPOINT_CONCURRENCY]], answering);
    expect(atLimit.endpoints.sort()).toEqual(Array(5).fill(prompt));
    // a probe of each day's partition, far less than a read of the silent endpoint's backlog
    const backlogRead = buffersTouched(
      await t.dataSource.query(
        explainedForBuffers(
          `SELECT d.id FROM webhook_deliveries d
            WHERE d.endpoint_id = $1 AND d.status = 'pending' AND d.next_attempt_at <= now()`,
        ),
        [silent],
      ),
    );
    expect(atLimit.buffers).toBeLessThan(backlogRead / 2);

    // not at its limit, it gets its free places, and the prompt endpoint its turn in the same claim
    const free = await claimOnce([[silent, ENDPOINT_CONCURRENCY - 6]], answering);
    expect(free.endpoints.filter((e) => e === silent)).toHaveLength(6);
    expect(free.endpoints.filter((e) => e === prompt)).toHaveLength(5);

    // an endpoint that has not answered this worker yet gets a few places, one that answered all
    const trial = await claimOnce([], [prompt]);
    expect(trial.endpoints.filter((e) => e === silent)).toHaveLength(UNPROVEN_ENDPOINT_CONCURRENCY);
    expect(trial.endpoints.filter((e) => e === prompt)).toHaveLength(5);
    // and one that is failing, a few again
    await t.dataSource.query(`UPDATE webhook_endpoints SET failing_since = now() WHERE id = $1`, [silent]);
    const failing = await claimOnce([], answering);
    expect(failing.endpoints.filter((e) => e === silent)).toHaveLength(UNPROVEN_ENDPOINT_CONCURRENCY);
  });
});
