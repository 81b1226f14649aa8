import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { RedemptionMetricsInterceptor } from './redemption-metrics.interceptor';

/**
 * Prometheus metrics (`GET /metrics`). The HTTP middleware is installed by `configureApp` (it
 * must come first to time whole requests); `redemptions_total` is fed by a global interceptor.
 * Import it after `IdempotencyModule` so that idempotent replays are not counted twice.
 */
@Module({
  controllers: [MetricsController],
  providers: [MetricsService, { provide: APP_INTERCEPTOR, useClass: RedemptionMetricsInterceptor }],
  exports: [MetricsService],
})
export class MetricsModule {}
