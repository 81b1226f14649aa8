import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { PageQueryDto } from '../common/http/pagination';
import { ApiEnvelope, ApiErrors, SuccessView } from '../common/swagger/api-responses';
import { CreateFeatureDto, FeatureView, UpdateFeatureDto } from './dto/feature.dto';
import { FeaturesService } from './features.service';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Features')
@PrivateApi()
@Controller(apiPath('private', 'features'))
export class FeaturesController {
  constructor(private readonly features: FeaturesService) {}

  @Get()
  @Scope('catalog:read')
  @ApiOperation({ summary: 'List features, newest first; `search` matches the name or slug' })
  @ApiEnvelope(FeatureView, { paged: true })
  list(@CurrentProject() project: CallerProject, @Query() query: PageQueryDto) {
    return this.features.list(project.id, query);
  }

  @Post()
  @Scope('catalog:write')
  @Idempotent()
  @ApiOperation({ summary: 'Create a feature' })
  @ApiEnvelope(FeatureView, { status: 201 })
  @ApiErrors('SLUG_TAKEN')
  create(
    @CurrentProject() project: CallerProject,
    @Body() dto: CreateFeatureDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.features.create(project.id, dto, idem);
  }

  @Get(':featureId')
  @Scope('catalog:read')
  @ApiOperation({ summary: 'Read a feature' })
  @ApiEnvelope(FeatureView)
  @ApiErrors('FEATURE_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @IdParam('featureId') featureId: number) {
    return this.features.get(project.id, featureId);
  }

  @Patch(':featureId')
  @Scope('catalog:write')
  @Idempotent()
  @ApiOperation({ summary: "Change any of a feature's fields" })
  @ApiEnvelope(FeatureView)
  @ApiErrors('FEATURE_NOT_FOUND', 'SLUG_TAKEN')
  update(
    @CurrentProject() project: CallerProject,
    @IdParam('featureId') featureId: number,
    @Body() dto: UpdateFeatureDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.features.update(project.id, featureId, dto, idem);
  }

  @Delete(':featureId')
  @Scope('catalog:write')
  @Idempotent()
  @ApiOperation({ summary: 'Delete a feature that no quota uses' })
  @ApiEnvelope(SuccessView)
  @ApiErrors('FEATURE_NOT_FOUND', 'FEATURE_IN_USE')
  remove(
    @CurrentProject() project: CallerProject,
    @IdParam('featureId') featureId: number,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.features.remove(project.id, featureId, idem);
  }
}
