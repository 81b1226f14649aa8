import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import type { CallerProject } from '../auth/caller';
import { hashPassword, verifyPassword } from '../common/crypto/passwords';
import { randomToken } from '../common/crypto/random';
import { sha256Hex } from '../common/crypto/sha256';
import { DomainError } from '../common/errors/domain-error';
import { AppConfig } from '../config/app-config';
import { CustomersService } from '../customers/customers.service';
import { runInTransaction, Transactions } from '../database/transactional';
import { ChangePasswordDto, LoginDto, LoginResult } from './dto/public.dto';
import { CustomerSessionsRepository } from './customer-sessions.repository';
import { LoginThrottle } from './login-throttle.service';
import { USERNAME_PATTERN } from '../customers/dto/customer.dto';

const isUsername = (value: string) => value.length >= 8 && value.length <= 16 && USERNAME_PATTERN.test(value);
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

/**
 * Public login, logout and customer tokens. A token is 32 random bytes
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
    private readonly repository: CustomerSessionsRepository,
    private readonly customers: CustomersService,
    private readonly throttle: LoginThrottle,
    private readonly config: AppConfig,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {}

  async onModuleInit(): Promise<void> {
    this.dummyHash = await hashPassword(randomToken(), this.config.get('BCRYPT_COST'));
    this.pruning.start();
  }

  onModuleDestroy(): Promise<void> {
    return this.pruning.stop();
  }

  /**
   * A wrong password, an unknown customer and a customer without a password all end in the
   * same INVALID_CREDENTIALS after the same work: the same two queries and the same bcrypt
   * comparisons (against a dummy hash when there is no real one). Only a correct password
   * reveals that the customer is disabled.
   */
  async login(project: CallerProject, dto: LoginDto, address: string | undefined): Promise<LoginResult> {
    const { type, value } = dto.identifier;
    // A username that breaks the username rules cannot exist: refused before any lookup, so that
    // no other spelling (`admİn` for `admin`, which the database may fold into the same name) is
    // ever looked up, let alone counted apart.
    if (type === 'username' && !isUsername(value)) {
      const message = 'identifier.value is not a valid username (8 to 16 of A-Z a-z 0-9 _ . -)';
      throw new DomainError('VALIDATION_FAILED', message, [{ field: 'identifier.value', message }]);
    }
    const customerId = await this.customers.findIdByIdentifier(project.id, dto.identifier);
    // the failure counters are those of the customer the identifier resolved to, whichever of its
    // identifiers was typed; an unknown identifier is counted as written (usernames in lower case)
    const subject =
      customerId !== undefined
        ? `customer:${customerId}`
        : `identifier:${type}\u0000${type === 'username' ? value.toLowerCase() : value}`;
    const attempt = this.throttle.attemptFor(project.id, subject, address);
    await this.throttle.begin(attempt);

    const password = await this.customers.passwordOf(project.id, customerId ?? 0);
    const hash = password?.secretHash ?? this.dummyHash;
    const matches = await verifyPassword(dto.password, hash);
    if (customerId === undefined || !password?.secretHash || !matches)
      throw new DomainError('INVALID_CREDENTIALS');

    if (!password.enabled) {
      await this.throttle.notAFailure(attempt);
      throw new DomainError('CUSTOMER_DISABLED');
    }
    await this.throttle.succeeded(attempt);

    const token = randomToken();
    const session = await runInTransaction(this.transactions, async () => {
      // Only for a customer that still exists and may log in: one deleted or disabled since the
      // password was checked gets no session (INVALID_CREDENTIALS, as for an unknown one).
      const inserted = await this.repository.insertSession(
        project.id,
        customerId,
        sha256Hex(token),
        this.config.get('CUSTOMER_TOKEN_TTL_DAYS'),
      );
      if (!inserted) throw new DomainError('INVALID_CREDENTIALS');
      // the request has no customer session yet: the record names who logged in
      const context = this.audit.context();
      this.audit.record(
        {
          projectId: project.id,
          action: 'customer.logged_in',
          resourceType: 'customer',
          resourceId: customerId,
          changes: null,
        },
        { ...context, actor: { ...context.actor, customerId } },
      );
      return inserted;
    });
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
    const row = await this.repository.findByTokenHash(sha256Hex(token));
    if (!row || !row.live) throw new DomainError('INVALID_CUSTOMER_TOKEN');
    if (row.project_id !== project.id) throw new DomainError('CUSTOMER_PROJECT_MISMATCH');
    if (!row.enabled) throw new DomainError('CUSTOMER_DISABLED');
    if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > LAST_USED_RESOLUTION_MS) {
      await this.repository.touch(project.id, row.id);
    }
    return { sessionId: row.id, projectId: project.id, customerId: row.customer_id };
  }

  /**
   * The logged-in customer sets a new password, proving the current one. Every other session of
   * the customer ends (`CustomersService.update`); this one goes on. A wrong current password is
   * 401 INVALID_CREDENTIALS and counts as a failed login of the customer from this address.
   */
  async changePassword(
    project: CallerProject,
    session: CustomerSessionRef,
    dto: ChangePasswordDto,
    address: string | undefined,
  ): Promise<{ success: true }> {
    const attempt = this.throttle.attemptFor(project.id, `customer:${session.customerId}`, address);
    await this.throttle.begin(attempt);
    const hash = await this.customers.passwordHash(project.id, session.customerId);
    const matches = await verifyPassword(dto.currentPassword, hash ?? this.dummyHash);
    if (!hash || !matches) throw new DomainError('INVALID_CREDENTIALS');
    await this.throttle.succeeded(attempt);
    await this.customers.update(project.id, session.customerId, { password: dto.newPassword }, undefined, {
      keepSessionId: session.sessionId,
    });
    return { success: true };
  }

  logout(session: CustomerSessionRef): Promise<{ success: true }> {
    return runInTransaction(this.transactions, async () => {
      await this.repository.delete(session.projectId, session.sessionId);
      this.audit.record({
        projectId: session.projectId,
        action: 'customer.logged_out',
        resourceType: 'customer',
        resourceId: session.customerId,
        changes: null,
      });
      return { success: true as const };
    });
  }

  pruneExpired(): Promise<number> {
    return this.repository.pruneExpired();
  }
}
