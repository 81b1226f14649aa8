import { INestApplication } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { SECURITY } from './auth/decorators';
import { AppConfig } from './config/app-config';
import { trustProxySetting } from './config/env';
import { EnvelopeInterceptor } from './common/http/envelope.interceptor';
import { GlobalExceptionFilter } from './common/http/exception.filter';
import { requestIdMiddleware } from './common/http/request-id';
import { createValidationPipe } from './common/http/validation';

/**
 * Everything the HTTP layer needs besides the modules, shared by `main.ts` and the tests so
 * that both run the same application. The app must be created with `bodyParser: false`.
 */
export function configureApp(app: NestExpressApplication): void {
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxySetting(app.get(AppConfig).get('TRUST_PROXY')));
  app.use(requestIdMiddleware);
  app.useGlobalFilters(new GlobalExceptionFilter());
  app.useGlobalInterceptors(new EnvelopeInterceptor(app.get(Reflector)));
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
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Private API key `sk_...`' }, SECURITY.private)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Service-Key', description: 'Public API key `pk_...`' }, SECURITY.public)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Operators\' `ADMIN_TOKEN`' }, SECURITY.admin)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'A customer token from `POST /api/public/v1/auth/login`' }, SECURITY.customer)
    .build();
  return SwaggerModule.createDocument(app, config);
}
