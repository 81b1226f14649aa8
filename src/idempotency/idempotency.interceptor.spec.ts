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

  describe('a handler without @IdempotencyScope(): the guard transaction', () => {
    const setup = (lockKey: jest.Mock) => {
      const runner = {
        manager: { marker: 'guard' },
        isTransactionActive: true,
        connect: jest.fn().mockResolvedValue(undefined),
        startTransaction: jest.fn().mockResolvedValue(undefined),
        commitTransaction: jest.fn().mockResolvedValue(undefined),
        rollbackTransaction: jest.fn().mockResolvedValue(undefined),
        release: jest.fn().mockResolvedValue(undefined),
      };
      const dataSource = { createQueryRunner: () => runner } as unknown as DataSource;
      const store = {
        fingerprint: () => 'f'.repeat(64),
        lockKey,
        save: jest.fn().mockResolvedValue(undefined),
      };
      const req = {
        id: 'trace-guard',
        method: 'POST',
        originalUrl: '/api/private/v1/things',
        headers: { 'idempotency-key': 'key-2' },
        body: {},
        caller: { kind: 'private', project: { id: 'prj_a' } },
      };
      const sent: unknown[] = [];
      const res = {
        req,
        statusCode: 201,
        send: (body: unknown) => sent.push(body),
        getHeader: () => 'application/json',
        once: () => undefined,
        status: () => res,
      };
      const context = {
        getType: () => 'http',
        getHandler: () => function plainHandler() {},
        switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
      } as unknown as ExecutionContext;
      const interceptor = new IdempotencyInterceptor(store as unknown as IdempotencyService, dataSource);
      return { runner, store, res, sent, context, interceptor };
    };

    it('takes the key in its own transaction, stores the answer there, commits, then sends', async () => {
      const { runner, store, res, sent, context, interceptor } = setup(
        jest.fn().mockResolvedValue(undefined),
      );
      await lastValueFrom(interceptor.intercept(context, { handle: () => of({ id: 1 }) }));
      expect(store.lockKey).toHaveBeenCalledWith(runner.manager, 'prj_a', 'key-2', 'f'.repeat(64));
      res.send('{"ok":true}');
      await new Promise((r) => setImmediate(r));
      expect(store.save).toHaveBeenCalledWith(
        'prj_a',
        'key-2',
        'f'.repeat(64),
        201,
        '{"ok":true}',
        runner.manager,
      );
      expect(runner.commitTransaction).toHaveBeenCalled();
      expect(runner.release).toHaveBeenCalledTimes(1);
      expect(sent).toEqual(['{"ok":true}']);
    });

    it('a key held by another transaction: 409 IDEMPOTENCY_KEY_IN_USE, the handler does not run, the guard rolls back', async () => {
      const { runner, context, interceptor } = setup(jest.fn().mockResolvedValue({ kind: 'in-use' }));
      const handle = jest.fn(() => of({ id: 1 }));
      await expect(lastValueFrom(interceptor.intercept(context, { handle }))).rejects.toMatchObject({
        code: 'IDEMPOTENCY_KEY_IN_USE',
      });
      expect(handle).not.toHaveBeenCalled();
      expect(runner.rollbackTransaction).toHaveBeenCalled();
      expect(runner.release).toHaveBeenCalledTimes(1);
    });
  });
});
