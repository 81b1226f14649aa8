import { RequestMethod, Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ACCESS_METADATA, RouteAccess } from './access';

/** One route as the controllers declare it. */
export interface RouteInfo {
  /** `GET`, `POST`, ... */
  method: string;
  /** The Express template, such as `/api/private/v1/customers/:customerId`. */
  path: string;
  /** The access decorators on the route (class and handler): exactly one in a valid application. */
  access: RouteAccess[];
  controller: Type<unknown>;
  handlerName: string;
  handler: object;
}

const join = (...parts: string[]) =>
  '/' +
  parts
    .flatMap((p) => p.split('/'))
    .filter((p) => p.length > 0)
    .join('/');

const asList = (value: unknown): string[] => (Array.isArray(value) ? value : [value ?? '']) as string[];

/**
 * The one reader of the controllers' routing metadata: the route catalog (info endpoints,
 * metrics labels), the access and idempotency checks at start-up and the tests use it.
 * Sorted by path then method.
 */
export function walkRoutes(controllers: Iterable<Type<unknown> | undefined | null>): RouteInfo[] {
  const routes: RouteInfo[] = [];
  for (const type of controllers) {
    if (!type?.prototype) continue;
    const bases = asList(Reflect.getMetadata(PATH_METADATA, type));
    const classAccess = (Reflect.getOwnMetadata(ACCESS_METADATA, type) as RouteAccess[] | undefined) ?? [];
    const proto = type.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (name === 'constructor' || typeof handler !== 'function') continue;
      const path: unknown = Reflect.getMetadata(PATH_METADATA, handler);
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (path === undefined || method === undefined) continue;
      const access = [
        ...classAccess,
        ...((Reflect.getOwnMetadata(ACCESS_METADATA, handler) as RouteAccess[] | undefined) ?? []),
      ];
      for (const b of bases) {
        for (const p of asList(path)) {
          routes.push({
            method: RequestMethod[method],
            path: join(b, p),
            access,
            controller: type,
            handlerName: name,
            handler: handler as object,
          });
        }
      }
    }
  }
  return routes.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
}

/** `Controller.handler (METHOD path): what is wrong` for every route without exactly one access decorator. */
export function routesWithoutOneAccess(routes: RouteInfo[]): string[] {
  return routes
    .filter((r) => r.access.length !== 1)
    .map(
      (r) =>
        `${r.controller.name}.${r.handlerName} (${r.method} ${r.path}): ` +
        (r.access.length === 0 ? 'no access decorator' : `${r.access.length} (${r.access.join(', ')})`),
    );
}
