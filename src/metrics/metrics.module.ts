import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsServer } from './metrics-server';
import { MetricsService } from './metrics.service';

/**
 * Prometheus metrics (`GET /metrics`). Requests are counted through `observeRequest` (into
 * `HttpRequestMetrics`), called by the request pipeline that `configureApp` installs first (to
 * time whole requests); `redemptions_total` is fed by the redemption service. A module that
 * records imports it. With `METRICS_PORT` set, `MetricsServer` serves `/metrics` on that port and
 * the API port answers it 404.
 */
@Module({
  controllers: [MetricsController],
  providers: [MetricsService, MetricsServer],
  exports: [MetricsService],
})
export class MetricsModule {}
