import { Injectable } from '@nestjs/common';
import { SelectQueryBuilder } from 'typeorm';
import { likePattern, PageWindow } from '../common/http/pagination';
import { ReadReplicas } from '../database/read-replicas';
import { Statement, Statements } from '../database/statements';
import { allowLongStatements } from '../database/timeouts';
import { Transactions } from '../database/transactional';
import { CodeBatch } from './entities/code-batch.entity';
import { Code } from './entities/code.entity';
import { CodeRedemption } from './entities/code-redemption.entity';
import { GenerateSql } from '../database/generate-sql';

/** The filters of a code list, as the service has read them from the query. */
export interface CodeFilter {
  status?: 'available' | 'expired' | 'redeemed' | 'revoked' | 'exhausted' | 'scheduled';
  kind?: 'batch' | 'campaign';
  planId?: number;
  batchId?: number;
  /** The search term as typed, and its normalised code fragment (or null when it cannot be part of a code). */
  search?: { term: string; codeFragment: string | null; keyFragment?: string | null };
}

/**
 * Who a redemption is for, as `lockForRedemption` finds them: a customer id, a `username`
 * (compared case-insensitively) or another identifier `(type, value)` (compared exactly).
 */
export type RedeemerLookup = { id: number } | { username: string } | { type: string; value: string };

/** A code row locked by `lockForRedemption`, with its plan's columns (null when the plan is gone). */
export interface LockedCodeRow {
  id: number;
  project_id: string;
  batch_id: number;
  plan_id: number;
  code: string;
  duration: string | null;
  status: Code['status'];
  note: string | null;
  expires_at: Date | null;
  redeemed_at: Date | null;
  redeemed_by_customer_id: number | null;
  created_at: Date;
  updated_at: Date;
  plan_project_id: string | null;
  plan_slug: string | null;
  plan_name: string | null;
  plan_value: string | null;
  plan_group: string | null;
  plan_created_at: Date | null;
  plan_updated_at: Date | null;
}

/** What the redemption lock answers beside the batch code's columns. */
export interface LockedExtras {
  customer_id: number | null;
  customer_username: string | null;
  marked: boolean;
  campaign: CampaignRow | null;
}

/** A campaign code as the redemption lock reads it (a JSON object: instants as ISO strings). */
export interface CampaignRow {
  id: number;
  project_id: string;
  plan_id: number;
  display_code: string;
  code_key: string;
  duration: string | null;
  trial: boolean;
  status: Code['status'];
  note: string | null;
  starts_at: string | null;
  expires_at: string | null;
  max_redemptions: number | null;
  per_customer_limit: number;
  redemption_count: number;
  new_customers_only: boolean;
  not_if_held_plan_groups: string[] | null;
  created_at: string;
  updated_at: string;
  plan_project_id: string | null;
  plan_slug: string | null;
  plan_name: string | null;
  plan_value: string | number | null;
  plan_group: string | null;
  plan_created_at: string | null;
  plan_updated_at: string | null;
  customer_redemptions: number;
}

/**
 * Every statement on `codes` and `code_batches`: the named prepared statements of the redemption,
 * the TypeORM calls and the row types. `CodesService` keeps the rules (formats, the order of
 * the checks, the views). Every statement runs in the current unit of work's transaction, if one
 * is open; the page on a read replica inside `ReadReplicas.run`.
 */
@Injectable()
export class CodesRepository {
  constructor(
    private readonly transactions: Transactions,
    private readonly statements: Statements,
    private readonly reads: ReadReplicas,
  ) {}

  /** Lets the rest of the current transaction's statements run up to `ms` (a large batch's insert). */
  @GenerateSql({ params: [60_000] })
  allowLongStatements(ms: number): Promise<void> {
    return allowLongStatements(this.transactions.tx, ms);
  }

  @GenerateSql({
    params: [
      {
        projectId: 'prj_1',
        planId: 1,
        duration: '1 month',
        count: 2,
        expiresAt: new Date('2026-12-31T00:00:00Z'),
        note: 'Spring campaign',
      },
    ],
  })
  insertBatch(batch: Omit<CodeBatch, 'id' | 'createdAt' | 'plan'>): Promise<CodeBatch> {
    const em = this.transactions.tx;
    return em.getRepository(CodeBatch).save(em.create(CodeBatch, batch));
  }

  /**
   * Inserts the candidates of a batch in one `INSERT ... SELECT FROM unnest(...)`, skipping
   * those that collide with an existing code (globally unique index) or with a key a campaign
   * code of the project holds (a batch never takes a held key): the codes inserted. The note
   * stays on the batch only (migration CodeBatchNotes), never copied into each code.
   */
  @GenerateSql({
    params: [
      { id: 1, projectId: 'prj_1', planId: 1, duration: '1 month', expiresAt: null },
      ['QRST2345UVWX6789', 'JKLM2345NPQR6789'],
    ],
  })
  async insertCodes(batch: CodeBatch, candidates: string[]): Promise<Set<string>> {
    const rows: Array<{ code: string }> = await this.transactions.tx.query(
      `INSERT INTO codes (project_id, batch_id, plan_id, code, duration, expires_at)
           SELECT $1::varchar, $2::int, $3::int, c, $4::varchar, $5::timestamptz
             FROM unnest($6::char(16)[]) WITH ORDINALITY AS t(c, n)
            WHERE NOT EXISTS (SELECT 1 FROM codes h
                               WHERE h.project_id = $1 AND h.kind = 'campaign' AND h.code_key = c::varchar
                                 AND h.status <> 'revoked' AND (h.expires_at IS NULL OR h.expires_at > now()))
            ORDER BY n
           ON CONFLICT (code) DO NOTHING
           RETURNING code`,
      [batch.projectId, batch.id, batch.planId, batch.duration, batch.expiresAt, candidates],
    );
    return new Set(rows.map((r) => r.code));
  }

  /**
   * For the project's batch limits: serialises the project's batch creations for the rest of the
   * current transaction (an advisory lock), then counts on `code_batches` (a few rows per hour, never
   * `codes`): the codes of every batch, the batches of the last hour and the seconds until the
   * oldest of those leaves the hour.
   */
  @GenerateSql({ params: ['prj_1'] })
  async lockBatchStats(
    projectId: string,
  ): Promise<{ codes: string; recent: number; retry_after: number | null }> {
    const em = this.transactions.tx;
    await em.query(`SELECT pg_advisory_xact_lock(hashtext('code-batches'), hashtext($1))`, [projectId]);
    const [row]: Array<{ codes: string; recent: number; retry_after: number | null }> = await em.query(
      `SELECT coalesce(sum(count), 0)::bigint AS codes,
              count(*) FILTER (WHERE created_at > now() - interval '1 hour')::int AS recent,
              extract(epoch FROM min(created_at) FILTER (WHERE created_at > now() - interval '1 hour')
                                 + interval '1 hour' - now())::float8 AS retry_after
         FROM code_batches WHERE project_id = $1`,
      [projectId],
    );
    return row;
  }

  /** One page of the project's codes, newest first, with their batch's note, and the total. */
  @GenerateSql(
    { name: 'unfiltered', params: ['prj_1', {}, new Date('2026-03-15T12:00:00Z'), { limit: 20, offset: 0 }] },
    {
      name: 'available, of a plan and a batch, searching a code or a note',
      params: [
        'prj_1',
        { status: 'available', planId: 1, batchId: 1, search: { term: 'abcd', codeFragment: 'ABCD' } },
        new Date('2026-03-15T12:00:00Z'),
        { limit: 20, offset: 0 },
      ],
    },
    {
      name: 'expired',
      params: ['prj_1', { status: 'expired' }, new Date('2026-03-15T12:00:00Z'), { limit: 20, offset: 0 }],
    },
    {
      name: 'redeemed',
      params: ['prj_1', { status: 'redeemed' }, new Date('2026-03-15T12:00:00Z'), { limit: 20, offset: 0 }],
    },
    {
      name: 'searching a note only',
      params: [
        'prj_1',
        { search: { term: 'spring sale', codeFragment: null } },
        new Date('2026-03-15T12:00:00Z'),
        { limit: 20, offset: 0 },
      ],
    },
  )
  page(
    projectId: string,
    filter: CodeFilter,
    now: Date,
    { limit, offset }: PageWindow,
  ): Promise<[Code[], number]> {
    const qb = this.withBatchNote((this.reads.manager ?? this.transactions.tx).createQueryBuilder(Code, 'c'))
      .where('c.project_id = :projectId', { projectId })
      .orderBy('c.id', 'DESC');

    switch (filter.status) {
      case undefined:
        break;
      case 'available':
        qb.andWhere(
          `c.status = 'available' AND (c.expires_at IS NULL OR c.expires_at > :now)
           AND (c.kind = 'batch' OR ((c.max_redemptions IS NULL OR c.redemption_count < c.max_redemptions)
                                     AND (c.starts_at IS NULL OR c.starts_at <= :now)))`,
          { now },
        );
        break;
      case 'exhausted':
        qb.andWhere(
          `c.kind = 'campaign' AND c.status = 'available' AND (c.expires_at IS NULL OR c.expires_at > :now)
           AND c.redemption_count >= c.max_redemptions`,
          { now },
        );
        break;
      case 'scheduled':
        qb.andWhere(
          `c.kind = 'campaign' AND c.status = 'available' AND (c.expires_at IS NULL OR c.expires_at > :now)
           AND (c.max_redemptions IS NULL OR c.redemption_count < c.max_redemptions) AND c.starts_at > :now`,
          { now },
        );
        break;
      case 'expired':
        qb.andWhere(`c.status = 'available' AND c.expires_at <= :now`, { now });
        break;
      case 'redeemed':
      case 'revoked':
        qb.andWhere('c.status = :status', { status: filter.status });
        break;
    }
    if (filter.planId !== undefined) qb.andWhere('c.plan_id = :planId', { planId: filter.planId });
    if (filter.batchId !== undefined) qb.andWhere('c.batch_id = :batchId', { batchId: filter.batchId });
    if (filter.kind !== undefined) qb.andWhere('c.kind = :kind', { kind: filter.kind });
    if (filter.search) {
      const fragment = filter.search.codeFragment;
      const key = filter.search.keyFragment ?? null;
      // a batch code's note is its batch's; a campaign code's its own
      const matches = ['b.note ILIKE :pattern', `(c.kind = 'campaign' AND c.note ILIKE :pattern)`];
      if (fragment) matches.push('c.code LIKE :codePattern');
      if (key) matches.push('c.code_key LIKE :keyPattern');
      qb.andWhere(`(${matches.join(' OR ')})`, {
        pattern: likePattern(filter.search.term),
        codePattern: `%${fragment}%`,
        keyPattern: `%${key}%`,
      });
    }
    return qb.offset(offset).limit(limit).getManyAndCount();
  }

  /** A code of the project with its batch's note, or null. */
  @GenerateSql({ params: ['prj_1', 1] })
  get(projectId: string, codeId: number): Promise<Code | null> {
    return this.withBatchNote(this.transactions.tx.createQueryBuilder(Code, 'c'))
      .where('c.id = :codeId AND c.project_id = :projectId', { codeId, projectId })
      .getOne();
  }

  /** Locks a code row for the rest of the transaction: the row, or null. */
  @GenerateSql({ params: ['prj_1', 1] })
  lock(projectId: string, codeId: number): Promise<Code | null> {
    return this.transactions.tx.findOne(Code, {
      where: { id: codeId, projectId },
      lock: { mode: 'pessimistic_write' },
    });
  }

  @GenerateSql({ params: ['prj_1', 1, new Date('2026-03-15T12:00:00Z')] })
  async markRevoked(projectId: string, codeId: number, now: Date): Promise<void> {
    await this.transactions.tx
      .createQueryBuilder()
      .update(Code)
      .set({ status: 'revoked', updatedAt: now })
      .where('id = :id AND project_id = :projectId', { id: codeId, projectId })
      .execute();
  }

  @GenerateSql({ params: ['prj_1', 1] })
  findBatch(projectId: string, batchId: number): Promise<CodeBatch | null> {
    return this.transactions.tx.findOne(CodeBatch, { where: { id: batchId, projectId } });
  }

  /** The codes of a batch by id, with the batch's note. */
  @GenerateSql({ params: ['prj_1', 1] })
  codesOfBatch(projectId: string, batchId: number): Promise<Code[]> {
    return this.withBatchNote(this.transactions.tx.createQueryBuilder(Code, 'c'))
      .where('c.batch_id = :batchId AND c.project_id = :projectId', { batchId, projectId })
      .orderBy('c.id', 'ASC')
      .getMany();
  }

  /**
   * The redemption's hot path, in ONE statement and one round trip, inside the current
   * transaction. Contract:
   * - locks, in this order, the customer row `redeemer` selects in the project (`FOR UPDATE`),
   *   then the project's code whose normalised text is `code` (`FOR UPDATE`), joined with its plan
   *   (read, not locked; the plan may be gone);
   * - when both exist and the code is `available`, marks it redeemed by that customer at `now`
   *   (`marked`, the write of `REDEEMED`): the caller's checks then fail or pass on the code as it
   *   WAS (the answer is the row before the mark), and a failed check rolls the mark back with the
   *   transaction; `markRedeemed` then brings the caller's code up to date without a statement;
   * - answers one row: the code's columns (all null when there is no such code), `customer_id`
   *   and `customer_username` (null when there is no such customer), and `marked`;
   * - when there is no batch code with that text, `campaign`: the project's campaign code with the
   *   key (the one that holds it, else the newest), read WITHOUT a lock, with its plan and the
   *   customer's redemptions of it so far (`CampaignRow`); null when there is none. The count is
   *   read with the statement's snapshot: `takeRedemption` checks the limit again at the end.
   * This repository owns the statement although it reads `customers` and `plans`: one round trip
   * is the point, and the customer lookups are the same as `CustomersRepository`'s.
   */
  @GenerateSql(
    { name: 'by id', params: ['prj_1', 'ABCD2345EFGH6789', { id: 1 }, new Date('2026-03-15T12:00:00Z')] },
    {
      name: 'by username',
      params: ['prj_1', 'ABCD2345EFGH6789', { username: 'ada' }, new Date('2026-03-15T12:00:00Z')],
    },
    {
      name: 'by identifier',
      params: [
        'prj_1',
        'ABCD2345EFGH6789',
        { type: 'email', value: 'ada@example.com' },
        new Date('2026-03-15T12:00:00Z'),
      ],
    },
  )
  async lockForRedemption(
    projectId: string,
    code: string,
    redeemer: RedeemerLookup,
    now: Date,
  ): Promise<LockedCodeRow & LockedExtras> {
    const [kind, values] =
      'id' in redeemer
        ? (['id', [redeemer.id]] as const)
        : 'username' in redeemer
          ? (['username', [redeemer.username]] as const)
          : (['identifier', [redeemer.type, redeemer.value]] as const);
    const [row] = await this.statements.rows<LockedCodeRow & LockedExtras>(
      undefined,
      LOCK_FOR_REDEMPTION[kind],
      [projectId, ...values, code, now, code],
    );
    return row;
  }

  /**
   * Records the redemption of a code locked by `lockForRedemption` by `customerId` at `now`, and
   * sets `code` as the database now holds it. `marked`: the lock statement has written it already
   * (its customer was there), so nothing is sent; otherwise (a customer created after the lock)
   * one statement writes it. False when the code was not available any more.
   */
  @GenerateSql({
    name: 'not marked by the lock',
    params: [{ id: 1, projectId: 'prj_1' }, 1, new Date('2026-03-15T12:00:00Z'), false],
  })
  async markRedeemed(code: Code, customerId: number, now: Date, marked: boolean): Promise<boolean> {
    if (!marked) {
      const { rowCount } = await this.statements.run(undefined, MARK_REDEEMED, [
        code.id,
        code.projectId,
        now,
        customerId,
      ]);
      if (rowCount !== 1) return false;
    }
    Object.assign(code, redeemed(customerId, now));
    return true;
  }

  /**
   * Serialises, for the rest of the current transaction, the project's creations of codes with
   * this key (an advisory lock), so that two of them cannot both find the key free.
   */
  @GenerateSql({ params: ['prj_1', '1AUNCH50'] })
  async lockKey(projectId: string, key: string): Promise<void> {
    await this.transactions.tx.query(
      `SELECT pg_advisory_xact_lock(hashtext('code-key'), hashtext($1 || ':' || $2))`,
      [projectId, key],
    );
  }

  /**
   * Whether a code of the project takes `key`: a batch code with it, or a campaign code with it
   * that holds it (neither revoked nor expired at `now`).
   */
  @GenerateSql({ params: ['prj_1', '1AUNCH50', new Date('2026-03-15T12:00:00Z')] })
  async keyTaken(projectId: string, key: string, now: Date): Promise<boolean> {
    const [row]: Array<{ taken: boolean }> = await this.transactions.tx.query(
      `SELECT EXISTS (SELECT 1 FROM codes WHERE project_id = $1 AND kind = 'batch' AND code = $2)
           OR EXISTS (SELECT 1 FROM codes WHERE project_id = $1 AND kind = 'campaign' AND code_key = $2
                         AND status <> 'revoked' AND (expires_at IS NULL OR expires_at > $3)) AS taken`,
      [projectId, key, now],
    );
    return row.taken;
  }

  @GenerateSql({
    params: [
      {
        projectId: 'prj_1',
        kind: 'campaign',
        planId: 1,
        displayCode: 'LAUNCH-50',
        codeKey: '1AUNCH50',
        duration: 'P30D',
        trial: false,
        maxRedemptions: 100,
        perCustomerLimit: 1,
        startsAt: null,
        expiresAt: null,
        newCustomersOnly: false,
        notIfHeldPlanGroups: [],
        note: null,
      },
    ],
  })
  insertCampaign(
    values: Pick<
      Code,
      | 'projectId'
      | 'kind'
      | 'planId'
      | 'displayCode'
      | 'codeKey'
      | 'duration'
      | 'trial'
      | 'maxRedemptions'
      | 'perCustomerLimit'
      | 'startsAt'
      | 'expiresAt'
      | 'newCustomersOnly'
      | 'notIfHeldPlanGroups'
      | 'note'
    >,
  ): Promise<Code> {
    const em = this.transactions.tx;
    return em.getRepository(Code).save(em.create(Code, values));
  }

  /**
   * The redemption's last statement: raises the code's count when it is under the cap and the
   * customer under its limit (counted again here: the lock's count may predate a redemption by
   * the same customer that committed while this one waited for the customer's row), and records
   * who redeemed it, when, and which windows, in one round trip, so that the code's row is locked
   * only from here to the commit. `prior`: the customer's redemptions before this one;
   * `redemption_count` is null when nothing was taken.
   */
  @GenerateSql({ params: ['prj_1', 1, 1, new Date('2026-03-15T12:00:00Z'), [1]] })
  async takeRedemption(
    projectId: string,
    codeId: number,
    customerId: number,
    at: Date,
    windowIds: number[],
  ): Promise<{ redemption_count: number | null; id: number | null; updated_at: Date | null; prior: number }> {
    const [row] = await this.statements.rows<{
      redemption_count: number | null;
      id: number | null;
      updated_at: Date | null;
      prior: number;
    }>(undefined, TAKE_REDEMPTION, [codeId, projectId, customerId, at, windowIds]);
    return row;
  }

  /** Writes the changed fields of a code (and `updated_at`). */
  @GenerateSql({ params: ['prj_1', 1, { note: 'Launch week' }, new Date('2026-03-15T12:00:00Z')] })
  async update(projectId: string, codeId: number, changes: Partial<Code>, now: Date): Promise<void> {
    await this.transactions.tx
      .createQueryBuilder()
      .update(Code)
      .set({ ...changes, updatedAt: now })
      .where('id = :id AND project_id = :projectId', { id: codeId, projectId })
      .execute();
  }

  /** A page of a campaign code's redemptions, newest first (optionally one customer's), and the total. */
  @GenerateSql(
    { name: 'all', params: [1, undefined, { limit: 10, offset: 0 }] },
    { name: 'of a customer', params: [1, 1, { limit: 10, offset: 0 }] },
  )
  redemptionsPage(
    codeId: number,
    customerId: number | undefined,
    { limit, offset }: PageWindow,
  ): Promise<[CodeRedemption[], number]> {
    const qb = this.transactions.tx
      .createQueryBuilder(CodeRedemption, 'r')
      .where('r.code_id = :codeId', { codeId })
      .orderBy('r.id', 'DESC');
    if (customerId !== undefined) qb.andWhere('r.customer_id = :customerId', { customerId });
    return qb.offset(offset).limit(limit).getManyAndCount();
  }

  /** Joins the batch, selecting only what a view needs of it (its note; the plan's name is the plans module's). */
  private withBatchNote(qb: SelectQueryBuilder<Code>): SelectQueryBuilder<Code> {
    // a campaign code has no batch
    return qb.leftJoin('c.batch', 'b', 'b.project_id = c.project_id').addSelect(['b.id', 'b.note']);
  }
}

/**
 * What a redemption writes on its code, in SQL (`now` and `customer` are SQL expressions), for
 * both statements that may write it; `redeemed` is the same for the entity the caller holds.
 * Only an available code is redeemed.
 */
const REDEEMED = (now: string, customer: string) =>
  `SET status = 'redeemed', redeemed_at = ${now}, redeemed_by_customer_id = ${customer}, updated_at = ${now}`;
const REDEEMABLE = `status = 'available'`;
const redeemed = (customerId: number, now: Date): Partial<Code> => ({
  status: 'redeemed',
  redeemedAt: now,
  redeemedByCustomerId: customerId,
  updatedAt: now,
});

const TAKE_REDEMPTION: Statement = {
  name: 'codes.take-redemption',
  text: `WITH prior AS (SELECT count(*)::int AS n FROM code_redemptions WHERE code_id = $1 AND customer_id = $3),
         bump AS (
           UPDATE codes SET redemption_count = redemption_count + 1, updated_at = greatest(updated_at, $4)
            WHERE id = $1 AND project_id = $2 AND kind = 'campaign'
              AND (max_redemptions IS NULL OR redemption_count < max_redemptions)
              AND (SELECT n FROM prior) < per_customer_limit
           RETURNING redemption_count, updated_at),
         record AS (
           INSERT INTO code_redemptions (project_id, code_id, customer_id, redeemed_at, window_ids)
           SELECT $2, $1, $3, $4, $5::int[] FROM bump
           RETURNING id)
         SELECT bump.redemption_count, bump.updated_at, record.id, prior.n AS prior
           FROM prior LEFT JOIN (bump CROSS JOIN record) ON true`,
};

const MARK_REDEEMED: Statement = {
  name: 'codes.mark-redeemed',
  text: `UPDATE codes ${REDEEMED('$3', '$4')} WHERE id = $1 AND project_id = $2 AND ${REDEEMABLE}`,
};

/** How `lockForRedemption` finds the customer (alias `c`): `$1` is the project, the lookup's values follow. */
const REDEEMER_FROM = {
  id: 'FROM customers c WHERE c.project_id = $1 AND c.id = $2',
  username: 'FROM customers c WHERE c.project_id = $1 AND lower(c.username) = lower($2)',
  identifier:
    'FROM customers c JOIN customer_identifiers i ON i.customer_id = c.id AND c.project_id = i.project_id WHERE i.project_id = $1 AND i.type = $2 AND i.value = $3',
} as const;
const REDEEMER_VALUES = { id: 1, username: 1, identifier: 2 } as const;
type RedeemerKind = keyof typeof REDEEMER_FROM;

const lockForRedemptionStatement = (kind: RedeemerKind): Statement => {
  const code = `$${REDEEMER_VALUES[kind] + 2}`;
  const now = `$${REDEEMER_VALUES[kind] + 3}`;
  // the same text again for the campaign key: one parameter compared with both columns would be
  // typed `text`, and the batch code's `char(16)` index could not be used
  const key = `$${REDEEMER_VALUES[kind] + 4}`;
  return {
    name: `codes.lock-with-customer-${kind}`,
    text: `WITH cust AS (SELECT c.id, c.username ${REDEEMER_FROM[kind]} FOR UPDATE OF c),
                code AS (
                  SELECT c.id, c.project_id, c.batch_id, c.plan_id, c.code, c.duration, c.status, c.note, c.expires_at,
                         c.redeemed_at, c.redeemed_by_customer_id, c.created_at, c.updated_at,
                         p.project_id AS plan_project_id, p.slug AS plan_slug, p.name AS plan_name, p.value AS plan_value,
                         p.plan_group, p.created_at AS plan_created_at, p.updated_at AS plan_updated_at
                    FROM codes c LEFT JOIN plans p ON p.id = c.plan_id
                   WHERE c.code = ${code} AND c.project_id = $1
                     FOR UPDATE OF c),
                marked AS (
                  UPDATE codes ${REDEEMED(now, '(SELECT id FROM cust)')}
                   WHERE id = (SELECT id FROM code) AND ${REDEEMABLE} AND EXISTS (SELECT 1 FROM cust)
                  RETURNING id),
                campaign AS (
                  SELECT k.id, k.project_id, k.plan_id, k.display_code, k.code_key, k.duration, k.trial, k.status,
                         k.note, k.starts_at, k.expires_at, k.max_redemptions, k.per_customer_limit,
                         k.redemption_count, k.new_customers_only, k.not_if_held_plan_groups, k.created_at,
                         k.updated_at, p.project_id AS plan_project_id, p.slug AS plan_slug, p.name AS plan_name,
                         p.value AS plan_value, p.plan_group, p.created_at AS plan_created_at,
                         p.updated_at AS plan_updated_at,
                         (SELECT count(*)::int FROM code_redemptions r
                           WHERE r.code_id = k.id AND r.customer_id = (SELECT id FROM cust)) AS customer_redemptions
                    FROM codes k LEFT JOIN plans p ON p.id = k.plan_id
                   WHERE NOT EXISTS (SELECT 1 FROM code)
                     AND k.project_id = $1 AND k.kind = 'campaign' AND k.code_key = ${key}
                   ORDER BY CASE WHEN k.status <> 'revoked' AND (k.expires_at IS NULL OR k.expires_at > ${now})
                                 THEN 0 ELSE 1 END, k.id DESC
                   LIMIT 1)
           SELECT code.*, (SELECT id FROM cust) AS customer_id, (SELECT username FROM cust) AS customer_username,
                  EXISTS (SELECT 1 FROM marked) AS marked, (SELECT row_to_json(campaign) FROM campaign) AS campaign
             FROM (SELECT 1) AS one LEFT JOIN code ON true`,
  };
};
/** Exported for the benchmark's baselines (bench/baseline.ts), which run the same text. */
export const LOCK_FOR_REDEMPTION: Record<RedeemerKind, Statement> = {
  id: lockForRedemptionStatement('id'),
  username: lockForRedemptionStatement('username'),
  identifier: lockForRedemptionStatement('identifier'),
};
