import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { sha256Hex } from '../common/crypto/sha256';
import { DomainError } from '../common/errors/domain-error';
import type { CustomerRefDto } from '../customers/dto/customer.dto';

/**
 * Slowing down password guessing on the public login (product.md 8), in fixed windows that
 * start with the first failure:
 * - at most LOGIN_MAX_FAILURES_PER_IDENTIFIER failed attempts per (project, identifier) and
 * - at most LOGIN_MAX_FAILURES_PER_ADDRESS per client address (`req.ip`, every project),
 * within LOGIN_FAILURE_WINDOW_SECONDS. Beyond that the login answers 429 RATE_LIMITED, with
 * `Retry-After` = seconds until the window ends, before any password is checked.
 * A successful login clears the identifier's counter.
 */
export const LOGIN_FAILURE_WINDOW_SECONDS = 15 * 60;
export const LOGIN_MAX_FAILURES_PER_IDENTIFIER = 5;
export const LOGIN_MAX_FAILURES_PER_ADDRESS = 20;

export interface LoginAttempt {
  identifierKey: string;
  addressKey: string;
}

interface CounterRow {
  key: string;
  failures: number;
  retry_after: number;
}

/**
 * The counters live in `login_failures` so that replicas share them. An attempt is counted
 * *before* its password is checked (one atomic upsert of both counters), so a burst of
 * parallel guesses cannot slip through between a check and its count; an attempt that turns
 * out not to be a failure (success, disabled customer, or refused with 429) is given back.
 */
@Injectable()
export class LoginThrottle {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  attemptFor(projectId: string, identifier: CustomerRefDto, address: string | undefined): LoginAttempt {
    // usernames are compared case-insensitively, other identifiers exactly (as the lookup does)
    const value = identifier.type === 'username' ? identifier.value.toLowerCase() : identifier.value;
    return {
      identifierKey: `id:${projectId}:${sha256Hex(`${identifier.type}\u0000${value}`)}`,
      addressKey: `ip:${address ?? 'unknown'}`.slice(0, 128),
    };
  }

  /** Counts the attempt against both limits; throws RATE_LIMITED (and takes the count back) when either is exceeded. */
  async begin(attempt: LoginAttempt): Promise<void> {
    const limits = new Map([
      [attempt.identifierKey, LOGIN_MAX_FAILURES_PER_IDENTIFIER],
      [attempt.addressKey, LOGIN_MAX_FAILURES_PER_ADDRESS],
    ]);
    // keys in a fixed order, so that two concurrent upserts of the same pair cannot deadlock
    const keys = [...limits.keys()].sort();
    const rows: CounterRow[] = await this.dataSource.query(
      `INSERT INTO login_failures AS f (key, window_start, failures)
       SELECT k, now(), 1 FROM unnest($1::varchar[]) AS k
       ON CONFLICT (key) DO UPDATE SET
         window_start = CASE WHEN f.window_start <= now() - make_interval(secs => $2) THEN now() ELSE f.window_start END,
         failures     = CASE WHEN f.window_start <= now() - make_interval(secs => $2) THEN 1 ELSE f.failures + 1 END
       RETURNING key, failures,
         extract(epoch FROM window_start + make_interval(secs => $2) - now())::float8 AS retry_after`,
      [keys, LOGIN_FAILURE_WINDOW_SECONDS],
    );
    const blocking = rows.filter((r) => r.failures > limits.get(r.key)!);
    if (blocking.length === 0) return;
    await this.giveBack([attempt.identifierKey, attempt.addressKey]);
    throw DomainError.rateLimited(Math.max(...blocking.map((r) => r.retry_after)));
  }

  /** The password was right: the identifier starts afresh, the address gets its attempt back. */
  async succeeded(attempt: LoginAttempt): Promise<void> {
    await this.dataSource.query('DELETE FROM login_failures WHERE key = $1', [attempt.identifierKey]);
    await this.giveBack([attempt.addressKey]);
  }

  /** The password was right but the customer may not log in: not a failure, nothing cleared. */
  async notAFailure(attempt: LoginAttempt): Promise<void> {
    await this.giveBack([attempt.identifierKey, attempt.addressKey]);
  }

  /** Deletes counters whose window has ended (called by the sessions' housekeeping). */
  async pruneExpired(): Promise<number> {
    const [{ n }]: Array<{ n: number }> = await this.dataSource.query(
      `WITH gone AS (DELETE FROM login_failures WHERE window_start <= now() - make_interval(secs => $1) RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [LOGIN_FAILURE_WINDOW_SECONDS],
    );
    return n;
  }

  private async giveBack(keys: string[]): Promise<void> {
    await this.dataSource.query(
      'UPDATE login_failures SET failures = greatest(failures - 1, 0) WHERE key = ANY($1::varchar[])',
      [[...keys].sort()],
    );
  }
}
