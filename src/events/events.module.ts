import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { MetricsModule } from '../metrics/metrics.module';
import { BoundaryScheduler } from './boundary.scheduler';
import { DeliveryWorker } from './delivery.worker';
import { EventsController } from './events.controller';
import { EventsMetrics } from './events.metrics';
import { EventsRepository } from './events.repository';
import { EventsService } from './events.service';
import { WebhookEndpointsController } from './webhook-endpoints.controller';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhookEndpointsService } from './webhook-endpoints.service';

/**
 * Events and webhooks (docs/events.md). Other modules import it for `EventsService.record`, which
 * writes events inside their transaction; it imports none of them (the scheduler reads windows
 * with its own statement).
 */
@Module({
  imports: [AuthModule, IdempotencyModule, MetricsModule],
  controllers: [WebhookEndpointsController, EventsController],
  providers: [
    EventsRepository,
    WebhookEndpointsRepository,
    EventsService,
    WebhookEndpointsService,
    EventsMetrics,
    DeliveryWorker,
    BoundaryScheduler,
  ],
  exports: [EventsService],
})
export class EventsModule {}
