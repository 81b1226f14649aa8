import { Injectable } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';
import { Plan } from '../plans/entities/plan.entity';
import { PlansService } from '../plans/plans.service';
import { NewWindowValues, SubscriptionsRepository } from './subscriptions.repository';
import { ChainPlan, ChainWindow, planGrant } from './chain/chain-engine';
import { CustomerSubscriptionView, SubscriptionView } from './dto/subscription.dto';
import { Subscription, SubscriptionSource } from './entities/subscription.entity';

export interface GrantInput {
  projectId: string;
  customerId: number;
  plan: Plan;
  /** ISO 8601 duration; null: permanent. */
  duration: string | null;
  source: SubscriptionSource;
  codeId?: number | null;
  /** The granted window is a trial (a trial code's). */
  trial?: boolean;
  now: Date;
}

export interface GrantResult {
  created: Subscription[];
  changes: ChainPlan;
  /** Names of the plans in the chain, for answers that show them without another query. */
  planNames: Map<number, string>;
  /** Origin of each window of the chain the grant read (for the snapshots of events). */
  origins: Map<number, { source: SubscriptionSource; codeId: number | null; trial: boolean }>;
}

/**
 * Applies the chain engine's decisions to the database. A grant runs inside the caller's unit of
 * work, which must already hold the customer's row lock (that lock is what serialises
 * concurrent grants for one customer).
 */
@Injectable()
export class SubscriptionsService {
  constructor(
    private readonly plans: PlansService,
    private readonly repository: SubscriptionsRepository,
  ) {}

  async grant(input: GrantInput): Promise<GrantResult> {
    const rows = await this.repository.liveChain(
      input.projectId,
      input.customerId,
      input.plan.group,
      input.now,
    );
    const chain: ChainWindow[] = rows.map((r) => ({
      id: r.id,
      planId: r.plan_id,
      planValue: Number(r.value),
      validFrom: r.valid_from,
      validTo: r.valid_to,
      trial: r.trial,
    }));
    const changes = planGrant(
      chain,
      { planId: input.plan.id, planValue: input.plan.value, duration: input.duration },
      input.now,
    );

    for (const w of changes.ended) await this.repository.end(input.projectId, w.id, w.validTo);
    for (const w of changes.cancelled) await this.repository.cancel(input.projectId, w.id);
    for (const w of changes.moved) await this.repository.move(input.projectId, w.id, w.validFrom, w.validTo);
    // The granted window comes first; a second one is the permanent tail re-created after it,
    // which keeps the origin of the tail it replaces.
    const tail = rows.find((r) => r.valid_to === null);
    const values = changes.created.map((w, index): NewWindowValues => [
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
    const trial = input.trial === true;
    const inserted = values.length ? await this.repository.insert(values, trial) : [];
    const created = inserted.map((row, i) =>
      Object.assign(new Subscription(), {
        id: row.id,
        projectId: input.projectId,
        customerId: input.customerId,
        planId: values[i][2],
        group: input.plan.group,
        validFrom: changes.created[i].validFrom,
        validTo: changes.created[i].validTo,
        status: row.status,
        source: values[i][6],
        codeId: values[i][7],
        trial: trial && i === 0,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      }),
    );
    const planNames = new Map<number, string>([
      ...rows.map((r): [number, string] => [r.plan_id, r.name]),
      [input.plan.id, input.plan.name],
    ]);
    const origins = new Map(rows.map((r) => [r.id, { source: r.source, codeId: r.code_id, trial: r.trial }]));
    return { created, changes, planNames, origins };
  }

  /** Sign-up: every free plan of the project as a permanent grant, in order of id; redundant ones skipped. */
  async grantSignup(projectId: string, customerId: number, now: Date): Promise<Subscription[]> {
    const created: Subscription[] = [];
    for (const plan of await this.plans.listFreePlans(projectId)) {
      try {
        const result = await this.grant({
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

  /** A customer's active (not cancelled) windows, without their plans, by start. */
  activeWindows(projectId: string, customerId: number): Promise<Subscription[]> {
    return this.repository.activeWindows(projectId, customerId);
  }

  /**
   * A customer's active (not cancelled) windows, by start, each with its plan's name: what a new
   * customer's sign-up left.
   */
  async activeWindowsOf(
    projectId: string,
    customerId: number,
  ): Promise<Array<{ window: Subscription; planName: string }>> {
    const windows = await this.repository.activeWindows(projectId, customerId);
    if (windows.length === 0) return [];
    const names = await this.plans.planNames(projectId, [...new Set(windows.map((w) => w.planId))]);
    return windows.map((window) => ({ window, planName: names.get(window.planId)! }));
  }

  /**
   * A customer's windows: live ones first (by start); with `history`, then the ended and cancelled
   * ones. The caller knows the customer is there (`CustomersService.subscriptions` checks it).
   */
  async listForCustomer(
    projectId: string,
    customerId: number,
    history: boolean,
  ): Promise<CustomerSubscriptionView[]> {
    const rows = await this.repository.listForCustomer(projectId, customerId, history);
    return rows.map((s) => toCustomerSubscriptionView(s, s.plan!));
  }

  /**
   * The plan groups the customer has held (docs/api-guide.md#campaign-codes): those of its
   * windows that are not cancelled, not trials and of a plan of value above 0, ended, in effect
   * or queued.
   */
  async heldGroups(projectId: string, customerId: number): Promise<Set<string>> {
    const rows = await this.repository.listForCustomer(projectId, customerId, true);
    return new Set(
      rows.filter((s) => s.status === 'active' && !s.trial && Number(s.plan!.value) > 0).map((s) => s.group),
    );
  }

  /**
   * What a trial in `group` depends on (docs/api-guide.md#trials): whether the customer ever had a
   * trial window there (in any state), and whether it holds a live window there, in effect or
   * queued, not a trial, of a plan of value above 0.
   */
  async trialStanding(
    projectId: string,
    customerId: number,
    group: string,
    now: Date,
  ): Promise<{ hadTrial: boolean; holdsPaidPlan: boolean }> {
    if (await this.repository.hadTrial(projectId, customerId, group))
      return { hadTrial: true, holdsPaidPlan: false };
    const live = await this.repository.liveChain(projectId, customerId, group, now);
    return { hadTrial: false, holdsPaidPlan: live.some((r) => !r.trial && Number(r.value) > 0) };
  }

  /** Views of the project's windows among `ids` as they are now, in the order of `ids` (gone ones left out). */
  async viewsOf(projectId: string, ids: number[]): Promise<SubscriptionView[]> {
    if (ids.length === 0) return [];
    const rows = await this.repository.byIds(projectId, ids);
    const byId = new Map((await this.views(projectId, rows)).map((v) => [v.id, v]));
    return ids.map((id) => byId.get(id)).filter((v): v is SubscriptionView => v !== undefined);
  }

  /** Views of the customer's windows granted by a code, by start. */
  async viewsOfCode(projectId: string, customerId: number, codeId: number): Promise<SubscriptionView[]> {
    return this.views(projectId, await this.repository.ofCode(projectId, customerId, codeId));
  }

  /** Views of a project's windows; plan names come from `known` where given, the others in one query. */
  async views(
    projectId: string,
    subscriptions: Subscription[],
    known = new Map<number, string>(),
  ): Promise<SubscriptionView[]> {
    const missing = [...new Set(subscriptions.map((s) => s.planId))].filter((id) => !known.has(id));
    const names = new Map(known);
    if (missing.length) {
      for (const [id, name] of await this.plans.planNames(projectId, missing)) names.set(id, name);
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
  trial: s.trial,
});

export const toCustomerSubscriptionView = (s: Subscription, plan: Plan): CustomerSubscriptionView => ({
  ...toSubscriptionView(s, plan.name),
  group: s.group,
  status: s.status,
  source: s.source,
  codeId: s.codeId,
});
