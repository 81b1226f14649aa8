import { applyDecorators, Injectable } from '@nestjs/common';
import { ApiExtension } from '@nestjs/swagger';
import { ApiErrors } from '../common/swagger/api-responses';
import type { RouteInfo } from '../common/routes/route-walker';
import { API_PREFIXES } from '../common/routes/api-prefixes';
import { RouteCatalog } from '../common/routes/route-catalog.service';

/**
 * The one table of the private interface's scopes: what each allows, and the routes (under the
 * private prefix, `METHOD /path`) that need it. A private key holds a list of these names, or `*`
 * for all of them; a `:write` scope includes the `:read` of its name. Routes listed here that the
 * application does not serve (yet) are allowed: the table says which scope they take once built.
 */
export const SCOPES = {
  'customers:read': {
    allows: 'read customers, resolve an identifier, read subscriptions',
    routes: [
      'GET /customers',
      'POST /customers/resolve',
      'GET /customers/:customerId',
      'GET /customers/:customerId/subscriptions',
    ],
  },
  'customers:write': {
    allows: 'create, change and delete customers',
    routes: ['POST /customers', 'PATCH /customers/:customerId', 'DELETE /customers/:customerId'],
  },
  'catalog:read': {
    allows: 'read features and plans',
    routes: ['GET /features', 'GET /features/:featureId', 'GET /plans', 'GET /plans/:planId'],
  },
  'catalog:write': {
    allows: 'create, change and delete features and plans',
    routes: [
      'POST /features',
      'PATCH /features/:featureId',
      'DELETE /features/:featureId',
      'POST /plans',
      'PATCH /plans/:planId',
      'DELETE /plans/:planId',
    ],
  },
  'codes:read': {
    allows: 'read codes, their redemptions and the export',
    routes: ['GET /codes', 'GET /codes/:codeId', 'GET /codes/export', 'GET /codes/:codeId/redemptions'],
  },
  'codes:write': {
    allows: 'create, change and revoke codes',
    routes: ['POST /codes', 'POST /codes/:codeId/revoke', 'PATCH /codes/:codeId'],
  },
  'redemptions:write': {
    allows: 'redeem codes, activate plans, give grants and set overrides',
    routes: [
      'POST /redemptions',
      'POST /codes/redeem',
      'POST /subscriptions/activate',
      'POST /customers/:customerId/grants',
      'POST /grants/:grantId/void',
      'PUT /customers/:customerId/overrides/:featureId',
      'DELETE /customers/:customerId/overrides/:featureId',
    ],
  },
  'entitlements:read': {
    allows: 'read entitlements, check access, read grants and overrides',
    routes: [
      'GET /customers/:customerId/entitlements',
      'POST /entitlements/check',
      'GET /customers/:customerId/grants',
      'GET /grants/:grantId',
      'GET /customers/:customerId/overrides',
      'GET /customers/:customerId/overrides/:featureId',
    ],
  },
  'usage:read': {
    allows: "read a customer's usage and holds",
    routes: ['GET /customers/:customerId/usage', 'GET /usage/holds/:id', 'GET /customers/:customerId/holds'],
  },
  'usage:write': {
    allows: 'record and reverse usage, place, commit and release holds',
    routes: [
      'POST /usage',
      'POST /usage/batch',
      'POST /usage/:usageId/reverse',
      'POST /usage/holds',
      'POST /usage/holds/:id/commit',
      'POST /usage/holds/:id/release',
    ],
  },
  'webhooks:read': {
    allows: 'read webhook endpoints',
    routes: ['GET /webhook-endpoints', 'GET /webhook-endpoints/:endpointId'],
  },
  'webhooks:write': {
    allows: 'manage webhook endpoints, send a test, redeliver events',
    routes: [
      'POST /webhook-endpoints',
      'PATCH /webhook-endpoints/:endpointId',
      'DELETE /webhook-endpoints/:endpointId',
      'POST /webhook-endpoints/:endpointId/rotate-secret',
      'POST /webhook-endpoints/:endpointId/test',
      'POST /events/:eventId/redeliver',
    ],
  },
  'events:read': {
    allows: 'read events and their deliveries',
    routes: ['GET /events', 'GET /events/:eventId', 'GET /events/:eventId/deliveries'],
  },
  'audit:read': {
    allows: "read, export and verify the project's audit log",
    routes: [
      'GET /audit-events',
      'GET /audit-events/:auditEventId',
      'GET /audit-events/export',
      'GET /audit-events/verify',
    ],
  },
} as const satisfies Record<string, { allows: string; routes: readonly string[] }>;

export type ScopeName = keyof typeof SCOPES;

/** The scope names, in the table's order. */
export const SCOPE_NAMES = Object.keys(SCOPES) as ScopeName[];

/** A key's scopes when it holds every one: the default, and what every key made before scopes holds. */
export const ALL_SCOPES = '*';

/** The private routes that need no scope: any private key may call them. */
export const UNSCOPED_ROUTES: readonly string[] = ['GET /info'];

/** The names that grant a scope: itself, its `:write` for a `:read`, and `*`. */
const GRANTED_BY = new Map<ScopeName, readonly string[]>(
  SCOPE_NAMES.map((name) => {
    const write = name.replace(/:read$/, ':write');
    return [name, [ALL_SCOPES, name, ...(write !== name && write in SCOPES ? [write] : [])]];
  }),
);

/** Whether a key holding `held` may call a route that needs `required`. */
export function scopeAllows(held: readonly string[], required: ScopeName): boolean {
  const granting = GRANTED_BY.get(required) ?? [ALL_SCOPES];
  for (const name of held) if (granting.includes(name)) return true;
  return false;
}

/** A key's scopes as stored and shown: sorted by code point, without duplicates. */
export const normalizeScopes = (scopes: readonly string[]): string[] =>
  [...new Set(scopes)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

export const SCOPE_METADATA = 'subscription-service:scope';

/** What a route declares: a scope, or `null` for none (`@NoScope()`). */
export type RouteScope = ScopeName | null;

const recordScope =
  (scope: RouteScope): ClassDecorator & MethodDecorator =>
  (target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    const on = (descriptor?.value as object | undefined) ?? target;
    const list = (Reflect.getOwnMetadata(SCOPE_METADATA, on) as RouteScope[] | undefined) ?? [];
    Reflect.defineMetadata(SCOPE_METADATA, [...list, scope], on);
  };

/**
 * The scope a private route needs, beside its `@PrivateApi()`: the key guard refuses a key
 * without it (`403 INSUFFICIENT_SCOPE`). Every private route declares exactly one, or
 * `@NoScope()`, and `RouteScopeCheck` refuses to start an application where one does not or where
 * it differs from `SCOPES`.
 */
export const Scope = (scope: ScopeName): ClassDecorator & MethodDecorator =>
  applyDecorators(
    recordScope(scope),
    ApiExtension('x-required-scope', scope),
    ApiErrors('INSUFFICIENT_SCOPE'),
  );

/** A private route any private key may call, whatever its scopes (`GET /info`). */
export const NoScope = (): ClassDecorator & MethodDecorator => recordScope(null);

/** The scope declarations of a route, from its class and its handler. */
export function declaredScopes(route: Pick<RouteInfo, 'controller' | 'handler'>): RouteScope[] {
  return [
    ...((Reflect.getOwnMetadata(SCOPE_METADATA, route.controller) as RouteScope[] | undefined) ?? []),
    ...((Reflect.getOwnMetadata(SCOPE_METADATA, route.handler) as RouteScope[] | undefined) ?? []),
  ];
}

/** `METHOD /path` of a private route, below the private prefix and with its parameters unnamed. */
const routeKey = (method: string, path: string): string =>
  `${method} ${path.slice(API_PREFIXES.private.length) || '/'}`.replace(/:[^/]+/g, ':');

/** The scope `SCOPES` gives each private route (by `routeKey`), `null` for the unscoped ones. */
export const SCOPE_OF_ROUTE: ReadonlyMap<string, RouteScope> = new Map<string, RouteScope>([
  ...SCOPE_NAMES.flatMap((name) =>
    SCOPES[name].routes.map((r): [string, RouteScope] => {
      const [method, path] = r.split(' ');
      return [routeKey(method, API_PREFIXES.private + path), name];
    }),
  ),
  ...UNSCOPED_ROUTES.map((r): [string, RouteScope] => {
    const [method, path] = r.split(' ');
    return [routeKey(method, API_PREFIXES.private + path), null];
  }),
]);

/** The scope the table gives a route, `undefined` when it lists none. */
export const tableScopeOf = (route: Pick<RouteInfo, 'method' | 'path'>): RouteScope | undefined =>
  SCOPE_OF_ROUTE.get(routeKey(route.method, route.path));

const isPrivate = (path: string) =>
  path === API_PREFIXES.private || path.startsWith(`${API_PREFIXES.private}/`);

const show = (s: RouteScope) => (s === null ? '@NoScope()' : `@Scope('${s}')`);

/**
 * `Controller.handler (METHOD path): what is wrong` for every private route without exactly one
 * scope declaration, or whose declaration is not the table's, and for every other route with one.
 */
export function routesWithWrongScope(routes: RouteInfo[]): string[] {
  const wrong: string[] = [];
  for (const r of routes) {
    const declared = declaredScopes(r);
    const name = `${r.controller.name}.${r.handlerName} (${r.method} ${r.path})`;
    if (!isPrivate(r.path)) {
      if (declared.length > 0) wrong.push(`${name}: a scope on a route outside the private interface`);
      continue;
    }
    const expected = tableScopeOf(r);
    if (declared.length !== 1)
      wrong.push(`${name}: ${declared.length === 0 ? 'no scope' : `${declared.length} scopes`}`);
    else if (expected === undefined) wrong.push(`${name}: not in the scope table (SCOPES)`);
    else if (declared[0] !== expected)
      wrong.push(`${name}: ${show(declared[0])}, the table says ${show(expected)}`);
  }
  return wrong;
}

/**
 * Default deny for scopes, as `RouteAccessCheck` for access: refuses to start an application with
 * a private route that declares no scope (any key could call it) or one the table does not give it.
 */
@Injectable()
export class RouteScopeCheck {
  constructor(catalog: RouteCatalog) {
    const wrong = routesWithWrongScope(catalog.all());
    if (wrong.length)
      throw new Error(
        'Every private route needs exactly one @Scope(...) as SCOPES gives it (or @NoScope()): ' +
          wrong.join('; '),
      );
  }
}
