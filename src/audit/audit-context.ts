import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { ClsService } from 'nestjs-cls';
import { Observable } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/caller';
import { ACCESS_METADATA, RouteAccess } from '../common/routes/access';
import { requestIdOf } from '../common/http/request-id';

/** Who made a change (`actor` of an audit record). */
export interface AuditActor {
  type: 'private_key' | 'public_key' | 'admin' | 'cli' | 'system';
  keyId: number | null;
  keyPrefix: string | null;
  customerId: number | null;
}

/** Who made a change, and through which request. */
export interface AuditContext {
  actor: AuditActor;
  requestId: string | null;
  idempotencyKey: string | null;
  ip: string | null;
}

const nobody = { keyId: null, keyPrefix: null, customerId: null };

/** What the service does on its own, and work outside a request (tests calling services). */
export const SYSTEM: AuditContext = {
  actor: { type: 'system', ...nobody },
  requestId: null,
  idempotencyKey: null,
  ip: null,
};

/** The operator's CLI. */
export const CLI: AuditContext = { ...SYSTEM, actor: { type: 'cli', ...nobody } };

export const AUDIT_CONTEXT = 'audit-context';

/** The characters of a key that identify it in lists and logs (its `prefix`). */
const KEY_PREFIX_LENGTH = 8;

/** An IPv4 address as IPv4, also when the socket shows it IPv4-mapped (`::ffff:1.2.3.4`). */
const plainAddress = (ip: string | undefined): string | null =>
  ip === undefined ? null : ip.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');

/** The audit context of an authenticated request, by the interface its route belongs to. */
export function auditContextOf(req: Request, access: RouteAccess | undefined): AuditContext {
  const base = {
    requestId: requestIdOf(req),
    idempotencyKey: (req.headers['idempotency-key'] as string | undefined) ?? null,
    ip: plainAddress(req.ip ?? req.socket.remoteAddress),
  };
  const caller = (req as AuthenticatedRequest).caller;
  if (access === 'admin' || !caller) return { ...base, actor: { type: 'admin', ...nobody } };
  const publicKey = caller.kind === 'public';
  const header = publicKey ? req.headers['x-service-key'] : req.headers.authorization;
  const token = publicKey
    ? Array.isArray(header)
      ? header[0]
      : header
    : /^Bearer\s+(\S+)$/i.exec((header as string | undefined) ?? '')?.[1];
  const session = (req as { customerSession?: { customerId: number } }).customerSession;
  return {
    ...base,
    actor: {
      type: publicKey ? 'public_key' : 'private_key',
      keyId: caller.apiKeyId,
      keyPrefix: token ? token.slice(0, KEY_PREFIX_LENGTH) : null,
      customerId: publicKey ? (session?.customerId ?? null) : null,
    },
  };
}

/**
 * Puts the audit context of a request that may change something (any method but GET and HEAD)
 * into the request's async context, where `AuditTrail` finds it. Runs after the guards, so the
 * caller is known.
 */
@Injectable()
export class AuditContextInterceptor implements NestInterceptor {
  constructor(
    private readonly cls: ClsService,
    private readonly reflector: Reflector,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<Request>();
    if (req.method === 'GET' || req.method === 'HEAD') return next.handle();
    const access = this.reflector.getAllAndOverride<RouteAccess[] | undefined>(ACCESS_METADATA, [
      context.getHandler(),
      context.getClass(),
    ])?.[0];
    const audit = auditContextOf(req, access);
    return new Observable((subscriber) =>
      this.cls.run(() => {
        this.cls.set(AUDIT_CONTEXT, audit);
        const subscription = next.handle().subscribe(subscriber);
        return () => subscription.unsubscribe();
      }),
    );
  }
}
