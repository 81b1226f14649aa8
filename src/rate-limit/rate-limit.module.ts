import { Module } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { PostgresRateLimitStore } from './postgres-rate-limit.store';
import { AddressRateLimitGuard } from './rate-limit.guard';
import { KeyRateLimitInterceptor } from './rate-limit.interceptor';
import { RATE_LIMIT_STORE, RateLimitStore } from './rate-limit.store';
import { RateLimiter } from './rate-limiter.service';
import { RedisRateLimitStore } from './redis-rate-limit.store';

function createStore(config: AppConfig, dataSource: DataSource): RateLimitStore | null {
  if (!config.get('RATE_LIMIT_ENABLED')) return null;
  if (config.get('RATE_LIMIT_STORE') === 'redis') return new RedisRateLimitStore(config.get('REDIS_URL')!, config.get('REDIS_KEY_PREFIX'));
  return new PostgresRateLimitStore(dataSource);
}

/**
 * Rate limits per client address (a global guard, before authentication) and per API key (a
 * global interceptor, after it) on `/api/private` and `/api/public` (product.md 10).
 *
 * Import it in AppModule BEFORE IdempotencyModule: global interceptors run in registration
 * order, and the limiter must be outside the idempotency interceptor.
 */
@Module({
  providers: [
    { provide: RATE_LIMIT_STORE, inject: [AppConfig, getDataSourceToken()], useFactory: createStore },
    RateLimiter,
    { provide: APP_GUARD, useClass: AddressRateLimitGuard },
    { provide: APP_INTERCEPTOR, useClass: KeyRateLimitInterceptor },
  ],
  exports: [RateLimiter],
})
export class RateLimitModule {}
