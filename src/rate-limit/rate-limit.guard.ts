import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { RateLimiter } from './rate-limiter.service';

/** What the key guards have put on the request by then (structurally `auth/caller`'s request: this module knows no feature). */
type KeyedRequest = Request & { caller?: { apiKeyId: number } };

/** Longest address kept in a counter key (an untrusted `X-Forwarded-For` entry can be anything). */
const MAX_ADDRESS_LENGTH = 128;

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
    const address = (req.ip ?? req.socket.remoteAddress ?? 'unknown').slice(0, MAX_ADDRESS_LENGTH);
    await this.limiter.consume('address', address, http.getResponse<Response>());
    return true;
  }
}

/**
 * The per-key limit. `PrivateApi()` and `PublicApi()` put it right after their key guard, which
 * has put the caller (and its key id) on the request; a refused request goes no further, so it
 * never claims or stores an idempotency key and a retry after the window really runs.
 */
@Injectable()
export class KeyRateLimitGuard implements CanActivate {
  constructor(private readonly limiter: RateLimiter) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<KeyedRequest>();
    if (req.caller && this.limiter.appliesTo(req)) {
      await this.limiter.consume('key', String(req.caller.apiKeyId), http.getResponse<Response>());
    }
    return true;
  }
}
