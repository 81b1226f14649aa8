import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { apiPath } from '../common/routes/api-prefixes';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { Idempotent } from '../idempotency/idempotency.decorator';
import {
  AtQueryDto,
  BatchResultView,
  CheckDto,
  CheckView,
  EntitlementView,
  UsageBatchDto,
  UsageEventDto,
  UsageListQueryDto,
  UsageResultView,
  UsageView,
} from './dto/entitlement.dto';
import { EntitlementsService } from './entitlements.service';
import { ParseUsageIdPipe } from './usage-id.pipe';

@ApiTags('Entitlements')
@PrivateApi()
@Controller(apiPath('private'))
export class EntitlementsController {
  constructor(private readonly entitlements: EntitlementsService) {}

  @Get('customers/:customerId/entitlements')
  @Scope('entitlements:read')
  @ApiOperation({
    summary:
      'Every feature of the project for the customer: granted or not, and for metered ones the balance, buckets and periods',
  })
  @ApiEnvelope(EntitlementView, { isArray: true })
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND')
  list(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @Query() query: AtQueryDto,
  ) {
    return this.entitlements.list(project.id, customerId, query.at);
  }

  @Post('entitlements/check')
  @Scope('entitlements:read')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary:
      'May the customer use `amount` (default 1) of the feature now? Reads only; 200 with `allowed: false` and a `reason` when not',
  })
  @ApiEnvelope(CheckView)
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND', 'FEATURE_NOT_FOUND')
  check(@CurrentProject() project: CallerProject, @Body() dto: CheckDto, @Query() query: AtQueryDto) {
    return this.entitlements.check(project.id, dto, query.at);
  }

  @Post('usage')
  @Scope('usage:write')
  @Idempotent()
  @ApiOperation({
    summary:
      'Record usage of a metered feature, exactly once per `eventId`: 201 the record and the balance after it; 200 `replayed: true` for an `eventId` already recorded',
  })
  @ApiEnvelope(UsageResultView, { status: 201 })
  @ApiEnvelope(UsageResultView, { description: 'A replay of an eventId already recorded' })
  @ApiErrors(
    'VALIDATION_FAILED',
    'CUSTOMER_NOT_FOUND',
    'FEATURE_NOT_FOUND',
    'USAGE_EVENT_CONFLICT',
    'CUSTOMER_DISABLED',
    'FEATURE_NOT_METERED',
    'FEATURE_NOT_GRANTED',
    'QUOTA_EXCEEDED',
  )
  async consume(
    @CurrentProject() project: CallerProject,
    @Body() dto: UsageEventDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    const outcome = await this.entitlements.consume(project.id, dto);
    res.status(outcome.status);
    return outcome.body;
  }

  @Post('usage/batch')
  @Scope('usage:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Up to 100 usage events, each decided on its own in list order; each result is what the single call would answer',
  })
  @ApiEnvelope(BatchResultView)
  @ApiErrors('VALIDATION_FAILED')
  batch(@CurrentProject() project: CallerProject, @Body() dto: UsageBatchDto) {
    return this.entitlements.batch(project.id, dto);
  }

  @Post('usage/:usageId/reverse')
  @Scope('usage:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary: "Give back exactly the record's allocations; a second call answers the same reversed record",
  })
  @ApiParam({
    name: 'usageId',
    type: Number,
    example: 101,
    description: 'Id of the usage record (`usage.id` of `POST /usage`).',
  })
  @ApiEnvelope(UsageResultView)
  @ApiErrors('VALIDATION_FAILED', 'USAGE_NOT_FOUND')
  reverse(@CurrentProject() project: CallerProject, @Param('usageId', ParseUsageIdPipe) usageId: string) {
    return this.entitlements.reverse(project.id, usageId);
  }

  @Get('customers/:customerId/usage')
  @Scope('usage:read')
  @ApiOperation({ summary: "The customer's usage ledger, newest first, paged; filters featureId, from, to" })
  @ApiEnvelope(UsageView, { paged: true })
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND')
  ledger(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @Query() query: UsageListQueryDto,
  ) {
    return this.entitlements.ledger(project.id, customerId, query);
  }
}
