import { Injectable } from '@nestjs/common';
import { Propagation } from '@nestjs-cls/transactional';
import { ReadReplicas } from '../database/read-replicas';
import { runInTransaction, Transactional, Transactions } from '../database/transactional';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { AppConfig } from '../config/app-config';
import { Clock } from '../common/clock';
import { randomBase32Lower } from '../common/crypto/random';
import { DomainError } from '../common/errors/domain-error';
import { hashPassword } from '../common/crypto/passwords';
import { likePattern, Page, PageQueryDto, pageWindow, toPage } from '../common/http/pagination';
import { isUniqueViolation, violatedConstraint } from '../database/pg-errors';
import type { CustomerSubscriptionView } from '../subscriptions/dto/subscription.dto';
import { SubscriptionsService } from '../subscriptions/subscriptions.service';
import { EventsService, toEventWindow } from '../events/events.service';
import type { NewEvent } from '../events/event-types';
import { toAuditedCustomer, toCustomerListItem, toCustomerRecord } from './customers.mapper';
import { AuditTrail } from '../audit/audit-trail';
import {
  CreateCustomerDto,
  CustomerListItem,
  CustomerRecord,
  CustomerRefDto,
  IdentifierInputDto,
  UpdateCustomerDto,
} from './dto/customer.dto';
import { Customer } from './entities/customer.entity';
import { CustomersRepository, TrigramStats } from './customers.repository';

export interface NewCustomer {
  username: string;
  enabled?: boolean;
  temporary?: boolean;
  /** null or absent: the customer follows the project's zone (so does every customer created implicitly). */
  timeZone?: string | null;
  passwordHash?: string;
  identifiers?: IdentifierInputDto[];
}

const UNIQUE_ERRORS: Record<string, DomainError['code']> = {
  customers_project_username_uq: 'USERNAME_TAKEN',
  customer_identifiers_pair_uq: 'IDENTIFIER_TAKEN',
};

/** Maps a unique violation onto USERNAME_TAKEN / IDENTIFIER_TAKEN; anything else is rethrown. */
function mapUniqueViolation(error: unknown): never {
  const code = isUniqueViolation(error) ? UNIQUE_ERRORS[violatedConstraint(error) ?? ''] : undefined;
  if (code) throw new DomainError(code);
  throw error;
}

/** `null` (allowed on create, as for every optional field there) is no identifiers. */
function assertDistinctPairs(identifiers: IdentifierInputDto[] | null = []): void {
  const seen = new Set<string>();
  (identifiers ?? []).forEach((i, index) => {
    const key = `${i.type}\u0000${i.value}`;
    if (seen.has(key)) {
      throw new DomainError('VALIDATION_FAILED', 'identifiers must not repeat a (type, value) pair', [
        { field: `identifiers.${index}`, message: 'this (type, value) pair is listed twice' },
      ]);
    }
    seen.add(key);
  });
}

/** Joins the identifier values of a customer in `customer_search.doc` (migration CustomerSearch). */
export const SEARCH_SEPARATOR = '\u001f';
/** Trigrams found in more documents than this are left out of a search's index scan. */
const FREQUENT_TRIGRAM = 0.05;
/** At most this many of a term's rarest trigrams go to the index scan. */
const MAX_SCAN_TRIGRAMS = 8;
const TRIGRAM_STATS_TTL_MS = 60_000;

export type { TrigramStats } from './customers.repository';

interface Trigram {
  trigram: string;
  /** the shortest part of the term, `term.slice(from, to)`, whose LIKE pattern yields this trigram */
  from: number;
  to: number;
}

const isWordChar = (c: string) => /[a-z0-9]/i.test(c);

/**
 * The trigrams pg_trgm extracts from `likePattern(term)` (ASCII terms): the words (runs of letters
 * and digits), lower-cased, padded with two spaces in front and one behind where the term itself
 * shows the word's edge (a non-word character), not where the edge is the pattern's `%`.
 */
function likeTrigrams(term: string): Trigram[] {
  const found = new Map<string, Trigram>();
  for (let i = 0; i < term.length;) {
    if (!isWordChar(term[i])) {
      i++;
      continue;
    }
    let j = i;
    while (j < term.length && isWordChar(term[j])) j++;
    // the padded word, each character with its position in the term
    const chars: Array<[string, number]> = [];
    if (i > 0) chars.push([' ', i - 1], [' ', i - 1]);
    for (let k = i; k < j; k++) chars.push([term[k].toLowerCase(), k]);
    if (j < term.length) chars.push([' ', j]);
    for (let k = 0; k + 3 <= chars.length; k++) {
      const trigram = chars[k][0] + chars[k + 1][0] + chars[k + 2][0];
      if (!found.has(trigram)) found.set(trigram, { trigram, from: chars[k][1], to: chars[k + 2][1] + 1 });
    }
    i = j;
  }
  return [...found.values()];
}

/**
 * The parts of a search term whose LIKE patterns should drive the trigram index scan, or none
 * (then the whole pattern does): the term's rarest trigrams (under FREQUENT_TRIGRAM of the
 * documents), merged into windows of the term as long as a window brings in no other trigram.
 * Every window is a substring of the term, so each row the term matches matches every window:
 * the windows narrow the scan, the full pattern decides. Only for ASCII terms, whose lower-casing
 * is the same on a part as on the whole.
 */
export function searchWindows(term: string, stats: TrigramStats | undefined): string[] {
  // eslint-disable-next-line no-control-regex -- ASCII without U+0000 is exactly the range meant
  if (!stats || !/^[\x01-\x7f]*$/.test(term)) return [];
  const all = likeTrigrams(term);
  const frequency = (t: Trigram) => stats.frequencies.get(t.trigram) ?? stats.unlisted;
  const rare = all.filter((t) => frequency(t) < FREQUENT_TRIGRAM);
  if (rare.length === 0 || rare.length === all.length) return [];
  const chosen = new Set(
    rare
      .sort((x, y) => frequency(x) - frequency(y))
      .slice(0, MAX_SCAN_TRIGRAMS)
      .map((t) => t.trigram),
  );
  const onlyChosen = (from: number, to: number) =>
    likeTrigrams(term.slice(from, to)).every((t) => chosen.has(t.trigram));
  const windows: Array<{ from: number; to: number }> = [];
  for (const t of all
    .filter((x) => chosen.has(x.trigram) && onlyChosen(x.from, x.to))
    .sort((x, y) => x.from - y.from || x.to - y.to)) {
    const last = windows[windows.length - 1];
    if (last && t.from < last.to && onlyChosen(last.from, Math.max(last.to, t.to)))
      last.to = Math.max(last.to, t.to);
    else if (!last || t.to > last.to) windows.push({ from: t.from, to: t.to }); // else within the last window
  }
  return windows.map((w) => term.slice(w.from, w.to));
}

/** Customers of a project. */
@Injectable()
export class CustomersService {
  constructor(
    private readonly transactions: Transactions,
    private readonly subscriptionsOf: SubscriptionsService,
    private readonly config: AppConfig,
    private readonly repository: CustomersRepository,
    private readonly reads: ReadReplicas,
    private readonly events: EventsService,
    private readonly clock: Clock,
    private readonly audit: AuditTrail,
  ) {}

  hashPassword(password: string): Promise<string> {
    return hashPassword(password, this.config.get('BCRYPT_COST'));
  }

  /**
   * Newest first. `search` matches identifier values only (the username is one of them, the
   * mirrored `username` identifier), case-insensitively: through the per-customer search document
   * (migration CustomerSearch), one row per customer, so no DISTINCT; the page and the exact total
   * come from one statement, also for a page past the end.
   */
  async list(projectId: string, query: PageQueryDto): Promise<Page<CustomerListItem>> {
    const term = query.search;
    const search = term
      ? term.includes(SEARCH_SEPARATOR)
        ? { pattern: likePattern(term), windows: [], perValue: true }
        : {
            pattern: likePattern(term),
            windows: searchWindows(term, await this.trigramStats()).map(likePattern),
            perValue: false,
          }
      : undefined;
    // a read replica may answer (ReadReplicas): the page may lag the primary a little
    const { customers, total } = await this.reads.run(projectId, async () => {
      const { ids, total } = await this.repository.pageIds(projectId, pageWindow(query), search);
      return { total, customers: await this.repository.loadMany(projectId, ids) };
    });
    return toPage(
      customers.map((c) => toCustomerListItem(c, c.identifiers!)),
      total,
      query,
    );
  }

  private trigramStatsCache?: { loadedAt: number; stats: Promise<TrigramStats | undefined> };

  /**
   * The common trigrams of the search documents (`CustomersRepository.trigramStats`), cached for a
   * minute. Undefined when there are none yet (or they may not be read): every search then uses
   * its whole term for the index scan, which is slower but finds the same customers.
   */
  private trigramStats(): Promise<TrigramStats | undefined> {
    const now = Date.now();
    if (!this.trigramStatsCache || now - this.trigramStatsCache.loadedAt > TRIGRAM_STATS_TTL_MS) {
      const stats = this.repository.trigramStats();
      this.trigramStatsCache = { loadedAt: now, stats };
    }
    return this.trigramStatsCache.stats;
  }

  /**
   * Creates a customer with the project's free plans (its sign-up grants), in one transaction,
   * with its events: `customer.created`, and `subscriptions.changed` when the sign-up granted
   * something.
   */
  async create(
    projectId: string,
    dto: CreateCustomerDto,
    idem?: IdempotencyContext,
  ): Promise<CustomerListItem> {
    assertDistinctPairs(dto.identifiers);
    const passwordHash = dto.password ? await this.hashPassword(dto.password) : undefined;
    return runInTransaction(
      this.transactions,
      async () => {
        const customer = await this.createInTransaction(
          projectId,
          {
            username: dto.username,
            enabled: dto.enabled,
            timeZone: dto.timeZone,
            passwordHash,
            identifiers: dto.identifiers,
          },
          new Date(),
        );
        await this.events.record(projectId, await this.creationEvents(projectId, customer));
        return toCustomerListItem(customer, customer.identifiers!);
      },
      { participant: idem },
    );
  }

  /**
   * The creation itself, inside the caller's unit of work: the customer, its mirrored `username`
   * identifier, extra identifiers, the password credential and the sign-up grants.
   */
  @Transactional()
  async createInTransaction(projectId: string, input: NewCustomer, now: Date): Promise<Customer> {
    await this.checkCustomerLimit(projectId);
    try {
      // a savepoint, so that a unique violation can be reported without aborting the caller's transaction
      return await this.transactions.withTransaction(Propagation.Nested, async () => {
        const customer = await this.repository.insert(projectId, {
          username: input.username,
          enabled: input.enabled ?? true,
          temporary: input.temporary ?? false,
          timeZone: input.timeZone ?? null,
          passwordHash: input.passwordHash,
          identifiers: input.identifiers ?? [],
        });
        await this.subscriptionsOf.grantSignup(projectId, customer.id, now);
        // first among a call's records: the customer a redemption creates comes before its grant
        this.audit.created(
          projectId,
          'customer',
          customer.id,
          toAuditedCustomer(customer, customer.identifiers ?? [], input.passwordHash !== undefined),
        );
        return customer;
      });
    } catch (error) {
      mapUniqueViolation(error);
    }
  }

  /**
   * PROJECT_MAX_CUSTOMERS (409 CUSTOMER_LIMIT_REACHED), read from the trigger-kept counter slots
   * (migration CustomerCounts): one indexed sum, no lock, so that creations stay parallel; calls
   * creating customers at the same instant may pass the limit by as many as run together.
   */
  private async checkCustomerLimit(projectId: string): Promise<void> {
    const max = this.config.get('PROJECT_MAX_CUSTOMERS');
    if (max === 0) return;
    const total = await this.repository.total(projectId);
    if (total >= max)
      throw new DomainError(
        'CUSTOMER_LIMIT_REACHED',
        `This project holds ${total} customers, its limit (PROJECT_MAX_CUSTOMERS).`,
      );
  }

  /** A username for a customer created implicitly: `u_` + 10 lowercase base32 characters. */
  generatedUsername(): string {
    return `u_${randomBase32Lower(10)}`;
  }

  async resolve(projectId: string, ref: CustomerRefDto): Promise<CustomerRecord> {
    return toRecord(await this.repository.recordByRef(projectId, ref));
  }

  /** The customer with its identifiers and credentials, or CUSTOMER_NOT_FOUND. */
  private async entity(projectId: string, customerId: number): Promise<Customer> {
    const customer = await this.repository.record(projectId, customerId);
    if (!customer) throw new DomainError('CUSTOMER_NOT_FOUND');
    return customer;
  }

  /** The events of a new customer: `customer.created`, then `subscriptions.changed` when the sign-up granted windows. */
  private async creationEvents(projectId: string, customer: Customer): Promise<NewEvent[]> {
    const ref = { id: customer.id, username: customer.username };
    const events = [this.customerEvent('customer.created', customer)];
    const windows = await this.subscriptionsOf.activeWindowsOf(projectId, customer.id);
    if (windows.length > 0)
      events.push({
        type: 'subscriptions.changed',
        customer: ref,
        data: {
          customer: ref,
          source: 'signup',
          codeId: null,
          created: windows.map(({ window, planName }) => toEventWindow(window, planName)),
          ended: [],
          cancelled: [],
          moved: [],
        },
      });
    return events;
  }

  /** A `customer.*` event of `customer` (list-item form), for its transaction. */
  private customerEvent(
    type: 'customer.created' | 'customer.updated' | 'customer.deleted',
    customer: Customer,
  ): NewEvent {
    return {
      type,
      customer: { id: customer.id, username: customer.username },
      data: { customer: toCustomerListItem(customer, customer.identifiers!) as never },
    };
  }

  /** The customer holding an identifier (`username` compared case-insensitively), or undefined. */
  async findIdByIdentifier(projectId: string, ref: CustomerRefDto): Promise<number | undefined> {
    return this.repository.findIdByRef(projectId, ref);
  }

  /** Like `findIdByIdentifier`, and locks the customer row for the rest of the transaction, in one statement. */
  async lockByIdentifier(projectId: string, ref: CustomerRefDto): Promise<Customer | undefined> {
    return this.repository.lockByRef(projectId, ref);
  }

  /**
   * The customer's `enabled` and password hash (null without one), for a login; undefined for an
   * unknown customer (or id 0), so that a login does the same work whatever it finds.
   */
  passwordOf(
    projectId: string,
    customerId: number,
  ): Promise<{ enabled: boolean; secretHash: string | null } | undefined> {
    return this.repository.passwordOf(projectId, customerId);
  }

  /** The customer's password hash alone (a logged-in customer changing it), or undefined. */
  passwordHash(projectId: string, customerId: number): Promise<string | undefined> {
    return this.repository.passwordHash(projectId, customerId);
  }

  /** A customer's subscription windows (`SubscriptionsService.listForCustomer`), or CUSTOMER_NOT_FOUND. */
  async subscriptions(
    projectId: string,
    customerId: number,
    history: boolean,
  ): Promise<CustomerSubscriptionView[]> {
    if (!(await this.repository.exists(projectId, customerId))) throw new DomainError('CUSTOMER_NOT_FOUND');
    return this.subscriptionsOf.listForCustomer(projectId, customerId, history);
  }

  /** The usernames of the project's customers among `ids` (deleted ones are missing). */
  async usernames(projectId: string, ids: number[]): Promise<Map<number, string>> {
    const customers = await this.repository.loadMany(projectId, [...new Set(ids)]);
    return new Map(customers.map((c) => [c.id, c.username]));
  }

  async get(projectId: string, customerId: number): Promise<CustomerRecord> {
    return toRecord(await this.repository.record(projectId, customerId));
  }

  /**
   * A disabled customer's tokens answer 403 CUSTOMER_DISABLED; enabling it again deletes its
   * sessions, so a token never comes back to life. Setting a password deletes every session but
   * `keepSessionId` (the caller's own, when the change comes through the public interface). All in
   * the transaction of the change.
   */
  async update(
    projectId: string,
    customerId: number,
    dto: UpdateCustomerDto,
    idem?: IdempotencyContext,
    options: { keepSessionId?: number } = {},
  ): Promise<CustomerRecord> {
    assertDistinctPairs(dto.identifiers);
    const passwordHash = dto.password ? await this.hashPassword(dto.password) : undefined;
    try {
      return await runInTransaction(
        this.transactions,
        async () => {
          const customer = await this.lock(projectId, customerId);
          const before = audited(await this.entity(projectId, customerId));
          const renamed = dto.username !== undefined && dto.username !== customer.username;
          const reEnabled = dto.enabled === true && !customer.enabled;
          if (renamed) customer.username = dto.username!;
          if (dto.enabled !== undefined) customer.enabled = dto.enabled;
          // the zone's history lets calendar periods follow the zone as it was (docs/entitlements.md)
          if (dto.timeZone !== undefined && dto.timeZone !== customer.timeZone) {
            await this.repository.insertTimeZoneChange(
              projectId,
              customerId,
              this.clock.now(),
              customer.timeZone,
              dto.timeZone,
            );
            customer.timeZone = dto.timeZone;
          }
          if (dto.username !== undefined || passwordHash) customer.temporary = false;
          // the customer row first: a username taken in any case is USERNAME_TAKEN (its unique
          // index), before the mirrored identifier could collide with the other's as IDENTIFIER_TAKEN
          await this.repository.save(customer);
          if (renamed) await this.repository.renameUsernameIdentifier(projectId, customerId, dto.username!);
          if (passwordHash) await this.repository.setPassword(projectId, customerId, passwordHash);
          if (reEnabled || passwordHash)
            await this.repository.deleteSessions(
              projectId,
              customerId,
              reEnabled ? undefined : options.keepSessionId,
            );
          if (dto.identifiers)
            await this.repository.replaceIdentifiers(projectId, customerId, dto.identifiers);
          // read back under the same lock: the answer is exactly what this change committed
          const updated = await this.entity(projectId, customerId);
          const after = { ...audited(updated), password: passwordHash !== undefined };
          this.audit.updated(projectId, 'customer', customerId, before, after);
          await this.events.record(projectId, [this.customerEvent('customer.updated', updated)]);
          return toRecord(updated);
        },
        { participant: idem },
      );
    } catch (error) {
      mapUniqueViolation(error);
    }
  }

  async remove(projectId: string, customerId: number, idem?: IdempotencyContext): Promise<{ success: true }> {
    // identifiers, credentials, sessions and subscriptions go with it (ON DELETE CASCADE);
    // codes it redeemed keep their record with the link cleared (ON DELETE SET NULL)
    // the customer as it was is the snapshot of its customer.deleted event, written in the same transaction
    return runInTransaction(
      this.transactions,
      async () => {
        await this.lock(projectId, customerId);
        const customer = await this.entity(projectId, customerId);
        if (!(await this.repository.delete(projectId, customerId)))
          throw new DomainError('CUSTOMER_NOT_FOUND');
        this.audit.deleted(projectId, 'customer', customerId, audited(customer));
        await this.events.record(projectId, [this.customerEvent('customer.deleted', customer)]);
        return { success: true as const };
      },
      { participant: idem },
    );
  }

  /** Locks the customer row for the rest of the transaction: serialises changes to one customer. */
  async lock(projectId: string, customerId: number): Promise<Customer> {
    const customer = await this.repository.lock(projectId, customerId);
    if (!customer) throw new DomainError('CUSTOMER_NOT_FOUND');
    return customer;
  }
}

/** A customer loaded with its identifiers and credentials, as its audit records tell it. */
const audited = (c: Customer) =>
  toAuditedCustomer(
    c,
    c.identifiers ?? [],
    (c.credentials ?? []).some((cr) => cr.type === 1),
  );

/** The full record of a customer, or CUSTOMER_NOT_FOUND. */
function toRecord(customer: Customer | undefined): CustomerRecord {
  if (!customer) throw new DomainError('CUSTOMER_NOT_FOUND');
  return toCustomerRecord(customer, customer.identifiers!, customer.credentials!);
}
