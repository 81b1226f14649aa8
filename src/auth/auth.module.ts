import { Global, Module } from '@nestjs/common';
import { RequestNonceStore } from '../public/request-nonces.service';
import { FailureCounters } from './failure-counters';
import { AdminGuard, PrivateKeyGuard, PublicKeyGuard } from './guards';
import { KeyAuthService } from './key-auth.service';

/**
 * Key and token authentication, available to every feature module. The public key guard also
 * verifies request signatures, with the nonce store (`request_nonces`) beside it.
 */
@Global()
@Module({
  providers: [
    KeyAuthService,
    RequestNonceStore,
    FailureCounters,
    PrivateKeyGuard,
    PublicKeyGuard,
    AdminGuard,
  ],
  exports: [KeyAuthService, RequestNonceStore, FailureCounters, PrivateKeyGuard, PublicKeyGuard, AdminGuard],
})
export class AuthModule {}
