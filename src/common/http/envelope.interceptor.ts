import { CallHandler, ExecutionContext, Injectable, NestInterceptor, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { map, Observable } from 'rxjs';
import { requestIdOf } from './request-id';

const RAW_RESPONSE = 'raw-response';
/** A handler whose answer is not JSON (a CSV export) opts out of the envelope. */
export const RawResponse = () => SetMetadata(RAW_RESPONSE, true);

export interface Envelope<T> {
  ok: true;
  requestId: string;
  data: T;
}

/** Wraps every handler's result in `{ ok, requestId, data }` (interface.md 2.1). */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  constructor(private readonly reflector: Reflector) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http' || this.reflector.get<boolean>(RAW_RESPONSE, context.getHandler())) {
      return next.handle();
    }
    const requestId = requestIdOf(context.switchToHttp().getRequest<Request>());
    return next.handle().pipe(map((data: unknown): Envelope<unknown> => ({ ok: true, requestId, data })));
  }
}
