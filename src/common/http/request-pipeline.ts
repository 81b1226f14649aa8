import { performance } from 'node:perf_hooks';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { queryKeys } from './logging';
import { deferHeadHeaders, headHeadersOf, setHeadHeaders } from './envelope';
import { REQUEST_ID_HEADER, requestIdFor } from './request-id';

/** A response header as a handler sets it: name and value. */
export type StaticHeader = readonly [name: string, value: string];

/**
 * The headers a middleware that only sets constant headers (helmet) writes, read once by running
 * it on a stand-in response: every answer then gets the same list without the middleware's
 * chain of one function per header. Throws if the middleware does anything else with the
 * response or does not call `next` at once, so a helmet upgrade that starts to depend on the
 * request is caught at start, not missed.
 */
export function constantHeadersOf(middleware: RequestHandler): StaticHeader[] {
  const headers = new Map<string, string>();
  let passed = false;
  const res = {
    setHeader(name: string, value: unknown) {
      headers.set(name, Array.isArray(value) ? value.join(', ') : String(value));
      return res;
    },
    removeHeader(name: string) {
      headers.delete(name);
    },
  };
  const req = { method: 'GET', url: '/', headers: {}, secure: false };
  void middleware(req as unknown as Request, res as unknown as Response, (error?: unknown) => {
    if (error) throw error instanceof Error ? error : new Error(String(error));
    passed = true;
  });
  if (!passed) throw new Error('The header middleware did not pass the request on at once');
  return [...headers];
}

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
  /** The headers of every answer but Swagger UI's. */
  apiHeaders: StaticHeader[];
  /** Whether the path (which starts with `/docs`) is Swagger UI's, which gets `docsHeaders` instead. */
  isDocs: (path: string) => boolean;
  docsHeaders: RequestHandler;
  /** Called once per answer written to its end (Prometheus). */
  onFinished?: (finished: FinishedRequest) => void;
}

/**
 * The per-request work done before any route, in one Express middleware (one function call and
 * one `close` listener per request, where five middlewares and two listeners were):
 *
 * - the request id (`X-Request-Id`, product.md 2): the client's if acceptable, else a new one;
 * - the security headers (helmet's, read once by `constantHeadersOf`, plus `Cache-Control:
 *   no-store`: answers carry keys, tokens, codes and customer data) and `X-Request-Id`, given
 *   to the answer when its head is written, each unless the answer set it (`deferHeadHeaders`);
 *   Swagger UI gets its own at once;
 * - at the end: one log line (`request completed`, or `request aborted` when the connection
 *   closed first; 5xx at `error`, 4xx and aborted at `warn`, others at `info`; query keys, never
 *   values; the URL only at `debug`), and `onFinished` for the metrics of a completed answer.
 */
export function requestPipeline(options: RequestPipelineOptions): RequestHandler {
  const { logger, routeOf, isDocs, docsHeaders, onFinished } = options;
  // Header names are case-insensitive; written lower-case (as HTTP/2 spells them anyway).
  const apiHeaders = headHeadersOf(options.apiHeaders);

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
    if (req.url.startsWith('/docs') && isDocs(req.path)) {
      res.setHeader(REQUEST_ID_HEADER, id);
      return docsHeaders(req, res, next);
    }
    if (!deferHeadHeaders(res, apiHeaders, id)) setHeadHeaders(res, apiHeaders, id);
    next();
  };
}
