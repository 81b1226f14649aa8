import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { pruneInBatches } from '../database/prune';
import { GenerateSql } from '../database/generate-sql';

/** Second argument of `hashtextextended` for the advisory lock of a key (any constant, the same on every replica). */
const LOCK_SEED = 7_152_015;

export interface RecordRow {
  fingerprint: string;
  response_status: number | null;
  response_body: unknown;
  expired: boolean;
}

/**
 * Every statement on `idempotency_records`, and the key's advisory lock; `IdempotencyService`
 * keeps the rules. A method that takes an `EntityManager` runs in the caller's transaction (one
 * that is optional runs on the pool without it). The clock is the database's `now()`.
 */
@Injectable()
export class IdempotencyRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  @GenerateSql({ params: (_, call) => ['prj_1', 'order-1', call.manager()] })
  async find(projectId: string, key: string, em?: EntityManager): Promise<RecordRow | undefined> {
    const rows: RecordRow[] = await (em ?? this.dataSource.manager).query(
      `SELECT fingerprint, response_status, response_body, expires_at < now() AS expired
         FROM idempotency_records WHERE project_id = $1 AND key = $2`,
      [projectId, key],
    );
    return rows[0];
  }

  /**
   * Tries the transaction-scoped advisory lock on (project, key): freed by the commit, the
   * rollback, or the end of the session when the process dies. False: another transaction holds it.
   */
  @GenerateSql({ params: (_, call) => [call.manager(), 'prj_1', 'order-1'] })
  async tryLock(em: EntityManager, projectId: string, key: string): Promise<boolean> {
    const [{ locked }]: Array<{ locked: boolean }> = await em.query(
      `SELECT pg_try_advisory_xact_lock(hashtextextended($1 || E'\\n' || $2, ${LOCK_SEED})) AS locked`,
      [projectId, key],
    );
    return locked;
  }

  /**
   * Writes the answer as the exact JSON text (a jsonb string), kept `ttlHours`. `overwrite`: it
   * replaces whatever is there; otherwise only an expired record, or an unanswered claim of the
   * same request.
   */
  @GenerateSql({
    params: (_, call) => ['prj_1', 'order-2', 'c'.repeat(64), 201, '{"data":{}}', 24, false, call.manager()],
  })
  async upsert(
    projectId: string,
    key: string,
    fingerprint: string,
    status: number,
    bodyText: string,
    ttlHours: number,
    overwrite: boolean,
    em?: EntityManager,
  ): Promise<void> {
    await (em ?? this.dataSource.manager).query(
      `INSERT INTO idempotency_records AS r (project_id, key, fingerprint, response_status, response_body, expires_at)
       VALUES ($1, $2, $3, $4, to_jsonb($5::text), now() + make_interval(hours => $6))
       ON CONFLICT (project_id, key) DO UPDATE
          SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
              response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
        WHERE $7 OR r.expires_at < now() OR (r.response_status IS NULL AND r.fingerprint = EXCLUDED.fingerprint)`,
      [projectId, key, fingerprint, status, bodyText, ttlHours, overwrite],
    );
  }

  /** Replaces the stored answer of this request (same key and fingerprint). */
  @GenerateSql({ params: ['prj_1', 'order-9', 'c'.repeat(64), 200, '{"data":{}}'] })
  async replaceAnswer(
    projectId: string,
    key: string,
    fingerprint: string,
    status: number,
    bodyText: string,
  ): Promise<void> {
    await this.dataSource.query(
      `UPDATE idempotency_records SET response_status = $4, response_body = to_jsonb($5::text)
        WHERE project_id = $1 AND key = $2 AND fingerprint = $3`,
      [projectId, key, fingerprint, status, bodyText],
    );
  }

  /** Deletes every expired record; returns how many. */
  @GenerateSql({ params: [] })
  pruneExpired(): Promise<number> {
    return pruneInBatches(this.dataSource, { table: 'idempotency_records', condition: 'expires_at < now()' });
  }
}
