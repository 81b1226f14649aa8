import { applyDecorators, Injectable, RequestMethod, Type, UseInterceptors } from '@nestjs/common';
import { INTERCEPTORS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService } from '@nestjs/core';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_FORMAT } from './idempotency-fingerprint';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_METHODS,
  IdempotencyInterceptor,
  PRIVATE_API_PREFIX,
} from './idempotency.interceptor';

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
 * `Idempotency-Key` on a private POST, PATCH or DELETE (product.md 7), with its Swagger header.
 * A method decorator rather than a global interceptor: reads pay nothing for it.
 * `IdempotentRoutesCheck` refuses to start an application where one of those handlers lacks it.
 */
export const Idempotent = () => applyDecorators(UseInterceptors(IdempotencyInterceptor), ApiIdempotencyKey());

const controllerPaths = (metatype: Type<unknown>): string[] => {
  const path: unknown = Reflect.getMetadata(PATH_METADATA, metatype);
  const list = Array.isArray(path) ? path : [path];
  return list.filter((p): p is string => typeof p === 'string').map((p) => `/${p.replace(/^\/+/, '')}`);
};

const METHOD_NAMES: Partial<Record<RequestMethod, string>> = {
  [RequestMethod.POST]: 'POST',
  [RequestMethod.PATCH]: 'PATCH',
  [RequestMethod.DELETE]: 'DELETE',
};

/** `Controller.method` of every private POST, PATCH and DELETE handler without `@Idempotent()`. */
export function handlersWithoutIdempotency(discovery: DiscoveryService): string[] {
  const missing: string[] = [];
  for (const wrapper of discovery.getControllers()) {
    const metatype = wrapper.metatype as Type<unknown> | undefined;
    if (!metatype?.prototype) continue;
    if (
      !controllerPaths(metatype).some(
        (p) => p === PRIVATE_API_PREFIX || p.startsWith(`${PRIVATE_API_PREFIX}/`),
      )
    )
      continue;
    const proto = metatype.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (
        name === 'constructor' ||
        typeof handler !== 'function' ||
        Reflect.getMetadata(PATH_METADATA, handler) === undefined
      )
        continue;
      const method = METHOD_NAMES[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      if (!method || !IDEMPOTENT_METHODS.has(method)) continue;
      const interceptors: unknown[] = Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? [];
      if (!interceptors.includes(IdempotencyInterceptor)) missing.push(`${metatype.name}.${name}`);
    }
  }
  return missing;
}

/** Fails the start of an application whose private POST, PATCH or DELETE handlers are not all `@Idempotent()`. */
@Injectable()
export class IdempotentRoutesCheck {
  constructor(discovery: DiscoveryService) {
    const missing = handlersWithoutIdempotency(discovery);
    if (missing.length)
      throw new Error(`Private POST, PATCH and DELETE handlers need @Idempotent(): ${missing.join(', ')}`);
  }
}
