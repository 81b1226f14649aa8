import type { ApiInterface } from './api-prefixes';

/**
 * Who may call a route: one of the API's interfaces (its guard decides), or nobody in particular
 * (probes, metrics). Default deny: every route carries exactly one, through `@PrivateApi()`,
 * `@PublicApi()`, `@AdminApi()` or `@Unauthenticated()`, and `RouteAccessCheck` refuses to start
 * an application where one does not.
 */
export type RouteAccess = ApiInterface | 'unauthenticated';

export const ACCESS_METADATA = 'subscription-service:access';

/**
 * Records an access on a controller class or a handler. It appends rather than overwrites, so
 * that two decorators on one route show up as two (and are refused) instead of one hiding the other.
 */
export const Access =
  (access: RouteAccess): ClassDecorator & MethodDecorator =>
  (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const on = (descriptor?.value as object | undefined) ?? target;
    const list = (Reflect.getOwnMetadata(ACCESS_METADATA, on) as RouteAccess[] | undefined) ?? [];
    Reflect.defineMetadata(ACCESS_METADATA, [...list, access], on);
  };

/** A route anyone may call: probes and metrics, outside the API prefixes. */
export const Unauthenticated = () => Access('unauthenticated');
