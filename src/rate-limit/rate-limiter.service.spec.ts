import { Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { AppConfig } from '../config/app-config';
import { DomainError } from '../common/errors/domain-error';
import type { EnvironmentVariables } from '../config/env';
import type { RateLimitStore, WindowHit } from './rate-limit.store';
import { RateLimiter } from './rate-limiter.service';

/** A store that answers scripted hits and records the subjects it was asked about. */
class FakeStore implements RateLimitStore {
  subjects: string[] = [];
  constructor(private readonly answer: (subject: string) => WindowHit | Error) {}
  async hit(subject: string): Promise<WindowHit> {
    this.subjects.push(subject);
    const a = this.answer(subject);
    if (a instanceof Error) throw a;
    return a;
  }
}

const config = (values: Partial<EnvironmentVariables>) =>
  ({ get: (key: keyof EnvironmentVariables) => values[key] }) as unknown as AppConfig;

class FakeResponse {
  headers: Record<string, string> = {};
  locals: Record<string, unknown> = {};
  req = { id: 'req-under-test' };
  setHeader(name: string, value: string) {
    this.headers[name] = value;
  }
}

const settings = { RATE_LIMIT_WINDOW_SECONDS: 60, RATE_LIMIT_PER_KEY: 10, RATE_LIMIT_PER_ADDRESS: 100 };
const limiterWith = (store: RateLimitStore | null, overrides: Partial<EnvironmentVariables> = {}) =>
  new RateLimiter(config({ ...settings, ...overrides }), store);

describe('RateLimiter', () => {
  beforeAll(() => Logger.overrideLogger(false));
  it('advertises the limit, what remains and the seconds to the window end', async () => {
    const store = new FakeStore(() => ({ count: 4, resetSeconds: 12.2 }));
    const res = new FakeResponse();
    await limiterWith(store).consume('key', '7', res as unknown as Response);
    expect(store.subjects).toEqual(['key:7']);
    expect(res.headers).toEqual({
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '6',
      'RateLimit-Reset': '13',
    });
  });

  it('refuses the request past the limit with RATE_LIMITED and Retry-After', async () => {
    const res = new FakeResponse();
    const error = await limiterWith(new FakeStore(() => ({ count: 11, resetSeconds: 0.2 })))
      .consume('key', '7', res as unknown as Response)
      .catch((e) => e);
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: 1 });
    expect(res.headers['RateLimit-Remaining']).toBe('0');
  });

  it('never announces more than one window (a stored end rounded up to the millisecond)', async () => {
    const res = new FakeResponse();
    await limiterWith(new FakeStore(() => ({ count: 1, resetSeconds: 60.0004 }))).consume(
      'key',
      '7',
      res as unknown as Response,
    );
    expect(res.headers['RateLimit-Reset']).toBe('60');
  });

  it('keeps the headers of the tighter of the two limits', async () => {
    const res = new FakeResponse() as unknown as Response;
    const limiter = limiterWith(
      new FakeStore((s) =>
        s.startsWith('address') ? { count: 99, resetSeconds: 5 } : { count: 2, resetSeconds: 50 },
      ),
    );
    await limiter.consume('address', '10.0.0.1', res);
    await limiter.consume('key', '7', res);
    expect((res as unknown as FakeResponse).headers).toEqual({
      'RateLimit-Limit': '100',
      'RateLimit-Remaining': '1',
      'RateLimit-Reset': '5',
    });
  });

  it('a limit of 0 is no limit; no store means off', async () => {
    const store = new FakeStore(() => ({ count: 1000, resetSeconds: 1 }));
    await limiterWith(store, { RATE_LIMIT_PER_KEY: 0 }).consume(
      'key',
      '7',
      new FakeResponse() as unknown as Response,
    );
    expect(store.subjects).toEqual([]);
    const off = limiterWith(null);
    expect(off.appliesTo({ path: '/api/private/v1/info' } as Request)).toBe(false);
  });

  it('applies to the private and public interfaces only', () => {
    const limiter = limiterWith(new FakeStore(() => ({ count: 1, resetSeconds: 1 })));
    const applies = (path: string) => limiter.appliesTo({ path } as Request);
    expect(applies('/api/private/v1/customers')).toBe(true);
    expect(applies('/api/public/v1/me')).toBe(true);
    for (const path of [
      '/api/admin/v1/projects',
      '/healthz',
      '/readyz',
      '/metrics',
      '/docs',
      '/api/privateer',
    ])
      expect(applies(path)).toBe(false);
  });

  it('lets the request through when the store fails, and logs it with the request id', async () => {
    const logged = jest.spyOn(Logger.prototype, 'error');
    try {
      const res = new FakeResponse();
      await expect(
        limiterWith(new FakeStore(() => new Error('down'))).consume(
          'address',
          '10.0.0.1',
          res as unknown as Response,
        ),
      ).resolves.toBeUndefined();
      expect(res.headers).toEqual({});
      expect(logged).toHaveBeenCalledWith(
        expect.objectContaining({ reqId: 'req-under-test', err: 'down' }),
        expect.any(String),
      );
    } finally {
      logged.mockRestore();
    }
  });
});
