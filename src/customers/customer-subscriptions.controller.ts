import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { ApiEnvelope, ApiErrors } from '../common/swagger/api-responses';
import { CustomerSubscriptionView, SubscriptionListQueryDto } from '../subscriptions/dto/subscription.dto';
import { CustomersService } from './customers.service';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Subscriptions')
@PrivateApi()
@Controller(apiPath('private', 'customers/:customerId/subscriptions'))
export class CustomerSubscriptionsController {
  constructor(private readonly customers: CustomersService) {}

  @Get()
  @Scope('customers:read')
  @ApiOperation({
    summary:
      "A customer's subscription windows: live ones first; `history=true` adds ended and cancelled ones",
  })
  @ApiEnvelope(CustomerSubscriptionView, { isArray: true })
  @ApiErrors('CUSTOMER_NOT_FOUND')
  list(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @Query() query: SubscriptionListQueryDto,
  ) {
    return this.customers.subscriptions(project.id, customerId, query.history);
  }
}
