import { CallHandler, ExecutionContext, Logger } from '@nestjs/common';
import { lastValueFrom, of } from 'rxjs';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import type { IdempotencyService } from './idempotency.service';

describe('IdempotencyInterceptor', () => {
  afterEach(() => jest.restoreAllMocks());

  it('when the answer cannot be stored: releases the key, still sends the answer, and logs under the request id', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const store = {
      fingerprint: () => 'f'.repeat(64),
      claim: jest.fn().mockResolvedValue({ kind: 'claimed' }),
      complete: jest.fn().mockRejectedValue(new Error('connection lost')),
      release: jest.fn().mockResolvedValue(undefined),
    };
    const req = {
      id: 'trace-idem',
      method: 'POST',
      originalUrl: '/api/private/v1/customers',
      headers: { 'idempotency-key': 'key-1' },
      body: { username: 'someone1' },
      caller: { kind: 'private', project: { id: 'prj_a' } },
    };
    const sent: unknown[] = [];
    const res = {
      req,
      statusCode: 201,
      send: (body: unknown) => sent.push(body),
      getHeader: () => 'application/json; charset=utf-8',
      once: () => undefined,
    };
    const context = {
      getType: () => 'http',
      switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
    } as unknown as ExecutionContext;
    const next: CallHandler = { handle: () => of({ id: 1 }) };

    await lastValueFrom(
      new IdempotencyInterceptor(store as unknown as IdempotencyService).intercept(context, next),
    );
    res.send('{"ok":true}');
    await new Promise((r) => setImmediate(r));

    expect(store.complete).toHaveBeenCalledWith('prj_a', 'key-1', 'f'.repeat(64), 201, '{"ok":true}');
    expect(store.release).toHaveBeenCalledWith('prj_a', 'key-1', expect.any(String));
    expect(sent).toEqual(['{"ok":true}']);
    expect(errors).toHaveBeenCalledWith(
      expect.objectContaining({ reqId: 'trace-idem', err: 'connection lost', status: 201 }),
      'Storing the idempotent answer failed',
    );
  });
});
