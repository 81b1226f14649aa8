import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { type CallerProject, CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { apiPath } from '../common/routes/api-prefixes';
import { DeliveryView, EventPageView, EventView, ListEventsQueryDto, RedeliveryView } from './dto/event.dto';
import { RedeliverDto } from './dto/webhook-endpoint.dto';
import { EventsService } from './events.service';

@ApiTags('Private: events')
@PrivateApi()
@Controller(apiPath('private', 'events'))
export class EventsController {
  constructor(private readonly events: EventsService) {}

  @Get()
  @Scope('events:read')
  @ApiOperation({ summary: "The project's events, newest first (cursor paging; filters type, customerId)" })
  @ApiEnvelope(EventPageView)
  list(@CurrentProject() project: CallerProject, @Query() query: ListEventsQueryDto) {
    return this.events.list(project.id, query);
  }

  @Get(':eventId')
  @Scope('events:read')
  @ApiOperation({ summary: 'Read an event' })
  @ApiEnvelope(EventView)
  @ApiErrors('EVENT_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @Param('eventId') id: string) {
    return this.events.get(project.id, id);
  }

  @Get(':eventId/deliveries')
  @Scope('events:read')
  @ApiOperation({ summary: "The event's deliveries per endpoint, each with its attempts" })
  @ApiEnvelope(DeliveryView, { isArray: true })
  @ApiErrors('EVENT_NOT_FOUND')
  deliveries(@CurrentProject() project: CallerProject, @Param('eventId') id: string) {
    return this.events.deliveries(project.id, id);
  }

  @Post(':eventId/redeliver')
  @Scope('webhooks:write')
  @Idempotent()
  @HttpCode(202)
  @ApiOperation({ summary: 'Deliver the event again (to every endpoint that wants it, or to endpointId)' })
  @ApiEnvelope(RedeliveryView, { status: 202 })
  @ApiErrors('EVENT_NOT_FOUND', 'WEBHOOK_ENDPOINT_NOT_FOUND', 'WEBHOOK_ENDPOINT_DISABLED')
  redeliver(
    @CurrentProject() project: CallerProject,
    @Param('eventId') id: string,
    @Body() dto: RedeliverDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.events.redeliver(project.id, id, dto, idem);
  }
}
