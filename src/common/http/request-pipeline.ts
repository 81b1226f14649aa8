import { performance } from 'node:perf_hooks';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { queryKeys } from './logging';
import { REQUEST_ID_HEADER, requestIdFor } from './request-id';

export interface FinishedRequest {
  req: Request;
  res: Response;
  /** The route template (`/api/private/v1/customers/:customerId`), never a raw path. */
  route: string;
  /** From the first byte of the request's handling to the end of its answer. */
  seconds: number;
}

export interface RequestPipelineOptions {
  /** The request lines' logger. */
  logger: Logger;
  /** The route template of a request (metric labels and log lines). */
  routeOf: (req: Request) => string;
  /** Sets the security headers of every answer but Swagger UI's (helmet). */
  apiHeaders: RequestHandler;
  /** Whether the path (which starts with `/docs`) is Swagger UI's, which gets `docsHeaders` instead. */
  isDocs: (path: string) => boolean;
  docsHeaders: RequestHandler;
  /** Called once per answer written to its end (Prometheus). */
  onFinished?: (finished: FinishedRequest) => void;
}

/**
 * The per-request work done before any route, in one Express middleware:
 *
 * - the request id (`X-Request-Id`): the client's if acceptable, else a new one, on the request
 *   and on the answer;
 * - the security headers (helmet's, plus `Cache-Control: no-store`: answers carry keys, tokens,
 *   codes and customer data), set first so that an answer's own value of any of them wins;
 *   Swagger UI gets its own;
 * - at the end: one log line (`request completed`, or `request aborted` when the connection
 *   closed first; 5xx at `error`, 4xx and aborted at `warn`, others at `info`; query keys, never
 *   values; the URL only at `debug`), and `onFinished` for the metrics of a completed answer.
 */
export function requestPipeline(options: RequestPipelineOptions): RequestHandler {
  const { logger, routeOf, isDocs, apiHeaders, docsHeaders, onFinished } = options;

  // `this` is the response: one listener function for every request, no closure per request
  function onClose(this: Response): void {
    finish(this.req, this);
  }

  function finish(req: Request, res: Response): void {
    const ms = performance.now() - (res.locals as { startedAt: number }).startedAt;
    const completed = res.writableFinished;
    const status = res.statusCode;
    const level = !completed ? 'warn' : status >= 500 ? 'error' : status >= 400 ? 'warn' : 'info';
    const logged = logger.isLevelEnabled(level);
    if (!logged && !(completed && onFinished)) return;
    const route = routeOf(req);
    if (completed) onFinished?.({ req, res, route, seconds: ms / 1000 });
    if (!logged) return;
    const url = req.originalUrl;
    logger[level](
      {
        reqId: (req as Request & { id: string }).id,
        req: {
          method: req.method,
          route,
          query: queryKeys(url),
          ...(logger.isLevelEnabled('debug') ? { url } : {}),
        },
        res: { statusCode: status },
        responseTime: Math.round(ms),
      },
      completed ? 'request completed' : 'request aborted',
    );
  }

  return (req: Request, res: Response, next: NextFunction) => {
    (res.locals as { startedAt: number }).startedAt = performance.now();
    const id = requestIdFor(req.headers['x-request-id']);
    (req as Request & { id: string }).id = id;
    res.on('close', onClose);
    res.setHeader(REQUEST_ID_HEADER, id);
    if (req.url.startsWith('/docs') && isDocs(req.path)) return docsHeaders(req, res, next);
    res.setHeader('Cache-Control', 'no-store');
    return apiHeaders(req, res, next);
  };
}
