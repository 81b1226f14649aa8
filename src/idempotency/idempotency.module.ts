import { Module } from '@nestjs/common';
import { RoutesModule } from '../common/routes/route-catalog.service';
import { IdempotentRoutesCheck } from './idempotency.decorator';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';

/**
 * `Idempotency-Key` on private POST, PATCH and DELETE: the `@Idempotent()` interceptor backed
 * by the `idempotency_records` table, which also prunes expired records every 10 minutes. A
 * module whose controllers use `@Idempotent()` imports it (the interceptor is made there).
 */
@Module({
  imports: [RoutesModule],
  providers: [IdempotencyService, IdempotencyRepository, IdempotentRoutesCheck],
  exports: [IdempotencyService],
})
export class IdempotencyModule {}
