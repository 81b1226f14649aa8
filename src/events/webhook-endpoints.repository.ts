import { Injectable } from '@nestjs/common';
import { Transactions } from '../database/transactional';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { PageWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';

/** Every statement of `webhook_endpoints`; every one filters on the project, except the worker's. */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(private readonly transactions: Transactions) {}

  @GenerateSql({
    params: [
      {
        id: 'we_2',
        projectId: 'prj_1',
        url: 'https://example.com/billing-hooks',
        description: 'Billing',
        eventTypes: ['subscription.created'],
        enabled: true,
        disabledReason: null,
        failingSince: null,
        secret: 'whsec_2',
        previousSecret: null,
        previousSecretExpiresAt: null,
      },
    ],
  })
  async insert(endpoint: Omit<WebhookEndpoint, 'createdAt' | 'updatedAt'>): Promise<WebhookEndpoint> {
    const em = this.transactions.tx;
    return em.save(em.create(WebhookEndpoint, endpoint));
  }

  /** A page, newest first, and the total. */
  @GenerateSql({ params: ['prj_1', { limit: 20, offset: 20 }] })
  page(projectId: string, { limit, offset }: PageWindow): Promise<[WebhookEndpoint[], number]> {
    return this.transactions.tx.findAndCount(WebhookEndpoint, {
      where: { projectId },
      order: { createdAt: 'DESC', id: 'DESC' },
      skip: offset,
      take: limit,
    });
  }

  @GenerateSql({ params: ['prj_1', 'we_1'] })
  get(projectId: string, id: string): Promise<WebhookEndpoint | null> {
    return this.transactions.tx.findOne(WebhookEndpoint, { where: { id, projectId } });
  }

  /** The endpoint, locked for the rest of the current transaction. */
  @GenerateSql({ params: ['prj_1', 'we_1'] })
  lock(projectId: string, id: string): Promise<WebhookEndpoint | null> {
    return this.transactions.tx.findOne(WebhookEndpoint, {
      where: { id, projectId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  @GenerateSql({
    params: [
      Object.assign(new WebhookEndpoint(), {
        id: 'we_1',
        projectId: 'prj_1',
        url: 'https://example.com/hooks/v2',
        description: null,
        eventTypes: [],
        enabled: true,
        disabledReason: null,
        failingSince: null,
        secret: 'whsec_1',
        previousSecret: null,
        previousSecretExpiresAt: null,
      }),
    ],
  })
  async save(endpoint: WebhookEndpoint): Promise<WebhookEndpoint> {
    return this.transactions.tx.save(endpoint);
  }

  @GenerateSql({ params: ['prj_1', 'we_1'] })
  async delete(projectId: string, id: string): Promise<boolean> {
    const result = await this.transactions.tx.delete(WebhookEndpoint, { id, projectId });
    return (result.affected ?? 0) > 0;
  }

  /** Enabled endpoints of the project whose filter takes `type`. */
  @GenerateSql({ params: ['prj_1', 'subscription.created'] })
  async enabledFor(projectId: string, type: string): Promise<string[]> {
    const rows: { id: string }[] = await this.transactions.tx.query(
      `SELECT id FROM webhook_endpoints
        WHERE project_id = $1 AND enabled AND (cardinality(event_types) = 0 OR $2 = ANY (event_types))`,
      [projectId, type],
    );
    return rows.map((r) => r.id);
  }

  /** After a success: the endpoint is no longer failing. */
  @GenerateSql({ params: ['we_1'] })
  async markSucceeded(id: string): Promise<void> {
    await this.transactions.tx.query(
      `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`,
      [id],
    );
  }

  /** After a failure: failing since the first failure after the last success; returns that time. */
  @GenerateSql({ params: ['we_1'] })
  async markFailed(id: string): Promise<Date | undefined> {
    const [rows] = (await this.transactions.tx.query(
      `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now()) WHERE id = $1
       RETURNING failing_since`,
      [id],
    )) as [{ failing_since: Date }[], number];
    return rows[0]?.failing_since;
  }

  /** Disables an enabled endpoint with a reason; false when it was already disabled (or is gone). */
  @GenerateSql({ params: ['we_1', 'failing for 3 days'] })
  async disable(id: string, reason: string): Promise<boolean> {
    const [, affected] = (await this.transactions.tx.query(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
        WHERE id = $1 AND enabled`,
      [id, reason],
    )) as [unknown, number];
    return affected > 0;
  }
}
