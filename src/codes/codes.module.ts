import { EventsModule } from '../events/events.module';
import { Module } from '@nestjs/common';
import { PlansModule } from '../plans/plans.module';
import { CodesController } from './codes.controller';
import { CodesService } from './codes.service';

/** Redeemable codes (product.md 5). `CodesService` is exported for the redemption engine. */
@Module({
  imports: [EventsModule, PlansModule],
  controllers: [CodesController],
  providers: [CodesService],
  exports: [CodesService],
})
export class CodesModule {}
