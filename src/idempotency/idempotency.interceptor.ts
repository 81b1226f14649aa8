import { CallHandler, ExecutionContext, Injectable, Logger, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import { defer, mergeMap, Observable, of, throwError } from 'rxjs';
import type { AuthenticatedRequest } from '../auth/caller';
import { DomainError } from '../common/errors/domain-error';
import { isJsonContentType } from '../common/http/body-parser';
import { requestIdOf } from '../common/http/request-id';
import { IDEMPOTENCY_KEY_FORMAT } from './idempotency-fingerprint';
import { IdempotencyService } from './idempotency.service';
import { API_PREFIXES } from '../common/routes/api-prefixes';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'DELETE']);

type Send = Response['send'];

function isPrivateRoute(req: AuthenticatedRequest): boolean {
  const path = req.originalUrl.split('?', 1)[0];
  return path === API_PREFIXES.private || path.startsWith(`${API_PREFIXES.private}/`);
}

/**
 * `Idempotency-Key` on private POST, PATCH and DELETE (product.md 7).
 *
 * Put on each private POST, PATCH and DELETE handler by `@Idempotent()`: it runs after the
 * guards, so the caller's project is known and a rate-limited request never claims a key.
 *
 * The stored answer is taken at `res.send`, the one place every JSON answer passes through,
 * whoever produced it: Nest's reply of the result, enveloped by `EnvelopeExpressAdapter` (`res.json` → `res.send`) or the
 * global exception filter's error envelope. For a claimed request `res.send` is replaced, for
 * this response only, by one that first writes the record (or deletes the claim for a 5xx) and
 * only then hands the very same bytes to Express. So the record is final in the database before
 * the client can read a single byte of the answer: a retry sent right after the answer arrives
 * is always a replay, never a 409. Nest does not wait for the bytes to be written, so deferring
 * them is invisible to it.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Idempotency');

  constructor(private readonly store: IdempotencyService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const http = context.switchToHttp();
    const req = http.getRequest<AuthenticatedRequest>();
    const res = http.getResponse<Response>();
    const caller = req.caller;
    if (!caller || caller.kind !== 'private' || !IDEMPOTENT_METHODS.has(req.method) || !isPrivateRoute(req)) {
      return next.handle();
    }
    const key = req.headers['idempotency-key'];
    if (key === undefined) return next.handle();
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY_FORMAT.test(key)) {
      const message = `${IDEMPOTENCY_KEY_HEADER} must be 1 to 255 printable ASCII characters`;
      return throwError(
        () => new DomainError('VALIDATION_FAILED', message, [{ field: IDEMPOTENCY_KEY_HEADER, message }]),
      );
    }

    const projectId = caller.project.id;
    const fingerprint = this.store.fingerprint(req.method, req.originalUrl, req.body);
    return defer(() => this.store.claim(projectId, key, fingerprint)).pipe(
      mergeMap((outcome) => {
        switch (outcome.kind) {
          case 'claimed':
            this.recordAnswer(res, projectId, key, fingerprint);
            return next.handle();
          case 'replay':
            this.replayAnswer(res, outcome.status, outcome.body);
            // Nest replies with this null through `res.send()`, which now sends the stored answer.
            return of(null);
          case 'in-use':
            return throwError(() => new DomainError('IDEMPOTENCY_KEY_IN_USE'));
          case 'reused':
            return throwError(() => new DomainError('IDEMPOTENCY_KEY_REUSED'));
        }
      }),
    );
  }

  /** Makes the first `res.send` of this response store the answer before it is sent. */
  private recordAnswer(res: Response, projectId: string, key: string, fingerprint: string): void {
    const { store, logger } = this;
    const reqId = requestIdOf(res.req);
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
      const status = res.statusCode;
      const text =
        typeof body === 'string' && isJsonContentType(res.getHeader('Content-Type')) ? body : undefined;
      const write =
        status < 500 && text !== undefined
          ? store.complete(projectId, key, fingerprint, status, text)
          : // A 5xx may be retried; an answer that is not JSON is not kept either.
            store.release(projectId, key, fingerprint);
      write
        .catch((err: unknown) => {
          logger.error(
            { reqId, err: err instanceof Error ? err.message : String(err), status },
            'Storing the idempotent answer failed',
          );
          // Better a key that may be retried than one stuck "in use" for 24 hours.
          return store.release(projectId, key, fingerprint).catch(() => undefined);
        })
        .finally(() => {
          try {
            originalSend.call(res, body);
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

    // An answer that never went through `res.send` (a stream, `res.end()`): nothing to store,
    // but the key must not stay "in use" for 24 hours.
    res.once('finish', () => {
      if (settled) return;
      settled = true;
      res.send = originalSend;
      store.release(projectId, key, fingerprint).catch((err: unknown) => {
        logger.error(
          { reqId, err: err instanceof Error ? err.message : String(err) },
          'Releasing an idempotency key failed',
        );
      });
    });
  }

  /** Makes the next `res.send` of this response send the stored answer instead. */
  private replayAnswer(res: Response, status: number, stored: unknown): void {
    const originalSend: Send = res.send;
    res.send = ((): Response => {
      res.send = originalSend;
      res.status(status);
      res.setHeader(IDEMPOTENT_REPLAYED_HEADER, 'true');
      res.setHeader('Content-Type', 'application/json');
      // Records are written as the exact JSON text (a jsonb string); anything else is sent as JSON.
      return originalSend.call(res, typeof stored === 'string' ? stored : JSON.stringify(stored ?? null));
    }) as Send;
  }
}
