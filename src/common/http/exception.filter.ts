import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DomainError } from '../errors/domain-error';
import { ERROR_MESSAGES, ErrorCode, ErrorDetail } from '../errors/error-codes';
import { ApiErrorResponse } from '../errors/error-response';
import { answerRecorderOf } from './answer-recorder';
import { bodyParserErrorOf } from './body-parser';
import { ReplyInstead } from './reply-instead';
import { requestIdOf } from './request-id';
import { MAX_ERROR_DETAILS } from './validation';
import { isDatabaseUnavailable } from '../../database/pg-errors';

/** Framework errors (no route, a guard or pipe of a library) mapped onto our codes by status. */
const CODE_BY_STATUS: Record<number, ErrorCode> = {
  400: 'VALIDATION_FAILED',
  404: 'ROUTE_NOT_FOUND',
  405: 'ROUTE_NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE',
};

/** Longest `field` and `message` of a detail: a field named by a 100,000-character key is not echoed whole. */
const MAX_FIELD_LENGTH = 128;
const MAX_MESSAGE_LENGTH = 300;
const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}...` : text);
const shortDetail = (d: ErrorDetail): ErrorDetail => ({
  // the code's own extra fields (QUOTA_EXCEEDED's `remaining` and `resetsAt`) stay as they are
  ...d,
  field: cut(d.field, MAX_FIELD_LENGTH),
  message: cut(d.message, MAX_MESSAGE_LENGTH),
});
/** `Retry-After` of a 503 for an unavailable database: about the time a restart or a failover takes. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;
const DATABASE_UNAVAILABLE_MESSAGE = 'The database is unavailable or too slow; retry later.';

/**
 * Every error leaves through here: domain errors with their own code and status, errors of the
 * JSON body parser by their kind, framework errors by status, and anything else as a bare 500
 * INTERNAL_ERROR (logged with its stack, never shown to the caller).
 *
 * A keyed request's error answer (`Idempotency-Key`) is settled with its recorder before it is
 * sent (see `AnswerRecorder`): kept when it is one to keep, and a retry sent right after the
 * answer arrives finds it.
 */
@Catch()
export class GlobalExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const requestId = requestIdOf(req);
    let recorder = answerRecorderOf(req);
    if (exception instanceof ReplyInstead) {
      // an answer given instead of the handler's (a replay): nothing more to keep
      recorder?.abandon();
      recorder = undefined;
      if (!res.headersSent) {
        const instead = exception.respond(res);
        if (!instead) return;
        exception = instead;
      }
    }
    const error = this.toDomainError(exception, requestId);

    const body: ApiErrorResponse = {
      ok: false,
      requestId,
      error: {
        code: error.code,
        message: cut(error.message, MAX_MESSAGE_LENGTH),
        ...(error.details ? { details: error.details.slice(0, MAX_ERROR_DETAILS).map(shortDetail) } : {}),
      },
    };
    if (res.headersSent) return;
    if (!recorder) return this.send(res, error, body);
    const text = JSON.stringify(body);
    void recorder
      .settle({ status: error.status, text })
      .then((answer) => {
        if (res.headersSent) return;
        if (answer.text === text && answer.status === error.status) return this.send(res, error, body);
        res.status(answer.status).type('application/json').send(answer.text);
      })
      .catch((failure: unknown) => {
        this.logger.error(
          { reqId: requestId, err: failure instanceof Error ? failure.message : String(failure) },
          'Sending the error answer failed',
        );
        res.destroy();
      });
  }

  private send(res: Response, error: DomainError, body: ApiErrorResponse): void {
    if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
    res.status(error.status).json(body);
  }

  private toDomainError(exception: unknown, requestId: string): DomainError {
    if (exception instanceof DomainError) return exception;
    const bodyError = bodyParserErrorOf(exception);
    if (bodyError) return bodyError;
    if (isDatabaseUnavailable(exception)) {
      this.logger.warn(
        { reqId: requestId, err: exception instanceof Error ? exception.message : String(exception) },
        'Database unavailable',
      );
      const error = new DomainError('SERVICE_UNAVAILABLE', DATABASE_UNAVAILABLE_MESSAGE);
      error.retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS;
      return error;
    }
    if (exception instanceof HttpException) {
      const code = CODE_BY_STATUS[exception.getStatus()];
      if (code) {
        const message = code === 'ROUTE_NOT_FOUND' ? ERROR_MESSAGES.ROUTE_NOT_FOUND : exception.message;
        return new DomainError(code, message);
      }
      if (exception.getStatus() < 500) {
        this.logger.warn(
          { reqId: requestId, status: exception.getStatus(), msg: exception.message },
          'Unmapped HTTP error',
        );
      }
    }
    this.logger.error(
      {
        reqId: requestId,
        err:
          exception instanceof Error
            ? { name: exception.name, message: exception.message, stack: exception.stack }
            : String(exception),
      },
      'Unhandled error',
    );
    return new DomainError('INTERNAL_ERROR');
  }
}
