import { Injectable, Module, Type } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { API_PREFIXES, ApiInterface } from './api-prefixes';
import { RouteInfo, routesWithoutOneAccess, walkRoutes } from './route-walker';

export type Route = Pick<RouteInfo, 'method' | 'path'>;

/**
 * The routes the running application really serves, read from the controllers' metadata on
 * first use, once the application is up: the info endpoints list them (never a hand-kept list,
 * so the list cannot drift from what is served) and the metrics label requests with their templates.
 */
@Injectable()
export class RouteCatalog {
  private routes?: RouteInfo[];

  constructor(private readonly discovery: DiscoveryService) {}

  /** Every route, sorted by path then method. */
  all(): RouteInfo[] {
    this.routes ??= walkRoutes(this.discovery.getControllers().map((w) => w.metatype as Type<unknown>));
    return this.routes;
  }

  /** `<METHOD> <path>` for every route under an interface's prefix. */
  endpointsOf(api: ApiInterface): string[] {
    const prefix = API_PREFIXES[api];
    return this.all()
      .filter((r) => r.path === prefix || r.path.startsWith(prefix + '/'))
      .map((r) => `${r.method} ${r.path}`);
  }
}

/**
 * Default deny: refuses to start an application with a route that carries no access decorator
 * (it would be open to anyone) or more than one (which one wins would be an accident).
 */
@Injectable()
export class RouteAccessCheck {
  constructor(catalog: RouteCatalog) {
    const wrong = routesWithoutOneAccess(catalog.all());
    if (wrong.length)
      throw new Error(
        'Every route needs exactly one of @PrivateApi(), @PublicApi(), @AdminApi(), @Unauthenticated(): ' +
          wrong.join('; '),
      );
  }
}

@Module({
  imports: [DiscoveryModule],
  providers: [RouteCatalog, RouteAccessCheck],
  exports: [RouteCatalog],
})
export class RoutesModule {}
