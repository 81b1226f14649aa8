import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { sha256 } from '../common/crypto/sha256';
import { AppConfig } from '../config/app-config';
import { SecretBox } from '../common/crypto/secret-box';
import { DomainError } from '../common/errors/domain-error';
import { RequestNonceStore } from './request-nonces.service';
import type { AuthenticatedRequest, Caller } from './caller';
import { KeyAuthService } from './key-auth.service';
import { declaredScopes, RouteScope, scopeAllows } from './scopes';
import { FailureCounters } from './failure-counters';
import { clientAddress } from '../rate-limit/client-address';
import { RateLimiter } from '../rate-limit/rate-limiter.service';
import {
  NONCE_PATTERN,
  sign,
  SIGNATURE_PATTERN,
  SIGNATURE_WINDOW_SECONDS,
  signaturesMatch,
  TIMESTAMP_PATTERN,
} from './signature';

export const PUBLIC_KEY_HEADER = 'X-Service-Key';

export function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : undefined;
}

/**
 * `Authorization: Bearer sk_...` → the caller's project on the request
 * (docs/api-guide.md#projects-and-keys), then
 * the key's rate limit (`RateLimiter.countKey`), then the route's scope (`@Scope()`, held by the
 * cached key: no query). One guard for all three: each guard Nest runs costs
 * a context and a turn of the promise machinery on every request. A key the cache knows, without
 * rate limits, is answered without a promise (Nest then awaits nothing). Guards run before every
 * interceptor, so a scope refusal never reaches the `Idempotency-Key` handling.
 */
@Injectable()
export class PrivateKeyGuard implements CanActivate {
  private readonly scopes = new WeakMap<object, RouteScope>();

  constructor(
    private readonly keys: KeyAuthService,
    private readonly limiter: RateLimiter,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<AuthenticatedRequest>();
    const caller = this.keys.authenticate('private', bearerToken(req));
    const required = this.scopeOf(context);
    if (!(caller instanceof Promise) && !this.limiter.enabled) {
      req.caller = caller;
      checkScope(caller, required);
      return true;
    }
    return this.activate(req, http.getResponse<Response>(), caller, required);
  }

  private async activate(
    req: AuthenticatedRequest,
    res: Response,
    caller: Caller | Promise<Caller>,
    required: RouteScope,
  ): Promise<boolean> {
    req.caller = await caller;
    if (this.limiter.enabled) await this.limiter.countKey(req, res, req.caller);
    checkScope(req.caller, required);
    return true;
  }

  /** The route's scope, read from its decorators once per handler. */
  private scopeOf(context: ExecutionContext): RouteScope {
    const handler = context.getHandler();
    let scope = this.scopes.get(handler);
    if (scope === undefined) {
      const declared = declaredScopes({ controller: context.getClass(), handler });
      // `RouteScopeCheck` refuses to start without one; closed rather than open if it did not run
      if (declared.length !== 1)
        throw new Error(`${context.getClass().name}.${handler.name} declares no one scope`);
      scope = declared[0];
      this.scopes.set(handler, scope);
    }
    return scope;
  }
}

/** 403 INSUFFICIENT_SCOPE unless the key holds the route's scope (or one that includes it). */
function checkScope(caller: Caller, required: RouteScope): void {
  if (required === null || scopeAllows(caller.scopes ?? [], required)) return;
  const message = `This key lacks the scope ${required}, which this operation needs.`;
  throw new DomainError('INSUFFICIENT_SCOPE', message, [
    { field: 'scopes', message: `${required} is required`, required },
  ]);
}

/**
 * Nonces are kept this long after their timestamp has left the window, so that small clock
 * differences between replicas cannot reopen it.
 */
const NONCE_RETENTION_MARGIN_SECONDS = 60;

const headerValue = (req: Request, name: string): string | undefined => {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/**
 * `X-Service-Key: pk_...` → the caller's project on the request (docs/public-api.md), then the
 * request signature v1 (docs/public-api.md#signature-v1, `signature.ts`): required when the
 * project says so,
 * verified whenever any of its headers is present. Checks in order: the headers' form, the
 * HMAC over the exact bytes received (constant time), the clock window, and last the nonce, so
 * that only authentic requests use up a nonce. Then the key's rate limit, per key and client
 * address (`RateLimiter.countKey`).
 */
@Injectable()
export class PublicKeyGuard implements CanActivate {
  private readonly secrets: SecretBox;

  constructor(
    private readonly keys: KeyAuthService,
    private readonly nonces: RequestNonceStore,
    private readonly limiter: RateLimiter,
    config: AppConfig,
  ) {
    this.secrets = new SecretBox(config.get('SECRET_ENCRYPTION_KEY'));
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<AuthenticatedRequest>();
    const caller = await this.keys.authenticate('public', headerValue(req, 'x-service-key'));
    await this.verifySignature(req, caller);
    req.caller = caller;
    if (this.limiter.enabled) await this.limiter.countKey(req, http.getResponse<Response>(), caller);
    return true;
  }

  private async verifySignature(req: Request, caller: Caller): Promise<void> {
    const timestamp = headerValue(req, 'x-service-timestamp');
    const nonce = headerValue(req, 'x-service-nonce');
    const signature = headerValue(req, 'x-service-signature');
    const present = [timestamp, nonce, signature].filter((v) => v !== undefined).length;
    if (present === 0 && !caller.project.requireSignature) return;
    if (present < 3) {
      throw new DomainError(caller.project.requireSignature ? 'SIGNATURE_REQUIRED' : 'INVALID_SIGNATURE');
    }
    if (
      !TIMESTAMP_PATTERN.test(timestamp!) ||
      !NONCE_PATTERN.test(nonce!) ||
      !SIGNATURE_PATTERN.test(signature!)
    ) {
      throw new DomainError('INVALID_SIGNATURE');
    }
    if (!caller.signingSecretEnc) throw new Error(`Public key ${caller.apiKeyId} has no signing secret`);

    const rawBody = (req as Request & { rawBody?: Buffer }).rawBody ?? Buffer.alloc(0);
    const expected = sign(
      this.secrets.decrypt(caller.signingSecretEnc),
      req.method,
      req.originalUrl,
      timestamp!,
      nonce!,
      rawBody,
    );
    if (!signaturesMatch(expected, signature!.toLowerCase())) throw new DomainError('INVALID_SIGNATURE');

    const now = Date.now();
    const ts = Number(timestamp);
    if (Math.abs(Math.floor(now / 1000) - ts) > SIGNATURE_WINDOW_SECONDS)
      throw new DomainError('SIGNATURE_EXPIRED');

    const expiresAt = new Date((ts + SIGNATURE_WINDOW_SECONDS + NONCE_RETENTION_MARGIN_SECONDS) * 1000);
    if (!(await this.nonces.remember(caller.apiKeyId, nonce!, expiresAt, new Date(now))))
      throw new DomainError('NONCE_REUSED');
  }
}

/** Wrong admin tokens one client address may present in 15 minutes; past that, 429 RATE_LIMITED. */
export const ADMIN_MAX_FAILURES_PER_ADDRESS = 10;

/**
 * The operators' token (`ADMIN_TOKEN`); without one configured the admin interface does not exist.
 * Wrong tokens are counted per client address (`FailureCounters`, shared by the replicas): past
 * ADMIN_MAX_FAILURES_PER_ADDRESS of them in 15 minutes, that address gets 429 RATE_LIMITED,
 * whatever token it sends, until the window ends. A right token only reads the counter.
 */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly expected?: Buffer;

  constructor(
    config: AppConfig,
    private readonly failures: FailureCounters,
  ) {
    const token = config.get('ADMIN_TOKEN');
    this.expected = token ? sha256(token) : undefined;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (!this.expected) throw new DomainError('ROUTE_NOT_FOUND');
    const req = context.switchToHttp().getRequest<Request>();
    const counter = { key: `admin:${clientAddress(req)}`.slice(0, 128), max: ADMIN_MAX_FAILURES_PER_ADDRESS };
    const presented = bearerToken(req);
    if (presented && timingSafeEqual(sha256(presented), this.expected)) {
      // the right token: refused only from an address that is locked out (a read, no count, so
      // that parallel requests of an operator never hold each other up)
      await this.failures.assertOpen(counter);
      return true;
    }
    await this.failures.begin([counter]); // 429 once the address is past its failures
    throw new DomainError('INVALID_ADMIN_TOKEN');
  }
}
