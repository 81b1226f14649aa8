import { Global, Module } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { AuditContextInterceptor } from './audit-context';
import { AuditTrail } from './audit-trail';

/** The writer of audit records, for every module's writes, and the request context it reads. */
@Global()
@Module({
  providers: [AuditTrail, { provide: APP_INTERCEPTOR, useClass: AuditContextInterceptor }],
  exports: [AuditTrail],
})
export class AuditTrailModule {}
