import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { PrivateInfoController, PublicInfoController } from './info.controller';
import { InfoService } from './info.service';
import { RouteCatalog } from './route-catalog.service';

@Module({
  imports: [DiscoveryModule],
  controllers: [PrivateInfoController, PublicInfoController],
  providers: [InfoService, RouteCatalog],
})
export class InfoModule {}
