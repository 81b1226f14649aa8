import type { RequestHandler } from 'express';
import helmet from 'helmet';
import { constantHeadersOf } from './request-pipeline';

describe('constantHeadersOf', () => {
  it("reads helmet's headers once, as helmet writes them on an answer", () => {
    const headers = new Map(
      constantHeadersOf(
        helmet({ contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"] } } }),
      ),
    );
    expect(headers.get('Content-Security-Policy')).toBe("default-src 'none'");
    expect(headers.get('X-Content-Type-Options')).toBe('nosniff');
    expect(headers.get('Strict-Transport-Security')).toBe('max-age=31536000; includeSubDomains');
  });

  it('refuses a middleware that does not pass the request on at once, or fails', () => {
    const later: RequestHandler = (_req, _res, next) => void setImmediate(next);
    expect(() => constantHeadersOf(later)).toThrow('did not pass the request on at once');
    const failing: RequestHandler = (_req, _res, next) => next(new Error('no'));
    expect(() => constantHeadersOf(failing)).toThrow('no');
  });
});
