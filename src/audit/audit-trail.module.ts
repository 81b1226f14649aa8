import { Global, Module } from '@nestjs/common';
import { AuditTrail } from './audit-trail';

/** The writer of audit records, for every module's writes. */
@Global()
@Module({
  providers: [AuditTrail],
  exports: [AuditTrail],
})
export class AuditTrailModule {}
