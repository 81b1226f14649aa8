import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { CallerProject } from '../auth/caller';
import { hashPassword, verifyPassword } from '../common/crypto/passwords';
import { randomToken } from '../common/crypto/random';
import { sha256Hex } from '../common/crypto/sha256';
import { DomainError } from '../common/errors/domain-error';
import { isForeignKeyViolation } from '../database/pg-errors';
import { AppConfig } from '../config/app-config';
import { CustomersService } from '../customers/customers.service';
import { CREDENTIAL_PASSWORD } from '../customers/entities/customer-credential.entity';
import { LoginDto, LoginResult } from './dto/public.dto';
import { LoginThrottle } from './login-throttle.service';
import { PeriodicTask } from '../common/periodic-task';

/** How often every replica deletes expired sessions and ended login-failure windows. */
export const SESSION_PRUNE_INTERVAL_MS = 10 * 60 * 1000;
/** `last_used_at` is written at most this often per session, not on every request. */
const LAST_USED_RESOLUTION_MS = 60 * 1000;

/** The customer a valid token stands for, as the customer-token guard puts it on the request. */
export interface CustomerSessionRef {
  sessionId: number;
  projectId: string;
  customerId: number;
}

interface PasswordRow {
  enabled: boolean;
  secret_hash: string | null;
}

interface SessionRow {
  id: number;
  project_id: string;
  customer_id: number;
  live: boolean;
  enabled: boolean;
  last_used_at: Date | null;
}

/**
 * Public login, logout and customer tokens (product.md 8). A token is 32 random bytes
 * (base64url); only its SHA-256 is stored, in `customer_sessions`, with an expiry of
 * `CUSTOMER_TOKEN_TTL_DAYS`. Deleting a customer deletes its sessions (ON DELETE CASCADE).
 */
@Injectable()
export class CustomerSessionsService implements OnModuleInit, OnModuleDestroy {
  private readonly pruning = new PeriodicTask(
    'Pruning customer sessions',
    SESSION_PRUNE_INTERVAL_MS,
    async () => {
      await this.pruneExpired();
      await this.throttle.pruneExpired();
    },
  );
  /** A bcrypt hash of a random secret at the configured cost: compared against when there is no real hash. */
  private dummyHash: string;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly customers: CustomersService,
    private readonly throttle: LoginThrottle,
    private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    this.dummyHash = await hashPassword(randomToken(), this.config.get('BCRYPT_COST'));
    this.pruning.start();
  }

  onModuleDestroy(): void {
    this.pruning.stop();
  }

  /**
   * A wrong password, an unknown customer and a customer without a password all end in the
   * same INVALID_CREDENTIALS after the same work: the same two queries and the same bcrypt
   * comparisons (against a dummy hash when there is no real one). Only a correct password
   * reveals that the customer is disabled.
   */
  async login(project: CallerProject, dto: LoginDto, address: string | undefined): Promise<LoginResult> {
    const attempt = this.throttle.attemptFor(project.id, dto.identifier, address);
    await this.throttle.begin(attempt);

    const customerId = await this.customers.findIdByIdentifier(
      this.dataSource.manager,
      project.id,
      dto.identifier,
    );
    const rows: PasswordRow[] = await this.dataSource.query(
      `SELECT c.enabled, cr.secret_hash
         FROM customers c
         LEFT JOIN customer_credentials cr ON cr.customer_id = c.id AND cr.project_id = c.project_id AND cr.type = $3
        WHERE c.id = $1 AND c.project_id = $2`,
      [customerId ?? 0, project.id, CREDENTIAL_PASSWORD],
    );
    const row = rows[0];
    const hash = row?.secret_hash ?? this.dummyHash;
    const matches = await verifyPassword(dto.password, hash);
    if (customerId === undefined || !row?.secret_hash || !matches)
      throw new DomainError('INVALID_CREDENTIALS');

    if (!row.enabled) {
      await this.throttle.notAFailure(attempt);
      throw new DomainError('CUSTOMER_DISABLED');
    }
    await this.throttle.succeeded(attempt);

    const token = randomToken();
    // Only for a customer that still exists and may log in: one deleted or disabled since the
    // password was checked gets no session (INVALID_CREDENTIALS, as for an unknown one).
    const [session]: Array<{ expires_at: Date }> = await this.dataSource
      .query(
        `INSERT INTO customer_sessions (project_id, customer_id, token_hash, expires_at)
         SELECT $1::varchar, c.id, $3::varchar, now() + make_interval(days => $4)
           FROM customers c WHERE c.id = $2 AND c.project_id = $1::varchar AND c.enabled
         RETURNING expires_at`,
        [project.id, customerId, sha256Hex(token), this.config.get('CUSTOMER_TOKEN_TTL_DAYS')],
      )
      .catch((error: unknown) => {
        if (isForeignKeyViolation(error)) return [];
        throw error;
      });
    if (!session) throw new DomainError('INVALID_CREDENTIALS');
    return {
      token,
      tokenType: 'Bearer',
      expiresAt: new Date(session.expires_at).toISOString(),
      customer: await this.customers.get(project.id, customerId),
    };
  }

  /**
   * The session of a presented token, checked in this order: unknown or expired → 401
   * INVALID_CUSTOMER_TOKEN; another project's → 403 CUSTOMER_PROJECT_MISMATCH; disabled
   * customer → 403 CUSTOMER_DISABLED. (A deleted customer's sessions no longer exist: 401.)
   */
  async authenticate(project: CallerProject, token: string | undefined): Promise<CustomerSessionRef> {
    if (!token || token.length > 256) throw new DomainError('INVALID_CUSTOMER_TOKEN');
    const rows: SessionRow[] = await this.dataSource.query(
      `SELECT s.id, s.project_id, s.customer_id, s.expires_at > now() AS live, c.enabled, s.last_used_at
         FROM customer_sessions s
         JOIN customers c ON c.id = s.customer_id AND c.project_id = s.project_id
        WHERE s.token_hash = $1`,
      [sha256Hex(token)],
    );
    const row = rows[0];
    if (!row || !row.live) throw new DomainError('INVALID_CUSTOMER_TOKEN');
    if (row.project_id !== project.id) throw new DomainError('CUSTOMER_PROJECT_MISMATCH');
    if (!row.enabled) throw new DomainError('CUSTOMER_DISABLED');
    if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > LAST_USED_RESOLUTION_MS) {
      await this.dataSource.query(
        'UPDATE customer_sessions SET last_used_at = now() WHERE id = $1 AND project_id = $2',
        [row.id, project.id],
      );
    }
    return { sessionId: row.id, projectId: project.id, customerId: row.customer_id };
  }

  async logout(session: CustomerSessionRef): Promise<{ success: true }> {
    await this.dataSource.query('DELETE FROM customer_sessions WHERE id = $1 AND project_id = $2', [
      session.sessionId,
      session.projectId,
    ]);
    return { success: true };
  }

  async pruneExpired(): Promise<number> {
    const [{ n }]: Array<{ n: number }> = await this.dataSource.query(
      'WITH gone AS (DELETE FROM customer_sessions WHERE expires_at < now() RETURNING 1) SELECT count(*)::int AS n FROM gone',
    );
    return n;
  }
}
