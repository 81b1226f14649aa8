import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { CodesModule } from '../codes/codes.module';
import { CustomersModule } from '../customers/customers.module';
import { EntitlementsModule } from '../entitlements/entitlements.module';
import { PlansModule } from '../plans/plans.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { RedemptionsController } from './redemptions.controller';
import { RedemptionsService } from './redemptions.service';
import { AuthModule } from '../auth/auth.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { MetricsModule } from '../metrics/metrics.module';

@Module({
  imports: [
    MetricsModule,
    AuthModule,
    IdempotencyModule,
    EventsModule,
    CodesModule,
    CustomersModule,
    EntitlementsModule,
    PlansModule,
    SubscriptionsModule,
  ],
  controllers: [RedemptionsController],
  providers: [RedemptionsService],
  exports: [RedemptionsService],
})
export class RedemptionsModule {}
