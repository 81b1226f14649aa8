import { Module } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { MetricsModule } from '../metrics/metrics.module';
import { MetricsService } from '../metrics/metrics.service';
import { PostgresRateLimitRepository } from './rate-limit.repository';
import { RATE_LIMIT_STORE, RateLimitClock, RateLimitStore } from './rate-limit.store';
import { RateLimiter } from './rate-limiter.service';
import { RedisRateLimitStore } from './redis-rate-limit.store';

function createStore(
  config: AppConfig,
  dataSource: DataSource,
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
  return new PostgresRateLimitRepository(dataSource, clock);
}

/**
 * Rate limits per client address (`AddressRateLimitGuard`, a global guard before authentication
 * that `AppModule` installs when limits are on) and per API key (counted by the key guards right
 * after they have found the key, see `RateLimiter.countKey`) on `/api/private` and
 * `/api/public` (product.md 10). `AuthModule` imports and re-exports it, so that every controller's module can make the key guard.
 */
@Module({
  imports: [MetricsModule],
  providers: [
    RateLimitClock,
    {
      provide: RATE_LIMIT_STORE,
      inject: [AppConfig, getDataSourceToken(), RateLimitClock, MetricsService],
      useFactory: createStore,
    },
    RateLimiter,
  ],
  exports: [RateLimiter, RateLimitClock],
})
export class RateLimitModule {}
