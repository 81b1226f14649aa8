import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import type { RateLimitStore, WindowHit } from './rate-limit.store';

/**
 * Counters in Redis, under `<REDIS_KEY_PREFIX>rl:<subject>`: in one MULTI (one round trip),
 * `SET key 0 PX <window> NX` opens a window when none is running, `INCR` counts, `PTTL` tells
 * when the window ends. Redis expires the keys itself.
 *
 * Commands fail fast instead of queueing while Redis is unreachable (the limiter then lets
 * requests through, see `RateLimiter`); the client reconnects in the background.
 */
export interface CircuitEvents {
  /** The circuit opened: Redis failed and is skipped for `openMs`. */
  opened?(): void;
  /** A hit was not counted because the circuit is open. */
  skipped?(): void;
}

export class RedisRateLimitStore implements RateLimitStore {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: Redis;
  /** Until when Redis is skipped (ms since the epoch); 0 = closed. */
  private openUntil = 0;
  /** A probe (the first hit after the pause) is running: the others keep skipping until it answers. */
  private probing = false;

  constructor(
    url: string,
    private readonly prefix: string,
    /** After a failure, how long Redis is skipped (`RATE_LIMIT_REDIS_PAUSE_MS`); 0 = never skipped. */
    private readonly openMs = 0,
    private readonly events: CircuitEvents = {},
  ) {
    this.redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: 1000,
      connectTimeout: 2000,
      disconnectTimeout: 500,
      retryStrategy: (attempt) => Math.min(attempt * 200, 5000),
    });
    this.redis.on('error', () => undefined); // reported by the limiter when a request needs Redis
  }

  async connect(): Promise<void> {
    try {
      await this.redis.connect();
    } catch (error) {
      this.logger.error(
        { err: error instanceof Error ? error.message : String(error) },
        'Redis is unreachable; rate limits are not enforced until it is back',
      );
    }
  }

  /** Whether the circuit is open now (Redis skipped), for tests and metrics. */
  get circuitOpen(): boolean {
    return this.openUntil > 0;
  }

  /**
   * The circuit breaker around `count`: after a failure, Redis is skipped (the hit is not
   * counted: `null`, the request goes through) for `openMs`; then one request probes it, and
   * its success closes the circuit, its failure opens it again. Logged once per opening and
   * once per closing, counted in /metrics (`rate_limit_store_circuit_opened_total`,
   * `rate_limit_store_skipped_total`).
   */
  async hit(subject: string, windowSeconds: number): Promise<WindowHit | null> {
    if (this.openMs > 0 && this.openUntil > 0 && (Date.now() < this.openUntil || this.probing)) {
      this.events.skipped?.();
      return null;
    }
    const probe = this.openUntil > 0;
    if (probe) this.probing = true;
    try {
      const result = await this.count(subject, windowSeconds);
      if (probe) {
        this.openUntil = 0;
        this.logger.log('Redis answers again; rate limits are enforced again');
      }
      return result;
    } catch (error) {
      if (this.openMs <= 0) throw error;
      if (!probe)
        this.logger.error(
          { err: error instanceof Error ? error.message : String(error), pauseMs: this.openMs },
          'Redis failed; rate limits are not enforced, Redis is skipped and probed again every pause',
        );
      if (!probe) this.events.opened?.();
      this.openUntil = Date.now() + this.openMs;
      return null;
    } finally {
      if (probe) this.probing = false;
    }
  }

  private async count(subject: string, windowSeconds: number): Promise<WindowHit> {
    if (this.redis.status !== 'ready') throw new Error(`Redis connection is ${this.redis.status}`);
    const key = `${this.prefix}rl:${subject}`;
    const windowMs = windowSeconds * 1000;
    const replies = await this.redis.multi().set(key, '0', 'PX', windowMs, 'NX').incr(key).pttl(key).exec();
    if (!replies) throw new Error('Redis discarded the rate-limit transaction');
    const failed = replies.find(([error]) => error);
    if (failed) throw failed[0];
    const count = Number(replies[1][1]);
    let ttlMs = Number(replies[2][1]);
    if (ttlMs < 0) {
      // a key without expiry (never written so by this code): give it one rather than count forever
      ttlMs = windowMs;
      await this.redis.pexpire(key, windowMs);
    }
    return { count, resetSeconds: ttlMs / 1000 };
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') {
      await this.redis.quit().catch(() => undefined);
    }
    if (this.redis.status !== 'end') this.redis.disconnect(); // also stops reconnecting when Redis was never reached
  }
}
