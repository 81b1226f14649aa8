import { Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { RoutesModule } from '../common/routes/route-catalog.service';

/**
 * Prometheus metrics (`GET /metrics`). The HTTP middleware is installed by `configureApp` (it
 * must come first to time whole requests); `redemptions_total` is fed by the redemption
 * service. A module that records imports it.
 */
@Module({
  imports: [RoutesModule],
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
