import type { Server, ServerResponse } from 'node:http';
import { INestApplication, NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter, NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import express from 'express';
import type { Request } from 'express';
import helmet from 'helmet';
import { ClsService } from 'nestjs-cls';
import { auditRequests } from './audit/audit-context';
import { SECURITY } from './auth/decorators';
import { applyOpenApiConventions } from './common/swagger/openapi-conventions';
import { AppConfig } from './config/app-config';
import { trustProxySetting } from './config/env';
import { ROOT_LOGGER } from './common/http/logging';
import { bodyLimits, jsonBodyParser, requestLimits } from './common/http/body-parser';
import { requestPipeline, RequestPipelineOptions } from './common/http/request-pipeline';
import { GlobalExceptionFilter } from './common/http/exception.filter';
import { createValidationPipe } from './common/http/validation';
import { MetricsService } from './metrics/metrics.service';
import { RouteLabeler } from './metrics/route-label';
import { RouteCatalog } from './common/routes/route-catalog.service';
import { isDocsPath } from './common/routes/api-prefixes';
import { ReadReplicas } from './database/read-replicas';
import { ApiExpressAdapter } from './http/api-express-adapter';

/**
 * The HTTP adapter every application is created with (`main.ts`, tests): Express, with routing
 * case-sensitive and strict (a trailing slash is another path), set before Express makes its
 * router: every path is served under one spelling only, so that the rate limits, idempotency
 * records and metrics, which all key on the path, see the same path the router matched
 * (`/API/PRIVATE/v1/codes` is 404, not a second way in).
 */
export const createHttpAdapter = (): ExpressAdapter => {
  const instance = express();
  instance.set('case sensitive routing', true);
  instance.set('strict routing', true);
  return new ApiExpressAdapter(instance);
};

/**
 * The options every application is created with, beside `createHttpAdapter()`: no body parser
 * of Nest's own (`configureApp` installs Express's JSON parser after the request's own checks).
 */
export const HTTP_APP_OPTIONS = {
  bodyParser: false,
} as const satisfies NestApplicationOptions;

/**
 * Everything the HTTP layer needs besides the modules, shared by `main.ts` and the tests so
 * that both run the same application. The app must be created with `createHttpAdapter()` and
 * `HTTP_APP_OPTIONS`.
 */
export function configureApp(app: NestExpressApplication): void {
  const config = app.get(AppConfig);
  app.disable('x-powered-by');
  // JSON answers of an API that changes under its clients: no ETag (Express would hash every body for it).
  app.set('etag', false);
  app.set('trust proxy', trustProxySetting(config.get('TRUST_PROXY')));
  const routes = new RouteLabeler();
  let routesKnown = false;
  const routeOf = (req: Request) => {
    // the controllers' routes, read once the application is up (first request)
    if (!routesKnown) routes.setRoutes(app.get(RouteCatalog).all());
    routesKnown = true;
    return routes.labelOf(req);
  };
  const metrics = config.get('METRICS_ENABLED') ? app.get(MetricsService) : undefined;
  app.use(
    requestPipeline({
      logger: app.get(ROOT_LOGGER),
      routeOf,
      ...securityHeaders(),
      onFinished:
        metrics &&
        (({ req, res, route, seconds }) =>
          metrics.observeRequest(req.method, route, res.statusCode, seconds)),
    }),
  );
  const reads = app.get(ReadReplicas);
  if (reads.enabled) app.use(reads.writeTracker());
  // after the request lines' listener, so that refused bodies are logged too
  app.use(requestLimits);
  app.use(jsonBodyParser);
  app.use(bodyLimits);
  app.use(auditRequests(app.get(ClsService)));
  app.useGlobalFilters(new GlobalExceptionFilter());
  app.useGlobalPipes(createValidationPipe());
  if (config.get('DOCS_ENABLED')) {
    const document = buildOpenApi(app, config.get('PUBLIC_BASE_URL'));
    SwaggerModule.setup('docs', app, document, {
      jsonDocumentUrl: 'docs-json',
      yamlDocumentUrl: 'docs-yaml',
      customSiteTitle: 'Subscription and Customer Service: API reference',
      // the key typed into "Authorize" survives a reload of the page (kept in the browser's localStorage)
      swaggerOptions: { persistAuthorization: true, displayRequestDuration: true },
    });
  }
}

export function buildOpenApi(app: INestApplication, publicBaseUrl?: string): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Subscription and Customer Service')
    .setDescription(
      [
        'Customers, plans with quotas, redeemable codes and subscription chains, per project.',
        '',
        'Every success answer is `{ ok: true, requestId, data }`; every error is',
        '`{ ok: false, requestId, error: { code, message, details? } }` with the HTTP status of its code.',
        'Private endpoints take `Authorization: Bearer sk_...`; public ones `X-Service-Key: pk_...`.',
        '',
        'Error responses are shared, one per status (`#/components/responses/NotFound`), with every code of that status.',
        "An operation's description ends with the codes it answers (`Errors: 404 ...`) beside those every request of its kind can:",
        '`400 VALIDATION_FAILED`, `500 INTERNAL_ERROR`, `429 RATE_LIMITED` on the private and public interfaces, `400 MALFORMED_JSON`,',
        '`413 PAYLOAD_TOO_LARGE` and `415 UNSUPPORTED_MEDIA_TYPE` with a body, `409 IDEMPOTENCY_KEY_IN_USE` and',
        '`422 IDEMPOTENCY_KEY_REUSED` with an `Idempotency-Key`.',
        'Private and public endpoints are rate limited per key and per client address when rate limits are on: every answer then',
        'carries `RateLimit-*` headers, and a 429 `Retry-After`. An operation that takes an `Idempotency-Key` replays the stored',
        'answer of the same request with the same key (`Idempotent-Replayed: true`) for 24 hours.',
        '',
        'The OpenAPI document: [/docs-json](/docs-json) (YAML: [/docs-yaml](/docs-yaml)); it is also `openapi.json` in the repository.',
        'Every error code, its status and what to do: `docs/errors.md`.',
      ].join('\n'),
    )
    .setVersion('v1')
    .setLicense('UNLICENSED', 'https://docs.npmjs.com/cli/configuring-npm/package-json#license')
    .addServer(
      publicBaseUrl ?? '/',
      publicBaseUrl
        ? 'This service, at its outside address (PUBLIC_BASE_URL)'
        : 'The host that serves this document (local development: http://localhost:3000)',
      undefined,
      { 'x-internal': false },
    )
    // Opaque random keys and tokens, not JWTs: no `bearerFormat`.
    .addSecurity(SECURITY.private, {
      type: 'http',
      scheme: 'bearer',
      description: 'A private API key `sk_...` of the project (admin API or `npm run cli -- keys:create`).',
    })
    .addSecurity(SECURITY.public, {
      type: 'apiKey',
      in: 'header',
      name: 'X-Service-Key',
      description: 'A public API key `pk_...` of the project.',
    })
    .addSecurity(SECURITY.admin, {
      type: 'http',
      scheme: 'bearer',
      description: "The operators' `ADMIN_TOKEN`; without it the admin interface answers 404.",
    })
    .addSecurity(SECURITY.customer, {
      type: 'http',
      scheme: 'bearer',
      description: 'A customer token from `POST /api/public/v1/auth/login`.',
    })
    .build();
  return applyOpenApiConventions(SwaggerModule.createDocument(app, config));
}

/**
 * helmet's security headers. The API answers JSON only, so its Content Security Policy allows
 * nothing at all. Swagger UI under `/docs` gets a policy of its
 * own that lets it run (same-origin scripts plus inline script and style, `data:` images),
 * without `upgrade-insecure-requests` so that it also works over plain http on a developer's
 * machine. Every answer but Swagger UI's carries `Cache-Control: no-store`, errors included:
 * answers carry keys, tokens, codes and customer data, which no cache (browser, proxy or CDN)
 * may keep.
 */
export function securityHeaders(): Pick<RequestPipelineOptions, 'apiHeaders' | 'isDocs' | 'docsHeaders'> {
  const api = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
    },
  });
  const docs = helmet({
    contentSecurityPolicy: {
      useDefaults: true,
      directives: {
        scriptSrc: ["'self'", "'unsafe-inline'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:', 'https:'],
        upgradeInsecureRequests: null,
      },
    },
  });
  return {
    apiHeaders: api,
    isDocs: isDocsPath,
    docsHeaders: docs,
  };
}

export interface HttpServerSettings {
  /** Time to receive a whole request (headers and body), in ms: `REQUEST_TIMEOUT_MS`. */
  requestTimeoutMs: number;
  /** Idle keep-alive connections are closed after this, in ms: `KEEP_ALIVE_TIMEOUT_MS`. */
  keepAliveTimeoutMs: number;
}

/** The responses of a server still being written (see `configureHttpServer`). */
const inFlight = new WeakMap<Server, Set<ServerResponse>>();

/**
 * How often Node looks for requests past `requestTimeout` / `headersTimeout`. Its default, 30 s,
 * let a body trickling in at a byte a second hold a connection for up to 30 s past a timeout of
 * 3 s; at 500 ms a request is cut within a second of REQUEST_TIMEOUT_MS. The check walks only the
 * connections with a request in progress.
 */
export const CONNECTIONS_CHECKING_INTERVAL_MS = 500;

/**
 * Timeouts of the Node HTTP server, applied by main.ts BEFORE `listen` (and by tests): Node starts
 * its timeout checks, at `connectionsCheckingInterval`, when the server starts listening. Slow or
 * stalled clients cannot hold connections open, and idle keep-alive connections outlive the
 * load balancer's own idle timeout (60 s on most), so that it never reuses one we are closing.
 * Also keeps the set of answers in progress, for `drainHttpServer`.
 */
export function configureHttpServer(server: Server, settings: HttpServerSettings): void {
  if (server.listening) throw new Error('configureHttpServer must run before the server listens');
  server.requestTimeout = settings.requestTimeoutMs;
  server.headersTimeout = Math.min(settings.requestTimeoutMs, 60_000);
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  (server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval = Math.min(
    CONNECTIONS_CHECKING_INTERVAL_MS,
    settings.requestTimeoutMs,
  );
  if (!inFlight.has(server)) {
    const responses = new Set<ServerResponse>();
    inFlight.set(server, responses);
    // one listener function for every answer (`close` comes once), no closure per request
    function untrack(this: ServerResponse): void {
      responses.delete(this);
    }
    server.prependListener('request', (_req: unknown, res: ServerResponse) => {
      responses.add(res);
      res.on('close', untrack);
    });
  }
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const connectionCount = (server: Server) =>
  new Promise<number>((resolve) => server.getConnections((_error, count) => resolve(count ?? 0)));

/**
 * Lets the event loop accept the connections already queued in the kernel and read the requests
 * already written to them: turns of the loop until the number of connections and of requests in
 * progress has not moved for 3 turns and 20 ms have passed (at most 1 s). Under load the server
 * accepts a few queued connections per turn, so a fixed number of turns is not enough.
 */
async function settleAccepts(server: Server, responses?: Set<ServerResponse>): Promise<void> {
  const started = Date.now();
  let last = '';
  let stable = 0;
  while (Date.now() - started < 1000) {
    await nextTurn();
    const now = `${await connectionCount(server)}/${responses?.size ?? 0}`;
    stable = now === last ? stable + 1 : 0;
    last = now;
    if (stable >= 3 && Date.now() - started >= 20) return;
  }
}

export interface DrainSettings {
  /** `SHUTDOWN_TIMEOUT_MS`: how long requests in flight may take. */
  graceMs: number;
  /**
   * Called at the deadline, before the connections are cut: cancels what the requests still
   * wait for (their database transactions), so that they answer (503) and roll back.
   */
  onDeadline?: () => void;
}

/** After the deadline's cancellation, the time the requests get to send their answers before connections are cut. */
export const DEADLINE_ANSWER_MS = 250;

/**
 * Graceful stop of the HTTP server. Every request the server has received, wholly or in part,
 * is answered; only new connections are refused:
 *
 * 1. Every answer from now on carries `Connection: close`, those in progress included.
 * 2. A few turns of the event loop let the server accept the connections already queued in the
 *    kernel and read the requests already written to its sockets (a request read is in
 *    progress: its connection is no longer idle, and closing the listener cannot reset it).
 * 3. The listener is closed (new connections refused) and idle keep-alive connections closed,
 *    at once and then every 50 ms; each busy one closes after its answer.
 * 4. At `graceMs`, `onDeadline` cancels the work still running; 250 ms later the remaining
 *    connections are cut.
 *
 * Resolves when every connection is closed; the database pool is closed after that (by `app.close()`).
 */
export async function drainHttpServer(server: Server, settings: DrainSettings | number): Promise<void> {
  const { graceMs, onDeadline } = typeof settings === 'number' ? { graceMs: settings } : settings;
  const startedAt = Date.now();
  const closeAfterAnswer = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader('Connection', 'close');
  };
  server.prependListener('request', (_req: unknown, res: ServerResponse) => closeAfterAnswer(res));
  inFlight.get(server)?.forEach(closeAfterAnswer);

  await settleAccepts(server, inFlight.get(server));
  inFlight.get(server)?.forEach(closeAfterAnswer);

  return new Promise((resolve) => {
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    const remaining = Math.max(0, graceMs - (Date.now() - startedAt));
    let cut: NodeJS.Timeout | undefined;
    const deadline = setTimeout(() => {
      try {
        onDeadline?.();
      } finally {
        cut = setTimeout(() => server.closeAllConnections(), DEADLINE_ANSWER_MS);
      }
    }, remaining);
    server.close(() => {
      clearInterval(idle);
      clearTimeout(deadline);
      if (cut) clearTimeout(cut);
      resolve();
    });
  });
}
