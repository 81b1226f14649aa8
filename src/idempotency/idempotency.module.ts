import { Module } from '@nestjs/common';
import { APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { IdempotencyApiDocs } from './idempotency.docs';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IdempotencyService } from './idempotency.service';

/**
 * `Idempotency-Key` on private POST, PATCH and DELETE (product.md 7): a global interceptor
 * backed by the `idempotency_records` table, which also prunes expired records every 10 minutes.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [IdempotencyService, IdempotencyApiDocs, { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor }],
  exports: [IdempotencyService],
})
export class IdempotencyModule {}
