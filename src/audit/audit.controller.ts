import { Controller, Get, Param, Query, Res } from '@nestjs/common';
import { ApiExtraModels, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { type CallerProject, CurrentProject } from '../auth/caller';
import { AdminApi, PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { apiPath } from '../common/routes/api-prefixes';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { AuditService } from './audit.service';
import {
  AuditChangeView,
  AuditEventFiltersDto,
  AuditEventPageView,
  AuditEventView,
  AuditVerifyView,
  ListAuditEventsQueryDto,
} from './dto/audit-event.dto';
import { NDJSON, sendNdjson } from './ndjson';

const AuditEventIdParam = () =>
  ApiParam({
    name: 'auditEventId',
    description: 'Identifier of the audit record (`aud_` + 24 characters).',
    schema: { type: 'string', maxLength: 28 },
  });

const NdjsonResponse = () =>
  // only the success is NDJSON: the errors are the JSON envelope, as everywhere
  ApiOkResponse({
    description:
      'NDJSON: one record (as `GET /audit-events/{auditEventId}` answers it) a line, oldest first.',
    content: { [NDJSON]: { schema: { type: 'string' } } },
  });

@ApiTags('Private: audit log')
@PrivateApi()
@Scope('audit:read')
@ApiExtraModels(AuditChangeView)
@Controller(apiPath('private', 'audit-events'))
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({ summary: "The project's audit records, newest first (cursor paging; filters)" })
  @ApiEnvelope(AuditEventPageView)
  list(@CurrentProject() project: CallerProject, @Query() query: ListAuditEventsQueryDto) {
    return this.audit.list(project.id, query);
  }

  /** Declared before `:auditEventId` so that `export` is not read as an id. */
  @Get('export')
  @ApiOperation({ summary: "The project's audit records as NDJSON, oldest first (the list's filters)" })
  @NdjsonResponse()
  export(
    @CurrentProject() project: CallerProject,
    @Query() query: AuditEventFiltersDto,
    @Res() res: Response,
  ) {
    return sendNdjson(res, this.audit.export(project.id, query));
  }

  @Get('verify')
  @ApiOperation({ summary: "Verify the project's audit chain" })
  @ApiEnvelope(AuditVerifyView)
  verify(@CurrentProject() project: CallerProject) {
    return this.audit.verify(project.id);
  }

  @Get(':auditEventId')
  @ApiOperation({ summary: 'Read an audit record' })
  @AuditEventIdParam()
  @ApiEnvelope(AuditEventView)
  @ApiErrors('AUDIT_EVENT_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @Param('auditEventId') id: string) {
    return this.audit.get(project.id, id);
  }
}

/** The same four reads for any project, deleted or not, with the admin token. */
@ApiTags('Admin: audit log')
@AdminApi()
@ApiExtraModels(AuditChangeView)
@Controller(apiPath('admin', 'projects'))
export class AdminAuditController {
  constructor(private readonly audit: AuditService) {}

  @Get(':projectId/audit-events')
  @ApiOperation({ summary: "A project's audit records, newest first (cursor paging; filters)" })
  @ApiEnvelope(AuditEventPageView)
  @ApiErrors('PROJECT_NOT_FOUND')
  list(@Param('projectId') projectId: string, @Query() query: ListAuditEventsQueryDto) {
    return this.audit.ofProject(projectId, () => this.audit.list(projectId, query));
  }

  @Get(':projectId/audit-events/export')
  @ApiOperation({ summary: "A project's audit records as NDJSON, oldest first (the list's filters)" })
  @NdjsonResponse()
  @ApiErrors('PROJECT_NOT_FOUND')
  export(@Param('projectId') projectId: string, @Query() query: AuditEventFiltersDto, @Res() res: Response) {
    return sendNdjson(res, this.audit.exportOf(projectId, query));
  }

  @Get(':projectId/audit-events/verify')
  @ApiOperation({ summary: "Verify a project's audit chain" })
  @ApiEnvelope(AuditVerifyView)
  @ApiErrors('PROJECT_NOT_FOUND')
  verify(@Param('projectId') projectId: string) {
    return this.audit.ofProject(projectId, () => this.audit.verify(projectId));
  }

  @Get(':projectId/audit-events/:auditEventId')
  @ApiOperation({ summary: "Read one of a project's audit records" })
  @AuditEventIdParam()
  @ApiEnvelope(AuditEventView)
  @ApiErrors('PROJECT_NOT_FOUND', 'AUDIT_EVENT_NOT_FOUND')
  get(@Param('projectId') projectId: string, @Param('auditEventId') id: string) {
    return this.audit.ofProject(projectId, () => this.audit.get(projectId, id));
  }
}
