import { AsyncLocalStorage } from 'node:async_hooks';
import { AGAIN, Batcher } from './batcher';

/** A promise and its resolve, to hold a batch open. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('Batcher', () => {
  it('gathers the loads of one shape in one turn into one batch, in order; each shape its own', async () => {
    const batches: Array<{ shape: string; items: number[] }> = [];
    const batcher = new Batcher<number, string>(async (items, shape) => {
      batches.push({ shape, items: [...items] });
      return items.map((n) => `${shape}${n}`);
    });
    const answers = await Promise.all([
      batcher.load('a', 1),
      batcher.load('b', 2),
      batcher.load('a', 3),
      batcher.load('a', 1),
    ]);
    expect(answers).toEqual(['a1', 'b2', 'a3', 'a1']);
    expect(batches).toEqual([
      { shape: 'a', items: [1, 3, 1] },
      { shape: 'b', items: [2] },
    ]);
    // nothing is remembered: the same load reads again
    expect(await batcher.load('a', 1)).toBe('a1');
    expect(batches).toHaveLength(3);
  });

  it('sends at most maxBatchSize loads a batch', async () => {
    const sizes: number[] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        sizes.push(items.length);
        return items.map((n) => n * 2);
      },
      { maxBatchSize: 3 },
    );
    const answers = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((n) => batcher.load('x', n)));
    expect(answers).toEqual([2, 4, 6, 8, 10, 12, 14]);
    expect(sizes).toEqual([3, 3, 1]);
  });

  it('an Error answers its load alone; a batch that throws rejects all of its loads', async () => {
    const batcher = new Batcher<number, number>(async (items) => {
      if (items.includes(0)) throw new Error('the batch failed');
      return items.map((n) => (n < 0 ? new Error(`refused ${n}`) : n));
    });
    const settled = await Promise.allSettled([
      batcher.load('x', 1),
      batcher.load('x', -1),
      batcher.load('x', 2),
    ]);
    expect(settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual([
      1,
      'refused -1',
      2,
    ]);
    const failed = await Promise.allSettled([batcher.load('x', 3), batcher.load('x', 0)]);
    expect(failed.map((s) => s.status === 'rejected' && (s.reason as Error).message)).toEqual([
      'the batch failed',
      'the batch failed',
    ]);
  });

  it('a load answered AGAIN goes into a later batch, and fails after maxRounds', async () => {
    const batches: string[][] = [];
    const seen = new Set<string>();
    const batcher = new Batcher<string, string>(
      async (items) => {
        batches.push([...items]);
        const inBatch = new Set<string>();
        return items.map((item) => {
          if (item === 'never') return AGAIN;
          // the second of a pair waits for the first to be settled
          if (inBatch.has(item)) return AGAIN;
          inBatch.add(item);
          const answer = seen.has(item) ? `${item} again` : item;
          seen.add(item);
          return answer;
        });
      },
      { maxRounds: 3 },
    );
    expect(
      await Promise.all([batcher.load('x', 'a'), batcher.load('x', 'a'), batcher.load('x', 'b')]),
    ).toEqual(['a', 'a again', 'b']);
    expect(batches).toEqual([['a', 'a', 'b'], ['a']]);
    await expect(batcher.load('x', 'never')).rejects.toThrow('the batch did not settle');
    expect(batches.slice(2)).toEqual([['never'], ['never'], ['never']]);
  });

  it('with inFlight, runs at most that many batches at a time; the next gathers what arrives meanwhile', async () => {
    const hold = deferred();
    const batches: number[][] = [];
    let running = 0;
    let most = 0;
    const batcher = new Batcher<number, number>(
      async (items) => {
        running++;
        most = Math.max(most, running);
        batches.push([...items]);
        if (items.includes(1)) await hold.promise;
        running--;
        return [...items];
      },
      { inFlight: 1 },
    );
    const first = batcher.load('x', 1);
    await turn();
    await turn();
    const later = [batcher.load('x', 2)];
    await turn();
    later.push(batcher.load('y', 3), batcher.load('x', 4));
    await turn();
    // the first batch holds the only place: the others wait, gathering
    expect(batches).toEqual([[1]]);
    hold.resolve();
    expect(await Promise.all([first, ...later])).toEqual([1, 2, 3, 4]);
    expect(most).toBe(1);
    expect(batches.slice(1).sort((a, b) => a[0] - b[0])).toEqual([[2, 4], [3]]);
  });

  it("runs a batch outside its callers' async context; alone runs at once in the caller's", async () => {
    const context = new AsyncLocalStorage<string>();
    const seen: Array<string | undefined> = [];
    const batcher = new Batcher<number, number>(async (items) => {
      seen.push(context.getStore());
      return [...items];
    });
    await context.run('caller', () => batcher.load('x', 1));
    expect(seen).toEqual([undefined]);
    expect(await context.run('caller', () => batcher.alone('x', 2))).toBe(2);
    expect(seen).toEqual([undefined, 'caller']);
  });

  it('alone answers an Error by throwing it and retries AGAIN up to maxRounds', async () => {
    let calls = 0;
    const batcher = new Batcher<number, number>(
      async (items) => {
        calls++;
        return items.map((n) => (n < 0 ? new Error('refused') : calls < 2 ? AGAIN : n));
      },
      { maxRounds: 2 },
    );
    expect(await batcher.alone('x', 5)).toBe(5);
    expect(calls).toBe(2);
    await expect(batcher.alone('x', -1)).rejects.toThrow('refused');
  });
});
