import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import { SYSTEM } from '../audit/audit-context';
import { AppConfig } from '../config/app-config';
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
/** Deliveries claimed per round by one worker, posted concurrently. */
const BATCH = 10;

/**
 * The delivery worker of one replica: claims due deliveries with
 * `FOR UPDATE SKIP LOCKED` under a lease, posts them, and records the outcome: delivered,
 * a retry on the schedule (±10 % jitter, `Retry-After` honoured), failed when the schedule is
 * used up, or the endpoint disabled (410 Gone, or failing for 5 days). Every replica runs one;
 * a delivery whose worker died is claimed again when its lease ends.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly loop: PeriodicTask;
  private readonly schedule: number[];
  private readonly timeoutMs: number;
  private readonly allowInsecure: boolean;
  private readonly aborter = new AbortController();
  private readonly logger = new Logger(DeliveryWorker.name);

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
    this.loop = new PeriodicTask(
      'WebhookDeliveryWorker',
      config.get('WEBHOOK_POLL_INTERVAL_MS'),
      () => this.runOnce(),
      { firstRunMs: 0 },
    );
  }

  onApplicationBootstrap(): void {
    if (this.config.get('WEBHOOK_WORKER_ENABLED')) this.loop.start();
  }

  /** Shutdown: no new claims; posts in flight are cut and their deliveries given back at once. */
  async onModuleDestroy(): Promise<void> {
    this.aborter.abort();
    await this.loop.stop();
  }

  /** One round: claims up to a batch and delivers it; true when the batch was full. */
  async runOnce(): Promise<boolean> {
    // the lease outlives the POST's timeout; a worker that dies leaves the delivery to others after it
    const leaseSeconds = Math.ceil(this.timeoutMs / 1000) + 5;
    const claimed = await this.events.claimDue(BATCH, leaseSeconds);
    // one delivery's failure (a secret that cannot be read, the database gone) leaves the others
    // alone; its lease brings it back later
    await Promise.all(
      claimed.map((claim) => this.deliver(claim).catch((error: unknown) => this.logFailure(claim, error))),
    );
    return claimed.length === BATCH;
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
    const outcome = await this.record(claim, result);
    if (outcome) this.metrics.recordDelivery(outcome);
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
