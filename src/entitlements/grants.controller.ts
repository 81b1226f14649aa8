import { Body, Controller, Get, HttpCode, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { apiPath } from '../common/routes/api-prefixes';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import {
  CreateGrantDto,
  DryRunQueryDto,
  GrantListQueryDto,
  GrantResultView,
  GrantView,
  VoidGrantDto,
} from './dto/grant.dto';
import { GrantsService } from './grants.service';

@ApiTags('Entitlements')
@PrivateApi()
@Controller(apiPath('private'))
export class GrantsController {
  constructor(private readonly grants: GrantsService) {}

  @Post('customers/:customerId/grants')
  @Scope('redemptions:write')
  @Idempotent()
  @ApiOperation({
    summary:
      'Give the customer an amount of a metered feature outside the plans: 201 `{ grant }`; `dryRun=true` answers 200 what it would do and changes nothing',
  })
  @ApiEnvelope(GrantResultView, { status: 201 })
  @ApiEnvelope(GrantResultView, {
    description: 'A dry run: `dryRun: true`, `entitlementsAfter`, `grant.id` null',
  })
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND', 'FEATURE_NOT_FOUND', 'FEATURE_NOT_METERED')
  async create(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @Body() dto: CreateGrantDto,
    @Query() query: DryRunQueryDto,
    @Res({ passthrough: true }) res: Response,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    if (query.dryRun) res.status(200);
    return this.grants.createGrant(project.id, customerId, dto, query.dryRun, idem);
  }

  @Get('customers/:customerId/grants')
  @Scope('entitlements:read')
  @ApiOperation({ summary: "The customer's grants, newest first, paged; filters featureId and status" })
  @ApiEnvelope(GrantView, { paged: true })
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND')
  list(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @Query() query: GrantListQueryDto,
  ) {
    return this.grants.listGrants(project.id, customerId, query);
  }

  @Get('grants/:grantId')
  @Scope('entitlements:read')
  @ApiOperation({ summary: 'One grant, its status and figures now' })
  @ApiParam({
    name: 'grantId',
    type: Number,
    example: 7,
    description: 'Id of the grant (`grant.id` of `POST /customers/{customerId}/grants`).',
  })
  @ApiEnvelope(GrantView)
  @ApiErrors('VALIDATION_FAILED', 'GRANT_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @IdParam('grantId') grantId: number) {
    return this.grants.getGrant(project.id, grantId);
  }

  @Post('grants/:grantId/void')
  @Scope('redemptions:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary: 'End the grant now, forfeiting what remains; a voided grant answers unchanged',
  })
  @ApiParam({
    name: 'grantId',
    type: Number,
    example: 7,
    description: 'Id of the grant (`grant.id` of `POST /customers/{customerId}/grants`).',
  })
  @ApiEnvelope(GrantResultView)
  @ApiErrors('VALIDATION_FAILED', 'GRANT_NOT_FOUND', 'GRANT_EXPIRED')
  void(
    @CurrentProject() project: CallerProject,
    @IdParam('grantId') grantId: number,
    @Body() dto: VoidGrantDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.grants.voidGrant(project.id, grantId, dto, idem);
  }
}
