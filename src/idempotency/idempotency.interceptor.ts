import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import { mergeMap, Observable } from 'rxjs';
import { DataSource } from 'typeorm';
import type { AuthenticatedRequest } from '../auth/caller';
import { DomainError } from '../common/errors/domain-error';
import { attachAnswerRecorder } from '../common/http/answer-recorder';
import { envelopeOf } from '../common/http/envelope';
import { requestIdOf } from '../common/http/request-id';
import { API_PREFIXES } from '../common/routes/api-prefixes';
import { IDEMPOTENCY_KEY_FORMAT } from './idempotency-fingerprint';
import {
  EarlierAnswerFound,
  IDEMPOTENCY_IN_TRANSACTION,
  IDEMPOTENCY_KEY_HEADER,
  IdempotencyContext,
  KeyTransaction,
} from './idempotency-context';
import { EarlierAnswer, IdempotencyService } from './idempotency.service';

// PUT too: an override's PUT takes a key as a POST does
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function isPrivateRoute(req: AuthenticatedRequest): boolean {
  const path = req.originalUrl.split('?', 1)[0];
  return path === API_PREFIXES.private || path.startsWith(`${API_PREFIXES.private}/`);
}

/**
 * `Idempotency-Key` on private POST, PATCH and DELETE.
 *
 * Put on each private POST, PATCH and DELETE handler by `@Idempotent()`. Interceptors run after
 * every guard: the caller's project is known and a rate-limited request never claims a key.
 * A request without a key passes straight through.
 *
 * Nothing is written before the work: a record only ever holds a finished answer, and "still
 * running" is a transaction-scoped advisory lock on (project, key) that PostgreSQL frees with
 * the transaction, whatever happens to the process (killed, cut off, shut down past its deadline).
 *
 * - Handlers with `@IdempotencyScope()` pass the request's `IdempotencyContext` to the
 *   transaction of their write, which takes the lock and stores the answer with the work (see
 *   `IdempotencyContext`). Here an earlier answer is looked for first, so that a replay costs
 *   no transaction.
 * - Other handlers get a transaction of the key's own, on another connection (`KeyTransaction`):
 *   it takes the lock before the handler runs and stores the answer when the request settles.
 *
 * An earlier answer found here or by the work's transaction (`EarlierAnswerFound`) is thrown and
 * sent by the exception filter (`ReplyInstead`): the handler does not run, or its transaction
 * rolls back.
 *
 * The success answer is settled here, once the handler's result is known and before Nest sends
 * it; an error answer by the global exception filter (the context is the request's
 * `AnswerRecorder`). Either way its bytes go out only once the record is final in the
 * database: a retry sent right after the answer arrives is a replay, never a 409.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly inTransaction = new WeakMap<object, boolean>();

  constructor(
    private readonly store: IdempotencyService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const req = http.getRequest<AuthenticatedRequest>();
    const key = req.headers['idempotency-key'];
    if (key === undefined) return next.handle();
    const caller = req.caller;
    if (!caller || caller.kind !== 'private' || !IDEMPOTENT_METHODS.has(req.method) || !isPrivateRoute(req)) {
      return next.handle();
    }
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY_FORMAT.test(key)) {
      const message = `${IDEMPOTENCY_KEY_HEADER} must be 1 to 255 printable ASCII characters`;
      throw new DomainError('VALIDATION_FAILED', message, [{ field: IDEMPOTENCY_KEY_HEADER, message }]);
    }
    const res = http.getResponse<Response>();
    const projectId = caller.project.id;
    const fingerprint = this.store.fingerprint(req.method, req.originalUrl, req.body);
    const handler = context.getHandler();
    const requestId = requestIdOf(req);
    const status = successStatus(handler, req.method);

    let keyTransaction: KeyTransaction | undefined;
    if (this.handlesInTransaction(handler)) {
      const earlier = await this.store.find(projectId, key, fingerprint);
      if (earlier) throwEarlier(earlier);
    } else {
      const opened = await this.openKeyTransaction(projectId, key, fingerprint);
      if (opened.earlier) throwEarlier(opened.earlier);
      keyTransaction = opened.keyTransaction;
    }
    const idem = new IdempotencyContext(
      this.store,
      projectId,
      key,
      fingerprint,
      requestId,
      status,
      keyTransaction,
    );
    attachAnswerRecorder(req, idem);
    // a connection that closes before an answer settles: nothing to store, the key's transaction ends
    res.once('close', () => idem.abandon());
    return next.handle().pipe(
      mergeMap(async (data: unknown) => {
        await idem.settle({ status: res.statusCode, text: JSON.stringify(envelopeOf(requestId, data)) });
        return data;
      }),
    );
  }

  private handlesInTransaction(handler: object): boolean {
    let known = this.inTransaction.get(handler);
    if (known === undefined) {
      known = Reflect.getMetadata(IDEMPOTENCY_IN_TRANSACTION, handler) === true;
      this.inTransaction.set(handler, known);
    }
    return known;
  }

  /** The key's own transaction, for a handler that does not store its answer itself: the key's lock, then what is stored. */
  private async openKeyTransaction(
    projectId: string,
    key: string,
    fingerprint: string,
  ): Promise<{ keyTransaction?: KeyTransaction; earlier?: EarlierAnswer }> {
    const runner = this.dataSource.createQueryRunner();
    const keyTransaction = new KeyTransaction(runner);
    try {
      await runner.connect();
      await runner.startTransaction();
      const earlier = await this.store.lockKey(runner.manager, projectId, key, fingerprint);
      if (!earlier) return { keyTransaction };
      await keyTransaction.end(false);
      return { earlier };
    } catch (error) {
      await keyTransaction.end(false);
      throw error;
    }
  }
}

/** The status of the handler's success answer: `@HttpCode()`, else 201 for POST and 200 otherwise (Nest's rule). */
function successStatus(handler: object, method: string): number {
  const code: unknown = Reflect.getMetadata(HTTP_CODE_METADATA, handler);
  return typeof code === 'number' ? code : method === 'POST' ? 201 : 200;
}

/** An earlier answer for the key: the stored answer (a replay), or 409 / 422. */
function throwEarlier(earlier: EarlierAnswer): never {
  switch (earlier.kind) {
    case 'replay':
      throw new EarlierAnswerFound(earlier);
    case 'in-use':
      throw new DomainError('IDEMPOTENCY_KEY_IN_USE');
    case 'reused':
      throw new DomainError('IDEMPOTENCY_KEY_REUSED');
  }
}
