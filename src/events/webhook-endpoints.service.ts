import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import { randomBase32Lower } from '../common/crypto/random';
import { SecretBox } from '../common/crypto/secret-box';
import { DomainError } from '../common/errors/domain-error';
import { Page, toPage, pageWindow } from '../common/http/pagination';
import { AppConfig } from '../config/app-config';
import { Transactions, runInTransaction } from '../database/transactional';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import {
  CreateWebhookEndpointDto,
  ListWebhookEndpointsQueryDto,
  RotatedWebhookEndpointView,
  UpdateWebhookEndpointDto,
  WebhookEndpointView,
  WebhookEndpointWithSecretView,
  WebhookTestResultView,
} from './dto/webhook-endpoint.dto';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { TEST_EVENT_TYPE } from './event-types';
import { newEventId } from './events.service';
import { EventsRepository } from './events.repository';
import { newWebhookSecret } from './signing';
import { urlRefusal } from './url-safety';
import { sendWebhook } from './webhook-sender';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { isoOrNull as iso } from '../common/time/iso';

/** How long deliveries also carry a signature under the previous secret after a rotation. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000;

export const toEndpointView = (e: WebhookEndpoint): WebhookEndpointView => ({
  id: e.id,
  url: e.url,
  description: e.description,
  eventTypes: e.eventTypes,
  enabled: e.enabled,
  disabledReason: e.disabledReason,
  failingSince: iso(e.failingSince),
  createdAt: e.createdAt.toISOString(),
  updatedAt: e.updatedAt.toISOString(),
});

/** The secrets a delivery is signed with now: the current one, and the previous one during the overlap. */
export function signingSecrets(
  box: SecretBox,
  e: { secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null },
  now = new Date(),
): string[] {
  const secrets = [box.decrypt(e.secret)];
  if (e.previousSecret && e.previousSecretExpiresAt && e.previousSecretExpiresAt > now)
    secrets.push(box.decrypt(e.previousSecret));
  return secrets;
}

/** Webhook endpoints of a project: secrets encrypted at rest, URLs checked for safety. */
@Injectable()
export class WebhookEndpointsService {
  readonly secretBox: SecretBox;
  private readonly allowInsecure: boolean;
  private readonly timeoutMs: number;

  constructor(
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly events: EventsRepository,
    config: AppConfig,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {
    this.secretBox = new SecretBox(config.get('SECRET_ENCRYPTION_KEY'));
    this.allowInsecure = config.get('WEBHOOK_ALLOW_INSECURE_URLS');
    this.timeoutMs = config.get('WEBHOOK_TIMEOUT_MS');
  }

  private async assertSafeUrl(url: string): Promise<void> {
    const refusal = await urlRefusal(url, this.allowInsecure);
    if (refusal)
      throw new DomainError('VALIDATION_FAILED', `url ${refusal}`, [{ field: 'url', message: refusal }]);
  }

  async create(
    projectId: string,
    dto: CreateWebhookEndpointDto,
    idem?: IdempotencyContext,
  ): Promise<WebhookEndpointWithSecretView> {
    await this.assertSafeUrl(dto.url);
    return runInTransaction(this.transactions, () => this.insert(projectId, dto), { participant: idem });
  }

  private async insert(
    projectId: string,
    dto: CreateWebhookEndpointDto,
  ): Promise<WebhookEndpointWithSecretView> {
    const secret = newWebhookSecret();
    const endpoint = await this.endpoints.insert({
      id: `we_${randomBase32Lower(24)}`,
      projectId,
      url: dto.url,
      description: dto.description ?? null,
      eventTypes: [...new Set(dto.eventTypes ?? [])],
      enabled: true,
      disabledReason: null,
      failingSince: null,
      secret: this.secretBox.encrypt(secret),
      previousSecret: null,
      previousSecretExpiresAt: null,
    });
    const view = toEndpointView(endpoint);
    // the secret is named, never valued: `true` says the endpoint has one
    this.audit.created(projectId, 'webhook_endpoint', endpoint.id, { ...view, secret: true });
    return { ...view, secret };
  }

  async list(projectId: string, query: ListWebhookEndpointsQueryDto): Promise<Page<WebhookEndpointView>> {
    const [rows, total] = await this.endpoints.page(projectId, pageWindow(query));
    return toPage(rows.map(toEndpointView), total, query);
  }

  async get(projectId: string, id: string): Promise<WebhookEndpointView> {
    return toEndpointView(await this.found(projectId, id));
  }

  private async found(projectId: string, id: string): Promise<WebhookEndpoint> {
    const endpoint = await this.endpoints.get(projectId, id);
    if (!endpoint) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
    return endpoint;
  }

  /**
   * Changes `url`, `eventTypes`, `enabled`, `description`. Disabling stops the pending
   * deliveries (`skipped`); enabling clears the reason and does not resend them.
   */
  async update(
    projectId: string,
    id: string,
    dto: UpdateWebhookEndpointDto,
    idem?: IdempotencyContext,
  ): Promise<WebhookEndpointView> {
    if (Object.values(dto).every((v) => v === undefined))
      throw new DomainError('VALIDATION_FAILED', 'the body changes nothing', [
        { field: 'body', message: 'send at least one of url, eventTypes, enabled, description' },
      ]);
    // another project's id is not found whatever the body says; the URL's DNS check stays outside the transaction
    await this.found(projectId, id);
    if (dto.url !== undefined) await this.assertSafeUrl(dto.url);
    return runInTransaction(
      this.transactions,
      async () => {
        const endpoint = await this.endpoints.lock(projectId, id);
        if (!endpoint) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
        const before = toEndpointView(endpoint);
        if (dto.url !== undefined) endpoint.url = dto.url;
        if (dto.eventTypes !== undefined) endpoint.eventTypes = [...new Set(dto.eventTypes)];
        if (dto.description !== undefined) endpoint.description = dto.description;
        if (dto.enabled !== undefined && dto.enabled !== endpoint.enabled) {
          endpoint.enabled = dto.enabled;
          if (dto.enabled) {
            endpoint.disabledReason = null;
            endpoint.failingSince = null;
          } else {
            endpoint.disabledReason = 'Disabled through the API.';
            await this.events.skipPending(endpoint.id);
          }
        }
        const view = toEndpointView(await this.endpoints.save(endpoint));
        this.audit.updated(projectId, 'webhook_endpoint', endpoint.id, before, view);
        return view;
      },
      { participant: idem },
    );
  }

  remove(projectId: string, id: string, idem?: IdempotencyContext): Promise<{ success: true }> {
    return runInTransaction(
      this.transactions,
      async () => {
        // read under its lock first: the record tells what was deleted
        const endpoint = await this.endpoints.lock(projectId, id);
        if (!endpoint || !(await this.endpoints.delete(projectId, id)))
          throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
        this.audit.deleted(projectId, 'webhook_endpoint', endpoint.id, toEndpointView(endpoint));
        return { success: true as const };
      },
      { participant: idem },
    );
  }

  /** A new secret; the previous one keeps signing too for 24 hours. */
  rotateSecret(
    projectId: string,
    id: string,
    idem?: IdempotencyContext,
  ): Promise<RotatedWebhookEndpointView> {
    return runInTransaction(
      this.transactions,
      async () => {
        const endpoint = await this.endpoints.lock(projectId, id);
        if (!endpoint) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
        const secret = newWebhookSecret();
        const expiresAt = new Date(Date.now() + SECRET_OVERLAP_MS);
        endpoint.previousSecret = endpoint.secret;
        endpoint.previousSecretExpiresAt = expiresAt;
        endpoint.secret = this.secretBox.encrypt(secret);
        const saved = await this.endpoints.save(endpoint);
        this.audit.updated(
          projectId,
          'webhook_endpoint',
          saved.id,
          { secret: true },
          { secret: true },
          { action: 'webhook_endpoint.secret_rotated' },
        );
        return { ...toEndpointView(saved), secret, previousSecretExpiresAt: expiresAt.toISOString() };
      },
      { participant: idem },
    );
  }

  /** Sends a `webhook.test` event (not stored) now and tells what the receiver said. */
  async test(projectId: string, id: string): Promise<WebhookTestResultView> {
    const endpoint = await this.found(projectId, id);
    const result = await sendWebhook(
      endpoint.url,
      signingSecrets(this.secretBox, endpoint),
      {
        id: newEventId(),
        type: TEST_EVENT_TYPE,
        timestamp: new Date().toISOString(),
        data: { endpointId: endpoint.id, projectId },
      },
      { timeoutMs: this.timeoutMs, allowInsecure: this.allowInsecure },
    );
    return {
      delivered: result.delivered,
      status: result.status,
      error: result.error,
      durationMs: result.durationMs,
    };
  }
}
