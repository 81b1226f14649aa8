import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, In } from 'typeorm';
import { DomainError } from '../common/errors/domain-error';
import { Plan } from '../plans/entities/plan.entity';
import { PlansService } from '../plans/plans.service';
import { Statement, Statements } from '../database/statements';
import { ChainPlan, ChainWindow, planGrant } from './chain/chain-engine';
import { CustomerSubscriptionView, SubscriptionView } from './dto/subscription.dto';
import { Subscription, SubscriptionSource, SubscriptionStatus } from './entities/subscription.entity';

export interface GrantInput {
  projectId: string;
  customerId: number;
  plan: Plan;
  /** ISO 8601 duration; null: permanent. */
  duration: string | null;
  source: SubscriptionSource;
  codeId?: number | null;
  now: Date;
}

export interface GrantResult {
  created: Subscription[];
  changes: ChainPlan;
  /** Names of the plans in the chain, for answers that show them without another query. */
  planNames: Map<number, string>;
  /** Origin of each window of the chain the grant read (for the snapshots of events). */
  origins: Map<number, { source: SubscriptionSource; codeId: number | null }>;
}

interface InsertedRow {
  id: number;
  status: SubscriptionStatus;
  created_at: Date;
  updated_at: Date;
}

interface WindowRow {
  id: number;
  name: string;
  source: SubscriptionSource;
  code_id: number | null;
  plan_id: number;
  value: string;
  valid_from: Date;
  valid_to: Date | null;
}

/**
 * The customer's live windows in one plan group, with their plans' values and names. The index
 * (customer_id, plan_group) finds them; the project is a filter on what it finds.
 */
const LIVE_CHAIN: Statement = {
  name: 'subscriptions.live-chain',
  text: `SELECT s.id, s.plan_id, s.source, s.code_id, p.value, p.name, s.valid_from, s.valid_to
           FROM subscriptions s JOIN plans p ON p.id = s.plan_id AND p.project_id = s.project_id
          WHERE s.customer_id = $1 AND s.plan_group = $2 AND s.status = 'active'
            AND (s.valid_to IS NULL OR s.valid_to > $3) AND s.project_id = $4`,
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
 * whose `valid_from` is later than its `created_at` (the events' scheduler relies on it).
 */
const insertWindows = (count: number): Statement => ({
  name: `subscriptions.insert-${count}`,
  text: `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source, code_id, created_at)
         VALUES ${Array.from({ length: count }, (_, i) => `(${Array.from({ length: 9 }, (__, j) => `$${i * 9 + j + 1}`).join(', ')})`).join(', ')}
         RETURNING id, status, created_at, updated_at`,
});

/**
 * Applies the chain engine's decisions to the database. Every method takes the caller's
 * EntityManager: it runs inside the caller's transaction, which must already hold the
 * customer's row lock (that lock is what serialises concurrent grants for one customer).
 */
@Injectable()
export class SubscriptionsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly plans: PlansService,
    private readonly statements: Statements,
  ) {}

  async grant(em: EntityManager, input: GrantInput): Promise<GrantResult> {
    const rows = await this.statements.rows<WindowRow>(em, LIVE_CHAIN, [
      input.customerId,
      input.plan.group,
      input.now,
      input.projectId,
    ]);
    const chain: ChainWindow[] = rows.map((r) => ({
      id: r.id,
      planId: r.plan_id,
      planValue: Number(r.value),
      validFrom: r.valid_from,
      validTo: r.valid_to,
    }));
    const changes = planGrant(
      chain,
      { planId: input.plan.id, planValue: input.plan.value, duration: input.duration },
      input.now,
    );

    for (const w of changes.ended)
      await this.statements.run(em, END_WINDOW, [w.id, input.projectId, w.validTo]);
    for (const w of changes.cancelled) await this.statements.run(em, CANCEL_WINDOW, [w.id, input.projectId]);
    for (const w of changes.moved)
      await this.statements.run(em, MOVE_WINDOW, [w.id, input.projectId, w.validFrom, w.validTo]);
    // The granted window comes first; a second one is the permanent tail re-created after it,
    // which keeps the origin of the tail it replaces.
    const tail = rows.find((r) => r.valid_to === null);
    const values = changes.created.map((w, index) => [
      input.projectId,
      input.customerId,
      w.planId,
      input.plan.group,
      w.validFrom,
      w.validTo,
      index === 0 || !tail ? input.source : tail.source,
      index === 0 || !tail ? (input.codeId ?? null) : tail.code_id,
      input.now,
    ]);
    const inserted = values.length
      ? await this.statements.rows<InsertedRow>(em, insertWindows(values.length), values.flat())
      : [];
    const created = inserted.map((row, i) =>
      Object.assign(new Subscription(), {
        id: row.id,
        projectId: input.projectId,
        customerId: input.customerId,
        planId: values[i][2] as number,
        group: input.plan.group,
        validFrom: changes.created[i].validFrom,
        validTo: changes.created[i].validTo,
        status: row.status,
        source: values[i][6] as SubscriptionSource,
        codeId: values[i][7] as number | null,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      }),
    );
    const planNames = new Map<number, string>([
      ...rows.map((r): [number, string] => [r.plan_id, r.name]),
      [input.plan.id, input.plan.name],
    ]);
    const origins = new Map(rows.map((r) => [r.id, { source: r.source, codeId: r.code_id }]));
    return { created, changes, planNames, origins };
  }

  /** Sign-up: every free plan of the project as a permanent grant, in order of id; redundant ones skipped. */
  async grantSignup(
    em: EntityManager,
    projectId: string,
    customerId: number,
    now: Date,
  ): Promise<Subscription[]> {
    const created: Subscription[] = [];
    for (const plan of await this.plans.listFreePlans(projectId, em)) {
      try {
        const result = await this.grant(em, {
          projectId,
          customerId,
          plan,
          duration: null,
          source: 'signup',
          now,
        });
        created.push(...result.created);
      } catch (error) {
        if (error instanceof DomainError && error.code === 'REDUNDANT_PERMANENT_PURCHASE') continue;
        throw error;
      }
    }
    return created;
  }

  /** A customer's active (not cancelled) windows with their plans, by start: what a new customer's sign-up left. */
  activeWindowsOf(em: EntityManager, projectId: string, customerId: number): Promise<Subscription[]> {
    return em
      .getRepository(Subscription)
      .createQueryBuilder('s')
      .innerJoinAndSelect('s.plan', 'p', 'p.project_id = s.project_id')
      .where(`s.customer_id = :customerId AND s.project_id = :projectId AND s.status = 'active'`, {
        customerId,
        projectId,
      })
      .orderBy('s.valid_from', 'ASC')
      .addOrderBy('s.id', 'ASC')
      .getMany();
  }

  /** A customer's windows: live ones first (by start); with `history`, then the ended and cancelled ones. */
  async listForCustomer(
    projectId: string,
    customerId: number,
    history: boolean,
  ): Promise<CustomerSubscriptionView[]> {
    const exists = await this.dataSource.query('SELECT 1 FROM customers WHERE id = $1 AND project_id = $2', [
      customerId,
      projectId,
    ]);
    if (exists.length === 0) throw new DomainError('CUSTOMER_NOT_FOUND');
    const qb = this.dataSource
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
    const rows = await qb.getMany();
    return rows.map((s) => toCustomerSubscriptionView(s, s.plan!));
  }

  /** Views of a project's windows; plan names come from `known` where given, the others in one query. */
  async views(
    em: EntityManager,
    projectId: string,
    subscriptions: Subscription[],
    known = new Map<number, string>(),
  ): Promise<SubscriptionView[]> {
    const missing = [...new Set(subscriptions.map((s) => s.planId))].filter((id) => !known.has(id));
    const names = new Map(known);
    if (missing.length) {
      for (const p of await em.find(Plan, {
        select: { id: true, name: true },
        where: { id: In(missing), projectId },
      }))
        names.set(p.id, p.name);
    }
    return subscriptions.map((s) => toSubscriptionView(s, names.get(s.planId)!));
  }
}

export const toSubscriptionView = (s: Subscription, planName: string): SubscriptionView => ({
  id: s.id,
  planId: s.planId,
  planName,
  validFrom: s.validFrom.toISOString(),
  validTo: s.validTo ? s.validTo.toISOString() : null,
});

export const toCustomerSubscriptionView = (s: Subscription, plan: Plan): CustomerSubscriptionView => ({
  ...toSubscriptionView(s, plan.name),
  group: s.group,
  status: s.status,
  source: s.source,
  codeId: s.codeId,
});
