import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { DomainError } from '../common/errors/domain-error';
import { AppConfig } from '../config/app-config';
import { MetricsService } from './metrics.service';
import { Unauthenticated } from '../common/routes/access';

/**
 * `GET /metrics` for Prometheus: outside the API prefixes, no key, no envelope, not in the API
 * documentation. Not meant for the outside world: keep it off the ingress (scrape the pods), or
 * move it to a port of its own with `METRICS_PORT` (then it answers 404 here).
 */
@ApiExcludeController()
@Unauthenticated()
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @Header('Cache-Control', 'no-store')
  async scrape(@Res() res: Response): Promise<void> {
    // with METRICS_PORT set, /metrics lives on that port only (MetricsServer), not behind the API's Service
    if (!this.config.get('METRICS_ENABLED') || this.config.get('METRICS_PORT') !== undefined)
      throw new DomainError('ROUTE_NOT_FOUND');
    res.setHeader('Content-Type', this.metrics.contentType());
    res.send(await this.metrics.render());
  }
}
