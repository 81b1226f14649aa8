import { Module } from '@nestjs/common';
import { RequestNonceStore } from './request-nonces.service';
import { AdminGuard, PrivateKeyGuard, PublicKeyGuard } from './guards';
import { KeyAuthService } from './key-auth.service';
import { RateLimitModule } from '../rate-limit/rate-limit.module';

/**
 * Key and token authentication, imported by every module with a controller (the guards are made
 * there); it brings the per-key rate limit guard's limiter along. The public key guard also
 * verifies request signatures, with the nonce store (`request_nonces`) beside it.
 */
@Module({
  imports: [RateLimitModule],
  providers: [KeyAuthService, RequestNonceStore, PrivateKeyGuard, PublicKeyGuard, AdminGuard],
  exports: [RateLimitModule, KeyAuthService, RequestNonceStore, PrivateKeyGuard, PublicKeyGuard, AdminGuard],
})
export class AuthModule {}
