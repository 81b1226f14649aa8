import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { SecretBox } from '../common/crypto/secret-box';
import { PeriodicTask } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { fingerprintKey, requestFingerprint } from './idempotency-fingerprint';
import { IdempotencyRepository } from './idempotency.repository';

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_HOURS = 24;
/** How often expired records are deleted, by every replica (the delete is cheap and idempotent). */
export const IDEMPOTENCY_PRUNE_INTERVAL_MS = 10 * 60 * 1000;

/** What an earlier request with the same key left. */
export type EarlierAnswer =
  /** The same request already finished: send this again. */
  | { kind: 'replay'; status: number; body: unknown }
  /** The first request with this key has not finished yet (another replica holds the key). */
  | { kind: 'in-use' }
  /** The key was used for another request. */
  | { kind: 'reused' };

/**
 * The `idempotency_records` table. A record holds a finished answer only: it is
 * written in the same transaction as the work (see `IdempotencyContext`), so an interrupted
 * request leaves its answer or nothing. "Still running" is a transaction-scoped advisory lock on
 * (project, key), which PostgreSQL frees with the transaction, whatever happens to the process.
 * The clock is the database's `now()`, so replicas agree.
 */
@Injectable()
export class IdempotencyService implements OnModuleInit, OnModuleDestroy {
  private readonly pruning = new PeriodicTask(
    'Pruning idempotency records',
    IDEMPOTENCY_PRUNE_INTERVAL_MS,
    () => this.pruneExpired(),
  );

  private readonly fingerprintKey: Buffer;
  /** Stored answers are encrypted: some hold secrets shown once (a webhook endpoint's, codes). */
  private readonly box: SecretBox;

  constructor(
    private readonly repository: IdempotencyRepository,
    config: AppConfig,
  ) {
    this.fingerprintKey = fingerprintKey(config.get('SECRET_ENCRYPTION_KEY'));
    this.box = new SecretBox(config.get('SECRET_ENCRYPTION_KEY'));
  }

  /** What makes two requests "the same request" for one key (see `requestFingerprint`). */
  fingerprint(method: string, pathWithQuery: string, body: unknown): string {
    return requestFingerprint(this.fingerprintKey, method, pathWithQuery, body);
  }

  onModuleInit(): void {
    this.pruning.start();
  }

  onModuleDestroy(): Promise<void> {
    return this.pruning.stop();
  }

  /**
   * The answer stored for the key, if any (a record with no answer is a claim written by an
   * older version of the service: still running, unless expired). `undefined`: the key is free.
   * Read through `em` inside a transaction, or through the pool.
   */
  async find(
    projectId: string,
    key: string,
    fingerprint: string,
    em?: EntityManager,
  ): Promise<EarlierAnswer | undefined> {
    const row = await this.repository.find(projectId, key, em);
    if (!row || row.expired) return undefined;
    if (row.response_status === null) return { kind: 'in-use' };
    if (row.fingerprint !== fingerprint) return { kind: 'reused' };
    return { kind: 'replay', status: row.response_status, body: this.opened(row.response_body) };
  }

  /**
   * Takes the key for the rest of `em`'s transaction (a transaction-scoped advisory lock on
   * (project, key), so that it is freed by the commit, the rollback, or the end of the session
   * when the process dies), then reads what an earlier request left. Another transaction
   * holding the key, here or on another replica: `in-use`, at once.
   */
  async lockKey(
    em: EntityManager,
    projectId: string,
    key: string,
    fingerprint: string,
  ): Promise<EarlierAnswer | undefined> {
    if (!(await this.repository.tryLock(em, projectId, key))) return { kind: 'in-use' };
    return this.find(projectId, key, fingerprint, em);
  }

  /**
   * Stores the answer of a request. In the work's transaction (`em`), under the key's lock, this
   * is the record that commits with the work. Without `em` (an answer of a request that wrote
   * nothing, such as a 4xx), an answer already there wins.
   * The body is kept as the exact JSON text that was sent, encrypted (AES-256-GCM with
   * `SECRET_ENCRYPTION_KEY`, as the public keys' signing secrets): some answers hold what is shown
   * only once (a webhook endpoint's signing secret, a batch's codes), and the table must not keep
   * them readable for a day. Stored as a jsonb string (a jsonb object would reorder its keys).
   */
  async save(
    projectId: string,
    key: string,
    fingerprint: string,
    status: number,
    bodyText: string,
    em?: EntityManager,
  ): Promise<void> {
    // In the work's transaction the key is locked and was free: this answer is the truth, even
    // over an error answer that a duplicate stored meanwhile. Outside, a live answer wins.
    await this.repository.upsert(
      projectId,
      key,
      fingerprint,
      status,
      this.box.encrypt(bodyText),
      IDEMPOTENCY_TTL_HOURS,
      em !== undefined,
      em,
    );
  }

  /** Replaces the stored answer of this request (the handler answered more than its work returned). */
  async replace(projectId: string, key: string, fingerprint: string, status: number, bodyText: string) {
    await this.repository.replaceAnswer(projectId, key, fingerprint, status, this.box.encrypt(bodyText));
  }

  /**
   * A stored answer as sent: decrypted, or as it is when a version before encryption stored it
   * (the JSON text itself, which starts with `{`; such records expire within a day of the upgrade).
   */
  private opened(stored: unknown): unknown {
    return typeof stored === 'string' && stored.startsWith('v1.') ? this.box.decrypt(stored) : stored;
  }

  /** Deletes every expired record; returns how many. */
  pruneExpired(): Promise<number> {
    return this.repository.pruneExpired();
  }
}
