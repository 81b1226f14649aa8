import { CallHandler, ExecutionContext, StreamableFile } from '@nestjs/common';
import { lastValueFrom, of } from 'rxjs';
import { EnvelopeInterceptor, envelopeOf } from './envelope';

/** What the interceptor makes of a handler's `result`, for a request with id `id` whose answer has `statusCode`. */
function intercepted(
  result: unknown,
  { id = 'rid-1', statusCode = 200, headersSent = false, type = 'http' } = {},
) {
  const req = { id };
  const res = { statusCode, headersSent };
  const context = {
    getType: () => type,
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
  } as unknown as ExecutionContext;
  const next: CallHandler = { handle: () => of(result) };
  return lastValueFrom(new EnvelopeInterceptor().intercept(context, next));
}

describe('EnvelopeInterceptor: every success answer as { ok, requestId, data }', () => {
  it("wraps a handler's result with the request's id", async () => {
    expect(await intercepted({ id: 12 }, { id: 'trace-7', statusCode: 201 })).toEqual({
      ok: true,
      requestId: 'trace-7',
      data: { id: 12 },
    });
    expect(await intercepted([1, 2])).toEqual({ ok: true, requestId: 'rid-1', data: [1, 2] });
  });

  it('wraps what is not an object as well: a string, null, nothing (no data key then once serialized)', async () => {
    expect(await intercepted('text')).toEqual({ ok: true, requestId: 'rid-1', data: 'text' });
    expect(await intercepted(null)).toEqual({ ok: true, requestId: 'rid-1', data: null });
    expect(JSON.stringify(await intercepted(undefined))).toBe('{"ok":true,"requestId":"rid-1"}');
  });

  it('leaves files, answers without a body (204, 304) and answers already written by the handler as they are', async () => {
    const file = new StreamableFile(Buffer.from('a,b\n'));
    expect(await intercepted(file)).toBe(file);
    expect(await intercepted(undefined, { statusCode: 204 })).toBeUndefined();
    expect(await intercepted('x', { statusCode: 304 })).toBe('x');
    expect(await intercepted(undefined, { headersSent: true })).toBeUndefined();
  });

  it('passes anything but HTTP through, and names the request "unknown" without an id', async () => {
    expect(await intercepted({ a: 1 }, { type: 'rpc' })).toEqual({ a: 1 });
    expect(await intercepted(1, { id: null as unknown as string })).toEqual(envelopeOf('unknown', 1));
  });
});
