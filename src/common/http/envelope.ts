import { ExpressAdapter } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import { requestIdOf } from './request-id';

export interface Envelope<T> {
  ok: true;
  requestId: string;
  data: T;
}

/**
 * Express, with every handler's result wrapped in `{ ok, requestId, data }` (interface.md 2.1).
 *
 * Nest hands each handler's result to `reply()`, so wrapping it here reaches every route
 * without a global interceptor, whose per-request cost (an RxJS pipeline and async resources
 * around each handler) showed in the benchmark. Errors are written by `GlobalExceptionFilter`
 * and handlers that take `@Res()` write their own answers (the CSV export, `/metrics`); neither
 * passes through here. An error status is passed on untouched, in case Nest's own fallback
 * filter ever answers.
 */
export class EnvelopeExpressAdapter extends ExpressAdapter {
  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    if (statusCode !== undefined && statusCode >= 400) return super.reply(response, body, statusCode);
    const envelope: Envelope<unknown> = {
      ok: true,
      requestId: requestIdOf(response.req as Request),
      data: body,
    };
    return super.reply(response, envelope, statusCode);
  }
}
