import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { AdminApi } from '../auth/decorators';
import { IdParam } from '../common/http/id-param';
import { PageQueryDto } from '../common/http/pagination';
import { ApiEnvelope, ApiErrors, SuccessView } from '../common/swagger/api-responses';
import {
  ApiKeyView,
  CreateApiKeyDto,
  CreateProjectDto,
  CreatedApiKeyView,
  ProjectView,
  UpdateApiKeyDto,
  UpdateProjectDto,
} from './dto/project.dto';
import { ProjectsService } from './projects.service';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Admin: projects and keys')
@AdminApi()
@Controller(apiPath('admin', 'projects'))
export class AdminController {
  constructor(private readonly projects: ProjectsService) {}

  @Post()
  @ApiOperation({ summary: 'Create a project' })
  @ApiEnvelope(ProjectView, { status: 201 })
  create(@Body() dto: CreateProjectDto) {
    return this.projects.create(dto);
  }

  @Get()
  @ApiOperation({ summary: 'List projects (newest first; search on the name)' })
  @ApiEnvelope(ProjectView, { paged: true })
  list(@Query() query: PageQueryDto) {
    return this.projects.list(query);
  }

  @Get(':projectId')
  @ApiOperation({ summary: 'Read a project' })
  @ApiEnvelope(ProjectView)
  @ApiErrors('PROJECT_NOT_FOUND')
  get(@Param('projectId') projectId: string) {
    return this.projects.get(projectId);
  }

  @Patch(':projectId')
  @ApiOperation({ summary: "Change a project's name or settings" })
  @ApiEnvelope(ProjectView)
  @ApiErrors('PROJECT_NOT_FOUND')
  update(@Param('projectId') projectId: string, @Body() dto: UpdateProjectDto) {
    return this.projects.update(projectId, dto);
  }

  @Delete(':projectId')
  @ApiOperation({ summary: 'Delete a project; its keys then answer 404 PROJECT_NOT_FOUND' })
  @ApiEnvelope(SuccessView)
  @ApiErrors('PROJECT_NOT_FOUND')
  remove(@Param('projectId') projectId: string) {
    return this.projects.remove(projectId);
  }

  @Post(':projectId/keys')
  @ApiOperation({
    summary: "Create a key; the key (and a public key's signing secret) is shown only in this answer",
  })
  @ApiEnvelope(CreatedApiKeyView, { status: 201 })
  @ApiErrors('PROJECT_NOT_FOUND')
  createKey(@Param('projectId') projectId: string, @Body() dto: CreateApiKeyDto) {
    return this.projects.createKey(projectId, dto);
  }

  @Get(':projectId/keys')
  @ApiOperation({ summary: "List a project's keys, without secrets" })
  @ApiEnvelope(ApiKeyView, { isArray: true })
  @ApiErrors('PROJECT_NOT_FOUND')
  listKeys(@Param('projectId') projectId: string) {
    return this.projects.listKeys(projectId);
  }

  @Patch(':projectId/keys/:keyId')
  @ApiOperation({ summary: 'Enable, disable or rename a key' })
  @ApiEnvelope(ApiKeyView)
  @ApiErrors('PROJECT_NOT_FOUND', 'API_KEY_NOT_FOUND')
  updateKey(
    @Param('projectId') projectId: string,
    @IdParam('keyId') keyId: number,
    @Body() dto: UpdateApiKeyDto,
  ) {
    return this.projects.updateKey(projectId, keyId, dto);
  }

  @Delete(':projectId/keys/:keyId')
  @HttpCode(200)
  @ApiOperation({ summary: 'Delete a key' })
  @ApiEnvelope(SuccessView)
  @ApiErrors('PROJECT_NOT_FOUND', 'API_KEY_NOT_FOUND')
  removeKey(@Param('projectId') projectId: string, @IdParam('keyId') keyId: number) {
    return this.projects.removeKey(projectId, keyId);
  }
}
