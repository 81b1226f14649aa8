import { Module } from '@nestjs/common';
import { CustomersModule } from '../customers/customers.module';
import { EntitlementsController } from './entitlements.controller';
import { EntitlementsRepository } from './entitlements.repository';
import { EntitlementsService } from './entitlements.service';
import { UsageRepository } from './usage.repository';

/** Entitlements and metered usage (entitlements.md): what a customer's plans allow, checked and consumed. */
@Module({
  imports: [CustomersModule],
  controllers: [EntitlementsController],
  providers: [EntitlementsService, EntitlementsRepository, UsageRepository],
  exports: [EntitlementsService],
})
export class EntitlementsModule {}
