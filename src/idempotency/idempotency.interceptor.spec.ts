import { CallHandler, ExecutionContext, Logger } from '@nestjs/common';
import { lastValueFrom, of } from 'rxjs';
import type { DataSource } from 'typeorm';
import { IDEMPOTENCY_IN_TRANSACTION } from './idempotency-context';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import type { IdempotencyService } from './idempotency.service';

describe('IdempotencyInterceptor', () => {
  afterEach(() => jest.restoreAllMocks());

  it('when the answer cannot be stored: still sends the answer, and logs under the request id', async () => {
    const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const store = {
      fingerprint: () => 'f'.repeat(64),
      find: jest.fn().mockResolvedValue(undefined),
      save: jest.fn().mockRejectedValue(new Error('connection lost')),
    };
    const handler = () => undefined;
    Reflect.defineMetadata(IDEMPOTENCY_IN_TRANSACTION, true, handler);
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
      status: () => res,
    };
    const context = {
      getType: () => 'http',
      getHandler: () => handler,
      switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
    } as unknown as ExecutionContext;
    const next: CallHandler = { handle: () => of({ id: 1 }) };

    await lastValueFrom(
      new IdempotencyInterceptor(store as unknown as IdempotencyService, {} as DataSource).intercept(
        context,
        next,
      ),
    );
    res.send('{"ok":true}');
    await new Promise((r) => setImmediate(r));

    expect(store.save).toHaveBeenCalledWith('prj_a', 'key-1', 'f'.repeat(64), 201, '{"ok":true}');
    expect(sent).toEqual(['{"ok":true}']);
    expect(errors).toHaveBeenCalledWith(
      expect.objectContaining({ reqId: 'trace-idem', err: 'connection lost', status: 201 }),
      'Storing the idempotent answer failed',
    );
  });
});
