import { Module } from '@nestjs/common';
import { RequestNonceStore } from './request-nonces.service';
import { FailureCounters } from './failure-counters';
import { AuthRepository } from './auth.repository';
import { AdminGuard, PrivateKeyGuard, PublicKeyGuard } from './guards';
import { KeyAuthService } from './key-auth.service';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { ProjectsRepository } from '../projects/repository/projects.repository';
import { RoutesModule } from '../common/routes/route-catalog.service';
import { RouteScopeCheck } from './scopes';

/**
 * Key and token authentication, imported by every module with a controller (the guards are made
 * there); it brings the rate limiter along, which the key guards count each key's requests with. The public key guard also
 * verifies request signatures, with the nonce store (`request_nonces`) beside it. Keys are read
 * through the projects' repository (`ProjectsRepository.findKeyByHash`), stateless, so this
 * module makes its own instance of it. `RouteScopeCheck` refuses to start an application whose
 * private routes do not each declare the scope the table gives them (`scopes.ts`).
 */
@Module({
  imports: [RateLimitModule, RoutesModule],
  providers: [
    RouteScopeCheck,
    AuthRepository,
    ProjectsRepository,
    KeyAuthService,
    RequestNonceStore,
    FailureCounters,
    PrivateKeyGuard,
    PublicKeyGuard,
    AdminGuard,
  ],
  exports: [
    RateLimitModule,
    KeyAuthService,
    RequestNonceStore,
    FailureCounters,
    PrivateKeyGuard,
    PublicKeyGuard,
    AdminGuard,
  ],
})
export class AuthModule {}
