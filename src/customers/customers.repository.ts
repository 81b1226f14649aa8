import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { MAX_INT4, PageWindow } from '../common/http/pagination';
import { ReadReplicas } from '../database/read-replicas';
import { Statement, Statements } from '../database/statements';
import { Transactions } from '../database/transactional';
import type { CustomerRefDto, IdentifierInputDto } from './dto/customer.dto';
import { CREDENTIAL_PASSWORD, CustomerCredential } from './entities/customer-credential.entity';
import { CustomerIdentifier } from './entities/customer-identifier.entity';
import { Customer } from './entities/customer.entity';
import { CustomerTimeZoneChange } from './entities/customer-time-zone-change.entity';
import { GenerateSql } from '../database/generate-sql';
import { customerFrom } from './customer-sql';

/** Frequencies (share of the documents) of the common trigrams; any other is at most `unlisted`. */
export interface TrigramStats {
  frequencies: Map<string, number>;
  unlisted: number;
}

/** What a search matches: the whole pattern, and the windows of it that drive the index scan. */
export interface SearchPatterns {
  /** `likePattern(term)` */
  pattern: string;
  /** `likePattern` of each window (`searchWindows`); none: the whole pattern drives the scan. */
  windows: string[];
  /** The term holds the search documents' separator: match the identifier values one by one. */
  perValue: boolean;
}

/**
 * Every statement on `customers`, `customer_identifiers`, `customer_credentials` and the search
 * tables of the customers module (`customer_search`, `customer_counts`): the named prepared
 * statements, the TypeORM calls, the row types and the row-to-entity mapping. `CustomersService`
 * keeps the rules. Every statement runs in the current unit of work's transaction, if one is
 * open; the page reads (`pageIds`, `loadMany`) on a read replica inside `ReadReplicas.run`.
 */
@Injectable()
export class CustomersRepository {
  constructor(
    private readonly transactions: Transactions,
    private readonly statements: Statements,
    private readonly reads: ReadReplicas,
  ) {}

  /** One page of a project's customer ids, newest first, and the exact total (rows `offset`+1 on). */
  @GenerateSql(
    { name: 'unfiltered', params: ['prj_1', { limit: 20, offset: 0 }, undefined] },
    {
      name: 'searching each identifier value',
      params: ['prj_1', { limit: 20, offset: 0 }, { pattern: '%ada@%', windows: [], perValue: true }],
    },
    {
      name: 'searching the documents',
      params: ['prj_1', { limit: 20, offset: 0 }, { pattern: '%ada%', windows: [], perValue: false }],
    },
    {
      name: 'searching the documents by their rare windows',
      params: [
        'prj_1',
        { limit: 20, offset: 0 },
        { pattern: '%lovelace.ada%', windows: ['%lovel%', '%e.ada%'], perValue: false },
      ],
    },
  )
  async pageIds(
    projectId: string,
    { limit, offset }: PageWindow,
    search: SearchPatterns | undefined,
  ): Promise<{ ids: number[]; total: number }> {
    if (!search) {
      const [row] = await this.statements.rows<{ ids: number[]; total: number }>(
        this.reads.manager,
        UNFILTERED_PAGE,
        [projectId, limit, offset],
      );
      return row;
    }
    let matches: string;
    let params: string[];
    if (search.perValue) {
      // a document cannot tell a separator typed in the term from one between two values
      params = [projectId, search.pattern];
      matches =
        'SELECT DISTINCT customer_id FROM customer_identifiers WHERE project_id = $1 AND value ILIKE $2';
    } else {
      // `doc LIKE lower(pattern)` is what ILIKE does to each value. Its trigram scan reads the
      // posting list of every trigram of the term, and those shared by most customers (`use`,
      // `mai`) cost far more than they filter: the index scan then uses only the rare parts of
      // the term (windows), and the full pattern is checked on what they find.
      const windows = search.windows;
      params = [projectId, search.pattern, ...windows];
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
    const [first, last] = [offset + 1, offset + limit].map((i) => Math.min(i, MAX_INT4)); // array subscripts are int4
    const [row]: Array<{ total: number; ids: number[] }> = await (
      this.reads.manager ?? this.transactions.tx
    ).query(
      `SELECT count(*)::int AS total, coalesce((array_agg(customer_id ORDER BY customer_id DESC))[${first}:${last}], '{}') AS ids
           FROM (${matches}) m`,
      params,
    );
    return row;
  }

  /**
   * The common trigrams of the search documents and their frequencies, as the last ANALYZE of
   * customer_search found them (statistics object customer_search_trgm_stats). Undefined when
   * there are none yet (or they may not be read).
   */
  @GenerateSql({ params: [] })
  trigramStats(): Promise<TrigramStats | undefined> {
    return this.transactions.tx
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
  }

  /** The project's customers by id with their identifiers, keeping the order of `ids`: one statement for a whole page. */
  @GenerateSql({ params: ['prj_1', [1, 2]] })
  async loadMany(projectId: string, ids: number[]): Promise<Customer[]> {
    if (ids.length === 0) return [];
    const rows = await this.statements.rows<CustomerRow>(this.reads.manager, CUSTOMERS_BY_IDS, [
      ids,
      projectId,
    ]);
    const byId = new Map(rows.map((r) => [r.id, toCustomerEntity(r)]));
    return ids.map((id) => byId.get(id)).filter((c): c is Customer => c !== undefined);
  }

  /** Whether the project has this customer. */
  @GenerateSql({ params: ['prj_1', 1] })
  async exists(projectId: string, customerId: number): Promise<boolean> {
    const rows: unknown[] = await this.transactions.tx.query(
      'SELECT 1 FROM customers WHERE id = $1 AND project_id = $2',
      [customerId, projectId],
    );
    return rows.length > 0;
  }

  /** A customer with its identifiers and credentials, or undefined. */
  @GenerateSql({ params: ['prj_1', 1] })
  async record(projectId: string, customerId: number): Promise<Customer | undefined> {
    const [row] = await this.statements.rows<CustomerRow>(undefined, CUSTOMER_RECORD, [
      customerId,
      projectId,
    ]);
    return row && toCustomerEntity(row);
  }

  /** The customer a reference selects, with its identifiers and credentials, or undefined. */
  @GenerateSql(
    { name: 'by username', params: ['prj_1', { type: 'username', value: 'ada' }] },
    { name: 'by identifier', params: ['prj_1', { type: 'email', value: 'ada@example.com' }] },
  )
  async recordByRef(projectId: string, ref: CustomerRefDto): Promise<Customer | undefined> {
    const [row] = await this.statements.rows<CustomerRow>(
      undefined,
      BY_IDENTIFIER[kindOf(ref)].record,
      identifierParams(projectId, ref),
    );
    return row && toCustomerEntity(row);
  }

  /** The customer holding an identifier (`username` compared case-insensitively), or undefined. */
  @GenerateSql(
    { name: 'by username', params: ['prj_1', { type: 'username', value: 'ada' }] },
    { name: 'by identifier', params: ['prj_1', { type: 'email', value: 'ada@example.com' }] },
  )
  async findIdByRef(projectId: string, ref: CustomerRefDto): Promise<number | undefined> {
    const rows = await this.statements.rows<{ id: number }>(
      undefined,
      BY_IDENTIFIER[kindOf(ref)].id,
      identifierParams(projectId, ref),
    );
    return rows[0]?.id;
  }

  /** Like `findIdByRef`, and locks the customer row for the rest of the transaction, in one statement. */
  @GenerateSql(
    { name: 'by username', params: ['prj_1', { type: 'username', value: 'ada' }] },
    { name: 'by identifier', params: ['prj_1', { type: 'email', value: 'ada@example.com' }] },
  )
  async lockByRef(projectId: string, ref: CustomerRefDto): Promise<Customer | undefined> {
    const [row] = await this.statements.rows<{ id: number; username: string }>(
      undefined,
      BY_IDENTIFIER[kindOf(ref)].lock,
      identifierParams(projectId, ref),
    );
    return row ? Object.assign(new Customer(), { id: row.id, username: row.username, projectId }) : undefined;
  }

  /** Locks the customer row for the rest of the transaction: the row, or undefined. */
  @GenerateSql({ params: ['prj_1', 1] })
  lock(projectId: string, customerId: number): Promise<Customer | null> {
    return this.transactions.tx.findOne(Customer, {
      where: { id: customerId, projectId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  /** The customer, its mirrored `username` identifier, extra identifiers and its password credential. */
  @GenerateSql({
    params: [
      'prj_1',
      {
        username: 'grace',
        enabled: true,
        temporary: false,
        timeZone: 'Europe/Berlin',
        passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA',
        identifiers: [{ type: 'email', value: 'grace@example.com' }],
      },
    ],
  })
  async insert(
    projectId: string,
    input: {
      username: string;
      enabled: boolean;
      temporary: boolean;
      timeZone: string | null;
      passwordHash?: string;
      identifiers: IdentifierInputDto[];
    },
  ): Promise<Customer> {
    const em = this.transactions.tx;
    const customer = await em.save(
      em.create(Customer, {
        projectId,
        username: input.username,
        enabled: input.enabled,
        temporary: input.temporary,
        timeZone: input.timeZone,
      }),
    );
    const identifiers = await em.save(
      [
        { type: 'username', value: input.username, readonly: true },
        ...input.identifiers.map((i) => ({ ...i, readonly: false })),
      ].map((i) => em.create(CustomerIdentifier, { ...i, projectId, customerId: customer.id })),
    );
    const credentials = input.passwordHash
      ? [
          await em.save(
            em.create(CustomerCredential, {
              projectId,
              customerId: customer.id,
              type: CREDENTIAL_PASSWORD,
              secretHash: input.passwordHash,
            }),
          ),
        ]
      : [];
    return Object.assign(customer, { identifiers, credentials });
  }

  /** Writes the customer row (as changed by the service). */
  @GenerateSql({
    params: [
      Object.assign(new Customer(), {
        id: 1,
        projectId: 'prj_1',
        username: 'ada',
        enabled: false,
        temporary: false,
        timeZone: 'Asia/Tokyo',
      }),
    ],
  })
  async save(customer: Customer): Promise<void> {
    await this.transactions.tx.save(customer);
  }

  /** Records a change of the customer's zone (same transaction as the change itself). */
  @GenerateSql({ params: ['prj_1', 1, new Date(0), null, 'Asia/Tokyo'] })
  async insertTimeZoneChange(
    projectId: string,
    customerId: number,
    changedAt: Date,
    fromZone: string | null,
    toZone: string | null,
  ): Promise<void> {
    await this.transactions.tx.insert(CustomerTimeZoneChange, {
      projectId,
      customerId,
      changedAt,
      fromZone,
      toZone,
    });
  }

  /** The mirrored `username` identifier follows a rename. */
  @GenerateSql({ params: ['prj_1', 1, 'ada_l'] })
  async renameUsernameIdentifier(projectId: string, customerId: number, username: string): Promise<void> {
    await this.transactions.tx.update(
      CustomerIdentifier,
      { projectId, customerId, type: 'username', readonly: true },
      { value: username },
    );
  }

  @GenerateSql({ params: ['prj_1', 1, '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA'] })
  async setPassword(projectId: string, customerId: number, secretHash: string): Promise<void> {
    await this.transactions.tx.query(
      `INSERT INTO customer_credentials (project_id, customer_id, type, secret_hash) VALUES ($1, $2, $3, $4)
       ON CONFLICT (customer_id, type) DO UPDATE SET secret_hash = EXCLUDED.secret_hash, updated_at = now()
        WHERE customer_credentials.project_id = EXCLUDED.project_id`,
      [projectId, customerId, CREDENTIAL_PASSWORD, secretHash],
    );
  }

  /** Replaces the extra identifiers; pairs that stay keep their id and createdAt. */
  @GenerateSql({
    params: [
      'prj_1',
      1,
      [
        { type: 'email', value: 'ada@example.org' },
        { type: 'phone', value: '+15550100' },
      ],
    ],
  })
  async replaceIdentifiers(
    projectId: string,
    customerId: number,
    wanted: IdentifierInputDto[],
  ): Promise<void> {
    const em = this.transactions.tx;
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

  /**
   * Ends the customer's sessions (table `customer_sessions`), all but `keepSessionId` when given:
   * in the current transaction, so that a disabled customer or a new password takes effect with
   * the change itself.
   */
  @GenerateSql({ params: ['prj_1', 1, 7] })
  async deleteSessions(projectId: string, customerId: number, keepSessionId?: number): Promise<void> {
    await this.transactions.tx.query(
      'DELETE FROM customer_sessions WHERE project_id = $1 AND customer_id = $2 AND id <> $3',
      [projectId, customerId, keepSessionId ?? 0],
    );
  }

  /** The customer's `enabled` and password hash (null without one); undefined for an unknown customer. */
  @GenerateSql({ params: ['prj_1', 1] })
  async passwordOf(
    projectId: string,
    customerId: number,
  ): Promise<{ enabled: boolean; secretHash: string | null } | undefined> {
    const rows: Array<{ enabled: boolean; secret_hash: string | null }> = await this.transactions.tx.query(
      `SELECT c.enabled, cr.secret_hash
         FROM customers c
         LEFT JOIN customer_credentials cr ON cr.customer_id = c.id AND cr.project_id = c.project_id AND cr.type = $3
        WHERE c.id = $1 AND c.project_id = $2`,
      [customerId, projectId, CREDENTIAL_PASSWORD],
    );
    return rows[0] && { enabled: rows[0].enabled, secretHash: rows[0].secret_hash };
  }

  /** The customer's password hash alone, or undefined. */
  @GenerateSql({ params: ['prj_1', 1] })
  async passwordHash(projectId: string, customerId: number): Promise<string | undefined> {
    const rows: Array<{ secret_hash: string }> = await this.transactions.tx.query(
      'SELECT secret_hash FROM customer_credentials WHERE customer_id = $1 AND project_id = $2 AND type = $3',
      [customerId, projectId, CREDENTIAL_PASSWORD],
    );
    return rows[0]?.secret_hash;
  }

  /** The project's customers, from the trigger-kept counter slots (migration CustomerCounts). */
  @GenerateSql({ params: ['prj_1'] })
  async total(projectId: string): Promise<number> {
    const [{ total }] = await this.statements.rows<{ total: number }>(undefined, CUSTOMER_TOTAL, [projectId]);
    return total;
  }

  /** Deletes a customer; false when the project has no such customer. */
  @GenerateSql({ params: ['prj_1', 1] })
  async delete(projectId: string, customerId: number): Promise<boolean> {
    const result = await this.transactions.tx.delete(Customer, { id: customerId, projectId });
    return !!result.affected;
  }
}

/**
 * A customer row with its identifiers (and, for a full record, its credentials) aggregated as
 * JSON: a page or a record is one round trip. `FROM` and `WHERE` follow.
 */
const recordSelect = (withCredentials: boolean) =>
  `SELECT c.id, c.project_id, c.username, c.enabled, c.temporary, c.time_zone, c.created_at, c.updated_at,
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
const CUSTOMER_TOTAL: Statement = {
  name: 'customers.total',
  text: `SELECT coalesce(sum(n), 0)::int AS total FROM customer_counts WHERE project_id = $1`,
};
const CUSTOMERS_BY_IDS: Statement = {
  name: 'customers.by-ids',
  text: `${recordSelect(false)} FROM customers c WHERE c.id = ANY($1::int[]) AND c.project_id = $2`,
};
export const CUSTOMER_RECORD: Statement = {
  name: 'customers.record',
  text: `${recordSelect(true)} FROM customers c WHERE c.id = $1 AND c.project_id = $2`,
};

/** How a customer reference finds its customer: `username` case-insensitively, other types exactly. */
type RefKind = 'username' | 'identifier';
const kindOf = (ref: CustomerRefDto): RefKind => (ref.type === 'username' ? 'username' : 'identifier');
const refValues = (ref: CustomerRefDto): string[] =>
  ref.type === 'username' ? [ref.value] : [ref.type, ref.value];
const identifierParams = (projectId: string, ref: CustomerRefDto): string[] => [projectId, ...refValues(ref)];
const REF_FROM: Record<RefKind, string> = {
  username: customerFrom('username', '$1', ['$2']),
  identifier: customerFrom('identifier', '$1', ['$2', '$3']),
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
  time_zone: string | null;
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
    timeZone: r.time_zone,
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
