import { Module } from '@nestjs/common';
import { PlansModule } from '../plans/plans.module';
import { CustomerSubscriptionsController } from './subscriptions.controller';
import { SubscriptionsService } from './subscriptions.service';

@Module({
  imports: [PlansModule],
  controllers: [CustomerSubscriptionsController],
  providers: [SubscriptionsService],
  exports: [SubscriptionsService],
})
export class SubscriptionsModule {}
