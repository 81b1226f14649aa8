import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { ApiKeyKind } from '../projects/entities/api-key.entity';

/** The project a request acts for, as established by a key guard. */
export interface CallerProject {
  id: string;
  name: string;
  autoCreateCustomerAtRedemption: boolean;
  requireSignature: boolean;
  /** The project's zone for calendar periods, as stored (never null). */
  timeZone: string;
}

export interface Caller {
  project: CallerProject;
  apiKeyId: number;
  /** The key's first characters, as the key view shows them. */
  keyPrefix: string;
  kind: ApiKeyKind;
  /** Encrypted signing secret of a public key. */
  signingSecretEnc: string | null;
  /** A private key's scopes (sorted, `['*']` for all); null for a public key. */
  scopes: readonly string[] | null;
  /** When the key stops working (epoch ms), compared with the clock at every request; null: never. */
  expiresAt: number | null;
}

export type AuthenticatedRequest = Request & { caller?: Caller };

export function callerOf(req: Request): Caller {
  const caller = (req as AuthenticatedRequest).caller;
  // A handler that reads the caller without a key guard is a programming error, not a 401.
  if (!caller) throw new Error('No authenticated caller on this request');
  return caller;
}

/** `@CurrentProject() project: CallerProject` in a handler behind `@PrivateApi()` or `@PublicApi()`. */
export const CurrentProject = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): CallerProject =>
    callerOf(ctx.switchToHttp().getRequest<Request>()).project,
);
