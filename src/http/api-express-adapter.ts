import { ExpressAdapter } from '@nestjs/platform-express';
import type { Response } from 'express';
import { successAnswerOf } from '../common/http/envelope';

/**
 * Nest's Express adapter with one method of its own: `reply`, where Nest writes a handler's
 * result, writes it as the success envelope (`successAnswerOf`). The envelope is not a global
 * interceptor because any interceptor on a route makes Nest run each of its requests through an
 * RxJS pipeline; without one, a read passes through none (docs/benchmarks.md#the-envelope-in-the-adapter
 * has the measurement that keeps this). `api-express-adapter.spec.ts` fails if a Nest upgrade stops
 * writing results through `reply`.
 */
export class ApiExpressAdapter extends ExpressAdapter {
  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    const status = statusCode ?? response.statusCode;
    return super.reply(response, successAnswerOf(response, body, status), statusCode);
  }
}
