import { Injectable } from '@nestjs/common';
import { Transactions } from '../database/transactional';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity';
import { PageWindow } from '../common/http/pagination';

/** Every statement of `webhook_endpoints`; every one filters on the project, except the worker's. */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(private readonly transactions: Transactions) {}

  async insert(endpoint: Omit<WebhookEndpoint, 'createdAt' | 'updatedAt'>): Promise<WebhookEndpoint> {
    const em = this.transactions.tx;
    return em.save(em.create(WebhookEndpoint, endpoint));
  }

  /** A page, newest first, and the total. */
  page(projectId: string, { limit, offset }: PageWindow): Promise<[WebhookEndpoint[], number]> {
    return this.transactions.tx.findAndCount(WebhookEndpoint, {
      where: { projectId },
      order: { createdAt: 'DESC', id: 'DESC' },
      skip: offset,
      take: limit,
    });
  }

  get(projectId: string, id: string): Promise<WebhookEndpoint | null> {
    return this.transactions.tx.findOne(WebhookEndpoint, { where: { id, projectId } });
  }

  /** The endpoint, locked for the rest of the current transaction. */
  lock(projectId: string, id: string): Promise<WebhookEndpoint | null> {
    return this.transactions.tx.findOne(WebhookEndpoint, {
      where: { id, projectId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  async save(endpoint: WebhookEndpoint): Promise<WebhookEndpoint> {
    return this.transactions.tx.save(endpoint);
  }

  async delete(projectId: string, id: string): Promise<boolean> {
    const result = await this.transactions.tx.delete(WebhookEndpoint, { id, projectId });
    return (result.affected ?? 0) > 0;
  }

  /** Enabled endpoints of the project whose filter takes `type`. */
  async enabledFor(projectId: string, type: string): Promise<string[]> {
    const rows: { id: string }[] = await this.transactions.tx.query(
      `SELECT id FROM webhook_endpoints
        WHERE project_id = $1 AND enabled AND (cardinality(event_types) = 0 OR $2 = ANY (event_types))`,
      [projectId, type],
    );
    return rows.map((r) => r.id);
  }

  /** After a success: the endpoint is no longer failing. */
  async markSucceeded(id: string): Promise<void> {
    await this.transactions.tx.query(
      `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`,
      [id],
    );
  }

  /** After a failure: failing since the first failure after the last success; returns that time. */
  async markFailed(id: string): Promise<Date | undefined> {
    const [rows] = (await this.transactions.tx.query(
      `UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, now()) WHERE id = $1
       RETURNING failing_since`,
      [id],
    )) as [{ failing_since: Date }[], number];
    return rows[0]?.failing_since;
  }

  /** Disables an enabled endpoint with a reason; false when it was already disabled (or is gone). */
  async disable(id: string, reason: string): Promise<boolean> {
    const [, affected] = (await this.transactions.tx.query(
      `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = now()
        WHERE id = $1 AND enabled`,
      [id, reason],
    )) as [unknown, number];
    return affected > 0;
  }
}
