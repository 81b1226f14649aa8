import { Injectable, RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService } from '@nestjs/core';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_HEADER, PRIVATE_API_PREFIX } from './idempotency.interceptor';

const DOCUMENTED_METHODS = new Set<RequestMethod>([RequestMethod.POST, RequestMethod.PATCH, RequestMethod.DELETE]);
/** Handlers already given the header (the same classes serve every app of a process, e.g. test replicas). */
const documented = new WeakSet<object>();

const header = ApiHeader({
  name: IDEMPOTENCY_KEY_HEADER,
  required: false,
  description:
    'Optional, 1 to 255 printable ASCII characters. Within 24 hours the same key with the same request answers ' +
    'the stored response again (header `Idempotent-Replayed: true`) without running twice; with another request ' +
    '422 IDEMPOTENCY_KEY_REUSED; while the first is still running 409 IDEMPOTENCY_KEY_IN_USE.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7E]{1,255}$' },
});

const controllerPaths = (metatype: Type<unknown>): string[] => {
  const path: unknown = Reflect.getMetadata(PATH_METADATA, metatype);
  const list = Array.isArray(path) ? path : [path];
  return list.filter((p): p is string => typeof p === 'string').map((p) => `/${p.replace(/^\/+/, '')}`);
};

/**
 * Documents `Idempotency-Key` on every private POST, PATCH and DELETE, without touching the
 * controllers: it adds the `@ApiHeader()` metadata to their handlers when this provider is made.
 * Providers are made while the application is created, before `configureApp()` builds the
 * OpenAPI document, so the document includes the header.
 */
@Injectable()
export class IdempotencyApiDocs {
  constructor(discovery: DiscoveryService) {
    for (const wrapper of discovery.getControllers()) {
      const metatype = wrapper.metatype as Type<unknown> | undefined;
      if (!metatype?.prototype) continue;
      const isPrivate = controllerPaths(metatype).some((p) => p === PRIVATE_API_PREFIX || p.startsWith(`${PRIVATE_API_PREFIX}/`));
      if (!isPrivate) continue;
      const proto = metatype.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(proto)) {
        const descriptor = Object.getOwnPropertyDescriptor(proto, name);
        const handler = descriptor?.value;
        if (name === 'constructor' || typeof handler !== 'function' || documented.has(handler)) continue;
        const method: unknown = Reflect.getMetadata(METHOD_METADATA, handler);
        if (Reflect.getMetadata(PATH_METADATA, handler) === undefined || !DOCUMENTED_METHODS.has(method as RequestMethod)) continue;
        header(proto, name, descriptor!);
        documented.add(handler);
      }
    }
  }
}
