import { CallHandler, ExecutionContext, Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { lastValueFrom, of } from 'rxjs';
import type { DataSource } from 'typeorm';
import { answerRecorderOf } from '../common/http/answer-recorder';
import { IDEMPOTENCY_IN_TRANSACTION, IdempotencyContext } from './idempotency-context';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import type { IdempotencyService } from './idempotency.service';

const FINGERPRINT = 'f'.repeat(64);

/** A keyed private POST as the interceptor sees it, to a handler returning `result`. */
function keyedPost(handler: () => unknown, { key = 'key-1', statusCode = 201 } = {}) {
  const req = {
    id: 'trace-idem',
    method: 'POST',
    originalUrl: '/api/private/v1/things',
    headers: { 'idempotency-key': key },
    body: { name: 'x' },
    caller: { kind: 'private', project: { id: 'prj_a' } },
  };
  const res = Object.assign(new EventEmitter(), { statusCode });
  const context = {
    getType: () => 'http',
    getHandler: () => handler,
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
  } as unknown as ExecutionContext;
  const next: CallHandler = { handle: jest.fn(() => of({ id: 7 })) };
  return { req, res, context, next };
}

function keyRunner() {
  return {
    manager: { marker: 'key transaction' },
    isTransactionActive: true,
    connect: jest.fn().mockResolvedValue(undefined),
    startTransaction: jest.fn().mockResolvedValue(undefined),
    commitTransaction: jest.fn().mockResolvedValue(undefined),
    rollbackTransaction: jest.fn().mockResolvedValue(undefined),
    release: jest.fn().mockResolvedValue(undefined),
  };
}

function storeWith(overrides: Record<string, jest.Mock>) {
  return {
    fingerprint: () => FINGERPRINT,
    find: jest.fn().mockResolvedValue(undefined),
    lockKey: jest.fn().mockResolvedValue(undefined),
    save: jest.fn().mockResolvedValue(undefined),
    replace: jest.fn().mockResolvedValue(undefined),
    ...overrides,
  };
}

const interceptorWith = (store: object, runner = keyRunner()) =>
  new IdempotencyInterceptor(
    store as unknown as IdempotencyService,
    {
      createQueryRunner: () => runner,
    } as unknown as DataSource,
  );

const ENVELOPE = JSON.stringify({ ok: true, requestId: 'trace-idem', data: { id: 7 } });

describe('IdempotencyInterceptor', () => {
  afterEach(() => jest.restoreAllMocks());

  it('passes a request without a key straight to the handler, holding nothing', async () => {
    const store = storeWith({});
    const { req, context, next } = keyedPost(() => undefined);
    delete (req.headers as Record<string, unknown>)['idempotency-key'];
    await expect(lastValueFrom(await interceptorWith(store).intercept(context, next))).resolves.toEqual({
      id: 7,
    });
    expect(store.find).not.toHaveBeenCalled();
    expect(answerRecorderOf(req as never)).toBeUndefined();
  });

  it('refuses a key that is not 1 to 255 printable ASCII characters: 400 before the handler', async () => {
    const { context, next } = keyedPost(() => undefined, { key: 'a\u0001b' });
    await expect(interceptorWith(storeWith({})).intercept(context, next)).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
    expect(next.handle).not.toHaveBeenCalled();
  });

  it('@IdempotencyScope() handler: looks for an earlier answer, hands the context on, stores an answer its work did not', async () => {
    const store = storeWith({});
    const handler = () => undefined;
    Reflect.defineMetadata(IDEMPOTENCY_IN_TRANSACTION, true, handler);
    const { req, context, next } = keyedPost(handler);
    const result = await lastValueFrom(await interceptorWith(store).intercept(context, next));
    expect(result).toEqual({ id: 7 });
    expect(store.find).toHaveBeenCalledWith('prj_a', 'key-1', FINGERPRINT);
    expect(answerRecorderOf(req as never)).toBeInstanceOf(IdempotencyContext);
    expect(store.save).toHaveBeenCalledWith('prj_a', 'key-1', FINGERPRINT, 201, ENVELOPE, undefined);
  });

  it('@IdempotencyScope() handler: an earlier finished request is replayed without running the handler', async () => {
    const store = storeWith({
      find: jest.fn().mockResolvedValue({ kind: 'replay', status: 201, body: ENVELOPE }),
    });
    const handler = () => undefined;
    Reflect.defineMetadata(IDEMPOTENCY_IN_TRANSACTION, true, handler);
    const { context, next } = keyedPost(handler);
    await expect(interceptorWith(store).intercept(context, next)).rejects.toMatchObject({
      answer: { kind: 'replay', status: 201 },
    });
    expect(next.handle).not.toHaveBeenCalled();
  });

  it('the answer stored with the work is kept; a different answer replaces it, with a warning', async () => {
    const warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const store = storeWith({});
    const idem = new IdempotencyContext(store as never, 'prj_a', 'key-1', FINGERPRINT, 'trace-idem', 201);
    await idem.beforeCommit({} as never, { id: 7 });
    idem.afterCommit();
    expect(store.save).toHaveBeenCalledWith('prj_a', 'key-1', FINGERPRINT, 201, ENVELOPE, {});
    // a 5xx after the commit: the stored answer is sent instead
    expect(await idem.settle({ status: 500, text: '{"ok":false}' })).toEqual({ status: 201, text: ENVELOPE });
    const other = new IdempotencyContext(store as never, 'prj_a', 'key-2', FINGERPRINT, 'trace-idem', 201);
    await other.beforeCommit({} as never, { id: 7 });
    other.afterCommit();
    await other.settle({ status: 201, text: '{"other":1}' });
    expect(store.replace).toHaveBeenCalledWith('prj_a', 'key-2', FINGERPRINT, 201, '{"other":1}');
    expect(warnings).toHaveBeenCalled();
  });

  describe('a handler without @IdempotencyScope(): the key transaction', () => {
    it('takes the key in its own transaction, stores the answer there and commits, before the answer goes', async () => {
      const runner = keyRunner();
      const store = storeWith({});
      const { context, next } = keyedPost(function plainHandler() {});
      const result = await lastValueFrom(await interceptorWith(store, runner).intercept(context, next));
      expect(result).toEqual({ id: 7 });
      expect(store.lockKey).toHaveBeenCalledWith(runner.manager, 'prj_a', 'key-1', FINGERPRINT);
      expect(store.save).toHaveBeenCalledWith('prj_a', 'key-1', FINGERPRINT, 201, ENVELOPE, runner.manager);
      expect(runner.commitTransaction).toHaveBeenCalled();
      expect(runner.release).toHaveBeenCalledTimes(1);
    });

    it('a key held by another transaction: 409 IDEMPOTENCY_KEY_IN_USE (the handler does not run), rolled back', async () => {
      const runner = keyRunner();
      const store = storeWith({ lockKey: jest.fn().mockResolvedValue({ kind: 'in-use' }) });
      const { context, next } = keyedPost(function plainHandler() {});
      await expect(interceptorWith(store, runner).intercept(context, next)).rejects.toMatchObject({
        code: 'IDEMPOTENCY_KEY_IN_USE',
      });
      expect(next.handle).not.toHaveBeenCalled();
      expect(runner.rollbackTransaction).toHaveBeenCalled();
      expect(runner.release).toHaveBeenCalledTimes(1);
    });

    it('a connection closed before the answer settles: the key transaction rolls back, nothing stored', async () => {
      const runner = keyRunner();
      const store = storeWith({});
      const { res, context } = keyedPost(function plainHandler() {});
      await interceptorWith(store, runner).intercept(context, { handle: () => of({ id: 7 }) });
      res.emit('close');
      await new Promise((r) => setImmediate(r));
      expect(runner.rollbackTransaction).toHaveBeenCalled();
      expect(runner.release).toHaveBeenCalledTimes(1);
      expect(store.save).not.toHaveBeenCalled();
    });

    it('when the answer cannot be stored: logs under the request id, rolls back, and the answer still goes', async () => {
      const errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
      const runner = keyRunner();
      const store = storeWith({ save: jest.fn().mockRejectedValue(new Error('connection lost')) });
      const { context, next } = keyedPost(function plainHandler() {});
      const result = await lastValueFrom(await interceptorWith(store, runner).intercept(context, next));
      expect(result).toEqual({ id: 7 });
      expect(errors).toHaveBeenCalledWith(
        expect.objectContaining({ reqId: 'trace-idem', err: 'connection lost', status: 201 }),
        'Storing the idempotent answer failed',
      );
      expect(runner.rollbackTransaction).toHaveBeenCalled();
    });
  });
});
