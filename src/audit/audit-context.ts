import type { Request, RequestHandler } from 'express';
import type { ClsService } from 'nestjs-cls';
import type { AuthenticatedRequest } from '../auth/caller';
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

/**
 * The audit context of a request, once its guards have run: a key's caller on the private and
 * public interfaces, the operator on the admin interface (whose guard names no caller).
 */
export function auditContextOf(req: Request): AuditContext {
  const base = {
    requestId: requestIdOf(req),
    idempotencyKey: (req.headers['idempotency-key'] as string | undefined) ?? null,
    ip: plainAddress(req.ip ?? req.socket.remoteAddress),
  };
  const caller = (req as AuthenticatedRequest).caller;
  if (!caller) return { ...base, actor: { type: 'admin', ...nobody } };
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

/** Where `auditRequests` keeps the request in its async context. */
export const AUDIT_REQUEST = 'audit-request';

/**
 * An Express middleware: a request that may change something (any method but GET and HEAD) runs
 * the rest of its handling in an async context of its own that holds the request, where
 * `AuditTrail` finds who makes a change once the guards have named the caller. Reads pay
 * nothing. Registered after the body parser: the parser's stream callbacks would run outside it.
 */
export function auditRequests(cls: ClsService): RequestHandler {
  return (req, _res, next) => {
    if (req.method === 'GET' || req.method === 'HEAD') return next();
    cls.run(() => {
      cls.set(AUDIT_REQUEST, req);
      next();
    });
  };
}
