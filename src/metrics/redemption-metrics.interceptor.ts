import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { Observable, tap } from 'rxjs';
import { DomainError } from '../common/errors/domain-error';
import { MetricsService } from './metrics.service';

/**
 * Counts `redemptions_total` by outcome without touching the redemption code. It is put on the
 * routes that redeem a code or activate a plan, inside `@Idempotent()` (which runs after the
 * key guards), so refused keys and idempotent replays are not counted; validation errors of the
 * body are (they happen inside). Dry runs change nothing and are not counted.
 */
@Injectable()
export class RedemptionMetricsInterceptor implements NestInterceptor {
  constructor(private readonly metrics: MetricsService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const req = context.switchToHttp().getRequest<Request>();
    if (req.query?.dryRun === 'true') return next.handle();
    return next.handle().pipe(
      tap({
        next: () => this.metrics.recordRedemption('success'),
        error: (error: unknown) => this.metrics.recordRedemption(error instanceof DomainError ? error.code : 'INTERNAL_ERROR'),
      }),
    );
  }
}
