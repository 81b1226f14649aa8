import { AsyncLocalStorage } from 'node:async_hooks';
import DataLoader from 'dataloader';

/**
 * Gathers requests of one shape into batches, one statement or one transaction each.
 *
 * Requests `load`ed with the same shape (a string naming how they are asked, so that one
 * statement serves them all) within one turn of the event loop go to `run` together, at most
 * `maxBatchSize` at a time; alone, a request is a batch of one, sent on the next turn. `run`
 * answers each request in order: its value, or an `Error` that rejects it alone, or `AGAIN`
 * for one that this batch cannot settle (it waits for one before it in the same batch to
 * commit), which then goes into a later batch. With `inFlight`, at most that many batches run
 * at a time: the next waits and gathers the requests arriving meanwhile.
 *
 * A batch serves many callers, so `run` runs outside any caller's async context: it never joins
 * the transaction of whichever caller happened to come first.
 */
export class Batcher<T, R> {
  private readonly loaders = new Map<string, DataLoader<T, R | typeof AGAIN>>();
  private readonly gate?: Gate;
  private readonly maxBatchSize: number;
  private readonly maxRounds: number;

  constructor(
    private readonly run: (
      items: readonly T[],
      shape: string,
    ) => Promise<ReadonlyArray<R | Error | typeof AGAIN>>,
    options: BatcherOptions = {},
  ) {
    this.maxBatchSize = options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE;
    this.maxRounds = options.maxRounds ?? DEFAULT_MAX_ROUNDS;
    if (options.inFlight !== undefined) this.gate = new Gate(options.inFlight);
  }

  /** `item`'s answer, from a batch of the requests of its shape. */
  async load(shape: string, item: T): Promise<R> {
    const loader = this.loaderOf(shape);
    for (let round = 1; ; round++) {
      const result = await loader.load(item);
      if (result !== AGAIN) return result;
      // each batch settles at least its first request but for one that keeps moving; never loop on that
      if (round >= this.maxRounds) throw new Error('the batch did not settle');
    }
  }

  /**
   * `item`'s answer from a batch of its own, run at once in the caller's async context (for a
   * caller that already holds a transaction the request must join), without waiting for others.
   */
  async alone(shape: string, item: T): Promise<R> {
    for (let round = 1; ; round++) {
      const [result] = await this.run([item], shape);
      if (result instanceof Error) throw result;
      if (result !== AGAIN) return result;
      if (round >= this.maxRounds) throw new Error('the batch did not settle');
    }
  }

  private loaderOf(shape: string): DataLoader<T, R | typeof AGAIN> {
    let loader = this.loaders.get(shape);
    if (!loader) {
      const gate = this.gate;
      loader = new DataLoader<T, R | typeof AGAIN>(
        gate
          ? async (items) => {
              try {
                return await this.run(items, shape);
              } finally {
                gate.leave();
              }
            }
          : (items) => this.run(items, shape),
        {
          // every load reads: nothing is remembered between batches
          cache: false,
          maxBatchSize: this.maxBatchSize,
          batchScheduleFn: (dispatch) =>
            setImmediate(() => {
              const go = () => outsideCallers(dispatch);
              if (gate) gate.enter(go);
              else go();
            }),
        },
      );
      this.loaders.set(shape, loader);
    }
    return loader;
  }
}

export interface BatcherOptions {
  /** Requests in one batch at most (more go in further batches). */
  maxBatchSize?: number;
  /** Batches of this batcher running at a time at most; unlimited without. */
  inFlight?: number;
  /** Batches one request may go through (answered `AGAIN` by all but the last) before it fails. */
  maxRounds?: number;
}

/** An answer of a batch's `run`: this request goes into a later batch. */
export const AGAIN = Symbol('again');

const DEFAULT_MAX_BATCH_SIZE = 64;
const DEFAULT_MAX_ROUNDS = 64;

/** Runs a function in the async context of this module's loading: that of no request. */
const outsideCallers = AsyncLocalStorage.snapshot();

/** Lets at most `limit` callers in at a time; the others wait, first come first in. */
class Gate {
  private inside = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  enter(go: () => void): void {
    if (this.inside < this.limit) {
      this.inside++;
      go();
    } else this.waiting.push(go);
  }

  leave(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inside--;
  }
}
