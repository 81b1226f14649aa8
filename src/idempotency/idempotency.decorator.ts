import { applyDecorators, Injectable, UseInterceptors } from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { API_PREFIXES } from '../common/routes/api-prefixes';
import { RouteCatalog } from '../common/routes/route-catalog.service';
import type { RouteInfo } from '../common/routes/route-walker';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_FORMAT } from './idempotency-fingerprint';
import { IDEMPOTENCY_KEY_HEADER } from './idempotency-context';
import { IDEMPOTENT_METHODS, IdempotencyInterceptor } from './idempotency.interceptor';

const ApiIdempotencyKey = () =>
  ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      'Optional, 1 to 255 printable ASCII characters. Within 24 hours the same key with the same request answers ' +
      'the stored response again (header `Idempotent-Replayed: true`) without running twice; with another request ' +
      '422 IDEMPOTENCY_KEY_REUSED; while the first is still running 409 IDEMPOTENCY_KEY_IN_USE.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_FORMAT.source },
  });

/**
 * `Idempotency-Key` on a private POST, PATCH or DELETE, with its Swagger header. A method
 * decorator (an interceptor) rather than a global one: reads pay nothing for it.
 * `IdempotentRoutesCheck` refuses to start an application where one of those handlers lacks it.
 */
export const Idempotent = () => applyDecorators(UseInterceptors(IdempotencyInterceptor), ApiIdempotencyKey());

/** `Controller.method` of every private POST, PATCH and DELETE handler without `@Idempotent()`. */
export function handlersWithoutIdempotency(routes: RouteInfo[]): string[] {
  const prefix = API_PREFIXES.private;
  const missing = new Set<string>();
  for (const route of routes) {
    if (route.path !== prefix && !route.path.startsWith(`${prefix}/`)) continue;
    if (!IDEMPOTENT_METHODS.has(route.method)) continue;
    const interceptors: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, route.handler) ?? [];
    if (!interceptors.includes(IdempotencyInterceptor))
      missing.add(`${route.controller.name}.${route.handlerName}`);
  }
  return [...missing];
}

/** Fails the start of an application whose private POST, PATCH and DELETE handlers are not all `@Idempotent()`. */
@Injectable()
export class IdempotentRoutesCheck {
  constructor(catalog: RouteCatalog) {
    const missing = handlersWithoutIdempotency(catalog.all());
    if (missing.length)
      throw new Error(`Private POST, PATCH and DELETE handlers need @Idempotent(): ${missing.join(', ')}`);
  }
}
