import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import { Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/caller';
import { RateLimiter } from './rate-limiter.service';

/**
 * The per-key limit. An interceptor, because interceptors run after ALL guards, so the key guard
 * has put the caller (and its key id) on the request; a global guard would run before it.
 * Registered ahead of the idempotency interceptor (see `RateLimitModule`), so a refused request
 * never claims or stores an idempotency key: a retry after the window really runs.
 */
@Injectable()
export class KeyRateLimitInterceptor implements NestInterceptor {
  constructor(private readonly limiter: RateLimiter) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() === 'http') {
      const http = context.switchToHttp();
      const req = http.getRequest<AuthenticatedRequest>();
      if (req.caller && this.limiter.appliesTo(req)) {
        await this.limiter.consume('key', String(req.caller.apiKeyId), http.getResponse<Response>());
      }
    }
    return next.handle();
  }
}
