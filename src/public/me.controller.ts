import { Body, Controller, Get, HttpCode, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { ApiEnvelope, ApiErrors, SuccessView } from '../common/swagger/api-responses';
import { CustomerRecord } from '../customers/dto/customer.dto';
import { CustomersService } from '../customers/customers.service';
import { AtQueryDto, CheckView, EntitlementView, PublicCheckDto } from '../entitlements/dto/entitlement.dto';
import { EntitlementsService, featureOf } from '../entitlements/entitlements.service';
import { DryRunQueryDto, RedemptionResult } from '../redemptions/dto/redemption.dto';
import { RedemptionsService } from '../redemptions/redemptions.service';
import { CustomerSubscriptionView, SubscriptionListQueryDto } from '../subscriptions/dto/subscription.dto';
import { CurrentCustomer, CustomerApi } from './customer-auth';
import type { CustomerSessionRef } from './customer-sessions.service';
import { CustomerSessionsService } from './customer-sessions.service';
import { ChangePasswordDto, PublicRedeemDto } from './dto/public.dto';
import { apiPath } from '../common/routes/api-prefixes';

/** The logged-in customer's own data (docs/public-api.md#endpoints): the same services as the private interface. */
@ApiTags('Public')
@Controller(apiPath('public', 'me'))
export class MeController {
  constructor(
    private readonly customers: CustomersService,
    private readonly redemptions: RedemptionsService,
    private readonly sessions: CustomerSessionsService,
    private readonly entitlements: EntitlementsService,
  ) {}

  @Get('entitlements')
  @CustomerApi()
  @ApiOperation({
    summary:
      "The logged-in customer's entitlements: every feature of the project, granted or not, with balances and periods",
  })
  @ApiEnvelope(EntitlementView, { isArray: true })
  @ApiErrors('VALIDATION_FAILED')
  listEntitlements(
    @CurrentProject() project: CallerProject,
    @CurrentCustomer() me: CustomerSessionRef,
    @Query() query: AtQueryDto,
  ) {
    return this.entitlements.list(project.id, me.customerId, query.at);
  }

  @Post('entitlements/check')
  @HttpCode(200)
  @CustomerApi()
  @ApiOperation({
    summary:
      'May the logged-in customer use `amount` (default 1) of the feature now? Reads only; a `customer` in the body is refused',
  })
  @ApiEnvelope(CheckView)
  @ApiErrors('VALIDATION_FAILED', 'FEATURE_NOT_FOUND')
  checkEntitlement(
    @CurrentProject() project: CallerProject,
    @CurrentCustomer() me: CustomerSessionRef,
    @Body() dto: PublicCheckDto,
    @Query() query: AtQueryDto,
  ) {
    return this.entitlements.checkFor(project.id, me.customerId, featureOf(dto), dto.amount, query.at);
  }

  @Get()
  @CustomerApi()
  @ApiOperation({ summary: 'The logged-in customer: the full record with credentials and identifiers' })
  @ApiEnvelope(CustomerRecord)
  get(@CurrentProject() project: CallerProject, @CurrentCustomer() me: CustomerSessionRef) {
    return this.customers.get(project.id, me.customerId);
  }

  @Get('subscriptions')
  @CustomerApi()
  @ApiOperation({
    summary:
      "The logged-in customer's subscription windows: live ones first; `history=true` adds ended and cancelled ones",
  })
  @ApiEnvelope(CustomerSubscriptionView, { isArray: true })
  listSubscriptions(
    @CurrentProject() project: CallerProject,
    @CurrentCustomer() me: CustomerSessionRef,
    @Query() query: SubscriptionListQueryDto,
  ) {
    return this.customers.subscriptions(project.id, me.customerId, query.history);
  }

  @Post('password')
  @HttpCode(200)
  @CustomerApi()
  @ApiOperation({
    summary: "Set the logged-in customer's password, proving the current one",
    description:
      'Every other session of the customer ends; this token goes on working. A wrong current password is ' +
      '401 INVALID_CREDENTIALS and counts as a failed login (429 RATE_LIMITED as for the login).',
  })
  @ApiEnvelope(SuccessView)
  @ApiErrors('VALIDATION_FAILED', 'INVALID_CREDENTIALS', 'RATE_LIMITED')
  changePassword(
    @CurrentProject() project: CallerProject,
    @CurrentCustomer() me: CustomerSessionRef,
    @Body() dto: ChangePasswordDto,
    @Req() req: Request,
  ) {
    return this.sessions.changePassword(project, me, dto, req.ip);
  }

  @Post('redemptions')
  @HttpCode(200)
  @CustomerApi()
  @ApiOperation({
    summary:
      'Redeem a code for the logged-in customer: the answer, rules and errors of the private redemption; `dryRun=true` changes nothing and adds `entitlementsAfter`',
  })
  @ApiEnvelope(RedemptionResult)
  @ApiErrors(
    'VALIDATION_FAILED',
    'CODE_NOT_FOUND',
    'CODE_ALREADY_REDEEMED',
    'CODE_REVOKED',
    'CODE_EXPIRED',
    'CODE_NOT_YET_ACTIVE',
    'CODE_EXHAUSTED',
    'CODE_CUSTOMER_LIMIT_REACHED',
    'TRIAL_ALREADY_USED',
    'CODE_NOT_ELIGIBLE',
    'REDUNDANT_PERMANENT_PURCHASE',
    'PERMANENT_TAIL_CONFLICT',
    'INVALID_PLAN_VALUE',
    'INVALID_SUBSCRIPTION_CHAIN',
  )
  redeem(
    @CurrentProject() project: CallerProject,
    @CurrentCustomer() me: CustomerSessionRef,
    @Body() dto: PublicRedeemDto,
    @Query() query: DryRunQueryDto,
  ) {
    return this.redemptions.redeemFor(project, { customerId: me.customerId }, dto.code, query.dryRun);
  }
}
