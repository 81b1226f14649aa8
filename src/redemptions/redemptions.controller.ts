import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { IdParam } from '../common/http/id-param';
import { CodeRedemptionView, ListCodeRedemptionsQueryDto } from '../codes/dto/code.dto';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { ErrorCode } from '../common/errors/error-codes';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { ActivateDto, DryRunQueryDto, RedeemCodeDto, RedemptionResult } from './dto/redemption.dto';
import { RedemptionsService } from './redemptions.service';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { apiPath } from '../common/routes/api-prefixes';

const CHAIN_ERRORS: ErrorCode[] = [
  'CUSTOMER_NOT_FOUND',
  'REDUNDANT_PERMANENT_PURCHASE',
  'PERMANENT_TAIL_CONFLICT',
  'CUSTOMER_PROJECT_MISMATCH',
  'INVALID_PLAN_VALUE',
  'INVALID_SUBSCRIPTION_CHAIN',
];
const REDEMPTION_ERRORS: ErrorCode[] = [
  'CODE_NOT_FOUND',
  'CODE_ALREADY_REDEEMED',
  'CODE_REVOKED',
  'CODE_EXPIRED',
  'CODE_NOT_YET_ACTIVE',
  'CODE_EXHAUSTED',
  'CODE_CUSTOMER_LIMIT_REACHED',
  'TRIAL_ALREADY_USED',
  'CODE_NOT_ELIGIBLE',
  ...CHAIN_ERRORS,
];

@ApiTags('Redemptions')
@PrivateApi()
@Controller(apiPath('private'))
export class RedemptionsController {
  constructor(private readonly redemptions: RedemptionsService) {}

  @Post('redemptions')
  @Scope('redemptions:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Redeem a code for a customer; `dryRun=true` answers what it would do and changes nothing',
  })
  @ApiEnvelope(RedemptionResult)
  @ApiErrors(...REDEMPTION_ERRORS, 'CUSTOMER_LIMIT_REACHED')
  redeem(
    @CurrentProject() project: CallerProject,
    @Body() dto: RedeemCodeDto,
    @Query() query: DryRunQueryDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.redemptions.redeem(project, dto, query.dryRun, idem);
  }

  @Post('codes/redeem')
  @Scope('redemptions:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({ summary: 'Alias of POST /redemptions: same body, answer, rules and errors' })
  @ApiEnvelope(RedemptionResult)
  @ApiErrors(...REDEMPTION_ERRORS, 'CUSTOMER_LIMIT_REACHED')
  redeemAlias(
    @CurrentProject() project: CallerProject,
    @Body() dto: RedeemCodeDto,
    @Query() query: DryRunQueryDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.redemptions.redeem(project, dto, query.dryRun, idem);
  }

  @Post('subscriptions/activate')
  @Scope('redemptions:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Grant a plan for a duration (or permanently) with the rules of redemption; `dryRun=true` changes nothing',
  })
  @ApiEnvelope(RedemptionResult)
  @ApiErrors('PLAN_NOT_FOUND', ...CHAIN_ERRORS, 'CUSTOMER_LIMIT_REACHED')
  activate(
    @CurrentProject() project: CallerProject,
    @Body() dto: ActivateDto,
    @Query() query: DryRunQueryDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.redemptions.activate(project, dto, query.dryRun, idem);
  }

  @Get('codes/:codeId/redemptions')
  @Scope('codes:read')
  @ApiOperation({
    summary: "A code's redemptions: who, when, which windows (newest first; filter customerId)",
  })
  @ApiEnvelope(CodeRedemptionView, { paged: true })
  @ApiErrors('CODE_NOT_FOUND')
  codeRedemptions(
    @CurrentProject() project: CallerProject,
    @IdParam('codeId') codeId: number,
    @Query() query: ListCodeRedemptionsQueryDto,
  ) {
    return this.redemptions.codeRedemptions(project.id, codeId, query);
  }
}
