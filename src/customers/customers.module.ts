import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { CustomerSubscriptionsController } from './customer-subscriptions.controller';
import { CustomersController } from './customers.controller';
import { CustomersRepository } from './customers.repository';
import { CustomersService } from './customers.service';
import { AuthModule } from '../auth/auth.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';

@Module({
  imports: [AuthModule, IdempotencyModule, EventsModule, SubscriptionsModule],
  controllers: [CustomersController, CustomerSubscriptionsController],
  providers: [CustomersService, CustomersRepository],
  exports: [CustomersService],
})
export class CustomersModule {}
