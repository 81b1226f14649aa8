import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/**
 * Prometheus metrics (`GET /metrics`). Requests are counted through `observeRequest` (into
 * `HttpRequestMetrics`), called by the request pipeline that `configureApp` installs first (to
 * time whole requests); `redemptions_total` is fed by the redemption service. A module that
 * records imports it.
 */
@Module({
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
