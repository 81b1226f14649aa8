import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { EntityManager } from 'typeorm';
import { DomainError } from '../common/errors/domain-error';
import { ReplyInstead } from '../common/http/reply-instead';
import type { TransactionParticipant } from '../database/transaction';
import type { EarlierAnswer, IdempotencyService } from './idempotency.service';

/** The answer of a request as stored and sent: status and the exact JSON text. */
export interface StoredAnswer {
  status: number;
  text: string;
}

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/**
 * An earlier request with the key has answered: thrown by `IdempotencyGuard` before the handler
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
    // `res.send` may be the guard's, which then records nothing more (see `IdempotencyGuard`).
    res.send(typeof body === 'string' ? body : JSON.stringify(body ?? null));
    return undefined;
  }
}

/**
 * The `Idempotency-Key` of one request, made by `IdempotencyGuard` and handed to the
 * handler by `@IdempotencyScope()`. The service passes it to the transaction of its write:
 *
 *     inTransaction(this.dataSource, work, { participant: idem })
 *
 * which then (1) takes the key's transaction-scoped lock, so that a duplicate running at the
 * same time, on any replica, gets 409 IDEMPOTENCY_KEY_IN_USE; (2) answers from an earlier
 * finished request instead of running the work; (3) stores this request's answer, rendered from
 * the work's result, in the same transaction as the work. So the work and its answer commit
 * together or not at all: a request killed anywhere leaves its answer or nothing.
 *
 * The work's result must be the `data` of the answer (what the handler returns): the one
 * transaction of the request that gets the context is its last write.
 */
export class IdempotencyContext implements TransactionParticipant {
  /** The answer stored with the work, once its transaction has committed. */
  committed?: StoredAnswer;
  /** Another transaction held the key: this request's 409 is not an answer to store. */
  inUse = false;
  private pending?: StoredAnswer;

  constructor(
    private readonly store: IdempotencyService,
    readonly projectId: string,
    readonly key: string,
    readonly fingerprint: string,
    private readonly render: (result: unknown) => StoredAnswer,
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
    const answer = this.render(result);
    await this.store.save(this.projectId, this.key, this.fingerprint, answer.status, answer.text, em);
    this.pending = answer;
  }

  afterCommit(): void {
    this.committed = this.pending;
  }
}

/** Where the guard leaves the context on the request. */
export const IDEMPOTENCY_CONTEXT = Symbol('idempotency-context');
/** Marks a handler whose service stores its answer in its own transaction (see `IdempotencyScope`). */
export const IDEMPOTENCY_IN_TRANSACTION = Symbol('idempotency-in-transaction');

type RequestWithContext = Request & { [IDEMPOTENCY_CONTEXT]?: IdempotencyContext };

export const attachIdempotencyContext = (req: Request, context: IdempotencyContext): void => {
  (req as RequestWithContext)[IDEMPOTENCY_CONTEXT] = context;
};

const contextParam = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): IdempotencyContext | undefined =>
    (ctx.switchToHttp().getRequest<RequestWithContext>() as RequestWithContext)[IDEMPOTENCY_CONTEXT],
);

/**
 * The request's `IdempotencyContext` as a handler parameter (`undefined` without a key). A
 * handler that takes it promises that its service passes it to the transaction of its write,
 * so that the answer is stored with the work. A handler of `@Idempotent()` without it is served
 * by a guard transaction of the guard's own instead (see `IdempotencyGuard`):
 * never stuck, but the work and the answer are not atomic.
 */
export const IdempotencyScope = (): ParameterDecorator => (target, propertyKey, index) => {
  if (propertyKey !== undefined) {
    const handler = (target as Record<string | symbol, object>)[propertyKey];
    Reflect.defineMetadata(IDEMPOTENCY_IN_TRANSACTION, true, handler);
  }
  contextParam()(target, propertyKey, index);
};
