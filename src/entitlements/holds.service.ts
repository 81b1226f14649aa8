import { Injectable } from '@nestjs/common';
import { AuditContext } from '../audit/audit-context';
import { AuditTrail } from '../audit/audit-trail';
import { Clock } from '../common/clock';
import { DomainError } from '../common/errors/domain-error';
import { MAX_INT4, Page, pageWindow, toPage } from '../common/http/pagination';
import { AppConfig } from '../config/app-config';
import { CustomersService } from '../customers/customers.service';
import { AGAIN, Batcher } from '../database/batcher';
import { runInTransaction, Transactions } from '../database/transactional';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import {
  CommitHoldDto,
  CreateHoldDto,
  DEFAULT_HOLD_TTL,
  HoldCommitView,
  HoldListQueryDto,
  HoldResultView,
  HoldStatus,
  HoldView,
  ttlMs,
} from './dto/hold.dto';
import { allocate, fromMicros, holdLiveAt, resetsAt, toMicros } from './engine/entitlement-engine';
import {
  batchShapeOf,
  ConsumeLoad,
  customerLockFor,
  CustomerLock,
  CustomerState,
  OneFeature,
} from './entitlements.repository';
import {
  EntitlementsService,
  FeatureEvaluation,
  pendingWrite,
  RecordWrite,
  toBalanceView,
  toUsageView,
  withHeld,
  WRITE_BATCHES_IN_FLIGHT,
} from './entitlements.service';
import { holdStatusOf, toHoldView } from './hold-views';
import { HoldRow, HoldsRepository, NewHold } from './holds.repository';
import { UsageRepository } from './usage.repository';

/** A hold's or a commit's answer with its HTTP status (201 new, 200 a replay). */
export interface HoldOutcome<T> {
  status: 200 | 201;
  body: T;
}

/**
 * Usage holds (docs/entitlements.md#holds): an amount of a metered feature reserved before a call
 * whose cost is known only afterwards, then committed as one usage record or released. Each write
 * locks the customer, the lock of consumes and grants, and decides on the same buckets in the same
 * order as a consume; a hold is no ledger record, and what it holds counts in every balance until
 * it ends or expires (computed when read: no job is needed).
 *
 * Holds, and commits, arriving together are decided together as consumes are (`Batcher`): one
 * transaction a batch, one statement for each step of all of them, each answered as it would be
 * alone. A batch decides one write per customer; a customer's next goes into a later batch, on
 * the balance the one before left.
 */
@Injectable()
export class HoldsService {
  private readonly creates = new Batcher<CreateItem, HoldOutcome<HoldResultView>>(
    (items) => this.createMany(items),
    { inFlight: WRITE_BATCHES_IN_FLIGHT },
  );
  private readonly commits = new Batcher<CommitItem, HoldOutcome<HoldCommitView>>(
    (items) => this.commitMany(items),
    { inFlight: WRITE_BATCHES_IN_FLIGHT },
  );

  constructor(
    private readonly repository: HoldsRepository,
    private readonly entitlements: EntitlementsService,
    private readonly usage: UsageRepository,
    private readonly customers: CustomersService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * `POST /usage/holds`: decided like a consume, under the customer's lock, from the buckets in
   * the order of consumption; 201 a new hold, 200 a replay of its `holdId`. Refusals in the order
   * of docs/entitlements.md#holds.
   */
  create(projectId: string, dto: CreateHoldDto): Promise<HoldOutcome<HoldResultView>> {
    const item: CreateItem = {
      projectId,
      lock: lockOf(dto),
      feature: featureOf(dto),
      at: this.clock.now(),
      dto,
      audit: this.audit.context(),
    };
    const shape = batchShapeOf(item.lock, item.feature);
    // a caller's unit of work open: decided alone in it, to commit or roll back with it
    return this.transactions.isTransactionActive()
      ? this.creates.alone(shape, item)
      : this.creates.load(shape, item);
  }

  /** `GET /usage/holds/:id`: the hold, its status derived now. */
  async get(projectId: string, id: string): Promise<HoldView> {
    const hold = await this.repository.find(projectId, id);
    if (!hold) throw new DomainError('HOLD_NOT_FOUND');
    return toHoldView(hold, this.clock.now());
  }

  /**
   * `POST /usage/holds/:id/commit`: ends the hold and records one usage record in the same unit of
   * work, exactly as `POST /usage` would at that instant with the hold's own reservation given
   * back first. Up to the held amount it is never refused for quota: what the buckets can no
   * longer take is overage. 201 the record; 200 a replay of a committed hold, whatever the body.
   */
  commit(projectId: string, id: string, dto: CommitHoldDto): Promise<HoldOutcome<HoldCommitView>> {
    const item: CommitItem = { projectId, id, dto, at: this.clock.now(), audit: this.audit.context() };
    return this.transactions.isTransactionActive()
      ? this.commits.alone('commit', item)
      : this.commits.load('commit', item);
  }

  /**
   * `POST /usage/holds/:id/release`: ends the hold, recording nothing; a released or an expired
   * hold answers unchanged, a committed one is HOLD_FINALIZED.
   */
  release(projectId: string, id: string, idem?: IdempotencyContext): Promise<HoldResultView> {
    return runInTransaction(
      this.transactions,
      async () => {
        // the hold first, then its customer: the order of commits
        const [hold] = await this.repository.lockMany([{ projectId, id }]);
        if (!hold) throw new DomainError('HOLD_NOT_FOUND');
        const state = await this.entitlements.lockOne(projectId, customerLockFor(hold.customerId), {
          id: hold.featureId,
        });
        const feature = state?.features[0];
        if (!state || !feature) throw new DomainError('HOLD_NOT_FOUND');
        const now = this.clock.now();
        if (hold.status === 'committed') throw ended('HOLD_FINALIZED', 'committed');
        const evaluation = await this.entitlements.evaluateOne(
          projectId,
          state,
          feature,
          now,
          Number(hold.id),
        );
        const balance = toBalanceView(evaluation);
        const before = toHoldView(hold, now);
        if (before.status !== 'held') return { hold: before, balance };
        this.audit.updated(
          projectId,
          'hold',
          hold.id,
          before,
          { ...before, status: 'released', endedAt: now.toISOString() },
          { action: 'hold.released' },
        );
        const [released] = await this.repository.endMany([
          { projectId, id: hold.id, status: 'released', endedAt: now, usageId: null },
        ]);
        return { hold: toHoldView(released, now), balance };
      },
      { participant: idem },
    );
  }

  /**
   * A batch of holds as one unit of work: the customers locked and read (`lockMany`), the holds
   * already made with the batch's `holdId`s read in one statement, each hold decided, and the new
   * ones inserted in one statement.
   */
  private createMany(
    batch: readonly CreateItem[],
  ): Promise<Array<HoldOutcome<HoldResultView> | DomainError | typeof AGAIN>> {
    return runInTransaction(this.transactions, async () => {
      const { locked, states } = await this.entitlements.lockMany(batch);
      // the time is read once the customers are locked
      const now = this.clock.now();
      const answers: Array<HoldOutcome<HoldResultView> | DomainError | typeof AGAIN> = [];
      const decided = onePerCustomer(states, locked, answers, () => new DomainError('CUSTOMER_NOT_FOUND'));
      const existing = decided.length
        ? await this.repository.findByHoldIds(
            decided.map((j) => ({
              projectId: batch[j].projectId,
              customerId: states[j]!.customerId,
              holdId: batch[j].dto.holdId,
            })),
          )
        : [];
      const writes = await decideEach(decided, answers, (j, k) =>
        this.decideHold(batch[j], states[j]!, existing[k], now),
      );
      const rows = writes.length ? await this.repository.insertMany(writes.map((w) => w.hold)) : [];
      for (const [k, { j, balance }] of writes.entries()) {
        const hold = toHoldView(rows[k], now);
        this.audit.created(batch[j].projectId, 'hold', rows[k].id, hold, { context: batch[j].audit });
        answers[j] = { status: 201, body: { hold, balance: toBalanceView(balance) } };
      }
      return answers;
    });
  }

  /** One hold on its customer's state read under the lock: a replay's answer, a refusal (thrown), or the hold to insert. */
  private async decideHold(
    item: CreateItem,
    state: CustomerState,
    existing: HoldRow | null,
    now: Date,
  ): Promise<{ outcome: HoldOutcome<HoldResultView> } | { hold: NewHold; balance: FeatureEvaluation }> {
    const { projectId, dto } = item;
    const amount = toMicros(dto.amount);
    const feature = state.features[0];
    if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
    if (existing) {
      if (existing.featureId !== feature.id || toMicros(existing.amount) !== amount)
        throw new DomainError('HOLD_CONFLICT', undefined, [
          {
            field: 'holdId',
            message: `holdId was already held (hold ${existing.id}) with another feature or amount`,
          },
        ]);
      const evaluation = await this.entitlements.evaluateOne(projectId, state, feature, now);
      return {
        outcome: {
          status: 200,
          body: { hold: toHoldView(existing, now), balance: toBalanceView(evaluation), replayed: true },
        },
      };
    }
    if (!state.enabled) throw new DomainError('CUSTOMER_DISABLED');
    if (!feature.metered) throw new DomainError('FEATURE_NOT_METERED');
    const evaluation = await this.entitlements.evaluateOne(projectId, state, feature, now);
    if (!evaluation.granted) throw new DomainError('FEATURE_NOT_GRANTED');
    const live = state.holdsFor(feature.id).filter((h) => holdLiveAt(h, now)).length;
    const max = this.config.get('HOLDS_MAX_LIVE');
    if (live >= max)
      throw new DomainError('HOLD_LIMIT_REACHED', `the customer has ${live} live holds of this feature`, [
        { field: 'holdId', message: `at most ${max} live holds per customer and feature` },
      ]);
    const decision = allocate(evaluation.buckets, amount, dto.allowOverage ?? false);
    if (!decision.ok) throw quotaExceeded(dto.amount, decision.remaining, evaluation);
    const ttl = ttlMs(dto.ttl ?? DEFAULT_HOLD_TTL)!;
    return {
      hold: {
        projectId,
        customerId: state.customerId,
        featureId: feature.id,
        holdId: dto.holdId,
        amount,
        overage: decision.overage,
        allowOverage: dto.allowOverage ?? false,
        allocations: decision.allocations,
        createdAt: now,
        expiresAt: new Date(now.getTime() + ttl),
      },
      balance: withHeld(evaluation, decision.allocations),
    };
  }

  /**
   * A batch of commits as one unit of work: the holds locked (`lockMany`, before their
   * customers, the order of every write that locks both), their customers locked and read with
   * ids for the records, each commit decided, then the records written with their events
   * (`EntitlementsService.recordMany`) and the holds ended, each in one statement.
   */
  private commitMany(
    batch: readonly CommitItem[],
  ): Promise<Array<HoldOutcome<HoldCommitView> | DomainError | typeof AGAIN>> {
    return runInTransaction(this.transactions, async () => {
      const holds = await this.repository.lockMany(batch);
      const answers: Array<HoldOutcome<HoldCommitView> | DomainError | typeof AGAIN> = [];
      const customers = new Set<number>();
      const decided: number[] = [];
      for (const [j, hold] of holds.entries()) {
        if (!hold) answers[j] = new DomainError('HOLD_NOT_FOUND');
        // one commit per customer a batch (the same hold twice included): the next in a later one
        else if (customers.has(hold.customerId)) answers[j] = AGAIN;
        else {
          customers.add(hold.customerId);
          decided.push(j);
        }
      }
      const { states, usageIds } = decided.length
        ? await this.entitlements.lockMany(
            decided.map((j) => ({
              projectId: batch[j].projectId,
              lock: customerLockFor(holds[j]!.customerId),
              feature: { id: holds[j]!.featureId },
              eventId: batch[j].dto.eventId ?? holds[j]!.holdId,
              at: batch[j].at,
            })),
          )
        : { states: [], usageIds: [] };
      // the time is read once the holds and their customers are locked
      const clock = this.clock.now();
      const writes = await decideEach(decided, answers, (j, k) =>
        this.decideCommit(batch[j], holds[j]!, states[k], clock),
      );
      let ended: HoldRow[] = [];
      const rows = await this.entitlements.recordMany(writes, usageIds, async (records) => {
        // after their records' `usage.recorded`, before the records' events
        for (const [k, { hold, now, audit }] of writes.entries()) {
          const before = toHoldView(hold, now);
          this.audit.updated(
            hold.projectId,
            'hold',
            hold.id,
            before,
            { ...before, status: 'committed', endedAt: now.toISOString(), usageId: Number(records[k].id) },
            { action: 'hold.committed', context: audit },
          );
        }
        ended = await this.repository.endMany(
          writes.map(({ hold, now }, k) => ({
            projectId: hold.projectId,
            id: hold.id,
            status: 'committed',
            endedAt: now,
            usageId: records[k].id,
          })),
        );
      });
      for (const [k, { j, now, after }] of writes.entries())
        answers[j] = {
          status: 201,
          body: {
            hold: toHoldView(ended[k], now),
            usage: toUsageView(rows[k]),
            balance: toBalanceView(after),
          },
        };
      return answers;
    });
  }

  /** One commit on its hold and its customer's state read under the locks: a replay's answer, a refusal (thrown), or the record to write. */
  private async decideCommit(
    item: CommitItem,
    hold: HoldRow,
    state: CustomerState | null,
    clock: Date,
  ): Promise<{ outcome: HoldOutcome<HoldCommitView> } | (RecordWrite & { hold: HoldRow; now: Date })> {
    const { projectId, dto } = item;
    const feature = state?.features[0];
    // deleted with its customer or feature meanwhile
    if (!state || !feature) throw new DomainError('HOLD_NOT_FOUND');
    // never before the customer's latest record of the feature (the period sums' running totals
    // are in recorded time order)
    const last = state.lastRecordedAt;
    const now = last && last > clock ? new Date(last) : clock;
    if (hold.status === 'committed') {
      const record = await this.usage.find(projectId, hold.usageId!);
      // its month of the ledger was dropped (USAGE_RETENTION_MONTHS): no record to answer with
      if (!record) throw new DomainError('USAGE_NOT_FOUND');
      const evaluation = await this.entitlements.evaluateOne(projectId, state, feature, now);
      return {
        outcome: {
          status: 200,
          body: {
            hold: toHoldView(hold, now),
            usage: toUsageView(record),
            balance: toBalanceView(evaluation),
            replayed: true,
          },
        },
      };
    }
    const status = holdStatusOf(hold, now);
    if (status === 'released') throw ended('HOLD_FINALIZED', status);
    if (status === 'expired') throw ended('HOLD_EXPIRED', status);
    if (state.existing)
      throw new DomainError('USAGE_EVENT_CONFLICT', undefined, [
        {
          field: 'eventId',
          message: `eventId was already recorded (usage ${state.existing.id}); a commit always makes a new record`,
        },
      ]);
    // the buckets at the commit's instant, this hold given back; none when the feature is no
    // longer granted (a deny, a plan or grant that ended): then all of it is overage
    const evaluation = await this.entitlements.evaluateOne(projectId, state, feature, now, Number(hold.id));
    const held = toMicros(hold.amount);
    const amount = dto.amount === undefined ? held : toMicros(dto.amount);
    const overageAllowed = amount <= held || (dto.allowOverage ?? hold.allowOverage);
    const decision = allocate(evaluation.granted ? evaluation.buckets : [], amount, overageAllowed);
    if (!decision.ok) throw quotaExceeded(fromMicros(amount), decision.remaining, evaluation);
    const write = pendingWrite(evaluation, {
      projectId,
      customerId: state.customerId,
      featureId: feature.id,
      eventId: dto.eventId ?? hold.holdId,
      amount,
      overage: decision.overage,
      recordedAt: now,
      allocations: decision.allocations,
    });
    return { ...write, state, audit: item.audit, hold, now };
  }

  /** `GET /customers/:customerId/holds`: newest first, filtered by feature and by status now. */
  async list(projectId: string, customerId: number, query: HoldListQueryDto): Promise<Page<HoldView>> {
    if (customerId > MAX_INT4) throw new DomainError('CUSTOMER_NOT_FOUND');
    await this.customers.get(projectId, customerId); // CUSTOMER_NOT_FOUND
    const now = this.clock.now();
    const { rows, total } = await this.repository.page(
      projectId,
      customerId,
      { featureId: query.featureId, status: query.status },
      now,
      pageWindow(query),
    );
    return toPage(
      rows.map((h) => toHoldView(h, now)),
      total,
      query,
    );
  }
}

/**
 * The customer a hold names; an id beyond the column's range names no customer (id 0 names
 * none either: not found, as an unknown id).
 */
function lockOf(dto: CreateHoldDto): CustomerLock {
  if (dto.customer) return customerLockFor(dto.customer);
  return customerLockFor(dto.customerId! > MAX_INT4 ? 0 : dto.customerId!);
}

function featureOf(dto: CreateHoldDto): OneFeature {
  if (dto.feature !== undefined) return { slug: dto.feature };
  return { id: dto.featureId! > MAX_INT4 ? 0 : dto.featureId! };
}

/** HOLD_FINALIZED or HOLD_EXPIRED, with the hold's status. */
function ended(code: 'HOLD_FINALIZED' | 'HOLD_EXPIRED', status: HoldStatus): DomainError {
  const message = `the hold is ${status}`;
  return new DomainError(code, undefined, [{ field: 'status', message, status }]);
}

/** QUOTA_EXCEEDED with the details of `POST /usage`: what the buckets can take, and when they reset. */
function quotaExceeded(amount: number, remaining: bigint | null, evaluation: FeatureEvaluation): DomainError {
  const left = remaining === null ? null : fromMicros(remaining);
  const resets = evaluation.granted ? resetsAt(evaluation.buckets) : null;
  const message = `amount ${amount} exceeds the ${left} remaining`;
  return new DomainError('QUOTA_EXCEEDED', message, [
    { field: 'amount', message, remaining: left, resetsAt: resets ? resets.toISOString() : null },
  ]);
}

/** A hold waiting in a batch (`HoldsService.create`). */
interface CreateItem extends ConsumeLoad {
  dto: CreateHoldDto;
  audit: AuditContext;
}

/** A commit waiting in a batch (`HoldsService.commit`): the instant it arrived, to read its state at. */
interface CommitItem {
  projectId: string;
  id: string;
  dto: CommitHoldDto;
  at: Date;
  audit: AuditContext;
}

/**
 * The indexes of a batch's states to decide now: one per customer, the first of each; the others
 * are answered in `answers`: `missing()` where the project has no such customer, `AGAIN` (a later
 * batch) for a customer's next, or one whose reference moved to another customer after the lock.
 */
function onePerCustomer<A>(
  states: ReadonlyArray<CustomerState | null>,
  locked: ReadonlySet<number>,
  answers: Array<A | DomainError | typeof AGAIN>,
  missing: () => DomainError,
): number[] {
  const customers = new Set<number>();
  const decided: number[] = [];
  for (const [j, state] of states.entries()) {
    if (!state) answers[j] = missing();
    else if (!locked.has(state.customerId) || customers.has(state.customerId)) answers[j] = AGAIN;
    else {
      customers.add(state.customerId);
      decided.push(j);
    }
  }
  return decided;
}

/**
 * Decides the batch's requests `decided` (indexes into the batch) one after another: a replay's
 * or a refusal's answer goes into `answers`; the writes to make are answered, each with its index.
 */
async function decideEach<A, W extends object>(
  decided: readonly number[],
  answers: Array<A | DomainError | typeof AGAIN>,
  decide: (j: number, k: number) => Promise<{ outcome: A } | W>,
): Promise<Array<W & { j: number }>> {
  const writes: Array<W & { j: number }> = [];
  for (const [k, j] of decided.entries()) {
    try {
      const decision = await decide(j, k);
      if ('outcome' in decision) answers[j] = decision.outcome;
      else writes.push({ ...decision, j });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      answers[j] = error;
    }
  }
  return writes;
}
