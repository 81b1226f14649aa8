import { Logger } from '@nestjs/common';

/**
 * Runs `tick` again and again, `intervalMs` after the end of the previous run (at once when a
 * run says there is more to do), until `stop()`, which waits for the run in progress. A failure
 * is logged and the next run comes as planned. The timer never keeps the process alive.
 */
export class BackgroundLoop {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  private readonly logger: Logger;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    /** Resolves true when there is more to do right away. */
    private readonly tick: () => Promise<boolean>,
  ) {
    this.logger = new Logger(name);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce().finally(() => (this.running = undefined));
    }, delay);
    this.timer.unref();
  }

  private async runOnce(): Promise<void> {
    let more = false;
    try {
      more = await this.tick();
    } catch (error) {
      this.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        `${this.name} failed`,
      );
    }
    this.schedule(more ? 0 : this.intervalMs);
  }
}
