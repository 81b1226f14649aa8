import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';

export interface PeriodicTaskOptions {
  /** Delay before the first run, in ms; `intervalMs` when unset (0: at once). */
  firstRunMs?: number;
}

/**
 * The one runner of the service's background work: the pruning of expired rows (idempotency
 * records, request nonces, customer sessions, login-failure counters, rate-limit counters, old
 * events), the webhook delivery worker and the boundary scheduler.
 *
 * Runs `task` again and again, `intervalMs` after the end of the previous run (so runs never
 * overlap), at once when a run resolves `true` (more to do right away), until `stop()`, which
 * waits for the run in progress. A failure is logged as a warning and the next run comes as
 * planned. The timer never keeps the process alive.
 */
export class PeriodicTask {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private stopped = true;
  private readonly logger: Logger;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    /** Resolves `true` when there is more to do right away; any other result waits `intervalMs`. */
    private readonly task: () => Promise<unknown>,
    private readonly options: PeriodicTaskOptions = {},
  ) {
    this.logger = new Logger(name);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(this.options.firstRunMs ?? this.intervalMs);
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
      more = (await this.task()) === true;
    } catch (error) {
      this.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        `${this.name} failed`,
      );
    }
    this.schedule(more ? 0 : this.intervalMs);
  }
}

/**
 * A provider whose work is one `PeriodicTask`: started when the application has booted (when
 * `enabled`), stopped, and its run in progress waited for, when it shuts down. The subclass says
 * what one run does (`runOnce`, resolving `true` when more is due at once).
 */
export abstract class PeriodicWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly loop: PeriodicTask;

  protected constructor(
    name: string,
    intervalMs: number,
    private readonly enabled = true,
    options: PeriodicTaskOptions = { firstRunMs: 0 },
  ) {
    this.loop = new PeriodicTask(name, intervalMs, () => this.runOnce(), options);
  }

  abstract runOnce(): Promise<unknown>;

  onApplicationBootstrap(): void {
    if (this.enabled) this.loop.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.loop.stop();
  }
}
