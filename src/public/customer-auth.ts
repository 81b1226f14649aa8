import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  Injectable,
  UseGuards,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { RateLimiter } from '../rate-limit/rate-limiter.service';
import { callerOf } from '../auth/caller';
import { PublicApi } from '../auth/decorators';
import { bearerToken } from '../auth/guards';
import { ApiErrors } from '../common/swagger/api-responses';
import { CustomerSessionRef, CustomerSessionsService } from './customer-sessions.service';

type CustomerRequest = Request & { customerSession?: CustomerSessionRef };

/**
 * `Authorization: Bearer <customer token>` → the logged-in customer on the request, then the
 * customer's rate limit. Runs after the public key guard, which establishes the project (see
 * `CustomerApi()`).
 */
@Injectable()
export class CustomerTokenGuard implements CanActivate {
  constructor(
    private readonly sessions: CustomerSessionsService,
    private readonly limiter: RateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<CustomerRequest>();
    const session = await this.sessions.authenticate(callerOf(req).project, bearerToken(req));
    req.customerSession = session;
    // the customer's own limit, whatever the address (RATE_LIMIT_PER_CUSTOMER)
    if (this.limiter.appliesTo(req))
      await this.limiter.consume(
        'customer',
        `${session.projectId}:${session.customerId}`,
        http.getResponse<Response>(),
      );
    return true;
  }
}

/** `@CurrentCustomer() session: CustomerSessionRef` in a handler behind `@CustomerApi()`. */
export const CurrentCustomer = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): CustomerSessionRef => {
    const session = ctx.switchToHttp().getRequest<CustomerRequest>().customerSession;
    if (!session) throw new Error('No customer session on this request');
    return session;
  },
);

/**
 * A customer-level endpoint: the public key guard (key and signature), then the customer-token
 * guard, documented as needing both the public key and the customer token. Use it instead of
 * `@PublicApi()`, on the handler (a class-level `@PublicApi()` would document "key alone" too).
 */
export const CustomerApi = () =>
  applyDecorators(
    PublicApi({ withCustomerToken: true }),
    UseGuards(CustomerTokenGuard),
    ApiErrors('INVALID_CUSTOMER_TOKEN', 'CUSTOMER_PROJECT_MISMATCH', 'CUSTOMER_DISABLED'),
  );
