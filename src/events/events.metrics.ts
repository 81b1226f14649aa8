import { Injectable } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { MetricsService } from '../metrics/metrics.service';
import { EventsRepository } from './events.repository';

/**
 * The webhook series of `/metrics` (docs/events.md#delivery), in the application's registry:
 * - `webhook_deliveries_total{outcome}`: attempts by outcome (`delivered`, `retrying`, `failed`
 *   when the schedule is used up, `endpoint_disabled`), counted by the replica that made them;
 * - `webhook_oldest_undelivered_event_age_seconds`: age of the oldest event with a pending
 *   delivery, read from the database at each scrape (the same on every replica).
 */
@Injectable()
export class EventsMetrics {
  private readonly deliveries: Counter<'outcome'>;

  constructor(metrics: MetricsService, events: EventsRepository) {
    this.deliveries = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered, retrying, failed (no retry left), endpoint_disabled.',
      labelNames: ['outcome'] as const,
      registers: [metrics.registry],
    });
    new Gauge({
      name: 'webhook_oldest_undelivered_event_age_seconds',
      help: 'Age of the oldest event with a delivery still pending (0 when none).',
      registers: [metrics.registry],
      async collect() {
        this.set(await events.oldestUndeliveredAgeSeconds());
      },
    });
    metrics.watchDefaultPartitions(() => events.defaultPartitionRows());
  }

  recordDelivery(outcome: string): void {
    this.deliveries.inc({ outcome });
  }
}
