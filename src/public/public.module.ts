import { Module } from '@nestjs/common';
import { CustomersModule } from '../customers/customers.module';
import { EntitlementsModule } from '../entitlements/entitlements.module';
import { RedemptionsModule } from '../redemptions/redemptions.module';
import { SubscriptionsModule } from '../subscriptions/subscriptions.module';
import { CustomerTokenGuard } from './customer-auth';
import { CustomerSessionsRepository } from './customer-sessions.repository';
import { CustomerSessionsService } from './customer-sessions.service';
import { LoginThrottle } from './login-throttle.service';
import { MeController } from './me.controller';
import { PublicAuthController } from './public-auth.controller';
import { AuthModule } from '../auth/auth.module';

/**
 * The public interface beyond its info endpoint (docs/public-api.md): customer login and logout, and
 * the logged-in customer's own endpoints. Request signatures are checked by the public key
 * guard (`src/auth`, with its nonce store).
 */
@Module({
  imports: [AuthModule, CustomersModule, EntitlementsModule, SubscriptionsModule, RedemptionsModule],
  controllers: [PublicAuthController, MeController],
  providers: [CustomerSessionsService, CustomerSessionsRepository, LoginThrottle, CustomerTokenGuard],
})
export class PublicModule {}
