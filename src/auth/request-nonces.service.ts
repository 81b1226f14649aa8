import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { PeriodicTask } from '../common/periodic-task';
import { AuthRepository } from './auth.repository';

/** How often every replica deletes nonces whose window has passed (cheap: indexed on expires_at). */
export const NONCE_PRUNE_INTERVAL_MS = 60 * 1000;

/**
 * The `request_nonces` table: a nonce is accepted once per public key while its timestamp can
 * still be accepted (docs/public-api.md#signature-v1). The decision is one atomic statement
 * on the shared
 * database, so a request replayed to another replica is refused too.
 */
@Injectable()
export class RequestNonceStore implements OnModuleInit, OnModuleDestroy {
  private readonly pruning = new PeriodicTask('Pruning request nonces', NONCE_PRUNE_INTERVAL_MS, () =>
    this.pruneExpired(),
  );

  constructor(private readonly repository: AuthRepository) {}

  onModuleInit(): void {
    this.pruning.start();
  }

  onModuleDestroy(): Promise<void> {
    return this.pruning.stop();
  }

  /** Records the nonce; false when the key already used it and the record is still live. */
  remember(apiKeyId: number, nonce: string, expiresAt: Date, now: Date = new Date()): Promise<boolean> {
    return this.repository.insertNonce(apiKeyId, nonce, expiresAt, now);
  }

  pruneExpired(now: Date = new Date()): Promise<number> {
    return this.repository.pruneNonces(now);
  }
}
