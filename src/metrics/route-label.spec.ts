import type { Request } from 'express';
import { RouteLabeler, templatePattern, UNMATCHED_ROUTE } from './route-label';

const req = (method: string, url: string, routePath?: string) =>
  ({
    method,
    originalUrl: url,
    url,
    route: routePath ? { path: routePath } : undefined,
  }) as unknown as Request;

describe('route labels', () => {
  const labeler = new RouteLabeler();
  labeler.setRoutes([
    { method: 'GET', path: '/api/private/v1/codes/:codeId' },
    { method: 'GET', path: '/api/private/v1/codes/export' },
    { method: 'GET', path: '/api/private/v1/customers/:customerId/subscriptions' },
    { method: 'POST', path: '/api/private/v1/customers' },
    { method: 'GET', path: '/healthz' },
  ]);

  it('turns a template into a pattern of one segment per parameter', () => {
    const p = templatePattern('/api/private/v1/customers/:customerId/subscriptions');
    expect(p.test('/api/private/v1/customers/12/subscriptions')).toBe(true);
    // routing is strict and case-sensitive (configure-app.ts): neither of these is the route
    expect(p.test('/api/private/v1/customers/12/subscriptions/')).toBe(false);
    expect(p.test('/API/PRIVATE/v1/customers/12/subscriptions')).toBe(false);
    expect(p.test('/api/private/v1/customers/12/13/subscriptions')).toBe(false);
    expect(templatePattern('/a.b').test('/axb')).toBe(false);
  });

  it('takes the route Express matched when it is a controller route', () => {
    expect(labeler.labelOf(req('GET', '/api/private/v1/codes/7', '/api/private/v1/codes/:codeId'))).toBe(
      '/api/private/v1/codes/:codeId',
    );
  });

  it('matches requests refused before routing (or seen by a catch-all middleware) against the templates', () => {
    expect(labeler.labelOf(req('POST', '/api/private/v1/customers?x=1', '/{*path}'))).toBe(
      '/api/private/v1/customers',
    );
    expect(labeler.labelOf(req('GET', '/api/private/v1/customers/99/subscriptions'))).toBe(
      '/api/private/v1/customers/:customerId/subscriptions',
    );
    // a literal segment wins over a parameter
    expect(labeler.labelOf(req('GET', '/api/private/v1/codes/export'))).toBe('/api/private/v1/codes/export');
    expect(labeler.labelOf(req('HEAD', '/healthz'))).toBe('/healthz');
  });

  it('never answers a raw path: unknown paths and methods are "unmatched", Swagger UI is /docs', () => {
    expect(labeler.labelOf(req('GET', '/api/private/v1/customers/123456'))).toBe(UNMATCHED_ROUTE);
    expect(labeler.labelOf(req('DELETE', '/api/private/v1/customers'))).toBe(UNMATCHED_ROUTE);
    expect(labeler.labelOf(req('GET', '/wp-login.php'))).toBe(UNMATCHED_ROUTE);
    expect(labeler.labelOf(req('GET', '/docs/swagger-ui.css'))).toBe('/docs');
    expect(labeler.labelOf(req('GET', '/docs-json'))).toBe('/docs');
  });
});
