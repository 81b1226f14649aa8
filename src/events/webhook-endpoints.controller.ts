import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { type CallerProject, CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { ApiEnvelope, ApiErrors, SuccessView } from '../common/swagger/api-responses';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { apiPath } from '../common/routes/api-prefixes';
import {
  CreateWebhookEndpointDto,
  ListWebhookEndpointsQueryDto,
  RotatedWebhookEndpointView,
  UpdateWebhookEndpointDto,
  WebhookEndpointView,
  WebhookEndpointWithSecretView,
  WebhookTestResultView,
} from './dto/webhook-endpoint.dto';
import { WebhookEndpointsService } from './webhook-endpoints.service';

@ApiTags('Private: webhooks')
@PrivateApi()
@Controller(apiPath('private', 'webhook-endpoints'))
export class WebhookEndpointsController {
  constructor(private readonly endpoints: WebhookEndpointsService) {}

  @Post()
  @Scope('webhooks:write')
  @Idempotent()
  @ApiOperation({ summary: 'Create a webhook endpoint; its signing secret is in this answer only' })
  @ApiEnvelope(WebhookEndpointWithSecretView, { status: 201 })
  create(
    @CurrentProject() project: CallerProject,
    @Body() dto: CreateWebhookEndpointDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.endpoints.create(project.id, dto, idem);
  }

  @Get()
  @Scope('webhooks:read')
  @ApiOperation({ summary: 'List webhook endpoints, newest first' })
  @ApiEnvelope(WebhookEndpointView, { paged: true })
  list(@CurrentProject() project: CallerProject, @Query() query: ListWebhookEndpointsQueryDto) {
    return this.endpoints.list(project.id, query);
  }

  @Get(':endpointId')
  @Scope('webhooks:read')
  @ApiOperation({ summary: 'Read a webhook endpoint' })
  @ApiEnvelope(WebhookEndpointView)
  @ApiErrors('WEBHOOK_ENDPOINT_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @Param('endpointId') id: string) {
    return this.endpoints.get(project.id, id);
  }

  @Patch(':endpointId')
  @Scope('webhooks:write')
  @Idempotent()
  @ApiOperation({ summary: 'Change url, eventTypes, enabled or description' })
  @ApiEnvelope(WebhookEndpointView)
  @ApiErrors('WEBHOOK_ENDPOINT_NOT_FOUND')
  update(
    @CurrentProject() project: CallerProject,
    @Param('endpointId') id: string,
    @Body() dto: UpdateWebhookEndpointDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.endpoints.update(project.id, id, dto, idem);
  }

  @Delete(':endpointId')
  @Scope('webhooks:write')
  @Idempotent()
  @ApiOperation({ summary: 'Delete a webhook endpoint (its deliveries go with it)' })
  @ApiEnvelope(SuccessView)
  @ApiErrors('WEBHOOK_ENDPOINT_NOT_FOUND')
  remove(
    @CurrentProject() project: CallerProject,
    @Param('endpointId') id: string,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.endpoints.remove(project.id, id, idem);
  }

  @Post(':endpointId/rotate-secret')
  @Scope('webhooks:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({ summary: 'A new signing secret; for 24 hours deliveries are signed with both' })
  @ApiEnvelope(RotatedWebhookEndpointView)
  @ApiErrors('WEBHOOK_ENDPOINT_NOT_FOUND')
  rotate(
    @CurrentProject() project: CallerProject,
    @Param('endpointId') id: string,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.endpoints.rotateSecret(project.id, id, idem);
  }

  @Post(':endpointId/test')
  @Scope('webhooks:write')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({ summary: "Send a webhook.test event now and answer the receiver's status" })
  @ApiEnvelope(WebhookTestResultView)
  @ApiErrors('WEBHOOK_ENDPOINT_NOT_FOUND')
  test(@CurrentProject() project: CallerProject, @Param('endpointId') id: string) {
    return this.endpoints.test(project.id, id);
  }
}
