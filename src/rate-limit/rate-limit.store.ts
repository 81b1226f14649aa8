/** The counter of one subject in its current window, after counting this request. */
export interface WindowHit {
  /** Requests counted in the window, this one included. */
  count: number;
  /** Seconds until the window ends (and the count starts again from zero). */
  resetSeconds: number;
}

/**
 * Fixed-window counters shared by every replica. A window starts with the first request of its
 * subject and lasts `windowSeconds`. `hit` counts one request and answers the new count in ONE
 * round trip, atomically, so that concurrent requests on several replicas are all counted.
 */
export interface RateLimitStore {
  /** `null`: the store skipped counting (Redis's circuit is open); the request goes through. */
  hit(subject: string, windowSeconds: number): Promise<WindowHit | null>;
  /** Opens the connection at start, when the store has one of its own. */
  connect?(): Promise<void>;
  /** Deletes counters whose window has ended, when the store does not expire them itself. */
  prune?(): Promise<number>;
  close?(): Promise<void>;
}

export const RATE_LIMIT_STORE = Symbol('RATE_LIMIT_STORE');

/**
 * The time a store counts windows by: the store's own clock (the database's, so that replicas
 * with drifting clocks still agree), moved forward by `shiftSeconds`. That is 0 except in tests,
 * which `advance()` it instead of sleeping through windows. Redis keeps its own time (its keys
 * expire by themselves) and does not follow the shift.
 */
export class RateLimitClock {
  private shift = 0;

  get shiftSeconds(): number {
    return this.shift;
  }

  advance(seconds: number): void {
    this.shift += seconds;
  }
}
