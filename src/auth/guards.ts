import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AppConfig } from '../config/app-config';
import { DomainError } from '../common/errors/domain-error';
import type { AuthenticatedRequest } from './caller';
import { KeyAuthService } from './key-auth.service';

export const PUBLIC_KEY_HEADER = 'X-Service-Key';

function bearerToken(req: Request): string | undefined {
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

/** `X-Service-Key: pk_...` → the caller's project on the request (interface.md 5.2). */
@Injectable()
export class PublicKeyGuard implements CanActivate {
  constructor(private readonly keys: KeyAuthService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const header = req.headers['x-service-key'];
    req.caller = await this.keys.authenticate('public', Array.isArray(header) ? header[0] : header);
    return true;
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** The operators' token (`ADMIN_TOKEN`); without one configured the admin interface does not exist. */
@Injectable()
export class AdminGuard implements CanActivate {
  private readonly expected?: Buffer;

  constructor(config: AppConfig) {
    const token = config.get('ADMIN_TOKEN');
    this.expected = token ? digest(token) : undefined;
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) throw new DomainError('ROUTE_NOT_FOUND');
    const presented = bearerToken(context.switchToHttp().getRequest<Request>());
    if (!presented || !timingSafeEqual(digest(presented), this.expected)) throw new DomainError('INVALID_ADMIN_TOKEN');
    return true;
  }
}
