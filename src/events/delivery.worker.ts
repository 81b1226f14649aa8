import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import { SYSTEM } from '../audit/audit-context';
import { AppConfig } from '../config/app-config';
import { Batcher } from '../database/batcher';
import { Transactional, Transactions } from '../database/transactional';
import { EventsMetrics } from './events.metrics';
import { PeriodicTask } from '../common/periodic-task';
import { ClaimedDelivery, EventsRepository } from './events.repository';
import { nextRetryDelay, parseRetryAfter, parseSchedule } from './retry';
import { sendWebhook, SendResult } from './webhook-sender';
import { signingSecrets, WebhookEndpointsService } from './webhook-endpoints.service';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';

/** An endpoint failing every attempt for this long is disabled. */
export const FAILING_DISABLE_MS = 5 * 86_400_000;
/** Posts in flight at once in one worker. */
export const DELIVERY_CONCURRENCY = 128;
/**
 * Posts in flight at once to one endpoint in one worker: a receiver that answers slowly or not at
 * all holds this many of the worker's posts at most, and the others go on.
 */
export const ENDPOINT_CONCURRENCY = 32;
/**
 * The same for an endpoint whose last post from this worker did not succeed within
 * PROMPT_ANSWER_MS: one it has not posted to yet, one that is down, silent or failing, and one that
 * answers slowly. Each gets a few posts at a time, enough to find out when it answers promptly, so
 * that several of them cannot hold all of a worker's places while their posts wait. A receiver
 * gets ENDPOINT_CONCURRENCY once a post succeeds promptly.
 */
export const UNPROVEN_ENDPOINT_CONCURRENCY = 4;
/** A success answered within this long gives its endpoint ENDPOINT_CONCURRENCY places. */
export const PROMPT_ANSWER_MS = 1000;
/** Endpoints this worker remembers as answering, at most (the oldest forgotten first). */
const PROVEN_ENDPOINTS_KEPT = 10_000;
/** Deliveries claimed by one statement at most: half the places, so that a claim runs while the last one's posts do. */
const CLAIM_LIMIT = DELIVERY_CONCURRENCY / 2;

/**
 * The delivery worker of one replica: claims due deliveries with
 * `FOR UPDATE SKIP LOCKED` under a lease, posts them, and records the outcome: delivered,
 * a retry on the schedule (±10 % jitter, `Retry-After` honoured), failed when the schedule is
 * used up, or the endpoint disabled (410 Gone, or failing for 5 days). Every replica runs one;
 * a delivery whose worker died is claimed again when its lease ends.
 *
 * Posts are not waited for in rounds: the worker keeps up to DELIVERY_CONCURRENCY of them in
 * flight, at most ENDPOINT_CONCURRENCY per endpoint (UNPROVEN_ENDPOINT_CONCURRENCY until it has
 * answered one promptly with a success, and while it fails or is slow), and claims again while
 * they run, so slow or silent receivers never hold up the deliveries to the others. Successes are
 * recorded together, one statement for all that end while the previous one runs.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly loop: PeriodicTask;
  private readonly schedule: number[];
  private readonly timeoutMs: number;
  private readonly allowInsecure: boolean;
  private readonly pollMs: number;
  private readonly aborter = new AbortController();
  private readonly logger = new Logger(DeliveryWorker.name);
  /** Posts in flight per endpoint, and every delivery in flight (waited for at shutdown). */
  private readonly perEndpoint = new Map<string, number>();
  /** Endpoints whose last post from this worker succeeded promptly (in the order they did). */
  private readonly proven = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  /** Deliveries ended since the worker started, and who waits for the next one to end. */
  private ended = 0;
  private wake?: () => void;
  /** Successes gathered into one statement, one statement at a time. */
  private readonly delivered = new Batcher<ClaimedDelivery & { result: SendResult }, boolean>(
    async (items) => {
      const done = new Set(
        await this.events.finishDelivered(
          items.map((i) => ({
            id: i.id,
            created_at: i.created_at,
            attempts: i.attempts,
            statusCode: i.result.status,
            durationMs: i.result.durationMs,
          })),
        ),
      );
      return items.map((i) => done.has(i.id));
    },
    { inFlight: 1, maxBatchSize: 256 },
  );

  constructor(
    private readonly events: EventsRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly endpointsService: WebhookEndpointsService,
    private readonly metrics: EventsMetrics,
    private readonly config: AppConfig,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {
    this.schedule = parseSchedule(config.get('WEBHOOK_RETRY_SCHEDULE'))!;
    this.timeoutMs = config.get('WEBHOOK_TIMEOUT_MS');
    this.allowInsecure = config.get('WEBHOOK_ALLOW_INSECURE_URLS');
    this.pollMs = config.get('WEBHOOK_POLL_INTERVAL_MS');
    this.loop = new PeriodicTask('WebhookDeliveryWorker', this.pollMs, () => this.runOnce(), {
      firstRunMs: 0,
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.get('WEBHOOK_WORKER_ENABLED')) this.loop.start();
  }

  /** Shutdown: no new claims; posts in flight are cut and their deliveries given back at once. */
  async onModuleDestroy(): Promise<void> {
    this.aborter.abort();
    this.wake?.();
    await this.loop.stop();
    await Promise.all(this.inFlight);
  }

  /**
   * One round: claims due deliveries for the free places (CLAIM_LIMIT at most) and starts posting
   * them. A full claim is followed by the next at once while places are free, or once a quarter of
   * them are; a claim that found fewer than it asked for, by the next once half of the posts in
   * flight have ended (endpoints at their limit may have more due), within the poll interval.
   * False when nothing is in flight and nothing more was due: the loop then waits the poll interval.
   */
  async runOnce(): Promise<boolean> {
    if (this.aborter.signal.aborted) return false;
    const free = DELIVERY_CONCURRENCY - this.inFlight.size;
    if (free > 0) {
      const wanted = Math.min(free, CLAIM_LIMIT);
      // the lease outlives the POST's timeout; a worker that dies leaves the delivery to others after it
      const leaseSeconds = Math.ceil(this.timeoutMs / 1000) + 5;
      const claimed = await this.events.claimDue(
        wanted,
        leaseSeconds,
        { proven: ENDPOINT_CONCURRENCY, unproven: UNPROVEN_ENDPOINT_CONCURRENCY },
        [...this.perEndpoint],
        [...this.proven],
      );
      for (const claim of claimed) this.start(claim);
      if (claimed.length === wanted) {
        if (this.inFlight.size < DELIVERY_CONCURRENCY) return true;
        await this.waitForEnds(Math.ceil(DELIVERY_CONCURRENCY / 4));
        return true;
      }
    }
    if (this.inFlight.size === 0) return false;
    await this.waitForEnds(Math.ceil(this.inFlight.size / 2));
    return true;
  }

  /** Posts one delivery in the background, counted in flight until its outcome is recorded. */
  private start(claim: ClaimedDelivery): void {
    const endpoint = claim.endpoint_id;
    this.perEndpoint.set(endpoint, (this.perEndpoint.get(endpoint) ?? 0) + 1);
    // one delivery's failure (a secret that cannot be read, the database gone) leaves the others
    // alone; its lease brings it back later
    const running: Promise<void> = this.deliver(claim)
      .catch((error: unknown) => this.logFailure(claim, error))
      .finally(() => {
        const left = (this.perEndpoint.get(endpoint) ?? 1) - 1;
        if (left > 0) this.perEndpoint.set(endpoint, left);
        else this.perEndpoint.delete(endpoint);
        this.inFlight.delete(running);
        this.ended++;
        this.wake?.();
      });
    this.inFlight.add(running);
  }

  /** Resolves once `count` more deliveries have ended, or after the poll interval, or at shutdown. */
  private async waitForEnds(count: number): Promise<void> {
    const target = this.ended + count;
    const deadline = Date.now() + this.pollMs;
    while (this.ended < target && Date.now() < deadline && !this.aborter.signal.aborted) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, deadline - Date.now());
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /** Keeps whether the endpoint's last post from this worker succeeded promptly (see UNPROVEN_ENDPOINT_CONCURRENCY). */
  private remember(endpoint: string, { delivered, durationMs }: SendResult): void {
    this.proven.delete(endpoint);
    if (!delivered || durationMs > PROMPT_ANSWER_MS) return;
    this.proven.add(endpoint);
    if (this.proven.size > PROVEN_ENDPOINTS_KEPT) this.proven.delete(this.proven.values().next().value!);
  }

  private logFailure(claim: ClaimedDelivery, error: unknown): void {
    this.logger.warn(
      { deliveryId: claim.id, err: error instanceof Error ? error.message : String(error) },
      'webhook delivery failed',
    );
  }

  private async deliver(claim: ClaimedDelivery): Promise<void> {
    const secrets = signingSecrets(this.endpointsService.secretBox, {
      secret: claim.secret,
      previousSecret: claim.previous_secret,
      previousSecretExpiresAt: claim.previous_secret_expires_at,
    });
    const result = await sendWebhook(
      claim.url,
      secrets,
      { id: claim.event_id, type: claim.type, timestamp: claim.created_at.toISOString(), data: claim.data },
      { timeoutMs: this.timeoutMs, allowInsecure: this.allowInsecure, signal: this.aborter.signal },
    );
    if (this.aborter.signal.aborted && !result.delivered) {
      await this.events.release(claim);
      return;
    }
    this.remember(claim.endpoint_id, result);
    const outcome = result.delivered
      ? await this.recordDelivered(claim, result)
      : await this.record(claim, result);
    if (outcome) this.metrics.recordDelivery(outcome);
  }

  /** A success, recorded with the others ending meanwhile; alone in a transaction if that batch fails. */
  private async recordDelivered(claim: ClaimedDelivery, result: SendResult): Promise<string | undefined> {
    let ended: boolean;
    try {
      ended = await this.delivered.load('delivered', { ...claim, result });
    } catch (error) {
      this.logFailure(claim, error);
      return this.record(claim, result);
    }
    return ended ? 'delivered' : undefined;
  }

  /** The attempt's outcome, the endpoint's failing state and a disabling commit together. */
  @Transactional()
  private async record(claim: ClaimedDelivery, result: SendResult): Promise<string | undefined> {
    const attempt = {
      outcome: result.delivered ? 'delivered' : 'failed',
      statusCode: result.status,
      error: result.error,
      durationMs: result.durationMs,
    };
    if (result.delivered) {
      if (!(await this.events.finishAttempt(claim, 'delivered', attempt))) return undefined;
      await this.endpoints.markSucceeded(claim.endpoint_id);
      return 'delivered';
    }
    if (result.status === 410) {
      if (!(await this.events.finishAttempt(claim, 'failed', attempt))) return undefined;
      await this.disable(claim, 'The receiver answered 410 Gone.');
      return 'endpoint_disabled';
    }
    const delay = nextRetryDelay(
      this.schedule,
      claim.attempts,
      parseRetryAfter(result.retryAfter, new Date()),
    );
    if (!(await this.events.finishAttempt(claim, delay === null ? 'failed' : delay, attempt)))
      return undefined;
    const failingSince = await this.endpoints.markFailed(claim.endpoint_id);
    if (failingSince && Date.now() - failingSince.getTime() >= FAILING_DISABLE_MS) {
      await this.disable(claim, 'Every delivery attempt failed for 5 days.');
      return 'endpoint_disabled';
    }
    return delay === null ? 'failed' : 'retrying';
  }

  /** Disables the claim's endpoint (if still enabled), recorded as the service's own change. */
  private async disable(claim: ClaimedDelivery, reason: string): Promise<void> {
    const endpointId = claim.endpoint_id;
    if (!(await this.endpoints.disable(endpointId, reason))) return;
    this.audit.updated(
      claim.project_id,
      'webhook_endpoint',
      endpointId,
      { enabled: true },
      { enabled: false },
      { context: SYSTEM },
    );
    await this.events.skipPending(endpointId);
  }
}
