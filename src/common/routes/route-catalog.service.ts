import { Injectable, Module, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';

export interface Route {
  method: string;
  path: string;
}

const join = (...parts: string[]) =>
  '/' +
  parts
    .flatMap((p) => p.split('/'))
    .filter((p) => p.length > 0)
    .join('/');

/**
 * The routes the running application really serves, read from the controllers' metadata on
 * first use, once the application is up (product.md 8: the info endpoints list them, never a
 * hand-kept list; the metrics label requests with their templates).
 */
@Injectable()
export class RouteCatalog {
  private routes?: Route[];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  /** Every route, sorted by path then method. */
  all(): Route[] {
    this.routes ??= this.discover();
    return this.routes;
  }

  private discover(): Route[] {
    const routes: Route[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const type = wrapper.metatype as (new (...args: unknown[]) => unknown) | undefined;
      if (!type) continue;
      const base = Reflect.getMetadata(PATH_METADATA, type) as string | string[] | undefined;
      const bases = Array.isArray(base) ? base : [base ?? ''];
      for (const name of this.scanner.getAllMethodNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name] as object;
        const path = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (path === undefined || method === undefined) continue;
        for (const b of bases) {
          for (const p of Array.isArray(path) ? path : [path]) {
            routes.push({ method: RequestMethod[method], path: join(b, p) });
          }
        }
      }
    }
    return routes.sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method));
  }

  /** `<METHOD> <path>` for every route under `prefix`. */
  endpointsUnder(prefix: string): string[] {
    return this.all()
      .filter((r) => r.path === prefix || r.path.startsWith(prefix + '/'))
      .map((r) => `${r.method} ${r.path}`);
  }
}

@Module({ imports: [DiscoveryModule], providers: [RouteCatalog], exports: [RouteCatalog] })
export class RoutesModule {}
