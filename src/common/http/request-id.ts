import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { timeOrderedUuid } from '../crypto/random';

export const REQUEST_ID_HEADER = 'X-Request-Id';
const ACCEPTED = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Keeps an acceptable incoming `X-Request-Id` (up to 128 letters, digits and `._:-`), otherwise
 * makes one, time-ordered, so that the request ids the audit records are indexed by arrive in
 * order, as the records' own ids do.
 */
export function requestIdFor(incoming: string | string[] | undefined): string {
  const value = Array.isArray(incoming) ? incoming[0] : incoming;
  return value && ACCEPTED.test(value) ? value : timeOrderedUuid();
}

export const requestIdOf = (req: Request): string => (req as Request & { id?: string }).id ?? 'unknown';

/** The request's id as a handler parameter, for services that log while handling it (as `reqId`). */
export const RequestId = createParamDecorator((_: unknown, ctx: ExecutionContext): string =>
  requestIdOf(ctx.switchToHttp().getRequest<Request>()),
);
