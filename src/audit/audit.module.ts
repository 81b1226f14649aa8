import { Global, Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { ProjectsRepository } from '../projects/repository/projects.repository';
import { AuditRetention } from './audit-retention';
import { AuditSealer } from './audit-sealer';
import { AdminAuditController, AuditController } from './audit.controller';
import { AuditRepository } from './audit.repository';
import { AuditService } from './audit.service';

/**
 * The audit log (docs/operations.md#audit-log): its reads (private and admin), the sealer that
 * hash-chains each project's records, verify, and retention. The admin reads find a project,
 * deleted or not, through the projects' repository, stateless, of which this module makes its
 * own instance (as `AuthModule` does).
 */
@Global()
@Module({
  imports: [AuthModule],
  controllers: [AuditController, AdminAuditController],
  providers: [AuditRepository, AuditService, AuditSealer, AuditRetention, ProjectsRepository],
  exports: [AuditService],
})
export class AuditModule {}
