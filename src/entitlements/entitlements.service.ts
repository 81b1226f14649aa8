import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import DataLoader from 'dataloader';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock';
import { DomainError } from '../common/errors/domain-error';
import { Page, toPage, pageWindow } from '../common/http/pagination';
import { CustomersService } from '../customers/customers.service';
import { inTransaction, inTransactionOpenedByWork, OwnTransaction } from '../database/transaction';
import { EventsService } from '../events/events.service';
import {
  Allocation,
  allocate,
  accessEndsAt,
  balanceOf,
  BucketUsage,
  bucketsAt,
  fromMicros,
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
  BATCHING,
  batchShapeOf,
  ConsumeLoad,
  CustomerLock,
  customerLockFor,
  CustomerState,
  EntitlementsRepository,
  FeatureRow,
  FeatureSelector,
  OneFeature,
  OverageRequest,
  SumRequest,
  SumsGuess,
  UsageRow,
} from './entitlements.repository';
import { NewUsage, UsageRepository } from './usage.repository';

/** One feature evaluated for one customer at one instant. */
interface FeatureEvaluation {
  feature: FeatureRow;
  granted: boolean;
  buckets: BucketUsage[];
  /** Overage recorded since the earliest current period start (micro-units). */
  overage: bigint;
  accessEndsAt: Date | null;
}

/**
 * What a consume that committed left with nothing remaining: one per bucket it took from and
 * emptied (for `usage.limit_reached`, issue 18). Computed inside the consume's transaction.
 */
export interface UsageLimitReached {
  projectId: string;
  customerId: number;
  featureId: number;
  featureSlug: string;
  group: string;
  planId: number;
  quotaId: number;
  periodStart: Date;
  periodEnd: Date | null;
}

/** A consume's answer with its HTTP status, and what it emptied. */
export interface ConsumeOutcome {
  status: 200 | 201;
  body: UsageResultView;
  limitReached: UsageLimitReached[];
  /** The feature as evaluated by the consume (before its own allocations). */
  evaluation?: FeatureEvaluation;
}

/**
 * The rules of entitlements.md: reads compute a customer's buckets and periods from the live
 * windows (engine/entitlement-engine.ts) and the period sums of the ledger; a consume does the
 * same under the customer's row lock, allocates and records in one transaction.
 */
@Injectable()
export class EntitlementsService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly repository: EntitlementsRepository,
    private readonly usage: UsageRepository,
    private readonly customers: CustomersService,
    private readonly clock: Clock,
    private readonly events: EventsService,
  ) {}

  /** Every feature of the project for one customer (`GET /customers/:customerId/entitlements`). */
  async list(projectId: string, customerId: number): Promise<EntitlementView[]> {
    const lock = customerLockFor(customerId);
    const state = await this.loadGuessing(projectId, lock, 'all');
    const evaluations = await this.evaluate(undefined, projectId, state, state.features, this.clock.now());
    this.remember(projectId, lock, 'all', evaluations);
    return evaluations.map(toEntitlementView);
  }

  /** The same, inside a caller's transaction and at its instant (a dry run's `entitlementsAfter`). */
  async listIn(
    em: EntityManager | undefined,
    projectId: string,
    customerId: number,
    at: Date,
  ): Promise<EntitlementView[]> {
    const state = await this.repository.loadState(em, projectId, customerLockFor(customerId), 'all');
    if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
    const evaluations = await this.evaluate(em, projectId, state, state.features, at);
    return evaluations.map(toEntitlementView);
  }

  /** `POST /entitlements/check`: reads only; 200 with `allowed: false` when refused. */
  async check(projectId: string, dto: CheckDto): Promise<CheckView> {
    return this.checkWith(projectId, lockOf(dto), featureOf(dto), dto.amount);
  }

  /** The public check, for the logged-in customer. */
  checkFor(projectId: string, customerId: number, feature: OneFeature, amount?: number): Promise<CheckView> {
    return this.checkWith(projectId, customerLockFor(customerId), feature, amount);
  }

  private async checkWith(
    projectId: string,
    lock: CustomerLock,
    selector: OneFeature,
    amount = 1,
  ): Promise<CheckView> {
    const guess = this.guesses.get(this.guessKey(projectId, lock, selector));
    const state = await this.repository.loadBatched(projectId, lock, selector, guess);
    if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
    const feature = state.features[0];
    if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
    const [evaluation] = await this.evaluate(undefined, projectId, state, [feature], this.clock.now());
    this.remember(projectId, lock, selector, [evaluation]);
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
      resetsAt: view.resetsAt,
      accessEndsAt: view.accessEndsAt,
    };
  }

  /**
   * The periods last computed for a customer and a feature (or all features), per process: a
   * read sends them with its state statement, so that when they still hold (the usual case: the
   * same windows, the same period) a check is one statement. Never trusted: see `SumsGuess`.
   */
  private readonly guesses = new Map<string, SumsGuess>();
  private static readonly GUESSES_LIMIT = 50_000;

  private guessKey(projectId: string, lock: CustomerLock, selector: FeatureSelector): string {
    const feature = selector === 'all' ? '*' : 'id' in selector ? `#${selector.id}` : selector.slug;
    return [projectId, lock.name, ...lock.values.map(String), feature].join('\u0000');
  }

  private async loadGuessing(projectId: string, lock: CustomerLock, selector: FeatureSelector) {
    const guess = this.guesses.get(this.guessKey(projectId, lock, selector));
    const state = await this.repository.loadState(undefined, projectId, lock, selector, { guess });
    if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
    return state;
  }

  private remember(
    projectId: string,
    lock: CustomerLock,
    selector: FeatureSelector,
    evaluations: FeatureEvaluation[],
  ): void {
    const key = this.guessKey(projectId, lock, selector);
    // a Map keeps insertion order: set again, the key is the most recent; when full, the least
    // recently used goes (not all at once: a process serving more customers than the limit
    // keeps the guesses of those it reads often)
    this.guesses.delete(key);
    if (this.guesses.size >= EntitlementsService.GUESSES_LIMIT)
      this.guesses.delete(this.guesses.keys().next().value!);
    this.guesses.set(key, sumRequestsOf(evaluations));
  }

  /**
   * `POST /usage`: 201 a new record, 200 a replay. Consumes reaching this point in the same turn
   * of the event loop with the same shape (how they name the customer and the feature) are
   * decided together (`consumeBatch`), in one transaction of usually two round trips: under load
   * the round trips, the statements' start-up in PostgreSQL and the commit are shared by the
   * batch; alone, a consume is a batch of one, sent on the next turn of the loop.
   */
  async consume(projectId: string, dto: UsageEventDto): Promise<ConsumeOutcome> {
    const lock = lockOf(dto);
    const feature = featureOf(dto);
    const key = batchShapeOf(lock, feature);
    let loader = this.consumeLoaders.get(key);
    if (!loader) {
      loader = new DataLoader((items) => this.consumeBatch(items), {
        ...BATCHING,
        batchScheduleFn: (dispatch) => setImmediate(() => this.consumeGate.enter(dispatch)),
      });
      this.consumeLoaders.set(key, loader);
    }
    const guess = this.guesses.get(this.guessKey(projectId, lock, feature));
    const outcome = await loader.load({ projectId, lock, feature, guess, eventId: dto.eventId, dto });
    // the periods this consume used are the next check's or consume's guess for the same customer and feature
    if (outcome.evaluation) this.remember(projectId, lock, feature, [outcome.evaluation]);
    return outcome;
  }

  /** Per shape of a consume (see `consume`): the loader gathering them into batches. */
  private readonly consumeLoaders = new Map<string, DataLoader<ConsumeItem, ConsumeOutcome>>();

  /**
   * At most `CONSUMES_IN_FLIGHT` consume batches at a time in this process: the next waits, and
   * gathers the consumes arriving meanwhile. Without it, a batch went every turn of the event
   * loop, and a hot customer's batches (of one or two consumes) queued for its row lock, each on a
   * connection of the pool; now its consumes wait in the process and go together.
   */
  private readonly consumeGate = new Gate(CONSUMES_IN_FLIGHT);

  /**
   * A batch of consumes, each answered as it would be alone, in the batch's order: its outcome,
   * or its error (a refusal, or the error that aborted the batch's transaction). Several consumes
   * of one customer are decided in order in the same transaction, each on the balance the ones
   * before left; one whose event id an earlier one of the batch records waits for the next
   * transaction (`DEFERRED`), where it is answered from that record (a replay or a conflict).
   */
  private async consumeBatch(items: readonly ConsumeItem[]): Promise<Array<ConsumeOutcome | Error>> {
    try {
      return await this.consumeBatchIn(items);
    } finally {
      this.consumeGate.leave();
    }
  }

  private async consumeBatchIn(items: readonly ConsumeItem[]): Promise<Array<ConsumeOutcome | Error>> {
    const results: Array<ConsumeOutcome | Error> = [];
    let pending = items.map((_, k) => k);
    for (let round = 1; pending.length > 0; round++) {
      // each transaction settles at least its first consume but for a reference that keeps
      // moving between the lock and the read; never loop on that
      if (round > MAX_TRANSACTIONS) {
        for (const k of pending) results[k] = new Error('the consume batch did not settle');
        break;
      }
      const batch = pending.map((k) => items[k]);
      let outcomes: Array<ConsumeOutcome | DomainError | typeof DEFERRED>;
      try {
        outcomes = await inTransactionOpenedByWork(this.dataSource, (em, own) =>
          this.consumeMany(em, own, batch),
        );
      } catch (error) {
        for (const k of pending) results[k] = error as Error;
        break;
      }
      const deferred: number[] = [];
      outcomes.forEach((outcome, j) => {
        if (outcome === DEFERRED) deferred.push(pending[j]);
        else results[pending[j]] = outcome;
      });
      pending = deferred;
    }
    return results;
  }

  /**
   * One transaction of a batch, which it opens (`inTransactionOpenedByWork`): the customers'
   * rows locked first, with `BEGIN`, so every statement after it (the states', in the same round
   * trip) sees every consume and grant for them that committed before, and none still running;
   * then each consume decided in the order of refusals of entitlements.md 6 (a customer's of one
   * feature at one instant, each after the one before), and the records of those accepted written in one
   * statement, with `COMMIT` when no event follows.
   */
  private async consumeMany(
    em: EntityManager,
    own: OwnTransaction,
    batch: readonly ConsumeItem[],
  ): Promise<Array<ConsumeOutcome | DomainError | typeof DEFERRED>> {
    const { locked, states } = await this.repository.lockAndLoadMany(em, batch);
    // the time is read once the locks are held
    const clock = this.clock.now();
    /** Each customer's consumes so far in this transaction (see `CustomerRun`). */
    const runs = new Map<number, CustomerRun>();
    // one after another, in the batch's order: a customer's consume sees the ones before it
    // (and a decision may read sums on the transaction's one connection)
    const decisions: Array<Decision | DomainError | typeof DEFERRED> = [];
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
        decisions.push(DEFERRED);
        continue;
      }
      if (!run) {
        run = { features: new Map(), events: new Set() };
        runs.set(state.customerId, run);
      }
      try {
        decisions.push(await this.decide(em, item, state, run, clock));
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        decisions.push(error);
      }
    }
    const writes = decisions.filter(
      (d): d is Decision & { write: PendingWrite } => isDecision(d) && !!d.write,
    );
    const events = writes.some((d) => d.write.emptied.length > 0);
    const rows = writes.length
      ? await this.usage.insertMany(
          em,
          writes.map((d) => d.write.usage),
          // the last statement (commits with it) unless events follow
          events ? undefined : own,
        )
      : [];
    for (const { item, state, write } of writes) {
      if (write.emptied.length === 0) continue;
      // `usage.limit_reached` in the consume's transaction; its key makes it once per bucket and period
      const customer = { id: state.customerId, username: state.username };
      const feature = write.evaluation.feature;
      await this.events.record(
        em,
        item.projectId,
        write.emptied.map((b) => ({
          type: 'usage.limit_reached' as const,
          customer,
          data: { customer, feature: { id: feature.id, slug: feature.slug }, bucket: { ...toBucketView(b) } },
          uniqueKey: `usage.limit_reached:${b.quota.id}:${b.periodStart.toISOString()}`,
        })),
      );
    }
    return decisions.map((d) => {
      if (!isDecision(d)) return d;
      return d.write
        ? outcomeOf(d, rows[writes.indexOf(d as Decision & { write: PendingWrite })])
        : d.outcome!;
    });
  }

  /**
   * One consume, on its customer's state read under the lock: a replay's answer, a refusal
   * (thrown), or the record to write, with what it empties.
   */
  private async decide(
    em: EntityManager,
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
      const [evaluation] = await this.evaluate(em, projectId, state, [feature], now);
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
          limitReached: [],
          evaluation,
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
    const after = applyAllocations(evaluation, decision.allocations, decision.overage);
    const emptied = after.buckets.filter(
      (b) => decision.allocations.some((a) => a.group === b.group) && remainingOf(b) === 0n,
    );
    so.balance = after;
    run.events.add(dto.eventId);
    return {
      item,
      state,
      write: {
        usage: {
          projectId,
          customerId: state.customerId,
          featureId: feature.id,
          eventId: dto.eventId,
          amount,
          overage: decision.overage,
          recordedAt: now,
          allocations: decision.allocations,
        },
        evaluation,
        after,
        emptied,
      },
    };
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
  reverse(projectId: string, usageId: string): Promise<UsageResultView> {
    return inTransaction(this.dataSource, async (em) => {
      const record = await this.usage.lockForReversal(em, projectId, usageId);
      if (!record) throw new DomainError('USAGE_NOT_FOUND');
      const now = this.clock.now();
      const row = record.reversedAt ? record : await this.usage.reverse(em, projectId, usageId, now);
      const state = await this.repository.loadState(em, projectId, customerLockFor(row.customerId), {
        id: row.featureId,
      });
      const [evaluation] = await this.evaluate(em, projectId, state!, state!.features, now);
      return { usage: toUsageView(row), balance: toBalanceView(evaluation) };
    });
  }

  /** `GET /customers/:customerId/usage`: the ledger, newest first. */
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
    em: EntityManager | undefined,
    projectId: string,
    state: CustomerState,
    features: FeatureRow[],
    at: Date,
  ): Promise<FeatureEvaluation[]> {
    return this.evaluateWith(em, projectId, state, features, at);
  }

  private async evaluateWith(
    em: EntityManager | undefined,
    projectId: string,
    state: CustomerState,
    features: FeatureRow[],
    at: Date,
  ): Promise<FeatureEvaluation[]> {
    const evaluations: FeatureEvaluation[] = features.map((feature) => {
      const windows = state.windowsFor(feature.id);
      const buckets = bucketsAt(windows, at).map((b) => ({ ...b, used: 0n }));
      return {
        feature,
        granted: buckets.length > 0,
        buckets,
        overage: 0n,
        accessEndsAt: accessEndsAt(windows, at),
      };
    });
    const { periods, overages } = sumRequestsOf(evaluations);
    // a read's guess, summed with its state, serves when the periods are exactly those
    const sums =
      state.guessed && sameRequests(state.guessed, periods, overages)
        ? state.guessed
        : await this.repository.sums(em, projectId, state.customerId, periods, overages);
    let p = 0;
    let o = 0;
    for (const evaluation of evaluations) {
      if (!evaluation.feature.metered || !evaluation.granted) continue;
      for (const b of evaluation.buckets) b.used = sums.used[p++];
      evaluation.overage = sums.overage[o++];
    }
    return evaluations;
  }
}

/** The period sums the evaluations need: each metered, granted feature's buckets, and its overage since the earliest period start. */
function sumRequestsOf(evaluations: FeatureEvaluation[]): SumsGuess {
  const periods: SumRequest[] = [];
  const overages: OverageRequest[] = [];
  for (const { feature, granted, buckets } of evaluations) {
    if (!feature.metered || !granted) continue;
    for (const b of buckets)
      periods.push({
        featureId: feature.id,
        group: b.group,
        periodStart: b.periodStart,
        periodEnd: b.periodEnd,
      });
    overages.push({
      featureId: feature.id,
      since: new Date(Math.min(...buckets.map((b) => b.periodStart.getTime()))),
    });
  }
  return { periods, overages };
}

const sameTime = (x: Date | null, y: Date | null) =>
  x === null ? y === null : y !== null && x.getTime() === y.getTime();

function sameRequests(guess: SumsGuess, periods: SumRequest[], overages: OverageRequest[]): boolean {
  return (
    guess.periods.length === periods.length &&
    guess.overages.length === overages.length &&
    periods.every(
      (p, i) =>
        p.featureId === guess.periods[i].featureId &&
        p.group === guess.periods[i].group &&
        sameTime(p.periodStart, guess.periods[i].periodStart) &&
        sameTime(p.periodEnd, guess.periods[i].periodEnd),
    ) &&
    overages.every(
      (x, i) => x.featureId === guess.overages[i].featureId && sameTime(x.since, guess.overages[i].since),
    )
  );
}

function lockOf(dto: CustomerFeatureDto): CustomerLock {
  return customerLockFor(dto.customer ?? dto.customerId!);
}

export function featureOf(dto: { feature?: string; featureId?: number }): OneFeature {
  return dto.feature !== undefined ? { slug: dto.feature } : { id: dto.featureId! };
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
      used: b.used + allocations.filter((a) => a.group === b.group).reduce((s, a) => s + a.amount, 0n),
    })),
  };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function toBalanceView(e: FeatureEvaluation): BalanceView {
  if (!e.granted) return { limit: 0, used: 0, remaining: 0, overage: 0 };
  const b = balanceOf(e.buckets);
  return {
    limit: b.limit === null ? null : fromMicros(b.limit),
    used: fromMicros(b.used),
    remaining: b.remaining === null ? null : fromMicros(b.remaining),
    overage: fromMicros(e.overage),
  };
}

function toBucketView(b: BucketUsage): BucketView {
  const remaining = remainingOf(b);
  return {
    limit: b.quota.limit === null ? null : fromMicros(b.quota.limit),
    used: fromMicros(b.used),
    remaining: remaining === null ? null : fromMicros(remaining),
    overage: 0,
    group: b.group,
    planId: b.window.planId,
    planSlug: b.window.planSlug,
    quotaId: b.quota.id,
    priority: b.quota.priority,
    periodStart: b.periodStart.toISOString(),
    periodEnd: iso(b.periodEnd),
    windowId: b.window.id,
    windowValidTo: iso(b.window.validTo),
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
    resetsAt: metered && e.granted ? iso(resetsAt(e.buckets)) : null,
    accessEndsAt: e.granted ? iso(e.accessEndsAt) : null,
  };
}

export function toUsageView(r: UsageRow): UsageView {
  return {
    id: Number(r.id),
    eventId: r.eventId,
    customerId: r.customerId,
    featureId: r.featureId,
    amount: Number(r.amount),
    overage: Number(r.overage),
    allocations: r.allocations.map((a) => ({
      group: a.group,
      periodStart: new Date(a.periodStart).toISOString(),
      amount: Number(a.amount),
    })),
    recordedAt: new Date(r.recordedAt).toISOString(),
    reversedAt: r.reversedAt === null ? null : new Date(r.reversedAt).toISOString(),
  };
}

/** A consume waiting in a batch (`EntitlementsService.consume`). */
interface ConsumeItem extends ConsumeLoad {
  dto: UsageEventDto;
}

/**
 * A customer's consumes so far in a batch's transaction: per feature, the instant they are
 * recorded at and the balance after them; and the event ids they record.
 */
interface CustomerRun {
  features: Map<number, { now: Date; balance: FeatureEvaluation }>;
  events: Set<string>;
}

/** Consume batches in flight at a time (`EntitlementsService.consumeGate`). */
const CONSUMES_IN_FLIGHT = 4;

/** Lets at most `limit` callers in at a time; the others wait, first come first in. */
class Gate {
  private inside = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  enter(go: () => void): void {
    if (this.inside < this.limit) {
      this.inside++;
      go();
    } else this.waiting.push(go);
  }

  leave(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inside--;
  }
}

/** Transactions a batch may take (`consumeBatch`): a customer's event id repeated in a batch takes one more each time. */
const MAX_TRANSACTIONS = 64;

/** A consume that waits for the batch's next transaction (one of its customer's with the same event id goes first). */
const DEFERRED = Symbol('deferred');

/** A record a consume writes, with the evaluation before and after it and the buckets it empties. */
interface PendingWrite {
  usage: NewUsage;
  evaluation: FeatureEvaluation;
  after: FeatureEvaluation;
  emptied: BucketUsage[];
}

/** What a consume came to: a replay's `outcome`, or a `write`. */
interface Decision {
  item: ConsumeItem;
  state: CustomerState;
  outcome?: ConsumeOutcome;
  write?: PendingWrite;
}

const isDecision = (d: Decision | DomainError | typeof DEFERRED): d is Decision =>
  d !== DEFERRED && !(d instanceof DomainError);

/** A written consume's answer (201). */
function outcomeOf({ item, state, write }: Decision, row: UsageRow): ConsumeOutcome {
  const { evaluation, after, emptied } = write!;
  const feature = evaluation.feature;
  return {
    status: 201,
    body: { usage: toUsageView(row), balance: toBalanceView(after) },
    limitReached: emptied.map((b) => ({
      projectId: item.projectId,
      customerId: state.customerId,
      featureId: feature.id,
      featureSlug: feature.slug,
      group: b.group,
      planId: b.window.planId,
      quotaId: b.quota.id,
      periodStart: b.periodStart,
      periodEnd: b.periodEnd,
    })),
    evaluation,
  };
}
