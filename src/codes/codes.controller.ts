import { Body, Controller, Get, HttpCode, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { type CallerProject, CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { RequestId } from '../common/http/request-id';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { CodesService } from './codes.service';
import {
  CodeBatchView,
  CodeView,
  CreateCodeBatchDto,
  ExportCodesQueryDto,
  ListCodesQueryDto,
  UpdateCodeDto,
} from './dto/code.dto';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Private: codes')
@PrivateApi()
@Controller(apiPath('private', 'codes'))
export class CodesController {
  constructor(private readonly codes: CodesService) {}

  @Post()
  @Scope('codes:write')
  @Idempotent()
  @ApiOperation({
    summary:
      'Create a batch of codes (every code is in the answer, in plaintext), or with `kind: "campaign"` one campaign code (the answer is the code)',
  })
  @ApiEnvelope(CodeBatchView, { status: 201 })
  @ApiErrors('PLAN_NOT_FOUND', 'CODE_LIMIT_REACHED', 'CODE_BATCH_RATE_LIMITED', 'CODE_TAKEN')
  create(
    @CurrentProject() project: CallerProject,
    @Body() dto: CreateCodeBatchDto,
    @RequestId() reqId: string,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.codes.create(project.id, dto, reqId, idem);
  }

  @Get()
  @Scope('codes:read')
  @ApiOperation({
    summary: 'List codes (newest first; filters status, planId, batchId; search on the code or the note)',
  })
  @ApiEnvelope(CodeView, { paged: true })
  list(@CurrentProject() project: CallerProject, @Query() query: ListCodesQueryDto) {
    return this.codes.list(project.id, query);
  }

  /** Declared before `:codeId` so that `export` is not read as an id. */
  @Get('export')
  @Scope('codes:read')
  @ApiOperation({ summary: 'Export the codes of one batch as CSV' })
  // only the success is CSV: the errors are the JSON envelope, as everywhere
  @ApiOkResponse({
    description: 'CSV: code,status,plan_id,plan_name,duration,expires_at,redeemed_at,redeemed_by_customer_id',
    content: { 'text/csv': { schema: { type: 'string' } } },
  })
  @ApiErrors('CODE_NOT_FOUND')
  async export(
    @CurrentProject() project: CallerProject,
    @Query() query: ExportCodesQueryDto,
    @Res() res: Response,
  ) {
    const csv = await this.codes.exportBatchCsv(project.id, query.batchId);
    res
      .status(200)
      .type('text/csv; charset=utf-8')
      .setHeader('Content-Disposition', `attachment; filename="${csv.filename}"`)
      .send(csv.body);
  }

  @Get(':codeId')
  @Scope('codes:read')
  @ApiOperation({ summary: 'Read a code' })
  @ApiEnvelope(CodeView)
  @ApiErrors('CODE_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @IdParam('codeId') codeId: number) {
    return this.codes.get(project.id, codeId);
  }

  @Patch(':codeId')
  @Scope('codes:write')
  @Idempotent()
  @ApiOperation({ summary: 'Change a campaign code' })
  @ApiEnvelope(CodeView)
  @ApiErrors('CODE_NOT_FOUND', 'PLAN_NOT_FOUND', 'CODE_REVOKED', 'CODE_EXPIRED', 'CODE_CHANGE_NOT_ALLOWED')
  update(
    @CurrentProject() project: CallerProject,
    @IdParam('codeId') codeId: number,
    @Body() dto: UpdateCodeDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.codes.update(project.id, codeId, dto, idem);
  }

  @Post(':codeId/revoke')
  @Scope('codes:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({ summary: 'Revoke a code (available or expired); revoking again answers the same' })
  @ApiEnvelope(CodeView)
  @ApiErrors('CODE_NOT_FOUND', 'CODE_ALREADY_REDEEMED')
  revoke(
    @CurrentProject() project: CallerProject,
    @IdParam('codeId') codeId: number,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.codes.revoke(project.id, codeId, idem);
  }
}
