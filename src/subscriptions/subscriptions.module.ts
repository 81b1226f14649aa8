import { Module } from '@nestjs/common';
import { PlansModule } from '../plans/plans.module';
import { CustomerSubscriptionsController } from './subscriptions.controller';
import { SubscriptionsService } from './subscriptions.service';
import { AuthModule } from '../auth/auth.module';

@Module({
  imports: [AuthModule, PlansModule],
  controllers: [CustomerSubscriptionsController],
  providers: [SubscriptionsService],
  exports: [SubscriptionsService],
})
export class SubscriptionsModule {}
