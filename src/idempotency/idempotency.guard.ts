import { CanActivate, ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { HTTP_CODE_METADATA } from '@nestjs/common/constants';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import { DataSource, QueryRunner } from 'typeorm';
import type { AuthenticatedRequest } from '../auth/caller';
import { DomainError } from '../common/errors/domain-error';
import { isJsonContentType } from '../common/http/body-parser';
import { requestIdOf } from '../common/http/request-id';
import { IDEMPOTENCY_KEY_FORMAT } from './idempotency-fingerprint';
import {
  attachIdempotencyContext,
  EarlierAnswerFound,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_IN_TRANSACTION,
  IdempotencyContext,
} from './idempotency-context';
import { EarlierAnswer, IdempotencyService } from './idempotency.service';
import { API_PREFIXES } from '../common/routes/api-prefixes';

export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'DELETE']);

type Send = Response['send'];

function isPrivateRoute(req: AuthenticatedRequest): boolean {
  const path = req.originalUrl.split('?', 1)[0];
  return path === API_PREFIXES.private || path.startsWith(`${API_PREFIXES.private}/`);
}

/** A guard transaction of the guard, for handlers that do not store their answer themselves. */
interface Guard {
  runner: QueryRunner;
  done: boolean;
}

/**
 * `Idempotency-Key` on private POST, PATCH and DELETE (product.md 7).
 *
 * Put on each private POST, PATCH and DELETE handler by `@Idempotent()`, as the last guard: the
 * key guard (class level, `@PrivateApi()`) has run, so the caller's project is known and a
 * rate-limited request never claims a key. A guard, not an interceptor: Nest wraps every route
 * with an interceptor in an RxJS pipeline and `AsyncResource.bind` (whose deprecated accessors
 * Node 20 defines on each call), some 60 µs of CPU per request, paid by requests without a key
 * too; a guard that finds no key returns at once.
 *
 * Nothing is written before the work: a record only ever holds a finished answer, and "still
 * running" is a transaction-scoped advisory lock on (project, key) that PostgreSQL frees with
 * the transaction, whatever happens to the process (killed, cut off, shut down past its deadline).
 *
 * - Handlers with `@IdempotencyScope()` pass the request's `IdempotencyContext` to the
 *   transaction of their write, which takes the lock and stores the answer with the work (see
 *   `IdempotencyContext`). Here only the answers that wrote nothing are stored (a 4xx, a read).
 * - Other handlers get a guard transaction of this guard's own, on another connection: it
 *   takes the lock before the handler runs and stores the answer when it is sent. No key is ever
 *   stuck, but a process killed between the work's commit and the answer's would let a retry run
 *   the work again: convert the handler.
 *
 * An earlier answer found here or by the work's transaction (`EarlierAnswerFound`) is thrown and
 * sent by the exception filter (`ReplyInstead`): the handler does not run, or its transaction
 * rolls back.
 *
 * The answer is taken at `res.send`, the one place every JSON answer passes through when a key
 * is given, whoever produced it: Nest's reply of the result (`EnvelopeExpressAdapter` sends
 * through `res.send` when it finds it replaced) or the global exception filter's error envelope.
 * Its bytes go out only once the record is final in the database: a retry sent right after the
 * answer arrives is a replay, never a 409. A 5xx is not stored: it may be retried.
 */
@Injectable()
export class IdempotencyGuard implements CanActivate {
  private readonly logger = new Logger('Idempotency');
  private readonly inTransaction = new WeakMap<object, boolean>();

  constructor(
    private readonly store: IdempotencyService,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const http = context.switchToHttp();
    const req = http.getRequest<AuthenticatedRequest>();
    const key = req.headers['idempotency-key'];
    if (key === undefined) return true;
    const caller = req.caller;
    if (!caller || caller.kind !== 'private' || !IDEMPOTENT_METHODS.has(req.method) || !isPrivateRoute(req)) {
      return true;
    }
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY_FORMAT.test(key)) {
      const message = `${IDEMPOTENCY_KEY_HEADER} must be 1 to 255 printable ASCII characters`;
      throw new DomainError('VALIDATION_FAILED', message, [{ field: IDEMPOTENCY_KEY_HEADER, message }]);
    }
    const res = http.getResponse<Response>();
    const projectId = caller.project.id;
    const fingerprint = this.store.fingerprint(req.method, req.originalUrl, req.body);
    const handler = context.getHandler();
    const status = successStatus(handler, req.method);
    const requestId = requestIdOf(req);
    const idem = new IdempotencyContext(this.store, projectId, key, fingerprint, (data) => ({
      status,
      text: JSON.stringify({ ok: true, requestId, data }),
    }));

    if (this.handlesInTransaction(handler)) {
      attachIdempotencyContext(req, idem);
      const earlier = await this.store.find(projectId, key, fingerprint);
      if (earlier) throwEarlier(earlier);
      this.recordAnswer(res, idem);
      return true;
    }
    const { guard, earlier } = await this.openGuard(projectId, key, fingerprint);
    if (earlier) throwEarlier(earlier);
    this.recordAnswer(res, idem, guard!);
    return true;
  }

  private handlesInTransaction(handler: object): boolean {
    let known = this.inTransaction.get(handler);
    if (known === undefined) {
      known = Reflect.getMetadata(IDEMPOTENCY_IN_TRANSACTION, handler) === true;
      this.inTransaction.set(handler, known);
    }
    return known;
  }

  /** The guard transaction of a handler that does not store its answer itself: the key's lock, then what is stored. */
  private async openGuard(
    projectId: string,
    key: string,
    fingerprint: string,
  ): Promise<{ guard?: Guard; earlier?: EarlierAnswer }> {
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      await runner.startTransaction();
      const earlier = await this.store.lockKey(runner.manager, projectId, key, fingerprint);
      if (!earlier) return { guard: { runner, done: false } };
      await endGuard({ runner, done: false }, false);
      return { earlier };
    } catch (error) {
      await endGuard({ runner, done: false }, false);
      throw error;
    }
  }

  /** Makes the first `res.send` of this response store the answer before it is sent. */
  private recordAnswer(res: Response, idem: IdempotencyContext, guard?: Guard): void {
    const { store, logger } = this;
    const reqId = requestIdOf(res.req);
    const { projectId, key, fingerprint } = idem;
    const originalSend: Send = res.send;
    let settled = false;

    const patchedSend = (body?: unknown): Response => {
      if (settled) return originalSend.call(res, body);
      // Objects, numbers and booleans: Express serializes them with `res.json`, which calls
      // `res.send` again with the JSON text; that second call is the one recorded.
      const serializable =
        typeof body === 'number' ||
        typeof body === 'boolean' ||
        (typeof body === 'object' && body !== null && !ArrayBuffer.isView(body));
      if (serializable) return originalSend.call(res, body);

      settled = true;
      res.send = originalSend;
      let status = res.statusCode;
      const text =
        typeof body === 'string' && isJsonContentType(res.getHeader('Content-Type')) ? body : undefined;
      let sent: unknown = body;
      let write: Promise<void>;
      const committed = idem.committed;
      if (committed) {
        if (status >= 500) {
          // the work committed with its answer, then the handler failed: the stored answer is the truth
          status = committed.status;
          sent = committed.text;
          res.status(status);
          write = Promise.resolve();
        } else if (text !== committed.text || status !== committed.status) {
          logger.warn(
            { reqId, status },
            'The answer differs from the one stored with the work; the handler should return its work result',
          );
          write = store.replace(projectId, key, fingerprint, status, text ?? committed.text);
        } else write = Promise.resolve();
      } else if (status < 500 && text !== undefined && !idem.inUse) {
        write = guard
          ? store.save(projectId, key, fingerprint, status, text, guard.runner.manager)
          : store.save(projectId, key, fingerprint, status, text);
      } else {
        // A 5xx may be retried; an answer that is not JSON is not kept either.
        write = Promise.resolve();
      }
      write
        .then(() => guard && endGuard(guard, true))
        .catch((err: unknown) => {
          logger.error(
            { reqId, err: err instanceof Error ? err.message : String(err), status },
            'Storing the idempotent answer failed',
          );
          return guard && endGuard(guard, false);
        })
        .finally(() => {
          try {
            originalSend.call(res, sent);
          } catch (err) {
            logger.error(
              { reqId, err: err instanceof Error ? err.message : String(err) },
              'Sending the idempotent answer failed',
            );
            res.destroy();
          }
        });
      return res;
    };
    res.send = patchedSend as Send;

    // An answer that never went through `res.send` (a stream, `res.end()`), or a connection that
    // closed first: nothing to store, and the guard transaction must end.
    const abandon = () => {
      if (settled) return;
      settled = true;
      res.send = originalSend;
      if (guard) void endGuard(guard, false);
    };
    res.once('finish', abandon);
    res.once('close', abandon);
  }
}

/** Commits (or rolls back) the guard transaction and gives its connection back, once. */
async function endGuard(guard: Guard, commit: boolean): Promise<void> {
  if (guard.done) return;
  guard.done = true;
  const { runner } = guard;
  try {
    if (runner.isTransactionActive) {
      if (commit) await runner.commitTransaction();
      else await runner.rollbackTransaction();
    }
  } finally {
    await runner.release();
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
