import { Module } from '@nestjs/common';
import { PrivateInfoController, PublicInfoController } from './info.controller';
import { InfoService } from './info.service';
import { AuthModule } from '../auth/auth.module';
import { RoutesModule } from '../common/routes/route-catalog.service';

@Module({
  imports: [AuthModule, RoutesModule],
  controllers: [PrivateInfoController, PublicInfoController],
  providers: [InfoService],
})
export class InfoModule {}
