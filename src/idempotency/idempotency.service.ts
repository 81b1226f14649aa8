import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PeriodicTask } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { fingerprintKey, requestFingerprint } from './idempotency-fingerprint';

/** How long a key is remembered (product.md 7). */
export const IDEMPOTENCY_TTL_HOURS = 24;
/** How often expired records are deleted, by every replica (the delete is cheap and idempotent). */
export const IDEMPOTENCY_PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/** What the first step of an idempotent request found. */
export type ClaimOutcome =
  /** The key was free (or expired): this request runs and owns the record. */
  | { kind: 'claimed' }
  /** The same request already finished: send this again. */
  | { kind: 'replay'; status: number; body: unknown }
  /** The first request with this key has not finished yet. */
  | { kind: 'in-use' }
  /** The key was used for another request. */
  | { kind: 'reused' };

interface RecordRow {
  fingerprint: string;
  response_status: number | null;
  response_body: unknown;
  expired: boolean;
}

/**
 * The `idempotency_records` table (product.md 7). Every decision is one SQL statement on the
 * shared database, so replicas agree: the claim is an atomic `INSERT ... ON CONFLICT`, the
 * clock is the database's `now()`.
 */
@Injectable()
export class IdempotencyService implements OnModuleInit, OnModuleDestroy {
  private readonly pruning = new PeriodicTask(
    'Pruning idempotency records',
    IDEMPOTENCY_PRUNE_INTERVAL_MS,
    () => this.pruneExpired(),
  );

  private readonly fingerprintKey: Buffer;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    config: AppConfig,
  ) {
    this.fingerprintKey = fingerprintKey(config.get('SECRET_ENCRYPTION_KEY'));
  }

  /** What makes two requests "the same request" for one key (see `requestFingerprint`). */
  fingerprint(method: string, pathWithQuery: string, body: unknown): string {
    return requestFingerprint(this.fingerprintKey, method, pathWithQuery, body);
  }

  onModuleInit(): void {
    this.pruning.start();
  }

  onModuleDestroy(): void {
    this.pruning.stop();
  }

  /**
   * Takes the key for this request, or says why not. An expired record counts as absent: the
   * `ON CONFLICT DO UPDATE ... WHERE expires_at < now()` overwrites it in the same atomic
   * statement (a live record is left alone, exactly like `DO NOTHING`). A record that
   * disappears between the two statements (released after a 5xx, or pruned) is claimed again.
   */
  async claim(projectId: string, key: string, fingerprint: string): Promise<ClaimOutcome> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const claimed: unknown[] = await this.dataSource.query(
        `INSERT INTO idempotency_records AS r (project_id, key, fingerprint, response_status, response_body, expires_at)
         VALUES ($1, $2, $3, NULL, NULL, now() + make_interval(hours => $4))
         ON CONFLICT (project_id, key) DO UPDATE
            SET fingerprint = EXCLUDED.fingerprint, response_status = NULL, response_body = NULL,
                created_at = now(), expires_at = EXCLUDED.expires_at
          WHERE r.expires_at < now()
         RETURNING 1 AS claimed`,
        [projectId, key, fingerprint, IDEMPOTENCY_TTL_HOURS],
      );
      if (claimed.length > 0) return { kind: 'claimed' };

      const rows: RecordRow[] = await this.dataSource.query(
        `SELECT fingerprint, response_status, response_body, expires_at < now() AS expired
           FROM idempotency_records WHERE project_id = $1 AND key = $2`,
        [projectId, key],
      );
      const row = rows[0];
      if (!row || row.expired) continue;
      // Running first: while the first request runs its answer is unknown, so any request
      // with the key (the same or not) is told to come back later.
      if (row.response_status === null) return { kind: 'in-use' };
      if (row.fingerprint !== fingerprint) return { kind: 'reused' };
      return { kind: 'replay', status: row.response_status, body: row.response_body };
    }
    // The record keeps appearing and vanishing: as good as busy.
    return { kind: 'in-use' };
  }

  /**
   * Stores the final answer of a claimed request. The body is kept as the exact JSON text
   * that was sent, as a jsonb string: a jsonb object would reorder its keys.
   */
  async complete(
    projectId: string,
    key: string,
    fingerprint: string,
    status: number,
    bodyText: string,
  ): Promise<void> {
    await this.dataSource.query(
      `UPDATE idempotency_records SET response_status = $4, response_body = to_jsonb($5::text)
        WHERE project_id = $1 AND key = $2 AND fingerprint = $3 AND response_status IS NULL`,
      [projectId, key, fingerprint, status, bodyText],
    );
  }

  /** Gives a claimed key back (5xx, or an answer that cannot be stored): it may be retried. */
  async release(projectId: string, key: string, fingerprint: string): Promise<void> {
    await this.dataSource.query(
      `DELETE FROM idempotency_records
        WHERE project_id = $1 AND key = $2 AND fingerprint = $3 AND response_status IS NULL`,
      [projectId, key, fingerprint],
    );
  }

  /** Deletes every expired record; returns how many. */
  async pruneExpired(): Promise<number> {
    const [{ n }]: Array<{ n: number }> = await this.dataSource.query(
      `WITH gone AS (DELETE FROM idempotency_records WHERE expires_at < now() RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
    );
    return n;
  }
}
