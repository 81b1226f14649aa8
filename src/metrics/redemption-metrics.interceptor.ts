import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { Observable, tap } from 'rxjs';
import { DomainError } from '../common/errors/domain-error';
import { MetricsService } from './metrics.service';

/** The routes that redeem a code or activate a plan (POST), by route template. */
export const REDEMPTION_ROUTES: ReadonlySet<string> = new Set([
  '/api/private/v1/redemptions',
  '/api/private/v1/codes/redeem',
  '/api/private/v1/subscriptions/activate',
  '/api/public/v1/me/redemptions',
]);

/**
 * Counts `redemptions_total` by outcome without touching the redemption code: a global
 * interceptor that watches the redemption routes. It runs after the key guards and inside the
 * idempotency interceptor, so refused keys and idempotent replays are not counted; validation
 * errors of the body are (they happen inside). Dry runs change nothing and are not counted.
 */
@Injectable()
export class RedemptionMetricsInterceptor implements NestInterceptor {
  constructor(private readonly metrics: MetricsService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const req = context.switchToHttp().getRequest<Request>();
    const route = (req.route as { path?: unknown } | undefined)?.path;
    if (req.method !== 'POST' || typeof route !== 'string' || !REDEMPTION_ROUTES.has(route) || req.query?.dryRun === 'true') {
      return next.handle();
    }
    return next.handle().pipe(
      tap({
        next: () => this.metrics.recordRedemption('success'),
        error: (error: unknown) => this.metrics.recordRedemption(error instanceof DomainError ? error.code : 'INTERNAL_ERROR'),
      }),
    );
  }
}
