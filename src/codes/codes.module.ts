import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { PlansModule } from '../plans/plans.module';
import { CodesController } from './codes.controller';
import { CodesRepository } from './codes.repository';
import { CodesService } from './codes.service';
import { AuthModule } from '../auth/auth.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';

/** Redeemable codes (docs/api-guide.md#codes). `CodesService` is exported for the redemption engine. */
@Module({
  imports: [AuthModule, IdempotencyModule, EventsModule, PlansModule],
  controllers: [CodesController],
  providers: [CodesService, CodesRepository],
  exports: [CodesService],
})
export class CodesModule {}
