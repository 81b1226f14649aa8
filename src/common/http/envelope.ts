import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { NestApplicationOptions, StreamableFile } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Router } from 'express';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { REQUEST_ID_HEADER, requestIdOf } from './request-id';

export interface Envelope<T> {
  ok: true;
  requestId: string;
  data: T;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

type RouteMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Literal leading segments that name a route group under `/api/` (`/api/private/v1/customers`); one elsewhere (`/docs`). */
const API_GROUP_SEGMENTS = 4;

/** How many leading segments of a route's path, or of a request's URL, name its group. */
const groupSegmentsOf = (path: string) =>
  path.slice(0, 5).toLowerCase() === '/api/' ? API_GROUP_SEGMENTS : 1;

/**
 * The group of a route: the first API_GROUP_SEGMENTS path segments of an API route, or the first
 * segment of any other route, lower-cased, when they are all literal; `undefined` for any other
 * route (registered on the application as usual).
 */
export function routeGroupOf(path: unknown): string | undefined {
  if (typeof path !== 'string') return undefined;
  const count = groupSegmentsOf(path);
  const segments = path.split('/').slice(1, count + 1);
  if (segments.length < count || segments.some((s) => s === '' || /[^A-Za-z0-9._~-]/.test(s)))
    return undefined;
  return `/${segments.join('/')}`.toLowerCase();
}

/**
 * The group a request's URL falls in (as `routeGroupOf` names them): its first four path segments
 * under `/api/`, else its first one, lower-cased (Express routes are matched case-insensitively
 * unless told otherwise; the group's router then matches as configured); `undefined` when one of
 * them is empty. A segment ends at `/`, `?` or the end of the URL.
 */
export function requestGroupOf(url: string): string | undefined {
  const count = groupSegmentsOf(url);
  let end = 0;
  for (let i = 0; i < count; i++) {
    let next = end + 1;
    while (next < url.length) {
      const c = url.charCodeAt(next);
      if (c === 47 /* / */ || c === 63 /* ? */) break;
      next++;
    }
    if (next === end + 1) return undefined;
    end = next;
  }
  return url.slice(0, end).toLowerCase();
}

/** A dispatcher's groups, for whoever inspects the routes Express serves (test/support/routes.ts). */
export interface RouteDispatcher extends RequestHandler {
  routeGroups: Map<string, Router>;
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
 * Route groups: Express tries the layers of an application one after the other, each with a
 * path match and a few closures, so a request for the 40th route ran 39 path matches first
 * (about a tenth of the CPU time of a cached `GET /customers/:id`, README Decisions). Nest
 * registers every route through this adapter; a route whose leading segments are literal
 * (`routeGroupOf`: `/api/private/v1/customers/:customerId`, `/docs/index.html`) goes into an
 * Express router of its group instead. The groups of consecutive routes share one dispatcher
 * layer, which finds the request's group by its URL (`requestGroupOf`, one map lookup) and calls
 * that group's router; a layer registered in between (a middleware, a route of no group) ends
 * the run, and the routes after it get a dispatcher of their own, after it. Routes of two groups
 * never match the same path, so the order in which a request meets its candidate routes is that
 * of one flat router; the router is called as a plain handler, so `req.url`, `req.path` and
 * `req.baseUrl` are what the routes saw before. OPTIONS requests skip the groups, as no route
 * answers them (Express's router would answer them itself at the end of a group, where the
 * application answers 404).
 */
export class EnvelopeExpressAdapter extends ExpressAdapter {
  /** The dispatcher of the current run of grouped routes (the last layer of the application, or stale). */
  private dispatcher?: RouteDispatcher;
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
    // An idempotent request's answer is taken at `res.send` (IdempotencyGuard replaces it).
    if (Object.hasOwn(response, 'send')) {
      if (!response.hasHeader('Content-Type')) response.setHeader('Content-Type', JSON_CONTENT_TYPE);
      return response.send(json);
    }
    // Otherwise what Express's res.json would do for this body (no ETag, no JSON settings, no
    // freshness check: answers carry neither ETag nor Last-Modified), without parsing and
    // formatting the content type again on every answer; with no header set yet, the head in
    // one list with the deferred ones (`deferHeadHeaders`).
    const length = String(Buffer.byteLength(json));
    if (untouched(response)) {
      response.writeHead(response.statusCode, ['content-type', JSON_CONTENT_TYPE, 'content-length', length]);
      return response.end(json);
    }
    if (!response.hasHeader('Content-Type')) response.setHeader('Content-Type', JSON_CONTENT_TYPE);
    response.setHeader('Content-Length', length);
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
    const routers = this.currentDispatcher().routeGroups;
    let router = routers.get(group);
    if (!router) {
      router = Router({
        caseSensitive: this.instance.get('case sensitive routing'),
        strict: this.instance.get('strict routing'),
      });
      routers.set(group, router);
    }
    return (router[method] as (...a: unknown[]) => unknown).apply(router, args);
  }

  /** The dispatcher at the end of the application's layers, made and added if the last layer is another. */
  private currentDispatcher(): RouteDispatcher {
    const stack = (this.instance as unknown as { router: { stack: Array<{ handle: unknown }> } }).router
      .stack;
    if (this.dispatcher && stack[stack.length - 1]?.handle === this.dispatcher) return this.dispatcher;
    const routeGroups = new Map<string, Router>();
    const dispatch = (req: Request, res: Response, next: NextFunction) => {
      if (req.method === 'OPTIONS') return next();
      const group = requestGroupOf(req.url);
      const router = group === undefined ? undefined : routeGroups.get(group);
      if (!router) return next();
      router(req, res, next);
    };
    this.dispatcher = Object.assign(dispatch, { routeGroups });
    this.instance.use(this.dispatcher);
    return this.dispatcher;
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
  class ExpressResponse<R extends IncomingMessage = IncomingMessage>
    extends ServerResponse<R>
    implements HeadHeadersHolder
  {
    headHeaders: HeadHeaders | undefined = undefined;
    headRequestId = '';
    headersTouched = false;

    override setHeader(name: string, value: number | string | readonly string[]): this {
      this.headersTouched = true;
      return super.setHeader(name, value);
    }

    override appendHeader(name: string, value: string | readonly string[]): this {
      this.headersTouched = true;
      return super.appendHeader(name, value);
    }

    override writeHead(statusCode: number, ...rest: unknown[]): this {
      const deferred = this.headHeaders;
      const write = ServerResponse.prototype.writeHead as (this: ServerResponse, ...a: unknown[]) => this;
      if (deferred === undefined) return write.call(this, statusCode, ...rest);
      this.headHeaders = undefined;
      const message = typeof rest[0] === 'string' ? rest[0] : undefined;
      const given = message === undefined ? rest[0] : rest[1];
      if (!this.headersTouched && (given === undefined || isOwnList(given, deferred))) {
        // Node's fast case: one flat list for the head, no header store
        const list = deferred.list.concat(
          REQUEST_ID,
          this.headRequestId,
          (given as string[] | undefined) ?? [],
        );
        return message === undefined
          ? write.call(this, statusCode, list)
          : write.call(this, statusCode, message, list);
      }
      setHeadHeaders(this, deferred, this.headRequestId);
      return write.call(this, statusCode, ...rest);
    }
  }
  Object.setPrototypeOf(ExpressRequest.prototype, instance.request);
  Object.setPrototypeOf(ExpressResponse.prototype, instance.response);
  instance.request = ExpressRequest.prototype as unknown as Request;
  instance.response = ExpressResponse.prototype as unknown as Response;
  return { request: ExpressRequest, response: ExpressResponse };
}

const REQUEST_ID = REQUEST_ID_HEADER.toLowerCase();

/** Headers every answer gets unless it sets them itself: a flat list (name, value, ...; lower-case names) and its names. */
export interface HeadHeaders {
  readonly list: readonly string[];
  readonly names: ReadonlySet<string>;
}

export function headHeadersOf(headers: ReadonlyArray<readonly [name: string, value: string]>): HeadHeaders {
  const list = headers.flatMap(([name, value]) => [name.toLowerCase(), value]);
  return { list, names: new Set([...headers.map(([name]) => name.toLowerCase()), REQUEST_ID]) };
}

/** What the response class adds to a response for `deferHeadHeaders`. */
interface HeadHeadersHolder {
  /** The headers to add when the head is written, where the answer has not set them; cleared then. */
  headHeaders: HeadHeaders | undefined;
  /** The answer's `X-Request-Id`, added with them. */
  headRequestId: string;
  /** Whether a header has been set: the head is then written Node's usual way (its header store). */
  headersTouched: boolean;
}

/** A flat header list given to `writeHead` naming none of `deferred`'s headers (lower-case names). */
function isOwnList(given: unknown, deferred: HeadHeaders): boolean {
  if (!Array.isArray(given) || given.length % 2 !== 0) return false;
  for (let i = 0; i < given.length; i += 2)
    if (typeof given[i] !== 'string' || deferred.names.has((given[i] as string).toLowerCase())) return false;
  return true;
}

/**
 * Gives an answer `headers` and its `X-Request-Id` when its head is written, each unless the
 * answer sets it itself (what setting them first would do, as anything set later wins), in one
 * go: an answer that sets no header on its own (a JSON success, `reply`) has its head written
 * from one flat list, as a hand-written `writeHead` would, without Node's per-answer header
 * store and a validation per `setHeader`. `false` for a response not made by `expressClassesOf`:
 * the caller then sets them itself (`setHeadHeaders`).
 */
export function deferHeadHeaders(res: ServerResponse, headers: HeadHeaders, requestId: string): boolean {
  const holder = res as ServerResponse & Partial<HeadHeadersHolder>;
  if (typeof holder.headersTouched !== 'boolean' || holder.headHeaders !== undefined) return false;
  holder.headHeaders = headers;
  holder.headRequestId = requestId;
  return true;
}

/**
 * Sets `headers` and `X-Request-Id` on `res` through Node's header store, each unless `res` has it:
 * when the head is written with a header store, or for a response not made by `expressClassesOf`.
 */
export function setHeadHeaders(res: ServerResponse, headers: HeadHeaders, requestId: string): void {
  for (let i = 0; i < headers.list.length; i += 2)
    if (!res.hasHeader(headers.list[i])) res.setHeader(headers.list[i], headers.list[i + 1]);
  if (!res.hasHeader(REQUEST_ID)) res.setHeader(REQUEST_ID, requestId);
}

/** Whether no header has been set on `res` yet and its head can be written from one list (`deferHeadHeaders`). */
function untouched(res: ServerResponse): boolean {
  return (res as ServerResponse & Partial<HeadHeadersHolder>).headersTouched === false;
}
