import { Global, Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/**
 * Prometheus metrics (`GET /metrics`). The HTTP middleware is installed by `configureApp` (it
 * must come first to time whole requests); `redemptions_total` is fed by
 * `RedemptionMetricsInterceptor` on the redemption routes. Global, so that their modules can
 * make that interceptor.
 */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
