import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { CustomersModule } from '../customers/customers.module';
import { EventsModule } from '../events/events.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { PlansModule } from '../plans/plans.module';
import { BoundariesRepository } from './boundaries.repository';
import { EntitlementsController } from './entitlements.controller';
import { EntitlementsRepository } from './entitlements.repository';
import { EntitlementsService } from './entitlements.service';
import { GrantBoundariesScheduler } from './grant-boundaries.scheduler';
import { GrantsController } from './grants.controller';
import { GrantsRepository } from './grants.repository';
import { GrantsService } from './grants.service';
import { OverridesController } from './overrides.controller';
import { UsageRepository } from './usage.repository';

/**
 * Entitlements and metered usage: what a customer's plans, grants and overrides allow, checked and
 * consumed.
 */
@Module({
  imports: [AuthModule, IdempotencyModule, CustomersModule, EventsModule, PlansModule],
  controllers: [EntitlementsController, GrantsController, OverridesController],
  providers: [
    EntitlementsService,
    EntitlementsRepository,
    UsageRepository,
    GrantsService,
    GrantsRepository,
    BoundariesRepository,
    GrantBoundariesScheduler,
  ],
  exports: [EntitlementsService],
})
export class EntitlementsModule {}
