import { ERROR_MESSAGES, ERROR_STATUS, ErrorCode, ErrorDetail } from './error-codes';

/**
 * The only error a service or a pure rule throws on purpose. It carries a code from the one
 * table in `error-codes.ts`; the HTTP layer decides the status from that code.
 */
export class DomainError extends Error {
  /** For RATE_LIMITED: sent as the `Retry-After` header. */
  retryAfterSeconds?: number;

  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message ?? ERROR_MESSAGES[code]);
    this.name = 'DomainError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  static rateLimited(retryAfterSeconds: number): DomainError {
    const error = new DomainError('RATE_LIMITED');
    error.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds));
    return error;
  }
}
