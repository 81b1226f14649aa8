import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { sha256 } from '../common/crypto/sha256';
import { AppConfig } from '../config/app-config';
import { SecretBox } from '../common/crypto/secret-box';
import { DomainError } from '../common/errors/domain-error';
import { RequestNonceStore } from './request-nonces.service';
import type { AuthenticatedRequest, Caller } from './caller';
import { KeyAuthService } from './key-auth.service';
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

/** `Authorization: Bearer sk_...` → the caller's project on the request (interface.md 5.1). */
@Injectable()
export class PrivateKeyGuard implements CanActivate {
  constructor(private readonly keys: KeyAuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    req.caller = await this.keys.authenticate('private', bearerToken(req));
    return true;
  }
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
 * `X-Service-Key: pk_...` → the caller's project on the request (interface.md 5.2), then the
 * request signature v1 (product.md 8, `signature.ts`): required when the project says so,
 * verified whenever any of its headers is present. Checks in order: the headers' form, the
 * HMAC over the exact bytes received (constant time), the clock window, and last the nonce, so
 * that only authentic requests use up a nonce.
 */
@Injectable()
export class PublicKeyGuard implements CanActivate {
  private readonly secrets: SecretBox;

  constructor(
    private readonly keys: KeyAuthService,
    private readonly nonces: RequestNonceStore,
    config: AppConfig,
  ) {
    this.secrets = new SecretBox(config.get('SECRET_ENCRYPTION_KEY'));
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const caller = await this.keys.authenticate('public', headerValue(req, 'x-service-key'));
    await this.verifySignature(req, caller);
    req.caller = caller;
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

/** The operators' token (`ADMIN_TOKEN`); without one configured the admin interface does not exist. */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly expected?: Buffer;

  constructor(config: AppConfig) {
    const token = config.get('ADMIN_TOKEN');
    this.expected = token ? sha256(token) : undefined;
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) throw new DomainError('ROUTE_NOT_FOUND');
    const presented = bearerToken(context.switchToHttp().getRequest<Request>());
    if (!presented || !timingSafeEqual(sha256(presented), this.expected))
      throw new DomainError('INVALID_ADMIN_TOKEN');
    return true;
  }
}
