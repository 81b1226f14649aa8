import { createParamDecorator, ExecutionContext, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { EntityManager, QueryRunner } from 'typeorm';
import { DomainError } from '../common/errors/domain-error';
import { AnswerRecorder, answerRecorderOf, RecordedAnswer } from '../common/http/answer-recorder';
import { envelopeOf } from '../common/http/envelope';
import { ReplyInstead } from '../common/http/reply-instead';
import type { TransactionParticipant } from '../database/transactional';
import type { EarlierAnswer, IdempotencyService } from './idempotency.service';

/** The answer of a request as stored and sent: status and the exact JSON text. */
export type StoredAnswer = RecordedAnswer;

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/**
 * An earlier request with the key has answered: thrown by `IdempotencyInterceptor` before the handler
 * runs, or by `IdempotencyContext.begin` inside the work's transaction when that request has
 * finished meanwhile (the transaction rolls back without running the work). The exception
 * filter then sends the stored answer with `Idempotent-Replayed: true`, or 422
 * IDEMPOTENCY_KEY_REUSED for a key used with another request.
 */
export class EarlierAnswerFound extends ReplyInstead {
  constructor(readonly answer: Exclude<EarlierAnswer, { kind: 'in-use' }>) {
    super('An earlier request with this Idempotency-Key has answered');
  }

  respond(res: Response): Error | undefined {
    if (this.answer.kind === 'reused') return new DomainError('IDEMPOTENCY_KEY_REUSED');
    const { status, body } = this.answer;
    res.status(status);
    res.setHeader(IDEMPOTENT_REPLAYED_HEADER, 'true');
    res.setHeader('Content-Type', 'application/json');
    // Records are written as the exact JSON text (a jsonb string); anything else is sent as JSON.
    res.send(typeof body === 'string' ? body : JSON.stringify(body ?? null));
    return undefined;
  }
}

/**
 * The `Idempotency-Key` of one request, made by `IdempotencyInterceptor` and handed to the
 * handler by `@IdempotencyScope()`. The service passes it to the transaction of its write:
 *
 *     runInTransaction(this.transactions, work, { participant: idem })
 *
 * which then (1) takes the key's transaction-scoped lock, so that a duplicate running at the
 * same time, on any replica, gets 409 IDEMPOTENCY_KEY_IN_USE; (2) answers from an earlier
 * finished request instead of running the work; (3) stores this request's answer, rendered from
 * the work's result, in the same transaction as the work. So the work and its answer commit
 * together or not at all: a request killed anywhere leaves its answer or nothing.
 *
 * The work's result must be the `data` of the answer (what the handler returns): the one
 * transaction of the request that gets the context is its last write.
 *
 * It is also the request's `AnswerRecorder`: the interceptor settles the success answer and the
 * exception filter the error answer, each before it is sent. An answer the work's transaction
 * did not store (a 4xx, a read, a dry run) is stored then, outside it (an answer already there
 * wins), or in the key's own transaction for a handler that does not take the context
 * (`KeyTransaction`). A 5xx is not stored: it may be retried.
 */
export class IdempotencyContext implements TransactionParticipant, AnswerRecorder {
  /** The answer stored with the work, once its transaction has committed. */
  committed?: StoredAnswer;
  /** Another transaction held the key: this request's 409 is not an answer to store. */
  inUse = false;
  private pending?: StoredAnswer;
  private settled = false;
  private readonly logger = new Logger('Idempotency');

  constructor(
    private readonly store: IdempotencyService,
    readonly projectId: string,
    readonly key: string,
    readonly fingerprint: string,
    /** The request's id: its answers' `requestId`, and log lines. */
    readonly requestId: string,
    /** The status of the handler's success answer. */
    private readonly successStatus: number,
    /** The key's own transaction, for a handler whose service does not store the answer with its work. */
    private readonly keyTransaction?: KeyTransaction,
  ) {}

  async begin(em: EntityManager): Promise<void> {
    this.pending = undefined;
    const earlier = await this.store.lockKey(em, this.projectId, this.key, this.fingerprint);
    if (!earlier) return;
    if (earlier.kind === 'in-use') {
      this.inUse = true;
      throw new DomainError('IDEMPOTENCY_KEY_IN_USE');
    }
    throw new EarlierAnswerFound(earlier);
  }

  async beforeCommit(em: EntityManager, result: unknown): Promise<void> {
    const answer = { status: this.successStatus, text: JSON.stringify(envelopeOf(this.requestId, result)) };
    await this.store.save(this.projectId, this.key, this.fingerprint, answer.status, answer.text, em);
    this.pending = answer;
  }

  afterCommit(): void {
    this.committed = this.pending;
  }

  async settle(answer: RecordedAnswer): Promise<RecordedAnswer> {
    if (this.settled) return answer;
    this.settled = true;
    const { store, projectId, key, fingerprint } = this;
    let sent = answer;
    try {
      const committed = this.committed;
      if (committed) {
        if (answer.status >= 500) {
          // the work committed with its answer, then the request failed: the stored answer is the truth
          sent = committed;
        } else if (answer.text !== committed.text || answer.status !== committed.status) {
          this.logger.warn(
            { reqId: this.requestId, status: answer.status },
            'The answer differs from the one stored with the work; the handler should return its work result',
          );
          await store.replace(projectId, key, fingerprint, answer.status, answer.text);
        }
      } else if (answer.status < 500 && !this.inUse) {
        await store.save(
          projectId,
          key,
          fingerprint,
          answer.status,
          answer.text,
          this.keyTransaction?.manager,
        );
      }
      await this.keyTransaction?.end(true);
    } catch (err) {
      this.logger.error(
        {
          reqId: this.requestId,
          err: err instanceof Error ? err.message : String(err),
          status: answer.status,
        },
        'Storing the idempotent answer failed',
      );
      await this.keyTransaction?.end(false).catch(() => undefined);
    }
    return sent;
  }

  abandon(): void {
    if (this.settled) return;
    this.settled = true;
    void this.keyTransaction
      ?.end(false)
      .catch((err: unknown) =>
        this.logger.error(
          { reqId: this.requestId, err: err instanceof Error ? err.message : String(err) },
          'Ending the idempotency key transaction failed',
        ),
      );
  }
}

/**
 * The key's own transaction, on a connection of its own, for a handler that does not take
 * `@IdempotencyScope()`: it takes the key's lock before the handler runs and stores the answer
 * when the request settles. No key is ever stuck, but a process killed between the work's
 * commit and the answer's would let a retry run the work again: such handlers should pass the
 * context to their work's transaction instead.
 */
export class KeyTransaction {
  private done = false;

  constructor(private readonly runner: QueryRunner) {}

  get manager(): EntityManager {
    return this.runner.manager;
  }

  /** Commits (or rolls back) and gives the connection back, once. */
  async end(commit: boolean): Promise<void> {
    if (this.done) return;
    this.done = true;
    try {
      if (this.runner.isTransactionActive) {
        if (commit) await this.runner.commitTransaction();
        else await this.runner.rollbackTransaction();
      }
    } finally {
      await this.runner.release();
    }
  }
}

/** Marks a handler whose service stores its answer in its own transaction (see `IdempotencyScope`). */
export const IDEMPOTENCY_IN_TRANSACTION = Symbol('idempotency-in-transaction');

const contextParam = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): IdempotencyContext | undefined => {
    const recorder = answerRecorderOf(ctx.switchToHttp().getRequest<Request>());
    return recorder instanceof IdempotencyContext ? recorder : undefined;
  },
);

/**
 * The request's `IdempotencyContext` as a handler parameter (`undefined` without a key). A
 * handler that takes it promises that its service passes it to the transaction of its write,
 * so that the answer is stored with the work. A handler of `@Idempotent()` without it is served
 * by a transaction of the key's own instead (`KeyTransaction`): never stuck, but the work and
 * the answer are not atomic.
 */
export const IdempotencyScope = (): ParameterDecorator => (target, propertyKey, index) => {
  if (propertyKey !== undefined) {
    const handler = (target as Record<string | symbol, object>)[propertyKey];
    Reflect.defineMetadata(IDEMPOTENCY_IN_TRANSACTION, true, handler);
  }
  contextParam()(target, propertyKey, index);
};
