import { PeriodicTask, PeriodicWorker } from './periodic-task';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PeriodicTask', () => {
  it('runs again and again; stop() waits for the run in progress, and none follows', async () => {
    let runs = 0;
    let inProgress = false;
    let finishedAfterStop = false;
    const loop = new PeriodicTask('test', 20, async () => {
      inProgress = true;
      runs++;
      await sleep(30);
      inProgress = false;
      return runs < 3; // the first two runs say there is more
    });
    loop.start();
    while (runs < 3) await sleep(5);
    const stopping = loop.stop().then(() => (finishedAfterStop = !inProgress));
    await stopping;
    expect(finishedAfterStop).toBe(true);
    const after = runs;
    await sleep(80);
    expect(runs).toBe(after);
  });

  it('keeps running after a failed run', async () => {
    let runs = 0;
    const loop = new PeriodicTask('test', 5, () => {
      runs++;
      return Promise.reject(new Error('boom'));
    });
    loop.start();
    while (runs < 3) await sleep(5); // would hang (and time out) if a failure stopped the loop
    await loop.stop();
  });

  it('a PeriodicWorker runs from bootstrap (at once) until shutdown, and not at all when disabled', async () => {
    class Counter extends PeriodicWorker {
      runs = 0;
      constructor(enabled: boolean) {
        super('test', 5, enabled);
      }
      runOnce(): Promise<boolean> {
        this.runs++;
        return Promise.resolve(false);
      }
    }
    const on = new Counter(true);
    const off = new Counter(false);
    on.onApplicationBootstrap();
    off.onApplicationBootstrap();
    while (on.runs < 2) await sleep(5);
    await Promise.all([on.onModuleDestroy(), off.onModuleDestroy()]);
    const after = on.runs;
    await sleep(30);
    expect(on.runs).toBe(after);
    expect(off.runs).toBe(0);
  });
});
