import { Module } from '@nestjs/common';
import { AdminController } from './admin.controller';
import { ProjectsService } from './projects.service';
import { ProjectsRepository } from './repository/projects.repository';
import { AuthModule } from '../auth/auth.module';

@Module({
  imports: [AuthModule],
  controllers: [AdminController],
  providers: [ProjectsService, ProjectsRepository],
  exports: [ProjectsService],
})
export class ProjectsModule {}
