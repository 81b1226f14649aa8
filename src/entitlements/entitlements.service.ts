import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { DomainError } from '../common/errors/domain-error';
import { Page, toPage, pageWindow } from '../common/http/pagination';
import { AuditContext } from '../audit/audit-context';
import { AuditTrail } from '../audit/audit-trail';
import { CustomersService } from '../customers/customers.service';
import { AGAIN, Batcher } from '../database/batcher';
import { runInTransaction, Transactional, Transactions } from '../database/transactional';
import { NewEvent } from '../events/event-types';
import { EventsService } from '../events/events.service';
import {
  Allocation,
  allocate,
  balanceOf,
  Bucket,
  bucketKey,
  BucketUsage,
  bucketsAt,
  featureBucketsAt,
  fromMicros,
  heldIn,
  overrideInEffect,
  remainingOf,
  resetsAt,
  toMicros,
} from './engine/entitlement-engine';
import {
  BalanceView,
  BatchItemView,
  BatchResultView,
  BucketView,
  CheckDto,
  CheckView,
  CustomerFeatureDto,
  EntitlementView,
  FeatureSummaryView,
  UsageBatchDto,
  UsageEventDto,
  UsageListQueryDto,
  UsageResultView,
  UsageView,
} from './dto/entitlement.dto';
import {
  batchShapeOf,
  ConsumeLoad,
  CustomerLock,
  customerLockFor,
  CustomerState,
  EntitlementsRepository,
  FeatureRow,
  OneFeature,
  OverrideRow,
  OverageRequest,
  SumRequest,
  UsageRow,
} from './entitlements.repository';
import { grantRowOf, toGrantView, toOverrideView } from './grant-views';
import { toAllocationView } from './allocation-view';
import { GrantsRepository } from './grants.repository';
import { NewUsage, UsageRepository } from './usage.repository';
import { isoOrNull as iso } from '../common/time/iso';

/** One feature evaluated for one customer at one instant. */
export interface FeatureEvaluation {
  feature: FeatureRow;
  granted: boolean;
  buckets: BucketUsage[];
  /** Overage recorded since the earliest current period start (micro-units). */
  overage: bigint;
  accessEndsAt: Date | null;
  /** The override in effect, if any. */
  override: OverrideRow | null;
  /** The instant it was evaluated at. */
  at: Date;
}

/** A consume's answer with its HTTP status. */
export interface ConsumeOutcome {
  status: 200 | 201;
  body: UsageResultView;
}

/**
 * The entitlement rules: reads compute a customer's buckets and periods from the live windows
 * (engine/entitlement-engine.ts) and the period sums of the ledger; a consume does the same under
 * the customer's row lock, allocates and records in one transaction.
 */
@Injectable()
export class EntitlementsService {
  /**
   * Consumes of one shape (how they name the customer and the feature) arriving together are
   * decided together, one transaction a batch (`consumeMany`): under load its round trips, its
   * statements' start-up in PostgreSQL and its commit are shared. A few batches at a time: the
   * next gathers the consumes arriving meanwhile, so a hot customer's consumes wait in the process
   * and go together rather than queue for its row lock, each on a connection of the pool.
   */
  private readonly consumes = new Batcher<ConsumeItem, ConsumeOutcome>((items) => this.consumeMany(items), {
    inFlight: WRITE_BATCHES_IN_FLIGHT,
  });

  constructor(
    private readonly repository: EntitlementsRepository,
    private readonly usage: UsageRepository,
    private readonly customers: CustomersService,
    private readonly clock: Clock,
    private readonly events: EventsService,
    private readonly transactions: Transactions,
    private readonly grants: GrantsRepository,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * Every feature of the project for one customer (`GET /customers/:customerId/entitlements`), now
   * or as of `asOf` (`?at=`).
   */
  async list(projectId: string, customerId: number, asOf?: string): Promise<EntitlementView[]> {
    const at = this.instantOf(asOf);
    const state = await this.repository.loadState(projectId, customerLockFor(customerId), 'all', {
      at,
      guess: asOf === undefined,
    });
    if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
    if (asOf !== undefined) assertAfterCreation(state, at);
    const evaluations = await this.evaluate(projectId, state, state.features, at, {
      madeBy: asOf === undefined ? undefined : at,
    });
    return evaluations.map(toEntitlementView);
  }

  /**
   * The instant a read answers for: `asOf` (`?at=`, its format checked with the body) within 2
   * years from now, else now.
   */
  private instantOf(asOf: string | undefined): Date {
    const now = this.clock.now();
    if (asOf === undefined) return now;
    const at = new Date(asOf);
    const limit = new Date(now);
    limit.setUTCFullYear(limit.getUTCFullYear() + 2);
    if (at.getTime() > limit.getTime())
      throw new DomainError('VALIDATION_FAILED', 'at must be at most 2 years from now', [
        { field: 'at', message: `at must be at most 2 years from now (${limit.toISOString()})` },
      ]);
    return at;
  }

  /** The same in the caller's unit of work and at its instant (a dry run's `entitlementsAfter`). */
  async listIn(projectId: string, customerId: number, at: Date): Promise<EntitlementView[]> {
    const state = await this.repository.loadState(projectId, customerLockFor(customerId), 'all', { at });
    if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
    const evaluations = await this.evaluate(projectId, state, state.features, at);
    return evaluations.map(toEntitlementView);
  }

  /**
   * The feature's plan bucket first in the order of consumption at `at`, read in the caller's
   * unit of work (null: no plan gives the customer a bucket of it). An override's `PUT` copies its
   * run's anchor, reset interval and priority.
   */
  async firstPlanBucket(
    projectId: string,
    customerId: number,
    featureId: number,
    at: Date,
  ): Promise<Bucket | null> {
    const state = await this.repository.loadState(
      projectId,
      customerLockFor(customerId),
      { id: featureId },
      { at },
    );
    if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
    return bucketsAt(state.windowsFor(featureId), at, state.zones)[0] ?? null;
  }

  /** `POST /entitlements/check`: reads only; 200 with `allowed: false` when refused. */
  async check(projectId: string, dto: CheckDto, asOf?: string): Promise<CheckView> {
    return this.checkWith(projectId, lockOf(dto), featureOf(dto), dto.amount, asOf);
  }

  /** The public check, for the logged-in customer. */
  checkFor(
    projectId: string,
    customerId: number,
    feature: OneFeature,
    amount?: number,
    asOf?: string,
  ): Promise<CheckView> {
    return this.checkWith(projectId, customerLockFor(customerId), feature, amount, asOf);
  }

  private async checkWith(
    projectId: string,
    lock: CustomerLock,
    selector: OneFeature,
    amount = 1,
    asOf?: string,
  ): Promise<CheckView> {
    const at = this.instantOf(asOf);
    // a read of another instant is read alone, without the guess kept for the present
    const state =
      asOf === undefined
        ? await this.repository.loadBatched(projectId, lock, selector, at)
        : await this.repository.loadState(projectId, lock, selector, { at });
    if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
    if (asOf !== undefined) assertAfterCreation(state, at);
    const feature = state.features[0];
    if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
    const [evaluation] = await this.evaluate(projectId, state, [feature], at, {
      madeBy: asOf === undefined ? undefined : at,
    });
    const view = toEntitlementView(evaluation);
    const requested = feature.metered ? amount : null;
    let reason: CheckView['reason'] = null;
    if (!state.enabled) reason = 'CUSTOMER_DISABLED';
    else if (!evaluation.granted) reason = 'NOT_GRANTED';
    else if (feature.metered) {
      const { remaining } = balanceOf(evaluation.buckets);
      if (remaining !== null && remaining < toMicros(amount)) reason = 'LIMIT_REACHED';
    }
    return {
      allowed: reason === null,
      reason,
      feature: view.feature,
      requested,
      balance: view.balance,
      buckets: view.buckets,
      override: view.override,
      resetsAt: view.resetsAt,
      accessEndsAt: view.accessEndsAt,
      at: view.at,
    };
  }

  /**
   * `POST /usage`: 201 a new record, 200 a replay. Decided with the consumes of the same shape
   * arriving together, in a transaction of their own (see `consumes`). A consume whose caller
   * already holds a unit of work (a keyed request's) is decided alone in that transaction, so it
   * commits or rolls back with the caller's work.
   */
  async consume(projectId: string, dto: UsageEventDto): Promise<ConsumeOutcome> {
    const lock = lockOf(dto);
    const feature = featureOf(dto);
    const item: ConsumeItem = {
      projectId,
      lock,
      feature,
      eventId: dto.eventId,
      at: this.clock.now(),
      dto,
      // a batch's transaction serves several requests: each record tells its own
      audit: this.audit.context(),
    };
    const shape = batchShapeOf(lock, feature);
    return this.transactions.isTransactionActive()
      ? this.consumes.alone(shape, item)
      : this.consumes.load(shape, item);
  }

  /**
   * A batch of consumes as one unit of work, each answered as it would be alone, in the batch's
   * order: its outcome, or its refusal. Several consumes of one customer are decided in order in
   * the same transaction, each on the balance the ones before left; one whose event id an earlier
   * one of the batch records is answered `AGAIN` and goes into a later batch, where it is
   * answered from that record (a replay or a conflict).
   *
   * The customers' rows are locked first, so every statement after it sees every consume and
   * grant for them that committed before, and none still running; then each consume is decided
   * in the order of the refusals (a customer's of one feature at one instant, each after the one
   * before), and the records of those accepted written in one statement.
   */
  private consumeMany(
    batch: readonly ConsumeItem[],
  ): Promise<Array<ConsumeOutcome | DomainError | typeof AGAIN>> {
    return runInTransaction(this.transactions, async () => {
      const { locked, states, usageIds } = await this.repository.lockAndLoadMany(batch);
      // the time is read once the locks are held
      const clock = this.clock.now();
      /** Each customer's consumes so far in this transaction (see `CustomerRun`). */
      const runs = new Map<number, CustomerRun>();
      // one after another, in the batch's order: a customer's consume sees the ones before it
      // (and a decision may read sums on the transaction's one connection)
      const decisions: Array<Decision | DomainError | typeof AGAIN> = [];
      for (const [j, item] of batch.entries()) {
        const state = states[j];
        if (!state) {
          decisions.push(new DomainError('CUSTOMER_NOT_FOUND'));
          continue;
        }
        let run = runs.get(state.customerId);
        // the reference moved to another customer between the lock and the read (an identifier
        // given to another customer meanwhile); or the customer's event id again in this batch
        if (!locked.has(state.customerId) || run?.events.has(item.dto.eventId)) {
          decisions.push(AGAIN);
          continue;
        }
        if (!run) {
          run = { features: new Map(), events: new Set() };
          runs.set(state.customerId, run);
        }
        try {
          decisions.push(await this.decide(item, state, run, clock));
        } catch (error) {
          if (!(error instanceof DomainError)) throw error;
          decisions.push(error);
        }
      }
      const writes = decisions.filter(
        (d): d is Decision & { write: PendingWrite } => isDecision(d) && !!d.write,
      );
      const rows = await this.recordMany(
        writes.map(({ item, state, write }) => ({ ...write, state, audit: item.audit })),
        usageIds,
      );
      return decisions.map((d) => {
        if (!isDecision(d)) return d;
        return d.write
          ? outcomeOf(d, rows[writes.indexOf(d as Decision & { write: PendingWrite })])
          : d.outcome!;
      });
    });
  }

  /**
   * One consume, on its customer's state read under the lock: a replay's answer, a refusal
   * (thrown), or the record to write, with what it empties.
   */
  private async decide(
    item: ConsumeItem,
    state: CustomerState,
    run: CustomerRun,
    clock: Date,
  ): Promise<Decision> {
    const { dto, projectId } = item;
    const amount = toMicros(dto.amount);
    const feature = state.features[0];
    if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
    let so = run.features.get(feature.id);
    if (!so) {
      // never before the customer's latest record of the feature (a replica whose clock lags):
      // the period sums' running totals are in recorded time order
      const last = state.lastRecordedAt;
      const now = last && last > clock ? new Date(last) : clock;
      const [evaluation] = await this.evaluate(projectId, state, [feature], now);
      so = { now, balance: evaluation };
      run.features.set(feature.id, so);
    }
    const { now, balance: evaluation } = so;
    const existing = state.existing ?? null;

    if (existing) {
      if (existing.featureId !== feature.id || toMicros(existing.amount) !== amount)
        throw new DomainError('USAGE_EVENT_CONFLICT', undefined, [
          {
            field: 'eventId',
            message: `eventId was already recorded (usage ${existing.id}) with another feature or amount`,
          },
        ]);
      return {
        item,
        state,
        outcome: {
          status: 200,
          body: { usage: toUsageView(existing), balance: toBalanceView(evaluation), replayed: true },
        },
      };
    }
    if (!state.enabled) throw new DomainError('CUSTOMER_DISABLED');
    if (!feature.metered) throw new DomainError('FEATURE_NOT_METERED');
    if (!evaluation.granted) throw new DomainError('FEATURE_NOT_GRANTED');

    const decision = allocate(evaluation.buckets, amount, dto.allowOverage ?? false);
    if (!decision.ok) {
      const remaining = decision.remaining === null ? null : fromMicros(decision.remaining);
      const resets = resetsAt(evaluation.buckets);
      throw new DomainError('QUOTA_EXCEEDED', `amount ${dto.amount} exceeds the ${remaining} remaining`, [
        {
          field: 'amount',
          message: `amount ${dto.amount} exceeds the ${remaining} remaining`,
          remaining,
          resetsAt: resets ? resets.toISOString() : null,
        },
      ]);
    }
    const write = pendingWrite(evaluation, {
      projectId,
      customerId: state.customerId,
      featureId: feature.id,
      eventId: dto.eventId,
      amount,
      overage: decision.overage,
      recordedAt: now,
      allocations: decision.allocations,
    });
    so.balance = write.after;
    run.events.add(dto.eventId);
    return { item, state, write };
  }

  /**
   * The events a consume records, per bucket in the order of its allocations: a plan bucket's
   * thresholds it crossed (ascending), then, for a bucket it left with nothing remaining,
   * `usage.limit_reached` (a plan or override bucket: once per customer, bucket and period) or
   * `grant.exhausted` (once per grant, with the grant as it is after the consume).
   */
  private async consumeEvents(
    projectId: string,
    state: CustomerState,
    write: PendingWrite,
    usageId: number,
  ): Promise<NewEvent[]> {
    const customer = { id: state.customerId, username: state.username };
    const feature = write.evaluation.feature;
    const events: NewEvent[] = [];
    for (const a of write.usage.allocations) {
      const key = allocationKey(a);
      const before = write.evaluation.buckets.find((b) => bucketKey(b) === key)!;
      const b = write.after.buckets.find((x) => bucketKey(x) === key)!;
      for (const threshold of crossedThresholds(before, a.amount))
        events.push({
          type: 'usage.threshold_crossed',
          customer,
          data: {
            customer,
            feature: { id: feature.id, slug: feature.slug },
            bucket: { ...toBucketView(b) },
            threshold,
            usageId,
          },
          uniqueKey: `usage.threshold_crossed:${state.customerId}:${b.quota!.id}:${b.periodStart.getTime()}:${threshold}`,
        });
      // recorded usage only: what holds hold empties nothing
      if (b.limit === null || b.used < b.limit) continue;
      if (b.grant) {
        const grant = await this.grants.findGrant(projectId, b.grant.id);
        events.push({
          type: 'grant.exhausted',
          customer,
          data: { customer, grant: { ...toGrantView(grantRowOf(grant!), write.usage.recordedAt) } },
          uniqueKey: `grant.exhausted:${b.grant.id}`,
        });
        continue;
      }
      const bucket = b.source === 'override' ? `o${feature.id}` : String(b.quota!.id);
      events.push({
        type: 'usage.limit_reached',
        customer,
        data: { customer, feature: { id: feature.id, slug: feature.slug }, bucket: { ...toBucketView(b) } },
        uniqueKey: `usage.limit_reached:${state.customerId}:${bucket}:${b.periodStart.getTime()}`,
      });
    }
    return events;
  }

  /**
   * A release's read (`HoldsService`), in the caller's unit of work: locks the customer as a
   * consume does (the lock of every write of its balances) and reads its state of the feature
   * after the lock. Null: the project has no such customer.
   */
  async lockOne(projectId: string, lock: CustomerLock, feature: OneFeature): Promise<CustomerState | null> {
    for (;;) {
      const { locked, states } = await this.repository.lockAndLoadMany([
        { projectId, lock, feature, at: this.clock.now() },
      ]);
      const [state] = states;
      // an identifier given to another customer between the lock and the read: lock that one
      if (!state || locked.has(state.customerId)) return state;
    }
  }

  /**
   * A batch of holds' or commits' reads (`HoldsService`), in the caller's unit of work, as a
   * batch of consumes reads them (`EntitlementsRepository.lockAndLoadMany`): the customers locked,
   * each load's state after the locks, and with event ids, ids for the records to write.
   */
  lockMany(
    loads: readonly ConsumeLoad[],
  ): Promise<{ locked: Set<number>; states: Array<CustomerState | null>; usageIds: string[] }> {
    return this.repository.lockAndLoadMany(loads);
  }

  /** One feature's evaluation on a state read under the lock, `withoutHold` given back (`HoldsService`). */
  async evaluateOne(
    projectId: string,
    state: CustomerState,
    feature: FeatureRow,
    at: Date,
    withoutHold?: number,
  ): Promise<FeatureEvaluation> {
    const [evaluation] = await this.evaluate(projectId, state, [feature], at, { withoutHold });
    return evaluation;
  }

  /**
   * Writes records decided under their customers' locks in the caller's unit of work (a batch of
   * consumes, a batch of holds' commits), with the ids `lockMany` drew, in order: the records
   * and their allocations in one statement with their audit records, then what `beforeEvents`
   * adds (the holds' ends), then the events each record causes. Answers the rows in the order
   * of `writes`.
   */
  async recordMany(
    writes: readonly RecordWrite[],
    usageIds: readonly string[],
    beforeEvents?: (rows: UsageRow[]) => Promise<void>,
  ): Promise<UsageRow[]> {
    if (writes.length === 0) return [];
    // the records' ids were drawn with the state, so their audit records go with the insert
    for (const [k, { usage, audit }] of writes.entries()) {
      usage.id = usageIds[k];
      this.audit.created(usage.projectId, 'usage', usage.id, auditedUsage(usage), {
        action: 'usage.recorded',
        context: audit,
      });
    }
    const rows = await this.usage.insertMany(writes.map((w) => w.usage));
    if (beforeEvents) await beforeEvents(rows);
    for (const [k, write] of writes.entries()) {
      const events = await this.consumeEvents(write.usage.projectId, write.state, write, Number(rows[k].id));
      if (events.length > 0) await this.events.record(write.usage.projectId, events);
    }
    return rows;
  }

  /** `POST /usage/batch`: each event decided on its own (its own transaction), in list order. */
  async batch(projectId: string, dto: UsageBatchDto): Promise<BatchResultView> {
    const results: BatchItemView[] = [];
    for (const event of dto.events) {
      try {
        const outcome = await this.consume(projectId, event);
        results.push({ status: outcome.status, ...outcome.body });
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        results.push({
          status: error.status,
          error: {
            code: error.code,
            message: error.message,
            ...(error.details ? { details: error.details } : {}),
          },
        });
      }
    }
    return { results };
  }

  /** `POST /usage/:usageId/reverse`: gives back the record's allocations; a second call answers the same. */
  @Transactional()
  async reverse(projectId: string, usageId: string): Promise<UsageResultView> {
    const record = await this.usage.lockForReversal(projectId, usageId);
    if (!record) throw new DomainError('USAGE_NOT_FOUND');
    const now = this.clock.now();
    const row = record.reversedAt ? record : await this.usage.reverse(projectId, usageId, now);
    this.audit.updated(projectId, 'usage', row.id, toUsageView(record), toUsageView(row), {
      action: 'usage.reversed',
    });
    const state = await this.repository.loadState(
      projectId,
      customerLockFor(row.customerId),
      { id: row.featureId },
      { at: now },
    );
    const [evaluation] = await this.evaluate(projectId, state!, state!.features, now);
    // what grants that had ended kept (`restored: false`)
    const forfeited = row.allocations.reduce(
      (sum, a) => (a.restored === false ? sum + toMicros(a.amount) : sum),
      0n,
    );
    return { usage: toUsageView(row), balance: toBalanceView(evaluation), forfeited: fromMicros(forfeited) };
  }

  /**
   * `GET /customers/:customerId/usage`: the ledger, newest first. A unit of work, so that the
   * page's total may keep its plan (see `UsageRepository.page`).
   */
  @Transactional()
  async ledger(projectId: string, customerId: number, query: UsageListQueryDto): Promise<Page<UsageView>> {
    await this.customers.get(projectId, customerId); // CUSTOMER_NOT_FOUND
    const { rows, total } = await this.usage.page(
      projectId,
      customerId,
      {
        featureId: query.featureId,
        from: query.from ? new Date(query.from) : undefined,
        to: query.to ? new Date(query.to) : undefined,
      },
      pageWindow(query),
    );
    return toPage(rows.map(toUsageView), total, query);
  }

  /**
   * The features' buckets at `at` with their period sums (one statement for all of them), the
   * overage since the earliest current period start, and when access ends.
   */
  private async evaluate(
    projectId: string,
    state: CustomerState,
    features: FeatureRow[],
    at: Date,
    { withoutHold, madeBy }: EvaluateOptions = {},
  ): Promise<FeatureEvaluation[]> {
    const evaluations: FeatureEvaluation[] = features.map((feature) => {
      const override = state.overrideFor(feature.id);
      const grants = state.grantsFor(feature.id);
      const holds = state
        .holdsFor(feature.id)
        .filter((h) => h.id !== withoutHold && (madeBy === undefined || h.createdAt <= madeBy));
      const { granted, buckets, accessEndsAt } = featureBucketsAt(
        {
          metered: feature.metered,
          windows: state.windowsFor(feature.id),
          override,
          grants,
          zones: state.zones,
        },
        at,
      );
      return {
        feature,
        granted,
        // a grant's usage is kept on the grant; the others' come from the period sums below
        buckets: buckets.map((b) => ({ ...b, used: b.grant?.used ?? 0n, held: heldIn(b, holds, at) })),
        overage: 0n,
        accessEndsAt,
        override: overrideInEffect(override, at) ? override : null,
        at,
      };
    });
    const { periods, overages } = sumRequestsOf(evaluations);
    const sums = await this.repository.sums(projectId, state, periods, overages);
    let p = 0;
    let o = 0;
    for (const evaluation of evaluations) {
      if (!evaluation.feature.metered || !evaluation.granted) continue;
      for (const b of evaluation.buckets) if (b.source !== 'grant') b.used = sums.used[p++];
      evaluation.overage = sums.overage[o++];
    }
    return evaluations;
  }
}

/** The period sums the evaluations need: each metered, granted feature's buckets, and its overage since the earliest period start. */
function sumRequestsOf(evaluations: FeatureEvaluation[]): {
  periods: SumRequest[];
  overages: OverageRequest[];
} {
  const periods: SumRequest[] = [];
  const overages: OverageRequest[] = [];
  for (const { feature, granted, buckets } of evaluations) {
    if (!feature.metered || !granted) continue;
    for (const b of buckets) {
      if (b.source === 'grant') continue;
      periods.push({
        featureId: feature.id,
        group: b.group,
        periodStart: b.periodStart,
        periodEnd: b.periodEnd,
      });
    }
    // from the earliest period start to the latest period end (none when one never resets)
    const ends = buckets.map((b) => b.periodEnd);
    overages.push({
      featureId: feature.id,
      since: new Date(Math.min(...buckets.map((b) => b.periodStart.getTime()))),
      until: ends.some((e) => e === null) ? null : new Date(Math.max(...ends.map((e) => e!.getTime()))),
    });
  }
  return { periods, overages };
}

/** `?at=` reaches back at most to the customer's creation (as answered, in milliseconds). */
function assertAfterCreation(state: CustomerState, at: Date): void {
  if (at.getTime() < state.createdAt.getTime())
    throw new DomainError('VALIDATION_FAILED', "at must not be before the customer's createdAt", [
      {
        field: 'at',
        message: `at must not be before the customer's createdAt (${state.createdAt.toISOString()})`,
      },
    ]);
}

function lockOf(dto: CustomerFeatureDto): CustomerLock {
  return customerLockFor(dto.customer ?? dto.customerId!);
}

export function featureOf(dto: { feature?: string; featureId?: number }): OneFeature {
  return dto.feature !== undefined ? { slug: dto.feature } : { id: dto.featureId! };
}

/** The key of the bucket an allocation took from (`bucketKey`). */
const allocationKey = (a: Allocation): string =>
  a.source === 'plan' ? `plan:${a.group}` : a.source === 'override' ? 'override' : `grant:${a.grantId}`;

/** What `evaluate` leaves out: a hold given back (a commit's, a release's), holds made after a past instant. */
interface EvaluateOptions {
  withoutHold?: number;
  /** A read of another instant (`?at=`): only holds made by then count. */
  madeBy?: Date;
}

/** The evaluation with a hold's allocations added to what its buckets hold. */
export function withHeld(e: FeatureEvaluation, allocations: readonly Allocation[]): FeatureEvaluation {
  return {
    ...e,
    buckets: e.buckets.map((b) => ({
      ...b,
      held:
        (b.held ?? 0n) +
        allocations.filter((a) => allocationKey(a) === bucketKey(b)).reduce((s, a) => s + a.amount, 0n),
    })),
  };
}

/** The evaluation after a consume's allocations and overage. */
function applyAllocations(
  e: FeatureEvaluation,
  allocations: Allocation[],
  overage: bigint,
): FeatureEvaluation {
  return {
    ...e,
    overage: e.overage + overage,
    buckets: e.buckets.map((b) => ({
      ...b,
      used:
        b.used +
        allocations.filter((a) => allocationKey(a) === bucketKey(b)).reduce((s, a) => s + a.amount, 0n),
    })),
  };
}

export function toBalanceView(e: FeatureEvaluation): BalanceView {
  if (!e.granted) return { limit: 0, used: 0, held: 0, remaining: 0, overage: 0 };
  const b = balanceOf(e.buckets);
  return {
    limit: b.limit === null ? null : fromMicros(b.limit),
    used: fromMicros(b.used),
    held: fromMicros(b.held),
    remaining: b.remaining === null ? null : fromMicros(b.remaining),
    overage: fromMicros(e.overage),
  };
}

function toBucketView(b: BucketUsage): BucketView {
  const remaining = remainingOf(b);
  return {
    source: b.source,
    limit: b.limit === null ? null : fromMicros(b.limit),
    used: fromMicros(b.used),
    held: fromMicros(b.held ?? 0n),
    remaining: remaining === null ? null : fromMicros(remaining),
    overage: 0,
    group: b.group,
    planId: b.window?.planId ?? null,
    planSlug: b.window?.planSlug ?? null,
    quotaId: b.quota?.id ?? null,
    grantId: b.grant?.id ?? null,
    priority: b.priority,
    periodStart: b.periodStart.toISOString(),
    periodEnd: iso(b.periodEnd),
    windowId: b.window?.id ?? null,
    windowValidTo: b.window ? iso(b.window.validTo) : null,
    expiresAt: iso(b.expiresAt),
    resetAnchor: b.resetAnchor,
    timeZone: b.timeZone,
  };
}

function toFeatureView(f: FeatureRow): FeatureSummaryView {
  return { id: f.id, slug: f.slug, name: f.name, metered: f.metered, unit: f.unit };
}

function toEntitlementView(e: FeatureEvaluation): EntitlementView {
  const metered = e.feature.metered;
  return {
    feature: toFeatureView(e.feature),
    granted: e.granted,
    balance: metered ? toBalanceView(e) : null,
    buckets: metered && e.granted ? e.buckets.map(toBucketView) : [],
    override: e.override ? toOverrideView(e.override) : null,
    resetsAt: metered && e.granted ? iso(resetsAt(e.buckets)) : null,
    accessEndsAt: e.granted ? iso(e.accessEndsAt) : null,
    at: e.at.toISOString(),
  };
}

/** A new record's audited fields, as its view will show them (`reversedAt` has no value yet). */
const auditedUsage = (u: NewUsage) => ({
  customerId: u.customerId,
  featureId: u.featureId,
  eventId: u.eventId,
  amount: fromMicros(u.amount),
  overage: fromMicros(u.overage),
});

export function toUsageView(r: UsageRow): UsageView {
  return {
    id: Number(r.id),
    eventId: r.eventId,
    customerId: r.customerId,
    featureId: r.featureId,
    amount: Number(r.amount),
    overage: Number(r.overage),
    allocations: r.allocations.map((a) => ({ ...toAllocationView(a), restored: a.restored })),
    recordedAt: new Date(r.recordedAt).toISOString(),
    reversedAt: r.reversedAt === null ? null : new Date(r.reversedAt).toISOString(),
  };
}

/** A consume waiting in a batch (`EntitlementsService.consume`). */
interface ConsumeItem extends ConsumeLoad {
  dto: UsageEventDto;
  audit: AuditContext;
}

/**
 * A customer's consumes so far in a batch's transaction: per feature, the instant they are
 * recorded at and the balance after them; and the event ids they record.
 */
interface CustomerRun {
  features: Map<number, { now: Date; balance: FeatureEvaluation }>;
  events: Set<string>;
}

/**
 * Write batches in flight at a time, per kind (consumes here; holds, and commits, in
 * `HoldsService`): one runs while the next gathers what arrives meanwhile. More split a customer's
 * writes into smaller batches that each queue for the same row lock and pay their own round trips
 * (docs/benchmarks.md#one-hot-customer, docs/benchmarks.md#holds).
 */
export const WRITE_BATCHES_IN_FLIGHT = 2;

/** A record a consume writes, with the evaluation before and after it. */
export interface PendingWrite {
  usage: NewUsage;
  evaluation: FeatureEvaluation;
  after: FeatureEvaluation;
}

/** A record to write (`recordMany`): its customer's state, and the context its audit record tells. */
export interface RecordWrite extends PendingWrite {
  state: CustomerState;
  audit: AuditContext;
}

/** The record `usage` decided on `evaluation`, with the evaluation after it. */
export function pendingWrite(evaluation: FeatureEvaluation, usage: NewUsage): PendingWrite {
  return { usage, evaluation, after: applyAllocations(evaluation, usage.allocations, usage.overage) };
}

/** What a consume came to: a replay's `outcome`, or a `write`. */
interface Decision {
  item: ConsumeItem;
  state: CustomerState;
  outcome?: ConsumeOutcome;
  write?: PendingWrite;
}

const isDecision = (d: Decision | DomainError | typeof AGAIN): d is Decision =>
  d !== AGAIN && !(d instanceof DomainError);

/**
 * The thresholds (percents, ascending) of a plan bucket that taking `amount` from it crosses: `p`
 * when `used < p x limit / 100 <= used + amount` (exact: a limit has at most 4 decimals).
 */
function crossedThresholds(b: BucketUsage, amount: bigint): number[] {
  if (!b.quota || b.limit === null) return [];
  return b.quota.thresholds.filter((p) => {
    const at = (b.limit! * BigInt(p)) / 100n;
    return b.used < at && at <= b.used + amount;
  });
}

/** A written consume's answer (201). */
function outcomeOf({ write }: Decision, row: UsageRow): ConsumeOutcome {
  return { status: 201, body: { usage: toUsageView(row), balance: toBalanceView(write!.after) } };
}
