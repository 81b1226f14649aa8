import type { Server, ServerResponse } from 'node:http';
import { INestApplication } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import { SECURITY } from './auth/decorators';
import { AppConfig } from './config/app-config';
import { trustProxySetting } from './config/env';
import { EnvelopeExpressAdapter } from './common/http/envelope';
import { requestLogMiddleware, ROOT_LOGGER } from './common/http/logging';
import { GlobalExceptionFilter } from './common/http/exception.filter';
import { requestIdMiddleware } from './common/http/request-id';
import { createValidationPipe } from './common/http/validation';
import { MetricsService } from './metrics/metrics.service';
import { ReadReplicas } from './database/read-replicas';

/** The HTTP adapter every application is created with (`main.ts`, tests): Express plus the success envelope. */
export const createHttpAdapter = (): EnvelopeExpressAdapter => new EnvelopeExpressAdapter();

/**
 * Everything the HTTP layer needs besides the modules, shared by `main.ts` and the tests so
 * that both run the same application. The app must be created with `createHttpAdapter()` and
 * `bodyParser: false`.
 */
export function configureApp(app: NestExpressApplication): void {
  if (!(app.getHttpAdapter() instanceof EnvelopeExpressAdapter))
    throw new Error('Create the application with createHttpAdapter()');
  const config = app.get(AppConfig);
  app.disable('x-powered-by');
  // JSON answers of an API that changes under its clients: no ETag (Express would hash every body for it).
  app.set('etag', false);
  app.set('trust proxy', trustProxySetting(config.get('TRUST_PROXY')));
  app.use(requestIdMiddleware);
  app.use(requestLogMiddleware(app.get(ROOT_LOGGER)));
  if (config.get('METRICS_ENABLED')) app.use(app.get(MetricsService).httpMiddleware());
  app.use(securityHeaders());
  const reads = app.get(ReadReplicas);
  if (reads.enabled) app.use(reads.writeTracker());
  app.useGlobalFilters(new GlobalExceptionFilter());
  app.useGlobalPipes(createValidationPipe());
  const document = buildOpenApi(app);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json', yamlDocumentUrl: 'docs-yaml' });
}

export function buildOpenApi(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Subscription and Customer Service')
    .setDescription(
      [
        'Customers, plans with quotas, redeemable codes and subscription chains, per project.',
        '',
        'Every success answer is `{ ok: true, requestId, data }`; every error is',
        '`{ ok: false, requestId, error: { code, message, details? } }` with the HTTP status of its code.',
        'Private endpoints take `Authorization: Bearer sk_...`; public ones `X-Service-Key: pk_...`.',
      ].join('\n'),
    )
    .setVersion('v1')
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', description: 'Private API key `sk_...`' },
      SECURITY.private,
    )
    .addApiKey(
      { type: 'apiKey', in: 'header', name: 'X-Service-Key', description: 'Public API key `pk_...`' },
      SECURITY.public,
    )
    .addBearerAuth(
      { type: 'http', scheme: 'bearer', description: "Operators' `ADMIN_TOKEN`" },
      SECURITY.admin,
    )
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        description: 'A customer token from `POST /api/public/v1/auth/login`',
      },
      SECURITY.customer,
    )
    .build();
  return SwaggerModule.createDocument(app, config);
}

/**
 * helmet's security headers on every answer. The API answers JSON only, so its Content Security
 * Policy allows nothing at all; Swagger UI under `/docs` gets a policy of its own that lets it run
 * (same-origin scripts plus inline script and style, `data:` images), without
 * `upgrade-insecure-requests` so that it also works over plain http on a developer's machine.
 */
export function securityHeaders(): RequestHandler {
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
  return (req: Request, res: Response, next: NextFunction) => {
    const path = req.path;
    const isDocs = path === '/docs' || path.startsWith('/docs/') || path.startsWith('/docs-');
    (isDocs ? docs : api)(req, res, next);
  };
}

export interface HttpServerSettings {
  /** Time to receive a whole request (headers and body), in ms: `REQUEST_TIMEOUT_MS`. */
  requestTimeoutMs: number;
  /** Idle keep-alive connections are closed after this, in ms: `KEEP_ALIVE_TIMEOUT_MS`. */
  keepAliveTimeoutMs: number;
}

/**
 * Timeouts of the Node HTTP server, applied by main.ts after `listen` (and by tests): slow or
 * stalled clients cannot hold connections open, and idle keep-alive connections outlive the
 * load balancer's own idle timeout (60 s on most), so that it never reuses one we are closing.
 */
export function configureHttpServer(server: Server, settings: HttpServerSettings): void {
  server.requestTimeout = settings.requestTimeoutMs;
  server.headersTimeout = Math.min(settings.requestTimeoutMs, 60_000);
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
}

/**
 * Graceful stop of the HTTP server: stop accepting connections at once, let the requests in flight
 * finish, and close each keep-alive connection as soon as it is idle (new answers carry
 * `Connection: close`). After `graceMs` the remaining connections are cut. Resolves when every
 * connection is closed; the database pool is closed after that (by `app.close()`).
 */
export function drainHttpServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    server.prependListener('request', (_req: unknown, res: ServerResponse) => {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    });
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    const deadline = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearInterval(idle);
      clearTimeout(deadline);
      resolve();
    });
  });
}
