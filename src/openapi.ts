/**
 * Writes the OpenAPI document to `openapi.json` and the error reference to `docs/errors.md`
 * (`npm run openapi`, after `nest build` so that the
 * Swagger CLI plugin's metadata is in). The application is created in preview mode: modules and
 * routes are read, nothing is instantiated and no database is reached. CI regenerates the file
 * and fails on a diff, so the checked-in document is always the served one (`/docs-json`).
 */
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';
import { errorReference } from './common/errors/error-reference';
import { formatJson } from './common/swagger/format-json';
import { buildOpenApi, createHttpAdapter } from './configure-app';

async function main(): Promise<void> {
  // Values that only let the configuration validate: nothing connects in preview mode.
  Object.assign(process.env, {
    DATABASE_URL: 'postgres://openapi@127.0.0.1:1/openapi',
    SECRET_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
    ADMIN_TOKEN: 'openapi-document-only-0123456789abcdef',
    LOG_LEVEL: 'silent',
    METRICS_ENABLED: 'true',
  });
  const app = await NestFactory.create(AppModule.forRoot(), createHttpAdapter(), {
    preview: true,
    logger: false,
    bodyParser: false,
    abortOnError: false,
  });
  const target = resolve(process.argv[2] ?? 'openapi.json');
  writeFileSync(target, formatJson(buildOpenApi(app)));
  await app.close();
  const errors = resolve(process.argv[3] ?? 'docs/errors.md');
  mkdirSync(dirname(errors), { recursive: true });
  writeFileSync(errors, errorReference());
  process.stdout.write(`wrote ${target} and ${errors}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `openapi: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
