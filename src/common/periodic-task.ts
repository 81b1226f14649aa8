import { Logger } from '@nestjs/common';

/**
 * Runs `task` every `intervalMs` in the background (the timer never keeps the process alive);
 * a failure is logged as a warning and the next run comes as planned. Used for the pruning of
 * expired rows (idempotency records, nonces, sessions).
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private readonly logger: Logger;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly task: () => Promise<unknown>,
  ) {
    this.logger = new Logger(name);
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.runQuietly(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async runQuietly(): Promise<void> {
    try {
      await this.task();
    } catch (error) {
      this.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        `${this.name} failed`,
      );
    }
  }
}
