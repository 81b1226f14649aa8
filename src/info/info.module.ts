import { Module } from '@nestjs/common';
import { PrivateInfoController, PublicInfoController } from './info.controller';
import { InfoService } from './info.service';

@Module({
  controllers: [PrivateInfoController, PublicInfoController],
  providers: [InfoService],
})
export class InfoModule {}
