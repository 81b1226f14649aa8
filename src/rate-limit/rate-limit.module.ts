import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Transactions } from '../database/transactional';
import { MetricsModule } from '../metrics/metrics.module';
import { MetricsService } from '../metrics/metrics.service';
import { PostgresRateLimitRepository } from './rate-limit.repository';
import { RATE_LIMIT_STORE, RateLimitClock, RateLimitStore } from './rate-limit.store';
import { RateLimiter } from './rate-limiter.service';
import { RedisRateLimitStore } from './redis-rate-limit.store';

function createStore(
  config: AppConfig,
  transactions: Transactions,
  clock: RateLimitClock,
  metrics: MetricsService,
): RateLimitStore | null {
  if (!config.get('RATE_LIMIT_ENABLED')) return null;
  if (config.get('RATE_LIMIT_STORE') === 'redis')
    return new RedisRateLimitStore(
      config.get('REDIS_URL')!,
      config.get('REDIS_KEY_PREFIX'),
      config.get('RATE_LIMIT_REDIS_PAUSE_MS'),
      {
        opened: () => metrics.recordRateLimitStore('opened'),
        skipped: () => metrics.recordRateLimitStore('skipped'),
      },
    );
  return new PostgresRateLimitRepository(transactions, clock);
}

/**
 * Rate limits per client address (`AddressRateLimitGuard`, a global guard before authentication
 * that `AppModule` installs when limits are on) and per API key (counted by the key guards right
 * after they have found the key, see `RateLimiter.countKey`) on `/api/private` and
 * `/api/public`. `AuthModule` imports and re-exports it, so that every controller's module can make the key guard.
 */
@Module({
  imports: [MetricsModule],
  providers: [
    RateLimitClock,
    {
      provide: RATE_LIMIT_STORE,
      inject: [AppConfig, Transactions, RateLimitClock, MetricsService],
      useFactory: createStore,
    },
    RateLimiter,
  ],
  exports: [RateLimiter, RateLimitClock],
})
export class RateLimitModule {}
