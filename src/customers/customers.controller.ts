import { Body, Controller, Delete, Get, HttpCode, Patch, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PrivateApi } from '../auth/decorators';
import { Scope } from '../auth/scopes';
import { IdParam } from '../common/http/id-param';
import { PageQueryDto } from '../common/http/pagination';
import { ApiEnvelope, ApiErrors, SuccessView } from '../common/swagger/api-responses';
import { CustomersService } from './customers.service';
import {
  CreateCustomerDto,
  CustomerListItem,
  CustomerRecord,
  ResolveCustomerDto,
  UpdateCustomerDto,
} from './dto/customer.dto';
import { IdempotencyContext, IdempotencyScope } from '../idempotency/idempotency-context';
import { Idempotent } from '../idempotency/idempotency.decorator';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Customers')
@PrivateApi()
@Controller(apiPath('private', 'customers'))
export class CustomersController {
  constructor(private readonly customers: CustomersService) {}

  @Get()
  @Scope('customers:read')
  @ApiOperation({
    summary: 'List customers, newest first; `search` matches the username or any identifier value',
  })
  @ApiEnvelope(CustomerListItem, { paged: true })
  list(@CurrentProject() project: CallerProject, @Query() query: PageQueryDto) {
    return this.customers.list(project.id, query);
  }

  @Post()
  @Scope('customers:write')
  @Idempotent()
  @ApiOperation({ summary: 'Create a customer; every free plan of the project is granted to it' })
  @ApiEnvelope(CustomerListItem, { status: 201 })
  @ApiErrors('USERNAME_TAKEN', 'IDENTIFIER_TAKEN', 'CUSTOMER_LIMIT_REACHED')
  create(
    @CurrentProject() project: CallerProject,
    @Body() dto: CreateCustomerDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.customers.create(project.id, dto, idem);
  }

  @Post('resolve')
  @Scope('customers:read')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({ summary: 'Find one customer by an identifier (type `username` included)' })
  @ApiEnvelope(CustomerRecord)
  @ApiErrors('CUSTOMER_NOT_FOUND')
  resolve(@CurrentProject() project: CallerProject, @Body() dto: ResolveCustomerDto) {
    return this.customers.resolve(project.id, dto.customer);
  }

  @Get(':customerId')
  @Scope('customers:read')
  @ApiOperation({ summary: 'Read a customer: the full record with credentials and identifiers' })
  @ApiEnvelope(CustomerRecord)
  @ApiErrors('CUSTOMER_NOT_FOUND')
  get(@CurrentProject() project: CallerProject, @IdParam('customerId') customerId: number) {
    return this.customers.get(project.id, customerId);
  }

  @Patch(':customerId')
  @Scope('customers:write')
  @Idempotent()
  @ApiOperation({ summary: 'Update a customer; `identifiers` replaces the whole list of extra identifiers' })
  @ApiEnvelope(CustomerRecord)
  @ApiErrors('CUSTOMER_NOT_FOUND', 'USERNAME_TAKEN', 'IDENTIFIER_TAKEN')
  update(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @Body() dto: UpdateCustomerDto,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.customers.update(project.id, customerId, dto, idem);
  }

  @Delete(':customerId')
  @Scope('customers:write')
  @Idempotent()
  @ApiOperation({
    summary: 'Delete a customer with its identifiers, credentials, sessions and subscriptions',
  })
  @ApiEnvelope(SuccessView)
  @ApiErrors('CUSTOMER_NOT_FOUND')
  remove(
    @CurrentProject() project: CallerProject,
    @IdParam('customerId') customerId: number,
    @IdempotencyScope() idem?: IdempotencyContext,
  ) {
    return this.customers.remove(project.id, customerId, idem);
  }
}
