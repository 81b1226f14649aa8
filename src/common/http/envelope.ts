import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { NestApplicationOptions, StreamableFile } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Router } from 'express';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { requestIdOf } from './request-id';

export interface Envelope<T> {
  ok: true;
  requestId: string;
  data: T;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

type RouteMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Literal leading segments that name a route group (`/api/private/v1/customers`). */
const GROUP_SEGMENTS = 4;

/**
 * The group of an API route: its first GROUP_SEGMENTS path segments, lower-cased, when they are
 * all literal; `undefined` for any other route (registered on the application as usual).
 */
export function routeGroupOf(path: unknown): string | undefined {
  if (typeof path !== 'string' || !path.startsWith('/api/')) return undefined;
  const segments = path.split('/').slice(1, GROUP_SEGMENTS + 1);
  if (segments.length < GROUP_SEGMENTS || segments.some((s) => s === '' || /[^A-Za-z0-9._~-]/.test(s)))
    return undefined;
  return `/${segments.join('/')}`.toLowerCase();
}

/** Whether the request's path is `prefix` or below it (case-insensitive, as Express routes are). */
function isUnder(req: Request, prefix: string): boolean {
  const url = req.url;
  if (url.length < prefix.length || url.slice(0, prefix.length).toLowerCase() !== prefix) return false;
  const next = url.charCodeAt(prefix.length);
  return Number.isNaN(next) || next === 47 /* / */ || next === 63; /* ? */
}

/**
 * Express, with every handler's result wrapped in `{ ok, requestId, data }` (interface.md 2.1),
 * and the API routes in groups.
 *
 * Nest hands each handler's result to `reply()`, so wrapping it here reaches every route
 * without a global interceptor, whose per-request cost (an RxJS pipeline and async resources
 * around each handler) showed in the benchmark. Errors are written by `GlobalExceptionFilter`
 * and handlers that take `@Res()` write their own answers (the CSV export, `/metrics`); neither
 * passes through here. An error status is passed on untouched, in case Nest's own fallback
 * filter ever answers.
 *
 * Route groups: Express tries the routes of an application one after the other, so a request
 * for the 40th route ran 39 path matches first (about a tenth of the CPU time of a cached
 * `GET /customers/:id`, README Decisions). Nest registers every route through this adapter; an
 * API route whose first four segments are literal (`/api/private/v1/customers/:customerId`) goes
 * into an Express router of its group instead, entered through one prefix test, at the place of
 * the group's first route. Routes of two groups never match the same path, so the order in which
 * a request meets its candidate routes is unchanged; the router is called as a plain handler, so
 * `req.url`, `req.path` and `req.baseUrl` are what the routes saw before. OPTIONS requests skip
 * the groups, as no route answers them (Express's router would answer them itself at the end
 * of a group, where the application answers 404).
 */
export class EnvelopeExpressAdapter extends ExpressAdapter {
  private readonly routeGroups = new Map<string, Router>();
  private readonly classes: ExpressClasses;

  constructor(instance: Express) {
    super(instance);
    this.classes = expressClassesOf(instance);
  }

  /** Nest's server, made with the request and response classes that already are Express's (`expressClassesOf`). */
  override initHttpServer(options: NestApplicationOptions): void {
    if (options.httpsOptions || options.forceCloseConnections)
      throw new Error('EnvelopeExpressAdapter makes plain HTTP servers without forceCloseConnections');
    this.httpServer = createServer(
      { IncomingMessage: this.classes.request, ServerResponse: this.classes.response },
      this.getInstance(),
    );
  }

  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    // errors (Nest's own fallback filter), answers without a body (204, 304) and files: Express's way
    const status = statusCode ?? response.statusCode;
    if (status >= 400 || status === 204 || status === 304 || body instanceof StreamableFile)
      return super.reply(response, body, statusCode);
    const envelope: Envelope<unknown> = {
      ok: true,
      requestId: requestIdOf(response.req as Request),
      data: body,
    };
    const json = JSON.stringify(envelope);
    if (statusCode !== undefined) response.statusCode = statusCode;
    if (!response.hasHeader('Content-Type')) response.setHeader('Content-Type', JSON_CONTENT_TYPE);
    // An idempotent request's answer is taken at `res.send` (IdempotencyGuard replaces it).
    if (Object.hasOwn(response, 'send')) return response.send(json);
    // Otherwise what Express's res.json would do for this body (no ETag, no JSON settings, no
    // freshness check: answers carry neither ETag nor Last-Modified), without parsing and
    // formatting the content type again on every answer.
    response.setHeader('Content-Length', Buffer.byteLength(json));
    return response.end(json);
  }

  override get(...args: any[]): any {
    // one argument: Express's settings getter (`app.get('etag')`)
    return args.length < 2 ? super.get(...(args as [any])) : this.route('get', args);
  }

  override post(...args: any[]): any {
    return this.route('post', args);
  }

  override put(...args: any[]): any {
    return this.route('put', args);
  }

  override patch(...args: any[]): any {
    return this.route('patch', args);
  }

  override delete(...args: any[]): any {
    return this.route('delete', args);
  }

  private route(method: RouteMethod, args: any[]): unknown {
    const group = routeGroupOf(args[0]);
    if (!group) return (this.instance[method] as (...a: unknown[]) => unknown).apply(this.instance, args);
    let router = this.routeGroups.get(group);
    if (!router) {
      const created = Router({
        caseSensitive: this.instance.get('case sensitive routing'),
        strict: this.instance.get('strict routing'),
      });
      this.routeGroups.set(group, created);
      const enter: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
        if (req.method === 'OPTIONS' || !isUnder(req, group)) return next();
        created(req, res, next);
      };
      // the group's router, for whoever inspects the routes Express serves (test/support/routes.ts)
      this.instance.use(Object.assign(enter, { routeGroup: created }));
      router = created;
    }
    return (router[method] as (...a: unknown[]) => unknown).apply(router, args);
  }
}

interface ExpressClasses {
  request: typeof IncomingMessage;
  response: typeof ServerResponse;
}

/**
 * Request and response classes whose objects are born with the Express methods (`req.get`,
 * `res.status`, ...), made the application's own `request` and `response` prototypes.
 *
 * Express gives every request and response its methods by changing their prototype
 * (`Object.setPrototypeOf(req, app.request)` in `app.handle`). On Node 20 that change costs
 * about 0.1 ms of CPU per request (a fixed JSON answer: ~20 µs per request on node:http,
 * ~130 µs on Express, ~22 µs on Express with these classes; README Decisions). When the server
 * creates objects that already have that prototype, Express's `setPrototypeOf` changes nothing.
 * Everything Express does is unchanged: the prototype chain holds the same methods in the same
 * order (class prototype → `app.request` → Express's request → `IncomingMessage.prototype`), and
 * a server made without these classes still works, as before, through the prototype change.
 */
export function expressClassesOf(instance: Express): ExpressClasses {
  class ExpressRequest extends IncomingMessage {}
  class ExpressResponse<R extends IncomingMessage = IncomingMessage> extends ServerResponse<R> {}
  Object.setPrototypeOf(ExpressRequest.prototype, instance.request);
  Object.setPrototypeOf(ExpressResponse.prototype, instance.response);
  instance.request = ExpressRequest.prototype as unknown as Request;
  instance.response = ExpressResponse.prototype as unknown as Response;
  return { request: ExpressRequest, response: ExpressResponse };
}
