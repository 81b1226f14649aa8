import { Body, Controller, Delete, Get, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { ApiEnvelope, ApiErrors, SuccessView } from '../common/swagger/api-responses';
import { CreatePlanDto, PlanListQueryDto, PlanView, UpdatePlanDto } from './dto/plan.dto';
import { PlansService } from './plans.service';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Plans')
@PrivateApi()
@Controller(apiPath('private', 'plans'))
export class PlansController {
  constructor(private readonly plans: PlansService) {}

  @Get()
  @Scope('catalog:read')
  @ApiOperation({ summary: 'List plans with their quotas, in id order; `search` matches the name or slug' })
  @ApiEnvelope(PlanView, { paged: true })
  list(@CurrentProject() project: CallerProject, @Query() query: PlanListQueryDto) {
    return this.plans.list(project.id, query);
  }

  @Post()
  @Scope('catalog:write')
  @Idempotent()
  @ApiOperation({ summary: 'Create a plan with its quotas' })
  @ApiEnvelope(PlanView, { status: 201 })
  @ApiErrors('INVALID_RESET_ANCHOR', 'SLUG_TAKEN', 'FEATURE_NOT_FOUND')
  create(
    @CurrentProject() project: CallerProject,
    @Body() dto: CreatePlanDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.plans.create(project.id, dto, idem);
  }

  @Get(':planId')
  @Scope('catalog:read')
  @ApiOperation({ summary: 'Read a plan with its quotas' })
  @ApiEnvelope(PlanView)
  @ApiErrors('PLAN_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @IdParam('planId') planId: number) {
    return this.plans.get(project.id, planId);
  }

  @Patch(':planId')
  @Scope('catalog:write')
  @Idempotent()
  @ApiOperation({ summary: "Change a plan's name, slug or whole list of quotas; group and value are fixed" })
  @ApiEnvelope(PlanView)
  @ApiErrors(
    'INVALID_RESET_ANCHOR',
    'PLAN_NOT_FOUND',
    'FEATURE_NOT_FOUND',
    'SLUG_TAKEN',
    'PLAN_FIELD_IMMUTABLE',
  )
  update(
    @CurrentProject() project: CallerProject,
    @IdParam('planId') planId: number,
    @Body() dto: UpdatePlanDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.plans.update(project.id, planId, dto, idem);
  }

  @Delete(':planId')
  @Scope('catalog:write')
  @Idempotent()
  @ApiOperation({ summary: 'Delete a plan and its quotas, unless subscriptions or codes refer to it' })
  @ApiEnvelope(SuccessView)
  @ApiErrors('PLAN_NOT_FOUND', 'PLAN_IN_USE')
  remove(
    @CurrentProject() project: CallerProject,
    @IdParam('planId') planId: number,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.plans.remove(project.id, planId, idem);
  }
}
