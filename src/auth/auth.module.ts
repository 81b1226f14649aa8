import { Global, Module } from '@nestjs/common';
import { AdminGuard, PrivateKeyGuard, PublicKeyGuard } from './guards';
import { KeyAuthService } from './key-auth.service';

/** Key and token authentication, available to every feature module. */
@Global()
@Module({
  providers: [KeyAuthService, PrivateKeyGuard, PublicKeyGuard, AdminGuard],
  exports: [KeyAuthService, PrivateKeyGuard, PublicKeyGuard, AdminGuard],
})
export class AuthModule {}
