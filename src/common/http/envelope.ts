import { CallHandler, ExecutionContext, Injectable, NestInterceptor, StreamableFile } from '@nestjs/common';
import type { Request, Response } from 'express';
import { map, Observable } from 'rxjs';
import { requestIdOf } from './request-id';

export interface Envelope<T> {
  ok: true;
  requestId: string;
  data: T;
}

/** The success answer of a request: its result as `data`, with the request's id. */
export const envelopeOf = <T>(requestId: string, data: T): Envelope<T> => ({ ok: true, requestId, data });

/**
 * Wraps every handler's result in `{ ok, requestId, data }`; registered once, globally
 * (`configureApp`). Errors never pass through here: `GlobalExceptionFilter` writes them.
 * Left as they are: files (`StreamableFile`), answers without a body (204, 304), and whatever a
 * handler that writes its own answer with `@Res()` returns (the CSV export, `/metrics`), which
 * Nest does not send anyway.
 */
@Injectable()
export class EnvelopeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    return next.handle().pipe(
      map((data: unknown) => {
        if (data instanceof StreamableFile || res.headersSent) return data;
        if (res.statusCode === 204 || res.statusCode === 304) return data;
        return envelopeOf(requestIdOf(req), data);
      }),
    );
  }
}
