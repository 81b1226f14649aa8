import { StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { requestIdOf } from './request-id';

export interface Envelope<T> {
  ok: true;
  requestId: string;
  data: T;
}

/** The success answer of a request: its result as `data`, with the request's id. */
export const envelopeOf = <T>(requestId: string, data: T): Envelope<T> => ({ ok: true, requestId, data });

/**
 * What is written for a handler's `result`, answered with `status`: the result as the `data` of
 * `{ ok, requestId, data }`. Left as they are: files (`StreamableFile`), answers without a body
 * (204, 304), answers the handler has already written, and error statuses (the exception filter
 * writes those, whole). The HTTP adapter (`src/http/`) applies it to every handler's result.
 */
export function successAnswerOf(res: Response, result: unknown, status: number): unknown {
  if (result instanceof StreamableFile || res.headersSent) return result;
  if (status === 204 || status === 304 || status >= 400) return result;
  return envelopeOf(requestIdOf(res.req), result);
}
