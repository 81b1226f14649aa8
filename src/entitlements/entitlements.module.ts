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
import { HoldExpiryScheduler } from './hold-expiry.scheduler';
import { HoldsController } from './holds.controller';
import { HoldsRepository } from './holds.repository';
import { HoldsService } from './holds.service';
import { LedgerPartitionsScheduler } from './ledger-partitions.scheduler';
import { MetricsModule } from '../metrics/metrics.module';
import { OverridesController } from './overrides.controller';
import { UsageRepository } from './usage.repository';

/**
 * Entitlements and metered usage: what a customer's plans, grants and overrides allow, checked,
 * held and consumed.
 */
@Module({
  imports: [AuthModule, IdempotencyModule, CustomersModule, EventsModule, PlansModule, MetricsModule],
  controllers: [EntitlementsController, GrantsController, OverridesController, HoldsController],
  providers: [
    EntitlementsService,
    EntitlementsRepository,
    UsageRepository,
    GrantsService,
    GrantsRepository,
    BoundariesRepository,
    GrantBoundariesScheduler,
    HoldsService,
    HoldsRepository,
    HoldExpiryScheduler,
    LedgerPartitionsScheduler,
  ],
  exports: [EntitlementsService],
})
export class EntitlementsModule {}
