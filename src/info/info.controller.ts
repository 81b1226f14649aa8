import { Controller, Get, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi, PublicApi } from '../auth/decorators';
import { NoScope } from '../auth/scopes';
import { ApiEnvelope } from '../common/swagger/api-responses';
import { PrivateInfo, PublicInfo } from './info.dto';
import { InfoService } from './info.service';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Info')
@Controller(apiPath('private', 'info'))
export class PrivateInfoController {
  constructor(private readonly info: InfoService) {}

  @Get()
  @PrivateApi()
  @NoScope()
  @ApiOperation({ summary: 'The project of this key and the private endpoints' })
  @ApiEnvelope(PrivateInfo)
  get(@CurrentProject() project: CallerProject, @Req() req: Request) {
    return this.info.privateInfo(project, req);
  }
}

@ApiTags('Public')
@Controller(apiPath('public', 'info'))
export class PublicInfoController {
  constructor(private readonly info: InfoService) {}

  @Get()
  @PublicApi()
  @ApiOperation({ summary: 'The project of this public key and the public endpoints' })
  @ApiEnvelope(PublicInfo)
  get(@CurrentProject() project: CallerProject, @Req() req: Request) {
    return this.info.publicInfo(project, req);
  }
}
