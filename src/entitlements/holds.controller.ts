import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { apiPath } from '../common/routes/api-prefixes';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import {
  CommitHoldDto,
  CreateHoldDto,
  HoldCommitView,
  HoldListQueryDto,
  HoldResultView,
  HoldView,
  MAX_HOLD_ID,
  ReleaseHoldDto,
} from './dto/hold.dto';
import { HoldsService } from './holds.service';
import { ParseUsageIdPipe } from './usage-id.pipe';

const HOLD_ID_PARAM = {
  name: 'id',
  type: 'integer',
  format: 'int64',
  minimum: 1,
  maximum: MAX_HOLD_ID,
  example: 51,
  description: 'Id of the hold (`hold.id` of `POST /usage/holds`).',
} as const;

@ApiTags('Entitlements')
@PrivateApi()
@Controller(apiPath('private'))
export class HoldsController {
  constructor(private readonly holds: HoldsService) {}

  @Post('usage/holds')
  @Scope('usage:write')
  @Idempotent()
  @ApiOperation({
    summary:
      'Reserve an amount of a metered feature before a call whose cost is known only afterwards: 201 the hold and the balance; 200 `replayed: true` for a `holdId` already held',
  })
  @ApiEnvelope(HoldResultView, { status: 201 })
  @ApiEnvelope(HoldResultView, { description: 'A replay of a holdId already held' })
  @ApiErrors(
    'VALIDATION_FAILED',
    'CUSTOMER_NOT_FOUND',
    'FEATURE_NOT_FOUND',
    'HOLD_CONFLICT',
    'CUSTOMER_DISABLED',
    'FEATURE_NOT_METERED',
    'FEATURE_NOT_GRANTED',
    'HOLD_LIMIT_REACHED',
    'QUOTA_EXCEEDED',
  )
  async create(
    @CurrentProject() project: CallerProject,
    @Body() dto: CreateHoldDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    const outcome = await this.holds.create(project.id, dto);
    res.status(outcome.status);
    return outcome.body;
  }

  @Get('usage/holds/:id')
  @Scope('usage:read')
  @ApiOperation({ summary: 'One hold, its status derived now' })
  @ApiParam(HOLD_ID_PARAM)
  @ApiEnvelope(HoldView)
  @ApiErrors('VALIDATION_FAILED', 'HOLD_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @Param('id', ParseUsageIdPipe) id: string) {
    return this.holds.get(project.id, id);
  }

  @Post('usage/holds/:id/commit')
  @Scope('usage:write')
  @Idempotent()
  @ApiOperation({
    summary:
      'End the hold and record what the call cost as one usage record: 201 the hold, the record and the balance; 200 `replayed: true` for a hold already committed',
  })
  @ApiParam(HOLD_ID_PARAM)
  @ApiEnvelope(HoldCommitView, { status: 201 })
  @ApiEnvelope(HoldCommitView, { description: 'A replay of a hold already committed' })
  @ApiErrors(
    'VALIDATION_FAILED',
    'HOLD_NOT_FOUND',
    'HOLD_FINALIZED',
    'HOLD_EXPIRED',
    'USAGE_EVENT_CONFLICT',
    'QUOTA_EXCEEDED',
    'USAGE_NOT_FOUND',
  )
  async commit(
    @CurrentProject() project: CallerProject,
    @Param('id', ParseUsageIdPipe) id: string,
    @Body() dto: CommitHoldDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    const outcome = await this.holds.commit(project.id, id, dto);
    res.status(outcome.status);
    return outcome.body;
  }

  @Post('usage/holds/:id/release')
  @Scope('usage:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    summary: 'End the hold, recording nothing; a released or expired hold answers unchanged',
  })
  @ApiParam(HOLD_ID_PARAM)
  @ApiEnvelope(HoldResultView)
  @ApiErrors('VALIDATION_FAILED', 'HOLD_NOT_FOUND', 'HOLD_FINALIZED')
  release(
    @CurrentProject() project: CallerProject,
    @Param('id', ParseUsageIdPipe) id: string,
    @Body() _dto: ReleaseHoldDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.holds.release(project.id, id, idem);
  }

  @Get('customers/:customerId/holds')
  @Scope('usage:read')
  @ApiOperation({ summary: "The customer's holds, newest first, paged; filters featureId and status" })
  @ApiParam({ ...HOLD_ID_PARAM, name: 'customerId', example: 12, description: 'Id of the customer.' })
  @ApiEnvelope(HoldView, { paged: true })
  @ApiErrors('VALIDATION_FAILED', 'CUSTOMER_NOT_FOUND')
  list(
    @CurrentProject() project: CallerProject,
    @Param('customerId', ParseUsageIdPipe) customerId: string,
    @Query() query: HoldListQueryDto,
  ) {
    return this.holds.list(project.id, Number(customerId), query);
  }
}
