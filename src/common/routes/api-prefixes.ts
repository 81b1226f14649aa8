/**
 * The API's interfaces and where they live: the one table of prefixes. Controllers take their
 * path from `apiPath()`, the info endpoints, the idempotency check and the rate limiter read it.
 */
export const API_ROOTS = {
  private: '/api/private',
  public: '/api/public',
  admin: '/api/admin',
} as const;

export const API_VERSION = 'v1';

export type ApiInterface = keyof typeof API_ROOTS;

export const API_PREFIXES: Record<ApiInterface, string> = {
  private: `${API_ROOTS.private}/${API_VERSION}`,
  public: `${API_ROOTS.public}/${API_VERSION}`,
  admin: `${API_ROOTS.admin}/${API_VERSION}`,
};

/** A controller's path under an interface's prefix: `@Controller(apiPath('private', 'customers'))`. */
export const apiPath = (api: ApiInterface, path = ''): string =>
  [API_PREFIXES[api], path]
    .join('/')
    .split('/')
    .filter((p) => p.length > 0)
    .join('/');

/** Whether `path` is Swagger UI's (`/docs`, `/docs/...`, `/docs-json`, `/docs-yaml`). */
export const isDocsPath = (path: string): boolean =>
  path === '/docs' || path.startsWith('/docs/') || path.startsWith('/docs-');
