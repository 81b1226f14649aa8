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
export class RedisRateLimitStore implements RateLimitStore {
  private readonly logger = new Logger('RateLimit');
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
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

  async hit(subject: string, windowSeconds: number): Promise<WindowHit> {
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
