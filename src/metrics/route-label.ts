import type { Request } from 'express';
import { isDocsPath } from '../common/routes/api-prefixes';

/** The `route` label of a request that matched no route of the application. */
export const UNMATCHED_ROUTE = 'unmatched';

interface Template {
  method: string;
  path: string;
  pattern: RegExp;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `/customers/:customerId` → a pattern that matches `/customers/123` (one segment per parameter),
 * exactly as the router does: case-sensitive, and no trailing slash (strict routing).
 */
export function templatePattern(path: string): RegExp {
  const body = path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : escape(segment)))
    .join('/');
  return new RegExp(`^${body}$`);
}

/**
 * The route TEMPLATE of a request, for metric labels: never a raw id (unbounded label values
 * would swamp Prometheus). Express knows it (`req.route.path`) once a controller route has
 * matched; `req.route` may also be a middleware's catch-all (`/{*path}`), and a request refused
 * before routing (a body over 1 MiB, a wrong content type) has none, so those are matched against
 * the application's routes here (literal segments before parameters). Swagger UI is `/docs`;
 * everything else is `unmatched`.
 */
export class RouteLabeler {
  private templates: Template[] = [];
  private known = new Set<string>();

  /** `routes`: every method and path template the application serves (from its controllers). */
  setRoutes(routes: Array<{ method: string; path: string }>): void {
    const params = (path: string) => path.split('/').filter((s) => s.startsWith(':')).length;
    this.templates = routes
      .map((r) => ({ method: r.method.toUpperCase(), path: r.path, pattern: templatePattern(r.path) }))
      .sort((x, y) => params(x.path) - params(y.path));
    this.known = new Set(routes.map((r) => r.path));
  }

  labelOf(req: Request): string {
    const matched = (req.route as { path?: unknown } | undefined)?.path;
    if (typeof matched === 'string' && this.known.has(matched)) return matched;
    const path = (req.originalUrl ?? req.url).split('?', 1)[0];
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const found = this.templates.find(
      (t) => (t.method === method || t.method === 'ALL') && t.pattern.test(path),
    );
    if (found) return found.path;
    if (isDocsPath(path)) return '/docs';
    return UNMATCHED_ROUTE;
  }
}
