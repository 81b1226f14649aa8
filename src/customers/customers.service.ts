import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In } from 'typeorm';
import { inTransaction } from '../database/transaction';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { AppConfig } from '../config/app-config';
import { randomBase32Lower } from '../common/crypto/random';
import { DomainError } from '../common/errors/domain-error';
import { hashPassword } from '../common/crypto/passwords';
import { likePattern, MAX_INT4, Page, PageQueryDto, toPage } from '../common/http/pagination';
import { isUniqueViolation, violatedConstraint } from '../database/pg-errors';
import { SubscriptionsService } from '../subscriptions/subscriptions.service';
import { EventsService, toEventWindow } from '../events/events.service';
import type { NewEvent } from '../events/event-types';
import { toCustomerListItem, toCustomerRecord } from './customers.mapper';
import {
  CreateCustomerDto,
  CustomerListItem,
  CustomerRecord,
  CustomerRefDto,
  IdentifierInputDto,
  UpdateCustomerDto,
} from './dto/customer.dto';
import { CREDENTIAL_PASSWORD, CustomerCredential } from './entities/customer-credential.entity';
import { CustomerIdentifier } from './entities/customer-identifier.entity';
import { Customer } from './entities/customer.entity';
import { Statement, Statements } from '../database/statements';

export interface NewCustomer {
  username: string;
  enabled?: boolean;
  temporary?: boolean;
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

/** Frequencies (share of the documents) of the common trigrams; any other is at most `unlisted`. */
export interface TrigramStats {
  frequencies: Map<string, number>;
  unlisted: number;
}

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

/** Customers of a project (interface.md 4.1, product.md 3). */
@Injectable()
export class CustomersService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly subscriptions: SubscriptionsService,
    private readonly config: AppConfig,
    private readonly statements: Statements,
    private readonly events: EventsService,
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
    const from = (query.page - 1) * query.pageSize; // rows before the page
    let ids: number[];
    let total: number;
    if (query.search) {
      const term = query.search;
      let matches: string;
      let params: string[];
      if (term.includes(SEARCH_SEPARATOR)) {
        // a document cannot tell a separator typed in the term from one between two values
        params = [projectId, likePattern(term)];
        matches =
          'SELECT DISTINCT customer_id FROM customer_identifiers WHERE project_id = $1 AND value ILIKE $2';
      } else {
        // `doc LIKE lower(pattern)` is what ILIKE does to each value. Its trigram scan reads the
        // posting list of every trigram of the term, and those shared by most customers (`use`,
        // `mai`) cost far more than they filter: the index scan then uses only the rare parts of
        // the term (windows), and the full pattern is checked on what they find.
        const windows = searchWindows(term, await this.trigramStats());
        params = [projectId, likePattern(term), ...windows.map(likePattern)];
        matches =
          windows.length === 0
            ? 'SELECT customer_id FROM customer_search WHERE project_id = $1 AND doc LIKE lower($2)'
            : `SELECT customer_id FROM (
               SELECT customer_id, doc FROM customer_search
                WHERE project_id = $1 AND ${windows.map((_, i) => `doc LIKE lower($${i + 3})`).join(' AND ')}
               OFFSET 0) c
              WHERE doc LIKE lower($2)`; // OFFSET 0: the full pattern stays out of the index scan
      }
      // one pass over the matches gives the total and the page (empty past the end)
      const [first, last] = [from + 1, from + query.pageSize].map((i) => Math.min(i, MAX_INT4)); // array subscripts are int4
      const [row]: Array<{ total: number; ids: number[] }> = await this.dataSource.query(
        `SELECT count(*)::int AS total, coalesce((array_agg(customer_id ORDER BY customer_id DESC))[${first}:${last}], '{}') AS ids
           FROM (${matches}) m`,
        params,
      );
      ({ ids, total } = row);
    } else {
      [{ ids, total }] = await this.statements.rows<{ ids: number[]; total: number }>(
        undefined,
        UNFILTERED_PAGE,
        [projectId, query.pageSize, from],
      );
    }
    const customers = await this.loadMany(projectId, ids);
    return toPage(
      customers.map((c) => toCustomerListItem(c, c.identifiers!)),
      total,
      query,
    );
  }

  private trigramStatsCache?: { loadedAt: number; stats: Promise<TrigramStats | undefined> };

  /**
   * The common trigrams of the search documents and their frequencies, as the last ANALYZE of
   * customer_search found them (statistics object customer_search_trgm_stats), cached for a
   * minute. Undefined when there are none yet (or they may not be read): every search then uses
   * its whole term for the index scan, which is slower but finds the same customers.
   */
  private trigramStats(): Promise<TrigramStats | undefined> {
    const now = Date.now();
    if (!this.trigramStatsCache || now - this.trigramStatsCache.loadedAt > TRIGRAM_STATS_TTL_MS) {
      const stats = this.dataSource
        .query(
          `SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats_ext_exprs
            WHERE statistics_schemaname = current_schema() AND statistics_name = 'customer_search_trgm_stats' AND NOT inherited`,
        )
        .then(([row]: Array<{ elems: string[] | null; freqs: number[] | null }>) => {
          if (!row?.elems?.length || !row.freqs) return undefined;
          const frequencies = new Map(row.elems.map((e, i) => [e, row.freqs![i]]));
          // most_common_elem_freqs ends with the least and greatest frequency listed: a trigram not
          // listed is at most as frequent as the least listed one
          return { frequencies, unlisted: row.freqs[row.elems.length] };
        })
        .catch(() => undefined);
      this.trigramStatsCache = { loadedAt: now, stats };
    }
    return this.trigramStatsCache.stats;
  }

  /**
   * Creates a customer with its free plans (product.md 6, sign-up), in one transaction, with its
   * events: `customer.created`, and `subscriptions.changed` when the sign-up granted something.
   */
  async create(
    projectId: string,
    dto: CreateCustomerDto,
    idem?: IdempotencyContext,
  ): Promise<CustomerListItem> {
    assertDistinctPairs(dto.identifiers);
    const passwordHash = dto.password ? await this.hashPassword(dto.password) : undefined;
    return inTransaction(
      this.dataSource,
      async (em) => {
        const customer = await this.createInTransaction(
          em,
          projectId,
          {
            username: dto.username,
            enabled: dto.enabled,
            passwordHash,
            identifiers: dto.identifiers,
          },
          new Date(),
        );
        await this.events.record(em, projectId, await this.creationEvents(em, projectId, customer));
        return toCustomerListItem(customer, customer.identifiers!);
      },
      { participant: idem },
    );
  }

  /**
   * The creation itself, inside the caller's transaction: the customer, its mirrored `username`
   * identifier, extra identifiers, the password credential and the sign-up grants.
   */
  async createInTransaction(
    em: EntityManager,
    projectId: string,
    input: NewCustomer,
    now: Date,
  ): Promise<Customer> {
    try {
      // a savepoint, so that a unique violation can be reported without aborting the caller's transaction
      return await em.transaction(async (tx) => {
        const customer = await tx.save(
          tx.create(Customer, {
            projectId,
            username: input.username,
            enabled: input.enabled ?? true,
            temporary: input.temporary ?? false,
          }),
        );
        const identifiers = await tx.save(
          [
            { type: 'username', value: input.username, readonly: true },
            ...(input.identifiers ?? []).map((i) => ({ ...i, readonly: false })),
          ].map((i) => tx.create(CustomerIdentifier, { ...i, projectId, customerId: customer.id })),
        );
        const credentials = input.passwordHash
          ? [
              await tx.save(
                tx.create(CustomerCredential, {
                  projectId,
                  customerId: customer.id,
                  type: CREDENTIAL_PASSWORD,
                  secretHash: input.passwordHash,
                }),
              ),
            ]
          : [];
        await this.subscriptions.grantSignup(tx, projectId, customer.id, now);
        return Object.assign(customer, { identifiers, credentials });
      });
    } catch (error) {
      mapUniqueViolation(error);
    }
  }

  /** A username for a customer created implicitly: `u_` + 10 lowercase base32 characters. */
  generatedUsername(): string {
    return `u_${randomBase32Lower(10)}`;
  }

  async resolve(projectId: string, ref: CustomerRefDto): Promise<CustomerRecord> {
    return this.record(BY_IDENTIFIER[kindOf(ref)].record, identifierParams(projectId, ref));
  }

  /** The full record that `statement` selects, or CUSTOMER_NOT_FOUND. */
  private async record(statement: Statement, values: unknown[], em?: EntityManager): Promise<CustomerRecord> {
    const customer = await this.entity(statement, values, em);
    return toCustomerRecord(customer, customer.identifiers!, customer.credentials!);
  }

  /** The customer (with identifiers and credentials) that `statement` selects, or CUSTOMER_NOT_FOUND. */
  private async entity(statement: Statement, values: unknown[], em?: EntityManager): Promise<Customer> {
    const [row] = await this.statements.rows<CustomerRow>(em, statement, values);
    if (!row) throw new DomainError('CUSTOMER_NOT_FOUND');
    return toCustomerEntity(row);
  }

  /** The events of a new customer: `customer.created`, then `subscriptions.changed` when the sign-up granted windows. */
  private async creationEvents(
    em: EntityManager,
    projectId: string,
    customer: Customer,
  ): Promise<NewEvent[]> {
    const ref = { id: customer.id, username: customer.username };
    const events = [this.customerEvent('customer.created', customer)];
    const windows = await this.subscriptions.activeWindowsOf(em, projectId, customer.id);
    if (windows.length > 0)
      events.push({
        type: 'subscriptions.changed',
        customer: ref,
        data: {
          customer: ref,
          source: 'signup',
          codeId: null,
          created: windows.map((w) => toEventWindow(w, w.plan!.name)),
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
  async findIdByIdentifier(
    em: EntityManager,
    projectId: string,
    ref: CustomerRefDto,
  ): Promise<number | undefined> {
    const rows = await this.statements.rows<{ id: number }>(
      em,
      BY_IDENTIFIER[kindOf(ref)].id,
      identifierParams(projectId, ref),
    );
    return rows[0]?.id;
  }

  /** Like `findIdByIdentifier`, and locks the customer row for the rest of the transaction, in one statement. */
  async lockByIdentifier(
    em: EntityManager,
    projectId: string,
    ref: CustomerRefDto,
  ): Promise<Customer | undefined> {
    const [row] = await this.statements.rows<{ id: number; username: string }>(
      em,
      BY_IDENTIFIER[kindOf(ref)].lock,
      identifierParams(projectId, ref),
    );
    return row ? Object.assign(new Customer(), { id: row.id, username: row.username, projectId }) : undefined;
  }

  async get(projectId: string, customerId: number): Promise<CustomerRecord> {
    return this.record(CUSTOMER_RECORD, [customerId, projectId]);
  }

  async update(
    projectId: string,
    customerId: number,
    dto: UpdateCustomerDto,
    idem?: IdempotencyContext,
  ): Promise<CustomerRecord> {
    assertDistinctPairs(dto.identifiers);
    const passwordHash = dto.password ? await this.hashPassword(dto.password) : undefined;
    try {
      return await inTransaction(
        this.dataSource,
        async (em) => {
          const customer = await this.lock(em, projectId, customerId);
          const renamed = dto.username !== undefined && dto.username !== customer.username;
          if (renamed) customer.username = dto.username!;
          if (dto.enabled !== undefined) customer.enabled = dto.enabled;
          if (dto.username !== undefined || passwordHash) customer.temporary = false;
          // the customer row first: a username taken in any case is USERNAME_TAKEN (its unique
          // index), before the mirrored identifier could collide with the other's as IDENTIFIER_TAKEN
          await em.save(customer);
          if (renamed)
            await em.update(
              CustomerIdentifier,
              { projectId, customerId, type: 'username', readonly: true },
              { value: dto.username },
            );
          if (passwordHash) await this.setPassword(em, projectId, customerId, passwordHash);
          if (dto.identifiers) await this.replaceIdentifiers(em, projectId, customerId, dto.identifiers);
          // read back under the same lock: the answer is exactly what this change committed
          const updated = await this.entity(CUSTOMER_RECORD, [customerId, projectId], em);
          await this.events.record(em, projectId, [this.customerEvent('customer.updated', updated)]);
          return toCustomerRecord(updated, updated.identifiers!, updated.credentials!);
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
    return inTransaction(
      this.dataSource,
      async (em) => {
        await this.lock(em, projectId, customerId);
        const customer = await this.entity(CUSTOMER_RECORD, [customerId, projectId], em);
        await em.delete(Customer, { id: customerId, projectId });
        await this.events.record(em, projectId, [this.customerEvent('customer.deleted', customer)]);
        return { success: true as const };
      },
      { participant: idem },
    );
  }

  /** Locks the customer row for the rest of the transaction: serialises changes to one customer. */
  async lock(em: EntityManager, projectId: string, customerId: number): Promise<Customer> {
    const customer = await em.findOne(Customer, {
      where: { id: customerId, projectId },
      lock: { mode: 'pessimistic_write' },
    });
    if (!customer) throw new DomainError('CUSTOMER_NOT_FOUND');
    return customer;
  }

  private async setPassword(
    em: EntityManager,
    projectId: string,
    customerId: number,
    secretHash: string,
  ): Promise<void> {
    await em.query(
      `INSERT INTO customer_credentials (project_id, customer_id, type, secret_hash) VALUES ($1, $2, $3, $4)
       ON CONFLICT (customer_id, type) DO UPDATE SET secret_hash = EXCLUDED.secret_hash, updated_at = now()
        WHERE customer_credentials.project_id = EXCLUDED.project_id`,
      [projectId, customerId, CREDENTIAL_PASSWORD, secretHash],
    );
  }

  /** Replaces the extra identifiers; pairs that stay keep their id and createdAt (product.md 3). */
  private async replaceIdentifiers(
    em: EntityManager,
    projectId: string,
    customerId: number,
    wanted: IdentifierInputDto[],
  ) {
    const current = await em.find(CustomerIdentifier, { where: { projectId, customerId, readonly: false } });
    const key = (i: { type: string; value: string }) => `${i.type}\u0000${i.value}`;
    const wantedKeys = new Set(wanted.map(key));
    const currentKeys = new Set(current.map(key));
    const gone = current.filter((i) => !wantedKeys.has(key(i))).map((i) => i.id);
    if (gone.length) await em.delete(CustomerIdentifier, { id: In(gone), projectId });
    const added = wanted.filter((i) => !currentKeys.has(key(i)));
    if (added.length) {
      await em.save(
        added.map((i) => em.create(CustomerIdentifier, { ...i, projectId, customerId, readonly: false })),
      );
    }
  }

  /** The project's customers by id with their identifiers, keeping the order of `ids`: one statement for a whole page. */
  private async loadMany(projectId: string, ids: number[]): Promise<Customer[]> {
    if (ids.length === 0) return [];
    const rows = await this.statements.rows<CustomerRow>(undefined, CUSTOMERS_BY_IDS, [ids, projectId]);
    const byId = new Map(rows.map((r) => [r.id, toCustomerEntity(r)]));
    return ids.map((id) => byId.get(id)).filter((c): c is Customer => c !== undefined);
  }
}

/**
 * A customer row with its identifiers (and, for a full record, its credentials) aggregated as
 * JSON: a page or a record is one round trip. `FROM` and `WHERE` follow.
 */
const recordSelect = (withCredentials: boolean) =>
  `SELECT c.id, c.project_id, c.username, c.enabled, c.temporary, c.created_at, c.updated_at,
          (SELECT coalesce(json_agg(json_build_object('id', i.id, 'type', i.type, 'value', i.value, 'readonly', i.readonly,
                    'created_at', i.created_at, 'updated_at', i.updated_at)), '[]')
             FROM customer_identifiers i WHERE i.customer_id = c.id AND i.project_id = c.project_id) AS identifiers,
          ${
            withCredentials
              ? `(SELECT coalesce(json_agg(json_build_object('id', k.id, 'type', k.type, 'created_at', k.created_at)), '[]')
             FROM customer_credentials k WHERE k.customer_id = c.id AND k.project_id = c.project_id)`
              : `'[]'::json`
          } AS credentials`;

/**
 * A page without a term: the ids walk the (project_id, id) index, and the total is the sum of the
 * project's trigger-maintained counter slots (migration CustomerCounts).
 */
const UNFILTERED_PAGE: Statement = {
  name: 'customers.page',
  text: `SELECT ARRAY(SELECT id FROM customers WHERE project_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3) AS ids,
                (SELECT coalesce(sum(n), 0)::int FROM customer_counts WHERE project_id = $1) AS total`,
};
const CUSTOMERS_BY_IDS: Statement = {
  name: 'customers.by-ids',
  text: `${recordSelect(false)} FROM customers c WHERE c.id = ANY($1::int[]) AND c.project_id = $2`,
};
const CUSTOMER_RECORD: Statement = {
  name: 'customers.record',
  text: `${recordSelect(true)} FROM customers c WHERE c.id = $1 AND c.project_id = $2`,
};

/**
 * A customer to lock in a statement of another module (`CodesService.lockCodeAndCustomer`):
 * `from` is the `FROM ... WHERE` that selects it as alias `c`, with `$1` = the project and
 * `$2...` = `values`; `name` tells the shapes apart.
 */
export interface CustomerLock {
  name: string;
  from: string;
  values: unknown[];
}

/** The `CustomerLock` of a reference (the lookup of `lockByIdentifier`), or of a customer id. */
export function customerLockFor(customer: CustomerRefDto | number): CustomerLock {
  if (typeof customer === 'number')
    return { name: 'id', from: 'FROM customers c WHERE c.project_id = $1 AND c.id = $2', values: [customer] };
  const kind = kindOf(customer);
  return { name: kind, from: REF_FROM[kind], values: refValues(customer) };
}

/** How a customer reference finds its customer: `username` case-insensitively, other types exactly. */
type RefKind = 'username' | 'identifier';
const kindOf = (ref: CustomerRefDto): RefKind => (ref.type === 'username' ? 'username' : 'identifier');
const refValues = (ref: CustomerRefDto): string[] =>
  ref.type === 'username' ? [ref.value] : [ref.type, ref.value];
const identifierParams = (projectId: string, ref: CustomerRefDto): string[] => [projectId, ...refValues(ref)];
const REF_FROM: Record<RefKind, string> = {
  username: 'FROM customers c WHERE c.project_id = $1 AND lower(c.username) = lower($2)',
  identifier:
    'FROM customers c JOIN customer_identifiers i ON i.customer_id = c.id AND c.project_id = i.project_id WHERE i.project_id = $1 AND i.type = $2 AND i.value = $3',
};
/** Per kind of reference: the customer's id, the id locked (with the username), and the full record. */
const BY_IDENTIFIER = Object.fromEntries(
  (Object.keys(REF_FROM) as RefKind[]).map((kind) => [
    kind,
    {
      id: { name: `customers.id-by-${kind}`, text: `SELECT c.id ${REF_FROM[kind]}` },
      lock: {
        name: `customers.lock-by-${kind}`,
        text: `SELECT c.id, c.username ${REF_FROM[kind]} FOR UPDATE OF c`,
      },
      record: { name: `customers.record-by-${kind}`, text: `${recordSelect(true)} ${REF_FROM[kind]}` },
    },
  ]),
) as Record<RefKind, Record<'id' | 'lock' | 'record', Statement>>;

interface CustomerRow {
  id: number;
  project_id: string;
  username: string;
  enabled: boolean;
  temporary: boolean;
  created_at: Date;
  updated_at: Date;
  identifiers: Array<{
    id: number;
    type: string;
    value: string;
    readonly: boolean;
    created_at: string;
    updated_at: string;
  }>;
  credentials: Array<{ id: number; type: number; created_at: string }>;
}

function toCustomerEntity(r: CustomerRow): Customer {
  return Object.assign(new Customer(), {
    id: r.id,
    projectId: r.project_id,
    username: r.username,
    enabled: r.enabled,
    temporary: r.temporary,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    identifiers: r.identifiers.map((i) =>
      Object.assign(new CustomerIdentifier(), {
        id: i.id,
        projectId: r.project_id,
        customerId: r.id,
        type: i.type,
        value: i.value,
        readonly: i.readonly,
        createdAt: new Date(i.created_at),
        updatedAt: new Date(i.updated_at),
      }),
    ),
    credentials: r.credentials.map((k) =>
      Object.assign(new CustomerCredential(), {
        id: k.id,
        projectId: r.project_id,
        customerId: r.id,
        type: k.type,
        createdAt: new Date(k.created_at),
      }),
    ),
  });
}
