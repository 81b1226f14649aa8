import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { Transactional, Transactions } from '../database/transactional';
import { AuthRepository, CounterRow } from './auth.repository';

/** Length of a counter's window: 15 minutes. */
export const FAILURE_WINDOW_SECONDS = 15 * 60;

/**
 * One counter of failed attempts (table `login_failures`, shared by every replica):
 * - `fixed`: at most `max` failures in a window of FAILURE_WINDOW_SECONDS that starts with the
 *   first failure; past it, attempts are refused until the window ends.
 * - `growing`: `max` failures are free; after that each attempt must wait `baseDelaySeconds`,
 *   doubled with every further failure (at most the window), counted from the last failure. The
 *   count starts again after a window without failures.
 */
export interface FailureCounter {
  key: string;
  max: number;
  growing?: { baseDelaySeconds: number };
}

const isExpired = (counter: FailureCounter, row: CounterRow) =>
  (counter.growing ? row.since_last : row.since_start) >= FAILURE_WINDOW_SECONDS;

/** Seconds before `counter` takes another attempt (0: now). */
function waitFor(counter: FailureCounter, row: CounterRow): number {
  if (isExpired(counter, row) || row.failures < counter.max) return 0;
  const wait = counter.growing
    ? Math.min(counter.growing.baseDelaySeconds * 2 ** (row.failures - counter.max), FAILURE_WINDOW_SECONDS) -
      row.since_last
    : FAILURE_WINDOW_SECONDS - row.since_start;
  return Math.max(0, wait);
}

/**
 * Counters of failed attempts, for the public login (`LoginThrottle`) and the admin token
 * (`AdminGuard`). An attempt is counted *before* it is checked, under row locks, in one short
 * transaction: parallel attempts queue on the rows and each sees the ones before it, so a burst
 * cannot slip through between a check and its count. An attempt that turns out not to be a
 * failure is given back (`giveBack`) or clears its counter (`clear`).
 */
@Injectable()
export class FailureCounters {
  constructor(
    private readonly repository: AuthRepository,
    private readonly transactions: Transactions,
  ) {}

  /**
   * Counts one attempt on every counter, or throws 429 RATE_LIMITED (with Retry-After) and counts
   * nothing. One unit of work: concurrent first inserts of the same keys can still deadlock, and
   * it is then tried again.
   */
  @Transactional()
  async begin(counters: FailureCounter[]): Promise<void> {
    const byKey = new Map(counters.map((c) => [c.key, c]));
    const keys = [...byKey.keys()].sort(); // one lock order for every transaction: no deadlock
    await this.repository.insertMissingCounters(keys);
    const rows = await this.repository.lockCounters(keys);
    let retryAfter = 0;
    const next = rows.map((row) => {
      const counter = byKey.get(row.key)!;
      const expired = isExpired(counter, row);
      retryAfter = Math.max(retryAfter, waitFor(counter, row));
      return { key: row.key, failures: (expired ? 0 : row.failures) + 1, reset: expired };
    });
    if (retryAfter > 0) throw DomainError.rateLimited(retryAfter);
    await this.repository.writeCounts(next);
  }

  /** Throws 429 RATE_LIMITED when `counter` refuses attempts now; counts nothing and locks nothing. */
  async assertOpen(counter: FailureCounter): Promise<void> {
    const row = await this.repository.readCounter(counter.key);
    const wait = row ? waitFor(counter, row) : 0;
    if (wait > 0) throw DomainError.rateLimited(wait);
  }

  /**
   * The attempt was not a failure: one count back on each counter, the rows locked in key order
   * as `begin` locks them, and retried like `begin` if PostgreSQL still picks it as a deadlock's
   * victim (the expired counters' prune deletes in the order it finds them).
   */
  @Transactional()
  async giveBack(keys: string[]): Promise<void> {
    if (keys.length === 0) return;
    await this.repository.giveBack([...keys].sort());
  }

  /** Starts a counter afresh (a successful login clears its identifier-and-address counter). */
  async clear(key: string): Promise<void> {
    await this.repository.deleteCounter(key);
  }

  /** Deletes counters with no failure in the last window (called by the sessions' housekeeping). */
  pruneExpired(): Promise<number> {
    return this.repository.pruneCounters(FAILURE_WINDOW_SECONDS);
  }
}
