import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Feature } from './entities/feature.entity';
import { FeatureReferences } from './feature-references';
import { Plan } from './entities/plan.entity';
import { Quota } from './entities/quota.entity';
import { FeaturesController } from './features.controller';
import { FeaturesRepository } from './features.repository';
import { FeaturesService } from './features.service';
import { PlansController } from './plans.controller';
import { PlansRepository } from './plans.repository';
import { PlansService } from './plans.service';
import { AuthModule } from '../auth/auth.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';

@Module({
  imports: [AuthModule, IdempotencyModule, TypeOrmModule.forFeature([Feature, Plan, Quota])],
  controllers: [FeaturesController, PlansController],
  providers: [PlansService, FeaturesService, PlansRepository, FeaturesRepository, FeatureReferences],
  exports: [PlansService, FeaturesService, FeatureReferences],
})
export class PlansModule {}
