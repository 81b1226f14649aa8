import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PeriodicTask } from '../common/periodic-task';

/** How often every replica deletes nonces whose window has passed (cheap: indexed on expires_at). */
export const NONCE_PRUNE_INTERVAL_MS = 60 * 1000;

/**
 * The `request_nonces` table: a nonce is accepted once per public key while its timestamp can
 * still be accepted (product.md 8). The decision is one atomic statement on the shared
 * database, so a request replayed to another replica is refused too.
 */
@Injectable()
export class RequestNonceStore implements OnModuleInit, OnModuleDestroy {
  private readonly pruning = new PeriodicTask('Pruning request nonces', NONCE_PRUNE_INTERVAL_MS, () =>
    this.pruneExpired(),
  );

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  onModuleInit(): void {
    this.pruning.start();
  }

  onModuleDestroy(): void {
    this.pruning.stop();
  }

  /**
   * Records the nonce; false when the key already used it and the record is still live.
   * The UNIQUE (api_key_id, nonce) decides: `ON CONFLICT` takes over only a row that has
   * expired but not been pruned yet, and leaves a live one alone (no row returned = reused).
   */
  async remember(apiKeyId: number, nonce: string, expiresAt: Date, now: Date = new Date()): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query(
      `INSERT INTO request_nonces AS n (api_key_id, nonce, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (api_key_id, nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at
        WHERE n.expires_at < $4
       RETURNING 1 AS stored`,
      [apiKeyId, nonce, expiresAt, now],
    );
    return rows.length > 0;
  }

  async pruneExpired(now: Date = new Date()): Promise<number> {
    const [{ n }]: Array<{ n: number }> = await this.dataSource.query(
      'WITH gone AS (DELETE FROM request_nonces WHERE expires_at < $1 RETURNING 1) SELECT count(*)::int AS n FROM gone',
      [now],
    );
    return n;
  }
}
