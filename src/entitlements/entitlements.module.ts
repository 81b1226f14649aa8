import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { Clock } from '../common/clock';
import { CustomersModule } from '../customers/customers.module';
import { EventsModule } from '../events/events.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { EntitlementsController } from './entitlements.controller';
import { EntitlementsRepository } from './entitlements.repository';
import { EntitlementsService } from './entitlements.service';
import { UsageRepository } from './usage.repository';

/** Entitlements and metered usage: what a customer's plans allow, checked and consumed. */
@Module({
  imports: [AuthModule, IdempotencyModule, CustomersModule, EventsModule],
  controllers: [EntitlementsController],
  providers: [Clock, EntitlementsService, EntitlementsRepository, UsageRepository],
  exports: [EntitlementsService],
})
export class EntitlementsModule {}
