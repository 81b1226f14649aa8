import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { clientAddress } from './client-address';
import { RateLimiter } from './rate-limiter.service';

/**
 * The per-address limit, as a global guard: Nest runs global guards before the controllers'
 * key guards, so requests with a wrong or missing key are limited too. The address is `req.ip`,
 * which follows `TRUST_PROXY`.
 */
@Injectable()
export class AddressRateLimitGuard implements CanActivate {
  constructor(private readonly limiter: RateLimiter) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    if (!this.limiter.appliesTo(req)) return true;
    await this.limiter.consume('address', clientAddress(req), http.getResponse<Response>());
    return true;
  }
}
