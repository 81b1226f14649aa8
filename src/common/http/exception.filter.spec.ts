import { ArgumentsHost, BadRequestException, ImATeapotException, Logger } from '@nestjs/common';
import { GlobalExceptionFilter } from './exception.filter';

/** An HTTP host whose response records what the filter sends. */
function hostFor(requestId: string) {
  const sent: { status?: number; body?: unknown; headers: Record<string, string> } = { headers: {} };
  const res = {
    headersSent: false,
    setHeader: (name: string, value: string) => (sent.headers[name] = value),
    status(code: number) {
      sent.status = code;
      return this;
    },
    json: (body: unknown) => (sent.body = body),
  };
  const host = {
    switchToHttp: () => ({ getRequest: () => ({ id: requestId }), getResponse: () => res }),
  } as unknown as ArgumentsHost;
  return { host, sent };
}

describe('GlobalExceptionFilter', () => {
  const filter = new GlobalExceptionFilter();
  let errors: jest.SpyInstance;
  let warnings: jest.SpyInstance;
  beforeEach(() => {
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('answers an unexpected error with a bare 500 and logs it, stack included, under the request id', () => {
    const { host, sent } = hostFor('trace-500');
    filter.catch(new Error('password=hunter2 in a driver message'), host);
    expect(sent.status).toBe(500);
    expect(sent.body).toEqual({
      ok: false,
      requestId: 'trace-500',
      error: { code: 'INTERNAL_ERROR', message: expect.any(String) },
    });
    expect(JSON.stringify(sent.body)).not.toContain('hunter2');
    expect(errors).toHaveBeenCalledWith(
      expect.objectContaining({
        reqId: 'trace-500',
        err: expect.objectContaining({
          message: 'password=hunter2 in a driver message',
          stack: expect.any(String),
        }),
      }),
      'Unhandled error',
    );
  });

  it('logs an unmapped framework error under the request id', () => {
    const { host, sent } = hostFor('trace-418');
    filter.catch(new ImATeapotException(), host);
    expect(sent.status).toBe(500);
    expect(warnings).toHaveBeenCalledWith(
      expect.objectContaining({ reqId: 'trace-418', status: 418 }),
      'Unmapped HTTP error',
    );
  });

  it('maps a framework 400 onto VALIDATION_FAILED without logging it', () => {
    const { host, sent } = hostFor('trace-400');
    filter.catch(new BadRequestException('bad'), host);
    expect(sent.status).toBe(400);
    expect(sent.body).toMatchObject({
      ok: false,
      requestId: 'trace-400',
      error: { code: 'VALIDATION_FAILED' },
    });
    expect(errors).not.toHaveBeenCalled();
    expect(warnings).not.toHaveBeenCalled();
  });
});
