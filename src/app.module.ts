import { DynamicModule, Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { TypeOrmModule } from '@nestjs/typeorm';
import { LoggerModule } from 'nestjs-pino';
import { AuthModule } from './auth/auth.module';
import { RoutesModule } from './common/routes/route-catalog.service';
import { AppConfig } from './config/app-config';
import { validateEnv } from './config/env';
import { buildDataSourceOptions } from './database/data-source-options';
import { StatementsModule } from './database/statements';
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
import { createRootLogger, loggerOptions, ROOT_LOGGER } from './common/http/logging';
import { jsonBodyMiddleware, urlNulMiddleware } from './common/http/body-parser';
import { MetricsModule } from './metrics/metrics.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { EventsModule } from './events/events.module';

@Global()
@Module({
  providers: [
    AppConfig,
    {
      provide: ROOT_LOGGER,
      inject: [AppConfig],
      useFactory: (config: AppConfig) => createRootLogger(config.get('LOG_LEVEL')),
    },
  ],
  exports: [AppConfig, ROOT_LOGGER],
})
class AppConfigModule {}

/** The whole service. `forRoot()` reads and validates the environment at the time it is called. */
@Module({})
export class AppModule implements NestModule {
  /** Bodies are parsed after the request logger, so that refused bodies are logged too. */
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(urlNulMiddleware, jsonBodyMiddleware).forRoutes('*');
  }

  static forRoot(): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot({ isGlobal: true, validate: validateEnv, cache: true, ignoreEnvFile: true }),
        AppConfigModule,
        LoggerModule.forRootAsync({ inject: [ROOT_LOGGER], useFactory: loggerOptions }),
        TypeOrmModule.forRootAsync({
          inject: [AppConfig],
          useFactory: (config: AppConfig) =>
            buildDataSourceOptions({ url: config.get('DATABASE_URL'), poolSize: config.get('DB_POOL_SIZE') }),
        }),
        StatementsModule,
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
        RedemptionsModule,
        PublicModule,
        InfoModule,
        HealthModule,
      ],
    };
  }
}
