import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import { Clock } from '../common/clock';
import { DomainError } from '../common/errors/domain-error';
import { MAX_INT4, Page, pageWindow, toPage } from '../common/http/pagination';
import { AppConfig } from '../config/app-config';
import { CustomersService } from '../customers/customers.service';
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
  customerLockFor,
  CustomerLock,
  CustomerState,
  FeatureRow,
  OneFeature,
} from './entitlements.repository';
import {
  EntitlementsService,
  FeatureEvaluation,
  toBalanceView,
  toUsageView,
  withHeld,
} from './entitlements.service';
import { holdStatusOf, toHoldView } from './hold-views';
import { HoldRow, HoldsRepository } from './holds.repository';
import { UsageRepository } from './usage.repository';

/** A hold's or a commit's answer with its HTTP status (201 new, 200 a replay). */
export interface HoldOutcome<T> {
  status: 200 | 201;
  body: T;
}

/**
 * Usage holds (docs/entitlements.md#holds): an amount of a metered feature reserved before a call
 * whose cost is known only afterwards, then committed as one usage record or released. Each write
 * is one unit of work that locks the customer first, the lock of consumes and grants, and decides
 * on the same buckets in the same order as a consume; a hold is no ledger record, and what it
 * holds counts in every balance until it ends or expires (computed when read: no job is needed).
 */
@Injectable()
export class HoldsService {
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
    const ttl = ttlMs(dto.ttl ?? DEFAULT_HOLD_TTL)!;
    const amount = toMicros(dto.amount);
    // answered 201 or 200: an `Idempotency-Key` is kept by its own transaction, as a consume's
    return runInTransaction(this.transactions, async () => {
      const state = await this.entitlements.lockOne(projectId, lockOf(dto), featureOf(dto));
      if (!state) throw new DomainError('CUSTOMER_NOT_FOUND');
      const feature = state.features[0];
      if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
      // the time is read once the customer is locked
      const now = this.clock.now();
      const existing = await this.repository.findByHoldId(projectId, state.customerId, dto.holdId);
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
          status: 200,
          body: { hold: toHoldView(existing, now), balance: toBalanceView(evaluation), replayed: true },
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
      const row = await this.repository.insert({
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
      });
      const hold = toHoldView(row, now);
      this.audit.created(projectId, 'hold', row.id, hold);
      return {
        status: 201,
        body: { hold, balance: toBalanceView(withHeld(evaluation, decision.allocations)) },
      };
    });
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
    return runInTransaction(this.transactions, async () => {
      const found = await this.repository.find(projectId, id);
      if (!found) throw new DomainError('HOLD_NOT_FOUND');
      const eventId = dto.eventId ?? found.holdId;
      const { state, feature, hold } = await this.lockHold(projectId, found, eventId);
      // the time is read once the customer and the hold are locked, never before the customer's
      // latest record of the feature (the period sums' running totals are in recorded time order)
      const clock = this.clock.now();
      const last = state.lastRecordedAt;
      const now = last && last > clock ? new Date(last) : clock;
      if (hold.status === 'committed') {
        const record = await this.usage.find(projectId, hold.usageId!);
        // its month of the ledger was dropped (USAGE_RETENTION_MONTHS): no record to answer with
        if (!record) throw new DomainError('USAGE_NOT_FOUND');
        const evaluation = await this.entitlements.evaluateOne(projectId, state, feature, now);
        return {
          status: 200,
          body: {
            hold: toHoldView(hold, now),
            usage: toUsageView(record),
            balance: toBalanceView(evaluation),
            replayed: true,
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
      const before = toHoldView(hold, now);
      let committed!: HoldRow;
      const { row, after } = await this.entitlements.recordOne(
        projectId,
        state,
        evaluation,
        {
          projectId,
          customerId: state.customerId,
          featureId: feature.id,
          eventId,
          amount,
          overage: decision.overage,
          recordedAt: now,
          allocations: decision.allocations,
        },
        // after its record's `usage.recorded`, before the record's events
        async (record) => {
          this.audit.updated(
            projectId,
            'hold',
            hold.id,
            before,
            { ...before, status: 'committed', endedAt: now.toISOString(), usageId: Number(record.id) },
            { action: 'hold.committed' },
          );
          committed = await this.repository.end(projectId, hold.id, {
            status: 'committed',
            endedAt: now,
            usageId: record.id,
          });
        },
      );
      return {
        status: 201,
        body: { hold: toHoldView(committed, now), usage: toUsageView(row), balance: toBalanceView(after) },
      };
    });
  }

  /**
   * `POST /usage/holds/:id/release`: ends the hold, recording nothing; a released or an expired
   * hold answers unchanged, a committed one is HOLD_FINALIZED.
   */
  release(projectId: string, id: string, idem?: IdempotencyContext): Promise<HoldResultView> {
    return runInTransaction(
      this.transactions,
      async () => {
        const found = await this.repository.find(projectId, id);
        if (!found) throw new DomainError('HOLD_NOT_FOUND');
        const { state, feature, hold } = await this.lockHold(projectId, found);
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
        const released = await this.repository.end(projectId, hold.id, {
          status: 'released',
          endedAt: now,
          usageId: null,
        });
        return { hold: toHoldView(released, now), balance };
      },
      { participant: idem },
    );
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

  /**
   * Locks a hold's customer (the lock of every write of its balances), reads its state of the
   * hold's feature, then locks the hold's row: a commit, a release and the expiry scheduler's
   * marking each see the others' result whole. A hold gone meanwhile (deleted with its customer
   * or feature) is not found.
   */
  private async lockHold(
    projectId: string,
    found: HoldRow,
    eventId?: string,
  ): Promise<{ state: CustomerState; feature: FeatureRow; hold: HoldRow }> {
    const state = await this.entitlements.lockOne(
      projectId,
      customerLockFor(found.customerId),
      { id: found.featureId },
      eventId,
    );
    const feature = state?.features[0];
    const hold = feature ? await this.repository.find(projectId, found.id, true) : null;
    if (!state || !feature || !hold) throw new DomainError('HOLD_NOT_FOUND');
    return { state, feature, hold };
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
