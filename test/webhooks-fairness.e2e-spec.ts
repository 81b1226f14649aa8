import { ENDPOINT_CONCURRENCY } from '../src/events/delivery.worker';
import { bearer, createTestApp, TestApp } from './support/app';
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

  it('a receiver that never answers, with a backlog of 120 deliveries, leaves a fast one of the same project prompt', async () => {
    const p = await t.createProject();
    const post = (url: string, body: object) =>
      t.http.post(`/api/private/v1${url}`).set(bearer(p.privateKey)).send(body);
    receiver.respond('/never', () => 'hang');
    await post('/webhook-endpoints', { url: receiver.url('/never') }).expect(201);
    for (let i = 0; i < 120; i++) await post('/customers', { username: `backlog_${i}` }).expect(201);
    // the worker is now holding posts to the silent receiver, with more of its deliveries due
    await eventually('posts to the silent receiver', () => receiver.at('/never').length > 0);

    await post('/webhook-endpoints', { url: receiver.url('/fast') }).expect(201);
    const started = Date.now();
    for (let i = 0; i < 30; i++) await post('/customers', { username: `prompt_${i}` }).expect(201);
    const fast = await eventually(
      'the 30 deliveries to the fast receiver',
      () => (receiver.at('/fast').length >= 30 ? receiver.at('/fast') : null),
      TIMEOUT_MS,
    );
    // each arrives within a few poll intervals of its event (a generous bound for a busy machine),
    // far sooner than the silent receiver's posts time out
    const delays = fast.map((r) => r.at - Date.parse(r.body.timestamp));
    expect(Math.max(...delays)).toBeLessThan(20 * POLL_MS);
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS / 2);
    expect(new Set(fast.map((r) => r.headers['webhook-id'])).size).toBe(30);
    expect(fast.every((r) => r.body.type === 'customer.created')).toBe(true);

    // the silent receiver never held more than its share of the worker's posts
    expect(receiver.at('/never').length).toBeLessThanOrEqual(ENDPOINT_CONCURRENCY);
    await sleep(2 * POLL_MS);
    expect(receiver.at('/never').length).toBeLessThanOrEqual(ENDPOINT_CONCURRENCY);
  });
});
