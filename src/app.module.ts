import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LoggerModule } from 'nestjs-pino';
import { AuthModule } from './auth/auth.module';
import { RoutesModule } from './common/routes/route-catalog.service';
import { AppConfig, ENVIRONMENT } from './config/app-config';
import { EnvironmentVariables, validateEnv } from './config/env';
import { buildDataSourceOptions, servicePoolSettings } from './database/data-source-options';
import { StatementsModule } from './database/statements';
import { TransactionsModule } from './database/transactional';
import { HealthModule } from './health/health.module';
import { InfoModule } from './info/info.module';
import { ProjectsModule } from './projects/projects.module';
import { PlansModule } from './plans/plans.module';
import { CodesModule } from './codes/codes.module';
import { CustomersModule } from './customers/customers.module';
import { SubscriptionsModule } from './subscriptions/subscriptions.module';
import { RedemptionsModule } from './redemptions/redemptions.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { PublicModule } from './public/public.module';
import { createRootLogger, loggerOptions, resolveLogFormat, ROOT_LOGGER } from './common/http/logging';
import { MetricsModule } from './metrics/metrics.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { AddressRateLimitGuard } from './rate-limit/rate-limit.guard';
import { EventsModule } from './events/events.module';
import { EntitlementsModule } from './entitlements/entitlements.module';
import { Clock } from './common/clock';
import { AuditTrailModule } from './audit/audit-trail.module';
import { AuditModule } from './audit/audit.module';

@Global()
@Module({})
class AppConfigModule {
  static with(env: EnvironmentVariables): DynamicModule {
    return {
      module: AppConfigModule,
      providers: [
        { provide: ENVIRONMENT, useValue: env },
        AppConfig,
        // one clock for the whole application: zone changes are dated on the clock periods are read by
        Clock,
        {
          provide: ROOT_LOGGER,
          inject: [AppConfig],
          useFactory: (config: AppConfig) =>
            createRootLogger(config.get('LOG_LEVEL'), resolveLogFormat(config.get('LOG_FORMAT'))),
        },
      ],
      exports: [AppConfig, ROOT_LOGGER, Clock],
    };
  }
}

/**
 * The whole service. `forRoot()` validates its environment (`process.env` unless one is given, as
 * the tests do) at the time it is called; nothing is written back to `process.env`.
 */
@Module({})
export class AppModule {
  static forRoot(options: { env?: Record<string, string | undefined> } = {}): DynamicModule {
    const env = validateEnv(options.env ?? process.env);
    return {
      module: AppModule,
      imports: [
        AppConfigModule.with(env),
        LoggerModule.forRootAsync({ inject: [ROOT_LOGGER], useFactory: loggerOptions }),
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) =>
            buildDataSourceOptions({ url: config.get('DATABASE_URL'), ...servicePoolSettings(config) }),
        }),
        TransactionsModule,
        StatementsModule,
        AuditTrailModule,
        RoutesModule,
        AuthModule,
        ProjectsModule,
        RateLimitModule,
        IdempotencyModule,
        MetricsModule,
        EventsModule,
        PlansModule,
        CustomersModule,
        SubscriptionsModule,
        CodesModule,
        EntitlementsModule,
        RedemptionsModule,
        PublicModule,
        InfoModule,
        HealthModule,
        AuditModule,
      ],
      // The per-address limit, before the key guards; with rate limits off no guard runs for it at all.
      providers: env.RATE_LIMIT_ENABLED ? [{ provide: APP_GUARD, useClass: AddressRateLimitGuard }] : [],
    };
  }
}
