import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import type { CallerProject } from '../auth/caller';
import { toCodeView } from '../codes/codes.mapper';
import { CodesService } from '../codes/codes.service';
import { Code } from '../codes/entities/code.entity';
import { DomainError } from '../common/errors/domain-error';
import { CustomersService } from '../customers/customers.service';
import type { RedeemerLookup } from '../codes/codes.repository';
import { CustomerRefDto, USERNAME_PATTERN } from '../customers/dto/customer.dto';
import { Customer } from '../customers/entities/customer.entity';
import { Transactions, runInTransaction } from '../database/transactional';
import { toCustomerListItem } from '../customers/customers.mapper';
import { EntitlementsService } from '../entitlements/entitlements.service';
import { boundaryKey, EventWindow, NewEvent } from '../events/event-types';
import { EventsService, toEventWindow } from '../events/events.service';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { MetricsService } from '../metrics/metrics.service';
import { Plan } from '../plans/entities/plan.entity';
import { PlansService } from '../plans/plans.service';
import { ChainPlan, WindowChange } from '../subscriptions/chain/chain-engine';
import { Subscription, SubscriptionSource } from '../subscriptions/entities/subscription.entity';
import { SubscriptionsService } from '../subscriptions/subscriptions.service';
import {
  ActivateDto,
  CampaignRedemptionView,
  RedeemCodeDto,
  RedemptionResult,
  WindowChangeView,
} from './dto/redemption.dto';
import { CodeRedemptionView, ListCodeRedemptionsQueryDto } from '../codes/dto/code.dto';
import { Page, toPage } from '../common/http/pagination';
import { remainingRedemptions } from '../codes/codes.mapper';
import { DryRunRollback } from '../database/dry-run';

/** Checks run once the customer is known and locked, before the chain rules. */
type BeforeGrant = (customer: Customer, created: boolean, at: Date) => Promise<void>;

/** Who receives a grant: an existing customer by identifier (maybe created), or a known id (public `me`). */
export type GrantTarget = { ref: CustomerRefDto; autoCreate: boolean } | { customerId: number };

/** How the code-and-customer lock finds the customer of a grant: by id, `username` or another identifier. */
function redeemerOf(target: GrantTarget): RedeemerLookup {
  if ('customerId' in target) return { id: target.customerId };
  return target.ref.type === 'username' ? { username: target.ref.value } : { ...target.ref };
}

interface Outcome {
  customer: Customer;
  created: boolean;
  /** Windows that exist after the call and were created by it (sign-up ones included). */
  windows: Subscription[];
  changes: ChainPlan;
  planNames: Map<number, string>;
  origins: Map<number, { source: SubscriptionSource; codeId: number | null; trial: boolean }>;
  group: string;
  /** The granted plan's value is above 0 (a trial it ends is `converted`). */
  paid: boolean;
  source: SubscriptionSource;
  codeId: number | null;
  /** The windows the grant created (not a new customer's sign-up ones). */
  granted: Subscription[];
  /** The code redeemed by the call, as it is afterwards. */
  code?: Code;
  /** A campaign code's counts with this redemption. */
  campaign?: CampaignRedemptionView;
  /** The grant's instant. */
  at: Date;
  /** The granted window is a trial. */
  trial: boolean;
}

/** `403 CODE_NOT_ELIGIBLE` with its reason and the plan group it is about. */
const notEligible = (
  reason: 'NOT_NEW_CUSTOMER' | 'HELD_PLAN_GROUP' | 'HOLDS_PAID_PLAN',
  group: string,
  message: string,
) =>
  new DomainError('CODE_NOT_ELIGIBLE', `The customer may not redeem this code: ${message}.`, [
    { field: 'code', message, reason, group },
  ]);

/**
 * Redemption (and its alias) and activation share one engine: one transaction per call that
 * locks the customer, then the code, then applies the chain rules; any error rolls everything
 * back. A dry run does the same work and rolls it back on purpose.
 */
@Injectable()
export class RedemptionsService {
  constructor(
    private readonly codes: CodesService,
    private readonly customers: CustomersService,
    private readonly plans: PlansService,
    private readonly subscriptions: SubscriptionsService,
    private readonly metrics: MetricsService,
    private readonly events: EventsService,
    private readonly entitlements: EntitlementsService,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {}

  redeem(
    project: CallerProject,
    dto: RedeemCodeDto,
    dryRun = false,
    idem?: IdempotencyContext,
  ): Promise<RedemptionResult> {
    return this.redeemFor(
      project,
      { ref: dto.customer, autoCreate: dto.autoCreate ?? false },
      dto.code,
      dryRun,
      idem,
    );
  }

  /**
   * Order of checks: the code, then the customer, then (a campaign code) the customer's limit and
   * eligibility, then the chain; last, a campaign code's cap (docs/api-guide.md#campaign-codes).
   */
  redeemFor(
    project: CallerProject,
    target: GrantTarget,
    rawCode: string,
    dryRun = false,
    idem?: IdempotencyContext,
  ): Promise<RedemptionResult> {
    return this.run(
      dryRun,
      async (now) => {
        // The code and the customer locked, and the code marked redeemed, in one statement.
        const locked = await this.codes.lockCodeAndCustomer(project.id, rawCode, redeemerOf(target), now);
        const plan = this.planOf(project, locked.code);
        const customer =
          locked.customer && Object.assign(new Customer(), { ...locked.customer, projectId: project.id });
        if (locked.code.kind === 'campaign')
          return this.redeemCampaign(project, target, now, plan, locked.code, customer, dryRun, {
            customerRedemptions: locked.customerRedemptions,
          });
        const outcome = await this.grantTo(
          project,
          target,
          now,
          plan,
          locked.code.duration,
          'code',
          locked.code.id,
          customer,
        );
        // only a customer created by this call was not there to be marked as the redeemer by the lock
        const code = await this.codes.markRedeemed(locked.code, outcome.customer.id, now, locked.marked);
        return { ...outcome, code };
      },
      idem,
    );
  }

  /**
   * A campaign code's redemption: the code was read without a lock; under the customer's row
   * lock its per-customer count and eligibility are checked, the chain rules applied, and the
   * cap taken by the last statement (`takeRedemption`), so that the code's row is locked only
   * from there to the commit. A dry run checks the room under the cap as read and takes nothing.
   */
  private async redeemCampaign(
    project: CallerProject,
    target: GrantTarget,
    now: Date,
    plan: Plan,
    code: Code,
    locked: Customer | null,
    dryRun: boolean,
    read: { customerRedemptions: number },
  ): Promise<Outcome> {
    let customerRedemptions = 0;
    const outcome = await this.grantTo(
      project,
      target,
      now,
      plan,
      code.duration,
      'code',
      code.id,
      locked,
      async (customer, created, at) => {
        customerRedemptions = created ? 0 : read.customerRedemptions;
        if (customerRedemptions >= code.perCustomerLimit)
          throw new DomainError('CODE_CUSTOMER_LIMIT_REACHED');
        // a customer created by this call holds only its sign-up windows (free): it is new, and
        // has had no trial
        if (created) return;
        // once per customer and group, ever, whichever code gave it; the customer's row lock
        // serialises its redemptions, so two at once cannot both pass
        const standing = code.trial
          ? await this.subscriptions.trialStanding(project.id, customer.id, plan.group, at)
          : undefined;
        if (standing?.hadTrial) throw new DomainError('TRIAL_ALREADY_USED');
        const groups = code.notIfHeldPlanGroups ?? [];
        if (code.newCustomersOnly || groups.length > 0) {
          const held = await this.subscriptions.heldGroups(project.id, customer.id);
          if (code.newCustomersOnly && held.has(plan.group))
            throw notEligible(
              'NOT_NEW_CUSTOMER',
              plan.group,
              'the customer has held the plan group of the code',
            );
          const group = groups.find((g) => held.has(g));
          if (group !== undefined)
            throw notEligible(
              'HELD_PLAN_GROUP',
              group,
              'the customer has held a plan group the code excludes',
            );
        }
        if (standing?.holdsPaidPlan)
          throw notEligible(
            'HOLDS_PAID_PLAN',
            plan.group,
            'the customer holds a paid plan in the group of the trial',
          );
      },
      code.trial,
    );
    if (dryRun) {
      if (code.maxRedemptions !== null && code.redemptionCount >= code.maxRedemptions)
        throw new DomainError('CODE_EXHAUSTED');
      code.redemptionCount += 1;
    } else {
      const taken = await this.codes.takeRedemption(
        code,
        outcome.customer.id,
        outcome.at,
        outcome.granted.map((w) => w.id),
      );
      customerRedemptions = taken.prior;
    }
    const campaign: CampaignRedemptionView = {
      codeId: code.id,
      code: code.displayCode!,
      trial: code.trial,
      redemptionCount: code.redemptionCount,
      maxRedemptions: code.maxRedemptions,
      remainingRedemptions: remainingRedemptions(code),
      customerRedemptions: customerRedemptions + 1,
      perCustomerLimit: code.perCustomerLimit,
    };
    return { ...outcome, code, campaign };
  }

  /**
   * A campaign code's redemptions page (`GET /codes/:codeId/redemptions`): who (null once
   * deleted), when, and the windows it granted as they are now (none once the customer is gone).
   */
  async codeRedemptions(
    projectId: string,
    codeId: number,
    query: ListCodeRedemptionsQueryDto,
  ): Promise<Page<CodeRedemptionView>> {
    const { records, total } = await this.codes.redemptions(projectId, codeId, query);
    const names = await this.customers.usernames(
      projectId,
      records.flatMap((r) => (r.customerId === null ? [] : [r.customerId])),
    );
    const views: CodeRedemptionView[] = [];
    for (const r of records) {
      const username = r.customerId === null ? undefined : names.get(r.customerId);
      const customer = username === undefined ? null : { id: r.customerId!, username };
      const windows = !customer
        ? []
        : r.windowIds.length > 0
          ? await this.subscriptions.viewsOf(projectId, r.windowIds)
          : await this.subscriptions.viewsOfCode(projectId, customer.id, codeId);
      views.push({ id: r.id, codeId: r.codeId, customer, redeemedAt: r.redeemedAt.toISOString(), windows });
    }
    return toPage(views, total, query);
  }

  activate(
    project: CallerProject,
    dto: ActivateDto,
    dryRun = false,
    idem?: IdempotencyContext,
  ): Promise<RedemptionResult> {
    return this.run(
      dryRun,
      async (now) => {
        const plan = await this.plans.getPlanEntity(project.id, dto.planId);
        const outcome = await this.grantTo(
          project,
          { ref: dto.customer, autoCreate: dto.autoCreate ?? false },
          now,
          plan,
          dto.duration ?? null,
          'activation',
          null,
        );
        // the window created for the granted plan (a re-created free tail is not the activation)
        const window = outcome.granted.find((w) => w.planId === plan.id);
        if (window)
          this.audit.created(
            project.id,
            'subscription',
            window.id,
            {
              customerId: outcome.customer.id,
              planId: window.planId,
              validFrom: window.validFrom.toISOString(),
              validTo: window.validTo?.toISOString() ?? null,
            },
            { action: 'subscription.activated' },
          );
        return outcome;
      },
      idem,
    );
  }

  /**
   * Runs a redemption or activation and counts its outcome in `redemptions_total`: `success` or
   * the error code. Dry runs are not counted; idempotent replays and refused keys never get here.
   */
  private async run(
    dryRun: boolean,
    work: (now: Date) => Promise<Outcome>,
    idem?: IdempotencyContext,
  ): Promise<RedemptionResult> {
    if (dryRun) return this.execute(true, work, idem);
    try {
      const result = await this.execute(false, work, idem);
      this.metrics.recordRedemption('success');
      return result;
    } catch (error) {
      this.metrics.recordRedemption(error instanceof DomainError ? error.code : 'INTERNAL_ERROR');
      throw error;
    }
  }

  private async execute(
    dryRun: boolean,
    work: (now: Date) => Promise<Outcome>,
    idem?: IdempotencyContext,
  ): Promise<RedemptionResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await runInTransaction(
          this.transactions,
          async () => {
            const now = new Date();
            const outcome = await work(now);
            const result = await this.toResult(outcome, dryRun);
            if (dryRun) throw new DryRunRollback(result);
            await this.events.record(outcome.customer.projectId, this.eventsOf(outcome, result, now));
            return result;
          },
          { participant: idem },
        );
      } catch (error) {
        if (error instanceof DryRunRollback) return error.result as RedemptionResult;
        // Two calls creating the same missing customer at once: the loser starts over and finds it.
        const lostCreationRace =
          error instanceof DomainError &&
          (error.code === 'USERNAME_TAKEN' || error.code === 'IDENTIFIER_TAKEN');
        if (!lostCreationRace || attempt >= 3) throw error;
      }
    }
  }

  /** A code's plan must belong to the code's project; anything else is corrupt data, refused. */
  private planOf(project: CallerProject, code: Code): Plan {
    if (!code.plan || code.plan.projectId !== project.id) throw new DomainError('CUSTOMER_PROJECT_MISMATCH');
    return code.plan;
  }

  private async grantTo(
    project: CallerProject,
    target: GrantTarget,
    now: Date,
    plan: Plan,
    duration: string | null,
    source: SubscriptionSource,
    codeId: number | null,
    locked?: Customer | null,
    beforeGrant?: BeforeGrant,
    trial = false,
  ): Promise<Outcome> {
    const { customer, created } = await this.findOrCreateCustomer(project, target, now, locked);
    // The grant's time is read once the customer's row is locked, so it is never earlier than that
    // of a grant for the same customer that committed while this call waited for the lock (a chain
    // read "as of" an earlier time would see that grant's ended windows as live). A customer
    // created by this call keeps the call's time, that of its sign-up windows.
    const at = created ? now : new Date(Math.max(now.getTime(), Date.now()));
    if (beforeGrant) await beforeGrant(customer, created, at);
    const result = await this.subscriptions.grant({
      projectId: project.id,
      customerId: customer.id,
      plan,
      duration,
      source,
      codeId,
      trial,
      now: at,
    });
    // A customer created by this call holds only windows this call made: its sign-up windows
    // (as the grant left them; cancelled ones excluded) and the granted ones, read back at once.
    const windows = created
      ? await this.subscriptions.activeWindows(project.id, customer.id)
      : result.created;
    return {
      customer,
      created,
      windows,
      granted: result.created,
      changes: result.changes,
      planNames: result.planNames,
      origins: result.origins,
      at,
      group: plan.group,
      paid: Number(plan.value) > 0,
      trial,
      source,
      codeId,
    };
  }

  /**
   * The events of a committed call: `customer.created` for a customer it created,
   * `subscriptions.changed`, `subscription.ended` (`replaced`) for each window it ended or
   * cancelled, `code.redeemed`. Windows made and changed within the call (a new customer's
   * sign-up windows) are told only as they are afterwards, in `created`.
   */
  private eventsOf(outcome: Outcome, result: RedemptionResult, now: Date): NewEvent[] {
    // `trial.ended` (`replaced`) for each trial window the grant ended, then `trial.started`
    // (docs/events.md#event-types), before `code.redeemed`
    const customer = { id: outcome.customer.id, username: outcome.customer.username };
    const names = new Map(result.subscriptions.map((v) => [v.id, v.planName]));
    const created = outcome.windows.map((w) => toEventWindow(w, names.get(w.id)!));
    const changed = (w: WindowChange, status: 'active' | 'cancelled'): EventWindow => {
      const origin = outcome.origins.get(w.id)!;
      return toEventWindow(
        {
          ...w,
          group: outcome.group,
          status,
          source: origin.source,
          codeId: origin.codeId,
          trial: origin.trial,
        },
        outcome.planNames.get(w.planId)!,
      );
    };
    const own = (list: WindowChange[]) => (outcome.created ? [] : list);
    const ended = own(outcome.changes.ended).map((w) => changed(w, 'active'));
    const cancelled = own(outcome.changes.cancelled).map((w) => changed(w, 'cancelled'));
    const moved = own(outcome.changes.moved).map((w) => changed(w, 'active'));
    const events: NewEvent[] = [];
    if (outcome.created)
      events.push({
        type: 'customer.created',
        customer,
        data: {
          customer: toCustomerListItem(outcome.customer, outcome.customer.identifiers ?? []) as never,
        },
      });
    events.push({
      type: 'subscriptions.changed',
      customer,
      data: { customer, source: outcome.source, codeId: outcome.codeId, created, ended, cancelled, moved },
    });
    for (const window of [...ended, ...cancelled])
      events.push({
        type: 'subscription.ended',
        customer,
        data: { customer, window, reason: 'replaced' },
        uniqueKey: boundaryKey('subscription.ended', window.id),
      });
    for (const window of [...ended, ...cancelled].filter((w) => w.trial))
      events.push({
        type: 'trial.ended',
        customer,
        data: { customer, window, reason: 'replaced', converted: outcome.paid },
        uniqueKey: boundaryKey('trial.ended', window.id),
      });
    for (const window of created.filter((w) => w.trial))
      events.push({ type: 'trial.started', customer, data: { customer, window, codeId: outcome.codeId } });
    if (outcome.code) {
      const planName = outcome.code.plan?.name ?? '';
      const code = toCodeView(outcome.code, planName, now);
      events.push({ type: 'code.redeemed', customer, data: { code: code as never, customer } });
      const { maxRedemptions, redemptionCount } = outcome.code;
      // once per cap value: raising the cap and reaching it again tells it again
      if (outcome.code.kind === 'campaign' && maxRedemptions !== null && redemptionCount === maxRedemptions)
        events.push({
          type: 'code.exhausted',
          data: { code: code as never },
          uniqueKey: `code.exhausted:${outcome.code.id}:${maxRedemptions}`,
        });
    }
    return events;
  }

  /**
   * The target customer, locked for the rest of the transaction; created when allowed. `locked`:
   * the result of a lookup already made under lock (`null`: there is no such customer).
   */
  private async findOrCreateCustomer(
    project: CallerProject,
    target: GrantTarget,
    now: Date,
    locked?: Customer | null,
  ): Promise<{ customer: Customer; created: boolean }> {
    if ('customerId' in target) {
      // a known id comes only with a code: `redeemFor` has looked it up under lock with the code
      if (!locked) throw new DomainError('CUSTOMER_NOT_FOUND');
      return { customer: locked, created: false };
    }
    const existing =
      locked !== undefined ? locked : await this.customers.lockByIdentifier(project.id, target.ref);
    if (existing) return { customer: existing, created: false };
    if (!target.autoCreate || !project.autoCreateCustomerAtRedemption)
      throw new DomainError('CUSTOMER_NOT_FOUND');

    const byUsername = target.ref.type === 'username';
    if (
      byUsername &&
      !(
        target.ref.value.length >= 8 &&
        target.ref.value.length <= 16 &&
        USERNAME_PATTERN.test(target.ref.value)
      )
    ) {
      throw new DomainError(
        'VALIDATION_FAILED',
        'customer.value is not a valid username for a new customer',
        [
          {
            field: 'customer.value',
            message:
              'a username has 8 to 16 characters: letters, digits, _ . - (starting with a letter or digit)',
          },
        ],
      );
    }
    const customer = await this.customers.createInTransaction(
      project.id,
      {
        username: byUsername ? target.ref.value : this.customers.generatedUsername(),
        temporary: !byUsername,
        identifiers: byUsername ? [] : [{ type: target.ref.type, value: target.ref.value }],
      },
      now,
    );
    return { customer, created: true };
  }

  private async toResult(outcome: Outcome, dryRun: boolean): Promise<RedemptionResult> {
    const views = await this.subscriptions.views(
      outcome.customer.projectId,
      outcome.windows,
      outcome.planNames,
    );
    const customer = {
      id: outcome.customer.id as number | null,
      username: outcome.customer.username,
      created: outcome.created,
    };
    const campaign = outcome.campaign ? { campaign: outcome.campaign } : {};
    if (!dryRun) return { customer, subscriptions: views, ...campaign };
    // Nothing a dry run creates exists afterwards: the ids of new things are null, and so are those
    // of every window of a customer this call creates (its sign-up windows, ended, cancelled or
    // moved by the grant, are made by this same call).
    const newWindows = new Set(outcome.windows.map((w) => w.id));
    const change = (w: WindowChange): WindowChangeView => ({
      id: outcome.created ? null : w.id,
      planId: w.planId,
      validFrom: w.validFrom.toISOString(),
      validTo: w.validTo ? w.validTo.toISOString() : null,
      trial: outcome.origins.get(w.id)?.trial ?? false,
    });
    return {
      dryRun: true,
      ...campaign,
      customer: { ...customer, id: outcome.created ? null : customer.id },
      subscriptions: views.map((v) => ({ ...v, id: null })),
      // the customer's entitlements right after the grant, at its instant, read in the transaction
      // that is about to be rolled back (a customer this call would create is there too); a bucket
      // of a window the call would create shows no window id, like the windows themselves
      entitlementsAfter: (
        await this.entitlements.listIn(outcome.customer.projectId, outcome.customer.id, outcome.at)
      ).map((entitlement) => ({
        ...entitlement,
        buckets: entitlement.buckets.map((bucket) => ({
          ...bucket,
          windowId:
            outcome.created || bucket.windowId === null || newWindows.has(bucket.windowId)
              ? null
              : bucket.windowId,
        })),
      })),
      changes: {
        ended: outcome.changes.ended.map(change),
        cancelled: outcome.changes.cancelled.map(change),
        moved: outcome.changes.moved.map(change),
        created: outcome.changes.created.map((w, index) => ({
          id: null,
          planId: w.planId,
          validFrom: w.validFrom.toISOString(),
          validTo: w.validTo ? w.validTo.toISOString() : null,
          // the granted window comes first; a second one is a re-created (free) tail
          trial: index === 0 && outcome.trial,
        })),
      },
    };
  }
}
