import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { CallerProject } from '../auth/caller';
import { CurrentProject } from '../auth/caller';
import { PublicApi } from '../auth/decorators';
import { ApiEnvelope, ApiErrors, SuccessView } from '../common/swagger/api-responses';
import { CurrentCustomer, CustomerApi } from './customer-auth';
import type { CustomerSessionRef } from './customer-sessions.service';
import { CustomerSessionsService } from './customer-sessions.service';
import { LoginDto, LoginResult } from './dto/public.dto';
import {
  LOGIN_FAILURE_WINDOW_SECONDS,
  LOGIN_MAX_FAILURES_PER_ADDRESS,
  LOGIN_MAX_FAILURES_PER_IDENTIFIER,
} from './login-throttle.service';
import { apiPath } from '../common/routes/api-prefixes';

@ApiTags('Public')
@Controller(apiPath('public', 'auth'))
export class PublicAuthController {
  constructor(private readonly sessions: CustomerSessionsService) {}

  @Post('login')
  @HttpCode(200)
  @PublicApi()
  @ApiOperation({
    summary: 'Log a customer in with an identifier and password; answers a customer token',
    description:
      'A wrong password, an unknown customer and a customer without a password all answer the same 401 INVALID_CREDENTIALS. ' +
      `After ${LOGIN_MAX_FAILURES_PER_IDENTIFIER} failures for one identifier (or ${LOGIN_MAX_FAILURES_PER_ADDRESS} from one address) ` +
      `within ${LOGIN_FAILURE_WINDOW_SECONDS / 60} minutes, attempts answer 429 RATE_LIMITED with Retry-After until the window ends.`,
  })
  @ApiEnvelope(LoginResult)
  @ApiErrors('VALIDATION_FAILED', 'INVALID_CREDENTIALS', 'CUSTOMER_DISABLED', 'RATE_LIMITED')
  login(@CurrentProject() project: CallerProject, @Body() dto: LoginDto, @Req() req: Request) {
    return this.sessions.login(project, dto, req.ip);
  }

  @Post('logout')
  @HttpCode(200)
  @CustomerApi()
  @ApiOperation({ summary: 'Revoke the customer token of this request' })
  @ApiEnvelope(SuccessView)
  logout(@CurrentCustomer() session: CustomerSessionRef) {
    return this.sessions.logout(session);
  }
}
