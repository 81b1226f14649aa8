import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { CREDENTIAL_PASSWORD } from '../customers/entities/customer-credential.entity';
import { isForeignKeyViolation } from '../database/pg-errors';
import { pruneInBatches } from '../database/prune';

export interface PasswordRow {
  enabled: boolean;
  secret_hash: string | null;
}

export interface SessionRow {
  id: number;
  project_id: string;
  customer_id: number;
  live: boolean;
  enabled: boolean;
  last_used_at: Date | null;
}

/**
 * Every statement of the public login and of customer tokens (`customer_sessions`);
 * `CustomerSessionsService` keeps the rules. The login's password read and the token check join
 * `customers` (and `customer_credentials`) in the same statement: one round trip per login and per
 * customer request, the contract being the columns named here (a customer's `enabled`, its
 * password credential's `secret_hash`). Ending a customer's other sessions on a password change
 * is `CustomersRepository`'s (it runs in the customer's own transaction).
 */
@Injectable()
export class CustomerSessionsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The customer's `enabled` and password hash; no row for an unknown customer (or id 0). */
  async findPassword(projectId: string, customerId: number): Promise<PasswordRow | undefined> {
    const rows: PasswordRow[] = await this.dataSource.query(
      `SELECT c.enabled, cr.secret_hash
         FROM customers c
         LEFT JOIN customer_credentials cr ON cr.customer_id = c.id AND cr.project_id = c.project_id AND cr.type = $3
        WHERE c.id = $1 AND c.project_id = $2`,
      [customerId, projectId, CREDENTIAL_PASSWORD],
    );
    return rows[0];
  }

  /** The password hash alone (a logged-in customer changing it). */
  async findPasswordHash(projectId: string, customerId: number): Promise<string | undefined> {
    const rows: Array<{ secret_hash: string }> = await this.dataSource.query(
      'SELECT secret_hash FROM customer_credentials WHERE customer_id = $1 AND project_id = $2 AND type = $3',
      [customerId, projectId, CREDENTIAL_PASSWORD],
    );
    return rows[0]?.secret_hash;
  }

  /**
   * A session of `ttlDays` for a customer that still exists and may log in; undefined (no
   * session) for one deleted or disabled meanwhile.
   */
  async insertSession(
    projectId: string,
    customerId: number,
    tokenHash: string,
    ttlDays: number,
  ): Promise<{ expires_at: Date } | undefined> {
    const [session]: Array<{ expires_at: Date }> = await this.dataSource
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

  async findByTokenHash(tokenHash: string): Promise<SessionRow | undefined> {
    const rows: SessionRow[] = await this.dataSource.query(
      `SELECT s.id, s.project_id, s.customer_id, s.expires_at > now() AS live, c.enabled, s.last_used_at
         FROM customer_sessions s
         JOIN customers c ON c.id = s.customer_id AND c.project_id = s.project_id
        WHERE s.token_hash = $1`,
      [tokenHash],
    );
    return rows[0];
  }

  async touch(projectId: string, sessionId: number): Promise<void> {
    await this.dataSource.query(
      'UPDATE customer_sessions SET last_used_at = now() WHERE id = $1 AND project_id = $2',
      [sessionId, projectId],
    );
  }

  async delete(projectId: string, sessionId: number): Promise<void> {
    await this.dataSource.query('DELETE FROM customer_sessions WHERE id = $1 AND project_id = $2', [
      sessionId,
      projectId,
    ]);
  }

  /** Deletes the expired sessions; returns how many. */
  pruneExpired(): Promise<number> {
    return pruneInBatches(this.dataSource, { table: 'customer_sessions', condition: 'expires_at < now()' });
  }
}
