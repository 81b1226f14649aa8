import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { Statement, Statements } from '../database/statements';
import { Transactions } from '../database/transactional';
import { Subscription, SubscriptionSource, SubscriptionStatus } from './entities/subscription.entity';
import { GenerateSql } from '../database/generate-sql';

export type NewWindowValues = [
  projectId: string,
  customerId: number,
  planId: number,
  group: string,
  validFrom: Date,
  validTo: Date | null,
  source: SubscriptionSource,
  codeId: number | null,
  /** the grant's time: a window "created to start later" has `valid_from` later than this */
  createdAt: Date,
];

/**
 * Every statement on `subscriptions`: the named statements of a grant (the live chain, the
 * changes to windows, the insert), the customer's list, the row types. `SubscriptionsService`
 * applies the chain engine's decisions; every statement runs in the current unit of work's
 * transaction, if one is open.
 */
/** A window row as `insert` takes it, for `npm run sql` (`@GenerateSql`). */
const CODE_WINDOW = [
  'prj_1',
  1,
  1,
  'default',
  new Date('2026-03-15T12:00:00Z'),
  new Date('2026-04-01T00:00:00Z'),
  'code',
  1,
  new Date('2026-03-15T12:00:00Z'),
];

@Injectable()
export class SubscriptionsRepository {
  constructor(
    private readonly transactions: Transactions,
    private readonly statements: Statements,
  ) {}

  /** The customer's live windows in one plan group at `now`, with their plans' values and names. */
  @GenerateSql({ params: ['prj_1', 1, 'default', new Date('2026-03-15T12:00:00Z')] })
  liveChain(projectId: string, customerId: number, group: string, now: Date): Promise<WindowRow[]> {
    return this.statements.rows<WindowRow>(undefined, LIVE_CHAIN, [customerId, group, now, projectId]);
  }

  @GenerateSql({ params: ['prj_1', 1, new Date('2026-03-15T12:00:00Z')] })
  async end(projectId: string, id: number, validTo: Date | null): Promise<void> {
    await this.statements.run(undefined, END_WINDOW, [id, projectId, validTo]);
  }

  @GenerateSql({ params: ['prj_1', 1] })
  async cancel(projectId: string, id: number): Promise<void> {
    await this.statements.run(undefined, CANCEL_WINDOW, [id, projectId]);
  }

  @GenerateSql({ params: ['prj_1', 1, new Date('2026-03-01T00:00:00Z'), new Date('2026-04-01T00:00:00Z')] })
  async move(projectId: string, id: number, validFrom: Date, validTo: Date | null): Promise<void> {
    await this.statements.run(undefined, MOVE_WINDOW, [id, projectId, validFrom, validTo]);
  }

  /**
   * Inserts windows in one statement: their ids, statuses and timestamps, in order. `trialFirst`:
   * the first one is a trial window.
   */
  @GenerateSql(
    {
      name: 'one window',
      params: [[CODE_WINDOW]],
    },
    {
      name: 'two windows',
      params: [
        [
          CODE_WINDOW,
          [
            'prj_1',
            1,
            2,
            'default',
            new Date('2026-04-01T00:00:00Z'),
            null,
            'signup',
            null,
            new Date('2026-03-15T12:00:00Z'),
          ],
        ],
      ],
    },
    {
      name: 'a trial and the tail after it',
      params: [
        [
          CODE_WINDOW,
          [
            'prj_1',
            1,
            2,
            'default',
            new Date('2026-04-01T00:00:00Z'),
            null,
            'signup',
            null,
            new Date('2026-03-15T12:00:00Z'),
          ],
        ],
        true,
      ],
    },
  )
  insert(values: NewWindowValues[], trialFirst = false): Promise<InsertedRow[]> {
    return this.statements.rows<InsertedRow>(
      undefined,
      insertWindows(values.length, trialFirst),
      values.flat(),
    );
  }

  /** Whether the customer ever had a trial window in the group, in any state (docs/api-guide.md#trials). */
  @GenerateSql({ params: ['prj_1', 1, 'default'] })
  async hadTrial(projectId: string, customerId: number, group: string): Promise<boolean> {
    const [row] = await this.statements.rows<{ found: boolean }>(undefined, HAD_TRIAL, [
      customerId,
      group,
      projectId,
    ]);
    return row.found;
  }

  /** A customer's active windows (without their plans), by start. */
  @GenerateSql({ params: ['prj_1', 1] })
  activeWindows(projectId: string, customerId: number): Promise<Subscription[]> {
    return this.transactions.tx.find(Subscription, {
      where: { projectId, customerId, status: 'active' },
      order: { validFrom: 'ASC', id: 'ASC' },
    });
  }

  /** The project's windows among `ids`. */
  @GenerateSql({ params: ['prj_1', [1, 2]] })
  byIds(projectId: string, ids: number[]): Promise<Subscription[]> {
    return this.transactions.tx.find(Subscription, { where: { projectId, id: In(ids) } });
  }

  /** The customer's windows granted by a code, by start. */
  @GenerateSql({ params: ['prj_1', 1, 1] })
  ofCode(projectId: string, customerId: number, codeId: number): Promise<Subscription[]> {
    return this.transactions.tx.find(Subscription, {
      where: { projectId, customerId, codeId },
      order: { validFrom: 'ASC', id: 'ASC' },
    });
  }

  /** A customer's windows with their plans: live ones first (by start); with `history`, then the others. */
  @GenerateSql(
    { name: 'live', params: ['prj_1', 1, false] },
    { name: 'with history', params: ['prj_1', 1, true] },
  )
  listForCustomer(projectId: string, customerId: number, history: boolean): Promise<Subscription[]> {
    const qb = this.transactions.tx
      .getRepository(Subscription)
      .createQueryBuilder('s')
      .innerJoinAndSelect('s.plan', 'p', 'p.project_id = s.project_id')
      .where('s.customer_id = :customerId AND s.project_id = :projectId', { customerId, projectId })
      .addSelect(
        `CASE WHEN s.status = 'active' AND (s.valid_to IS NULL OR s.valid_to > now()) THEN 0 ELSE 1 END`,
        'ended',
      )
      .orderBy('ended', 'ASC')
      .addOrderBy('s.valid_from', 'ASC')
      .addOrderBy('s.id', 'ASC');
    if (!history) qb.andWhere(`s.status = 'active' AND (s.valid_to IS NULL OR s.valid_to > now())`);
    return qb.getMany();
  }
}

export interface InsertedRow {
  id: number;
  status: SubscriptionStatus;
  created_at: Date;
  updated_at: Date;
}

export interface WindowRow {
  id: number;
  name: string;
  source: SubscriptionSource;
  code_id: number | null;
  trial: boolean;
  plan_id: number;
  value: string;
  valid_from: Date;
  valid_to: Date | null;
}

/**
 * The customer's live windows in one plan group, with their plans' values and names. The partial
 * index `subscriptions_live_chain_idx` (customer_id, plan_group, COALESCE(valid_to, 'infinity'))
 * of the active windows finds them as one range, however many ended windows the group holds
 * (migration LiveWindowsIndex); the project is a filter on what it finds. An open window
 * (`valid_to` null) is live: `COALESCE` makes it end at infinity.
 */
export const LIVE_CHAIN: Statement = {
  name: 'subscriptions.live-chain',
  text: `SELECT s.id, s.plan_id, s.source, s.code_id, s.trial, p.value, p.name, s.valid_from, s.valid_to
           FROM subscriptions s JOIN plans p ON p.id = s.plan_id AND p.project_id = s.project_id
          WHERE s.customer_id = $1 AND s.plan_group = $2 AND s.status = 'active'
            AND COALESCE(s.valid_to, 'infinity'::timestamptz) > $3 AND s.project_id = $4`,
};
/** Any trial window of the customer's group, whatever its state, through `(customer_id, plan_group)`. */
const HAD_TRIAL: Statement = {
  name: 'subscriptions.had-trial',
  text: `SELECT EXISTS (SELECT 1 FROM subscriptions s
                     WHERE s.customer_id = $1 AND s.plan_group = $2 AND s.trial AND s.project_id = $3) AS found`,
};
/** Changes to one window (by primary key) of the project: `$1` the window, `$2` the project. */
const END_WINDOW: Statement = {
  name: 'subscriptions.end',
  text: 'UPDATE subscriptions SET valid_to = $3, updated_at = now() WHERE id = $1 AND project_id = $2',
};
const CANCEL_WINDOW: Statement = {
  name: 'subscriptions.cancel',
  text: `UPDATE subscriptions SET status = 'cancelled', updated_at = now() WHERE id = $1 AND project_id = $2`,
};
const MOVE_WINDOW: Statement = {
  name: 'subscriptions.move',
  text: 'UPDATE subscriptions SET valid_from = $3, valid_to = $4, updated_at = now() WHERE id = $1 AND project_id = $2',
};
/**
 * INSERT of `count` windows (a grant creates one, or two when it re-creates a permanent tail).
 * `created_at` is the grant's time, so that a window "created to start later" is exactly one
 * whose `valid_from` is later than its `created_at` (the events' scheduler relies on it). With
 * `trialFirst`, the first window (the granted one) is a trial: a statement of its own, so that
 * every other grant keeps its nine parameters a row and the column's default.
 */
export const insertWindows = (count: number, trialFirst = false): Statement => ({
  name: `subscriptions.insert-${trialFirst ? 'trial-' : ''}${count}`,
  text: `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, code_id, created_at${trialFirst ? ', trial' : ''})
         VALUES ${Array.from({ length: count }, (_, i) => `(${Array.from({ length: 9 }, (__, j) => `$${i * 9 + j + 1}`).join(', ')}${trialFirst ? (i === 0 ? ', true' : ', false') : ''})`).join(', ')}
         RETURNING id, status, created_at, updated_at`,
});
