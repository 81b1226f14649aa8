import { Injectable } from '@nestjs/common';
import { isForeignKeyViolation } from '../database/pg-errors';
import { GenerateSql } from '../database/generate-sql';
import { pruneInBatches } from '../database/prune';
import { Transactions } from '../database/transactional';

export interface SessionRow {
  id: number;
  project_id: string;
  customer_id: number;
  live: boolean;
  enabled: boolean;
  last_used_at: Date | null;
}

/**
 * Every statement of customer tokens (`customer_sessions`); `CustomerSessionsService` keeps the
 * rules, and the customers module answers for the passwords. A new session and the token check
 * read the customer's `enabled` in the same statement: the session exists only for a customer
 * that may log in, and a customer request costs one round trip. Ending a customer's other
 * sessions on a password change is `CustomersRepository`'s (it runs in the customer's own
 * transaction). Every statement runs in the current unit of work's transaction, if one is open.
 */
@Injectable()
export class CustomerSessionsRepository {
  constructor(private readonly transactions: Transactions) {}

  private get tx() {
    return this.transactions.tx;
  }

  /**
   * A session of `ttlDays` for a customer that still exists and may log in; undefined (no
   * session) for one deleted or disabled meanwhile.
   */
  @GenerateSql({ params: ['prj_1', 1, 'e'.repeat(64), 30] })
  async insertSession(
    projectId: string,
    customerId: number,
    tokenHash: string,
    ttlDays: number,
  ): Promise<{ expires_at: Date } | undefined> {
    const [session]: Array<{ expires_at: Date }> = await this.tx
      .query(
        `INSERT INTO customer_sessions (project_id, customer_id, token_hash, expires_at)
         SELECT $1::varchar, c.id, $3::varchar, now() + make_interval(days => $4)
           FROM customers c WHERE c.id = $2 AND c.project_id = $1::varchar AND c.enabled
         RETURNING expires_at`,
        [projectId, customerId, tokenHash, ttlDays],
      )
      .catch((error: unknown) => {
        if (isForeignKeyViolation(error)) return [];
        throw error;
      });
    return session;
  }

  @GenerateSql({ params: ['b'.repeat(64)] })
  async findByTokenHash(tokenHash: string): Promise<SessionRow | undefined> {
    const rows: SessionRow[] = await this.tx.query(
      `SELECT s.id, s.project_id, s.customer_id, s.expires_at > now() AS live, c.enabled, s.last_used_at
         FROM customer_sessions s
         JOIN customers c ON c.id = s.customer_id AND c.project_id = s.project_id
        WHERE s.token_hash = $1`,
      [tokenHash],
    );
    return rows[0];
  }

  @GenerateSql({ params: ['prj_1', 1] })
  async touch(projectId: string, sessionId: number): Promise<void> {
    await this.tx.query(
      'UPDATE customer_sessions SET last_used_at = now() WHERE id = $1 AND project_id = $2',
      [sessionId, projectId],
    );
  }

  @GenerateSql({ params: ['prj_1', 1] })
  async delete(projectId: string, sessionId: number): Promise<void> {
    await this.tx.query('DELETE FROM customer_sessions WHERE id = $1 AND project_id = $2', [
      sessionId,
      projectId,
    ]);
  }

  /** Deletes the expired sessions; returns how many. */
  @GenerateSql({ params: [] })
  pruneExpired(): Promise<number> {
    return pruneInBatches(this.tx, { table: 'customer_sessions', condition: 'expires_at < now()' });
  }
}
