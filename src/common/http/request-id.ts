import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Request } from 'express';

export const REQUEST_ID_HEADER = 'X-Request-Id';
const ACCEPTED = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps an acceptable incoming `X-Request-Id` (up to 128 letters, digits and `._:-`), otherwise makes one. */
export function requestIdFor(incoming: string | string[] | undefined): string {
  const value = Array.isArray(incoming) ? incoming[0] : incoming;
  return value && ACCEPTED.test(value) ? value : randomUUID();
}

export const requestIdOf = (req: Request): string => (req as Request & { id?: string }).id ?? 'unknown';

/** The request's id as a handler parameter, for services that log while handling it (as `reqId`). */
export const RequestId = createParamDecorator((_: unknown, ctx: ExecutionContext): string =>
  requestIdOf(ctx.switchToHttp().getRequest<Request>()),
);
