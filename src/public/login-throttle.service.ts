import { Injectable } from '@nestjs/common';
import { FAILURE_WINDOW_SECONDS, FailureCounter, FailureCounters } from '../auth/failure-counters';
import { sha256Hex } from '../common/crypto/sha256';

/**
 * Slowing down password guessing on the public login (docs/public-api.md#login-throttling) without handing anyone a
 * way to lock a customer out:
 * - per (customer, client address): LOGIN_FREE_FAILURES_PER_ADDRESS failures are free; after
 *   that each attempt waits LOGIN_DELAY_BASE_SECONDS, doubled with every further failure (at most
 *   15 minutes), until 15 minutes pass without a failure;
 * - per customer, from any address: at most LOGIN_MAX_FAILURES_PER_IDENTIFIER failures in 15
 *   minutes, a looser bound against guessing from many addresses, so that the owner, from
 *   another address, still gets in after a few addresses have failed;
 * - per client address, every project: at most LOGIN_MAX_FAILURES_PER_ADDRESS failures in 15
 *   minutes.
 * Beyond any of them the login answers 429 RATE_LIMITED with `Retry-After`, before any password
 * is checked. "Customer" is what the lookup resolved the identifier to (every identifier and
 * spelling of one customer shares its counters); an identifier that resolves to no one is
 * counted as the identifier.
 */
export const LOGIN_FAILURE_WINDOW_SECONDS = FAILURE_WINDOW_SECONDS;
export const LOGIN_FREE_FAILURES_PER_ADDRESS = 5;
export const LOGIN_DELAY_BASE_SECONDS = 15;
export const LOGIN_MAX_FAILURES_PER_IDENTIFIER = 50;
export const LOGIN_MAX_FAILURES_PER_ADDRESS = 20;

export interface LoginAttempt {
  /** (customer, address): cleared by a successful login. */
  pairKey: string;
  identifierKey: string;
  addressKey: string;
}

@Injectable()
export class LoginThrottle {
  constructor(private readonly counters: FailureCounters) {}

  /**
   * `subject`: `customer:<id>` when the identifier resolved to a customer, otherwise the
   * identifier as the lookup compares it.
   */
  attemptFor(projectId: string, subject: string, address: string | undefined): LoginAttempt {
    const ip = address ?? 'unknown';
    return {
      pairKey: `lp:${sha256Hex(`${projectId}\u0000${subject}\u0000${ip}`)}`,
      identifierKey: `li:${sha256Hex(`${projectId}\u0000${subject}`)}`,
      addressKey: `ip:${ip}`.slice(0, 128),
    };
  }

  /** Counts the attempt on its three counters, or throws RATE_LIMITED and counts nothing. */
  async begin(attempt: LoginAttempt): Promise<void> {
    const counters: FailureCounter[] = [
      {
        key: attempt.pairKey,
        max: LOGIN_FREE_FAILURES_PER_ADDRESS,
        growing: { baseDelaySeconds: LOGIN_DELAY_BASE_SECONDS },
      },
      { key: attempt.identifierKey, max: LOGIN_MAX_FAILURES_PER_IDENTIFIER },
      { key: attempt.addressKey, max: LOGIN_MAX_FAILURES_PER_ADDRESS },
    ];
    await this.counters.begin(counters);
  }

  /** The password was right: this (customer, address) starts afresh; the others get their count back. */
  async succeeded(attempt: LoginAttempt): Promise<void> {
    await this.counters.clear(attempt.pairKey);
    await this.counters.giveBack([attempt.identifierKey, attempt.addressKey]);
  }

  /** The password was right but the customer may not log in: not a failure, nothing cleared. */
  async notAFailure(attempt: LoginAttempt): Promise<void> {
    await this.counters.giveBack([attempt.pairKey, attempt.identifierKey, attempt.addressKey]);
  }

  pruneExpired(): Promise<number> {
    return this.counters.pruneExpired();
  }
}
