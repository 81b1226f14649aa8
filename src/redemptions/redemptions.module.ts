import { EventsModule } from '../events/events.module';
import { Module } from '@nestjs/common';
import { CodesModule } from '../codes/codes.module';
import { CustomersModule } from '../customers/customers.module';
import { PlansModule } from '../plans/plans.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { RedemptionsController } from './redemptions.controller';
import { RedemptionsService } from './redemptions.service';

@Module({
  imports: [EventsModule, CodesModule, CustomersModule, PlansModule, SubscriptionsModule],
  controllers: [RedemptionsController],
  providers: [RedemptionsService],
  exports: [RedemptionsService],
})
export class RedemptionsModule {}
