import { Global, Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/**
 * Prometheus metrics (`GET /metrics`). The HTTP middleware is installed by `configureApp` (it
 * must come first to time whole requests); `redemptions_total` is fed by the redemption
 * service. Global, so that every module can record.
 */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
