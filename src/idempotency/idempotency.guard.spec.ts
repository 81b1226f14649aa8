import { ExecutionContext, Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { IDEMPOTENCY_IN_TRANSACTION } from './idempotency-context';
import { IdempotencyGuard } from './idempotency.guard';
import type { IdempotencyService } from './idempotency.service';

/** A keyed private POST to `url` as the guard sees it: its request, its response and the sent bodies. */
function keyedPost(request: {
  handler: () => unknown;
  id: string;
  url: string;
  key: string;
  body: object;
  contentType: string;
}) {
  const req = {
    id: request.id,
    method: 'POST',
    originalUrl: request.url,
    headers: { 'idempotency-key': request.key },
    body: request.body,
    caller: { kind: 'private', project: { id: 'prj_a' } },
  };
  const sent: unknown[] = [];
  const res = {
    req,
    statusCode: 201,
    send: (answer: unknown) => sent.push(answer),
    getHeader: () => request.contentType,
    once: () => undefined,
    status: () => res,
  };
  const context = {
    getType: () => 'http',
    getHandler: () => request.handler,
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
  } as unknown as ExecutionContext;
  return { res, sent, context };
}

describe('IdempotencyGuard', () => {
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
    const { res, sent, context } = keyedPost({
      handler,
      id: 'trace-idem',
      url: '/api/private/v1/customers',
      key: 'key-1',
      body: { username: 'someone1' },
      contentType: 'application/json; charset=utf-8',
    });
    await expect(
      new IdempotencyGuard(store as unknown as IdempotencyService, {} as DataSource).canActivate(context),
    ).resolves.toBe(true);
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
      const { res, sent, context } = keyedPost({
        handler: function plainHandler() {},
        id: 'trace-guard',
        url: '/api/private/v1/things',
        key: 'key-2',
        body: {},
        contentType: 'application/json',
      });
      const guard = new IdempotencyGuard(store as unknown as IdempotencyService, dataSource);
      return { runner, store, res, sent, context, guard };
    };

    it('takes the key in its own transaction, stores the answer there, commits, then sends', async () => {
      const { runner, store, res, sent, context, guard } = setup(jest.fn().mockResolvedValue(undefined));
      await expect(guard.canActivate(context)).resolves.toBe(true);
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

    it('a key held by another transaction: 409 IDEMPOTENCY_KEY_IN_USE (the handler does not run), the guard rolls back', async () => {
      const { runner, context, guard } = setup(jest.fn().mockResolvedValue({ kind: 'in-use' }));
      await expect(guard.canActivate(context)).rejects.toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE' });
      expect(runner.rollbackTransaction).toHaveBeenCalled();
      expect(runner.release).toHaveBeenCalledTimes(1);
    });
  });
});
