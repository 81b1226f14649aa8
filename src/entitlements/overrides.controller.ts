import { Body, Controller, Delete, Get, HttpCode, Put, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { apiPath } from '../common/routes/api-prefixes';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { DryRunQueryDto, OverrideResultView, SetOverrideDto } from './dto/grant.dto';
import { OverrideView } from './dto/entitlement.dto';
import { GrantsService } from './grants.service';

@ApiTags('Entitlements')
@PrivateApi()
@Controller(apiPath('private'))
export class OverridesController {
  constructor(private readonly grants: GrantsService) {}

  @Put('customers/:customerId/overrides/:featureId')
  @Scope('redemptions:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary:
      "Set the customer's one override of the feature (`set` or `deny`), replacing any; `dryRun=true` changes nothing",
  })
  @ApiEnvelope(OverrideResultView)
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND', 'FEATURE_NOT_FOUND')
  set(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @IdParam('featureId') featureId: number,
    @Body() dto: SetOverrideDto,
    @Query() query: DryRunQueryDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.grants.setOverride(project.id, customerId, featureId, dto, query.dryRun, idem);
  }

  @Get('customers/:customerId/overrides')
  @Scope('entitlements:read')
  @ApiOperation({ summary: "The customer's overrides in effect, in feature id order" })
  @ApiEnvelope(OverrideView, { isArray: true })
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND')
  list(@CurrentProject() project: CallerProject, @IdParam('customerId') customerId: number) {
    return this.grants.listOverrides(project.id, customerId);
  }

  @Get('customers/:customerId/overrides/:featureId')
  @Scope('entitlements:read')
  @ApiOperation({ summary: "The customer's override of the feature in effect" })
  @ApiEnvelope(OverrideView)
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND', 'FEATURE_NOT_FOUND', 'OVERRIDE_NOT_FOUND')
  get(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @IdParam('featureId') featureId: number,
  ) {
    return this.grants.getOverride(project.id, customerId, featureId);
  }

  @Delete('customers/:customerId/overrides/:featureId')
  @Scope('redemptions:write')
  @Idempotent()
  @ApiOperation({
    summary:
      'Remove the override in effect, answered as it was; the plans apply again at once. `dryRun=true` changes nothing',
  })
  @ApiEnvelope(OverrideResultView)
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND', 'FEATURE_NOT_FOUND', 'OVERRIDE_NOT_FOUND')
  remove(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @IdParam('featureId') featureId: number,
    @Query() query: DryRunQueryDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.grants.removeOverride(project.id, customerId, featureId, query.dryRun, idem);
  }
}
