import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { Clock } from '../common/clock';
import { Batcher } from '../database/batcher';
import { ColumnRange, eachPartition, NamedPartitions } from '../database/partitions';
import { Statement, Statements } from '../database/statements';
import { Transactions } from '../database/transactional';
import {
  Allocation,
  EngineGrant,
  EngineHold,
  EngineOverride,
  EngineQuota,
  EngineWindow,
  ResetAnchor,
  toMicros,
} from './engine/entitlement-engine';
import { customerZones, toZoneChanges, ZoneHistory } from './engine/zones';
import { LedgerStatements } from './ledger-months';
import { GenerateSql } from '../database/generate-sql';
import {
  customerFrom,
  CustomerLookupKind,
  customerZonesJson,
  lockCustomersSql,
} from '../customers/customer-sql';
import { projectZonesJson } from '../projects/project-sql';
import { featureIds, FeatureLookupKind, featuresJson, plansWithQuotasJson } from '../plans/plan-sql';
import { liveWindowsJson, livePlanIds } from '../subscriptions/subscription-sql';

/**
 * How a request names the customer: by id, by username or by another identifier (`name`, the
 * kind), with the `values` of that lookup. The customers module writes the lookup's SQL
 * (`customerFrom`), which this repository's statements embed so that the customer and the rest
 * come in one round trip.
 */
export interface CustomerLock {
  name: CustomerLockKind;
  values: unknown[];
}

type CustomerLockKind = CustomerLookupKind;

/** The `CustomerLock` of a customer id or of a reference `{ type, value }`. */
export function customerLockFor(customer: number | { type: string; value: string }): CustomerLock {
  if (typeof customer === 'number') return { name: 'id', values: [customer] };
  if (customer.type === 'username') return { name: 'username', values: [customer.value] };
  return { name: 'identifier', values: [customer.type, customer.value] };
}

/** How a request names a feature: by id, by slug, or every feature of the project (the list). */
export type FeatureSelector = OneFeature | 'all';

/** One feature, by id or by slug. */
export type OneFeature = { id: number } | { slug: string };

/** How a selector names the feature(s): the kind its statements are built for. */
function featureKindOf(feature: OneFeature): 'id' | 'slug';
function featureKindOf(feature: FeatureSelector): FeatureKind;
function featureKindOf(feature: FeatureSelector): FeatureKind {
  return feature === 'all' ? 'all' : 'id' in feature ? 'id' : 'slug';
}

/** A batch's shape: how its requests name the customer and the feature (one statement each). */
export const batchShapeOf = (lock: CustomerLock, feature: OneFeature): string =>
  `${lock.name}:${featureKindOf(feature)}`;

export interface FeatureRow {
  id: number;
  slug: string;
  name: string;
  metered: boolean;
  unit: string;
}

/** A usage record as stored, with its allocations. */
export interface UsageRow {
  id: string;
  eventId: string;
  customerId: number;
  featureId: number;
  amount: string;
  overage: string;
  recordedAt: string;
  reversedAt: string | null;
  allocations: AllocationRow[];
}

/** An allocation as stored: `restored` is null while its record counts. */
export interface AllocationRow {
  source: 'plan' | 'override' | 'grant';
  group: string | null;
  periodStart: string | null;
  grantId: number | null;
  amount: string;
  restored: boolean | null;
}

/** What the entitlement rules need of one customer: the customer, the features, every live window. */
export interface CustomerState {
  customerId: number;
  username: string;
  enabled: boolean;
  createdAt: Date;
  features: FeatureRow[];
  /** Per feature id: the customer's live windows with that feature's quota (null when the plan has none). */
  windowsFor(featureId: number): EngineWindow[];
  /**
   * Per feature id: the customer's grants not voided by the instant read at (those that expired a
   * day or more before it are not read).
   */
  grantsFor(featureId: number): StateGrant[];
  /** Per feature id: the customer's override, in effect or not (null: none). */
  overrideFor(featureId: number): OverrideRow | null;
  /**
   * Per feature id: the customer's holds not ended (committed, released or marked expired), those
   * that expired a day or more before the instant read at left out; whether each still counts is
   * the rules' (`holdLiveAt`).
   */
  holdsFor(featureId: number): StateHold[];
  /** The customer's zone over time: its own, else its project's (calendar quotas without a zone). */
  zones: ZoneHistory;
  /** With `eventId`: the customer's record holding that event id, if any. */
  existing?: UsageRow | null;
  /** With `eventId`: when the customer's latest record of the feature was made (null: none yet). */
  lastRecordedAt?: Date | null;
}

/** A grant as the views show it: the rules' figures and the rest of its row. */
export interface GrantRow extends EngineGrant {
  customerId: number;
  featureId: number;
  reason: string | null;
  metadata: Record<string, string>;
  createdAt: Date;
  voidReason: string | null;
}

/** A hold as the state reads it (not ended): what the rules need. */
export interface StateHold extends EngineHold {
  featureId: number;
}

/** A hold's allocation as stored (`usage_holds.allocations`): amounts as decimal text. */
export interface HoldAllocationJson {
  source: 'plan' | 'override' | 'grant';
  group: string | null;
  periodStart: string | null;
  grantId: number | null;
  amount: string;
}

/** A stored hold allocation as the rules take it. */
export const toAllocation = (a: HoldAllocationJson): Allocation => ({
  source: a.source,
  group: a.group,
  periodStart: a.periodStart === null ? null : new Date(a.periodStart),
  grantId: a.grantId,
  amount: toMicros(a.amount),
});

/**
 * A hold as the state reads it: id, feature id, createdAt and expiresAt in epoch ms, and its
 * allocations.
 */
type HoldJson = [number, number, number, number, HoldAllocationJson[]];

/** A grant as the state reads it (not voided): what the rules need. */
export interface StateGrant extends EngineGrant {
  featureId: number;
}

/** An override as the state reads it. */
export interface OverrideRow extends EngineOverride {
  customerId: number;
  featureId: number;
  reason: string | null;
  createdAt: Date;
}

/**
 * A grant as the state reads it: what the rules need, as an array (id, feature id, amount, used,
 * priority, effectiveAt, expiresAt and voidedAt in epoch ms) rather than an object per grant, since a
 * customer may hold many; the rest of a grant is read when shown (`GrantsRepository`).
 */
type GrantJson = [number, number, string, string, number, number, number | null, number | null];

interface OverrideJson {
  featureId: number;
  mode: 'set' | 'deny';
  limit: string | null;
  priority: number | null;
  resetInterval: string | null;
  resetAnchor: 'run' | 'calendar' | null;
  resetDayOfMonth: number | null;
  resetTimeZone: string | null;
  anchor: number | null;
  expiresAt: number | null;
  reason: string | null;
  createdAt: number;
}

interface QuotaJson {
  id: number;
  featureId: number;
  limit: string | null;
  priority: number;
  resetInterval: string | null;
  resetAnchor: ResetAnchor;
  resetDayOfMonth: number | null;
  resetTimeZone: string | null;
  thresholds: number[];
}

/** A zone and its changes (`[at in epoch ms, from, to]`, in time order); a null zone follows the project. */
interface ZonesJson {
  zone: string | null;
  changes: Array<[number, string | null, string | null]>;
}

interface StateRow {
  customer_id: number;
  username: string;
  enabled: boolean;
  /** Milliseconds since the epoch (a bigint column: its text). */
  created_at: string;
  features: FeatureRow[];
  windows: Array<{
    id: number;
    planId: number;
    group: string;
    /** Milliseconds since the epoch (`epochMs`). */
    validFrom: number;
    validTo: number | null;
  }>;
  /** The windows' plans, by plan id: each one's slug and its quotas of the feature(s) read. */
  plans: Record<string, { slug: string; quotas: QuotaJson[] } | undefined>;
  grants: GrantJson[];
  overrides: OverrideJson[];
  holds: HoldJson[];
  customer_zones: ZonesJson;
  project_zones: ZonesJson;
  existing?: UsageRow | null;
  last_recorded_at?: Date | null;
}

/** The JSON of one allocation `a` of a usage record. */
export const ALLOCATION_JSON = `json_build_object('source', a.source, 'group', a.plan_group, 'periodStart', a.period_start,
    'grantId', a.grant_id, 'amount', a.amount::text, 'restored', a.restored)`;

/** The JSON of one usage record `u` with its allocations (for `row_to_json`-free reads). */
export const USAGE_JSON = `json_build_object(
    'id', u.id::text, 'eventId', u.event_id, 'customerId', u.customer_id, 'featureId', u.feature_id,
    'amount', u.amount::text, 'overage', u.overage::text, 'recordedAt', u.recorded_at, 'reversedAt', u.reversed_at,
    'allocations', (SELECT coalesce(json_agg(${ALLOCATION_JSON} ORDER BY a.id), '[]'::json)
                      FROM usage_allocations a WHERE a.usage_id = u.id AND a.recorded_at = u.recorded_at))`;

/**
 * The record of event id `k` (a row of `usage_event_ids`) as `USAGE_JSON` reads it; once its
 * month was dropped (USAGE_RETENTION_MONTHS), what `usage_event_ids` kept of it, without
 * allocations (docs/entitlements.md#exactly-once-usage).
 */
const EVENT_USAGE_JSON = `coalesce((SELECT ${USAGE_JSON} FROM usage_records u WHERE u.id = k.usage_id AND u.recorded_at = k.recorded_at),
    json_build_object('id', k.usage_id::text, 'eventId', k.event_id, 'customerId', k.customer_id, 'featureId', k.feature_id,
      'amount', k.amount::text, 'overage', k.overage::text, 'recordedAt', k.recorded_at, 'reversedAt', null, 'allocations', '[]'::json))`;

/**
 * A period whose usage a bucket needs: a plan group's allocations in it, or with `group` null (an
 * override's period) the feature's usage in it that no grant took, whatever the group.
 */
export interface SumRequest {
  featureId: number;
  group: string | null;
  periodStart: Date;
  periodEnd: Date | null;
}

export interface OverageRequest {
  featureId: number;
  since: Date;
  /** Exclusive; null: no end. */
  until: Date | null;
}

/**
 * Periods a read expects (those computed for the same customer and feature last time): their
 * sums come back with the state in the same statement, and they are used only if the periods the
 * rules compute from that state are exactly these (otherwise `sums` reads the right ones).
 */
export interface SumsGuess {
  periods: SumRequest[];
  overages: OverageRequest[];
}

/** Period sums as the rules take them: each period's usage and each overage request's, in order. */
export interface Sums {
  used: bigint[];
  overage: bigint[];
}

const sumsValues = (periods: SumRequest[], overages: OverageRequest[]): unknown[] => [
  periods.map((p) => p.featureId),
  periods.map((p) => p.group),
  periods.map((p) => p.periodStart),
  periods.map((p) => p.periodEnd),
  overages.map((o) => o.featureId),
  overages.map((o) => o.since),
  overages.map((o) => o.until),
];

/**
 * The SQL of the entitlement reads: one statement gathers a customer, the feature(s) asked for
 * and the customer's live windows with their plans' quotas (tables of the customers, plans and
 * subscriptions modules, read together in one round trip: the hot path of every check and
 * consume); a second sums the allocations of the periods the rules computed from them.
 *
 * Statements run on the current unit of work's transaction, if one is open. Outside one, the
 * checks and the sums of concurrent reads are gathered into one statement per shape (`Batcher`).
 * The periods last summed for each request are kept (`guesses`, see `GUESSES_LIMIT`) and sent
 * with the next state read of the same request, so that a read whose periods did not change is
 * one statement.
 */
/** The instant `npm run sql` reads the state statements at (`@GenerateSql`). */
const SAMPLE_AT = new Date('2026-03-15T12:00:00Z');

/** The arguments `npm run sql` reads the sums' statement with (`@GenerateSql`). */
const SUMS_SAMPLE = [
  'prj_1',
  { customerId: 1, username: 'ada', enabled: true, features: [] },
  [
    {
      featureId: 1,
      group: 'default',
      periodStart: new Date('2026-03-01T00:00:00Z'),
      periodEnd: new Date('2026-04-01T00:00:00Z'),
    },
  ],
  [{ featureId: 1, since: new Date('2026-03-01T00:00:00Z'), until: new Date('2026-04-01T00:00:00Z') }],
];

@Injectable()
export class EntitlementsRepository {
  private readonly ledgerStatements: LedgerStatements;
  /** Checks outside a transaction, gathered per shape (lock kind, feature kind) into one statement. */
  private readonly checks = new Batcher<CheckLoad, BatchRow | null>((loads) => this.runCheckBatch(loads));
  /** Period sums read outside a transaction, gathered into one statement. */
  private readonly sumsBatches = new Batcher<SumsLoad, SumsRow>((loads) => this.runSumsBatch(loads));
  private readonly guesses = new LRUCache<string, SumsGuess>({ max: GUESSES_LIMIT });
  /** Per state read with a guess: the request's key, and the guess with its sums. */
  private readonly guessedFor = new WeakMap<CustomerState, Guessed>();

  constructor(
    private readonly statements: Statements,
    private readonly transactions: Transactions,
    clock: Clock,
  ) {
    this.ledgerStatements = new LedgerStatements(clock);
  }

  /**
   * As `loadState` with a guess, for a check outside a transaction: gathered with the other
   * checks of the same shape that reach this point in the same turn of the event loop into one
   * statement (`stateBatchStatement`). Under load the round trip, the statement's start-up in
   * PostgreSQL and the driver's work are shared by the batch; alone, a check is a batch of one,
   * sent on the next turn of the loop. Each customer is read with its own guess, exactly as
   * `loadState` reads it.
   */
  @GenerateSql(
    { name: 'by id, feature by id', params: ['prj_1', { name: 'id', values: [1] }, { id: 1 }, SAMPLE_AT] },
    {
      name: 'by id, feature by slug',
      params: ['prj_1', { name: 'id', values: [1] }, { slug: 'api-calls' }, SAMPLE_AT],
    },
    {
      name: 'by username, feature by id',
      params: ['prj_1', { name: 'username', values: ['ada'] }, { id: 1 }, SAMPLE_AT],
    },
    {
      name: 'by username, feature by slug',
      params: ['prj_1', { name: 'username', values: ['ada'] }, { slug: 'api-calls' }, SAMPLE_AT],
    },
    {
      name: 'by identifier, feature by id',
      params: ['prj_1', { name: 'identifier', values: ['email', 'ada@example.com'] }, { id: 1 }, SAMPLE_AT],
    },
    {
      name: 'by identifier, feature by slug',
      params: [
        'prj_1',
        { name: 'identifier', values: ['email', 'ada@example.com'] },
        { slug: 'api-calls' },
        SAMPLE_AT,
      ],
    },
  )
  async loadBatched(
    projectId: string,
    lock: CustomerLock,
    feature: OneFeature,
    at: Date,
  ): Promise<CustomerState | null> {
    const key = guessKeyOf(projectId, lock, feature);
    const guess = this.guesses.get(key);
    const load = { projectId, lock, feature, at, guess, key };
    const row = await this.checks.load(batchShapeOf(lock, feature), load);
    return row ? this.stateOf(row, { guess }, key) : null;
  }

  /**
   * The customer named by `lock` (`null`: no such customer in the project), the feature(s) of
   * `feature`, and every live window of the customer with its quota for those features.
   *
   * With `guess`, the sums of the periods last summed for the same request come in the same
   * statement (see `SumsGuess`).
   */
  @GenerateSql(
    { name: 'all features', params: ['prj_1', { name: 'id', values: [1] }, 'all', { at: SAMPLE_AT }] },
    {
      name: 'one feature by id',
      params: ['prj_1', { name: 'id', values: [1] }, { id: 1 }, { at: SAMPLE_AT }],
    },
    {
      name: 'all features, with the sums of the last read',
      params: async (repository: EntitlementsRepository) => {
        const state = await repository.loadState('prj_1', { name: 'id', values: [1] }, 'all', {
          at: SAMPLE_AT,
          guess: true,
        });
        await repository.sums(
          'prj_1',
          state!,
          [
            {
              featureId: 1,
              group: 'default',
              periodStart: new Date('2026-03-01T00:00:00Z'),
              periodEnd: new Date('2026-04-01T00:00:00Z'),
            },
          ],
          [
            {
              featureId: 1,
              since: new Date('2026-03-01T00:00:00Z'),
              until: new Date('2026-04-01T00:00:00Z'),
            },
          ],
        );
        return ['prj_1', { name: 'id', values: [1] }, 'all', { at: SAMPLE_AT, guess: true }];
      },
    },
  )
  async loadState(
    projectId: string,
    lock: CustomerLock,
    feature: FeatureSelector,
    { at, guess: guessing = false }: { at: Date; guess?: boolean },
  ): Promise<CustomerState | null> {
    const key = guessing ? guessKeyOf(projectId, lock, feature) : undefined;
    const guess = key === undefined ? undefined : this.guesses.get(key);
    const { statement, values } = this.stateQuery(projectId, lock, feature, at, guess);
    const [row] = await this.statements.rows<StateRow>(undefined, statement, values);
    return row ? this.stateOf(row, { guess }, key) : null;
  }

  /**
   * A batch of consumes' reads, in the current unit of work's transaction: locks the customers
   * the `loads` name (`FOR UPDATE`, in id order, so that two batches never wait for each other in
   * a cycle), then reads each load's state as `loadState` does with its guess and event id, by a
   * statement of its own that starts once the locks are granted (so that its snapshot sees every
   * consume and grant for those customers that committed before). Loads naming the same customer
   * and feature share one read of its state (`leadsOf`), each consume with its own event id's
   * record. Every load has the same lock kind and feature kind (the batch's shape). Answers the
   * ids locked and each load's state (null: the project has no such customer).
   */
  @GenerateSql(
    {
      name: 'by id, feature by id',
      params: [
        [
          {
            projectId: 'prj_1',
            lock: { name: 'id', values: [1] },
            feature: { id: 1 },
            eventId: 'use_2',
            at: SAMPLE_AT,
          },
        ],
      ],
    },
    {
      name: 'by id, feature by slug',
      params: [
        [
          {
            projectId: 'prj_1',
            lock: { name: 'id', values: [1] },
            feature: { slug: 'api-calls' },
            eventId: 'use_2',
            at: SAMPLE_AT,
          },
        ],
      ],
    },
    {
      name: 'by username, feature by id',
      params: [
        [
          {
            projectId: 'prj_1',
            lock: { name: 'username', values: ['ada'] },
            feature: { id: 1 },
            eventId: 'use_2',
            at: SAMPLE_AT,
          },
        ],
      ],
    },
    {
      name: 'by username, feature by slug',
      params: [
        [
          {
            projectId: 'prj_1',
            lock: { name: 'username', values: ['ada'] },
            feature: { slug: 'api-calls' },
            eventId: 'use_2',
            at: SAMPLE_AT,
          },
        ],
      ],
    },
    {
      name: 'by identifier, feature by id',
      params: [
        [
          {
            projectId: 'prj_1',
            lock: { name: 'identifier', values: ['email', 'ada@example.com'] },
            feature: { id: 1 },
            eventId: 'use_2',
            at: SAMPLE_AT,
          },
        ],
      ],
    },
    {
      name: 'by identifier, feature by slug',
      params: [
        [
          {
            projectId: 'prj_1',
            lock: { name: 'identifier', values: ['email', 'ada@example.com'] },
            feature: { slug: 'api-calls' },
            eventId: 'use_2',
            at: SAMPLE_AT,
          },
        ],
      ],
    },
    {
      name: 'by id, feature by id, without an event id (a hold)',
      params: [
        [{ projectId: 'prj_1', lock: { name: 'id', values: [1] }, feature: { id: 1 }, at: SAMPLE_AT }],
      ],
    },
    {
      name: 'by username, feature by slug, without an event id (a hold)',
      params: [
        [
          {
            projectId: 'prj_1',
            lock: { name: 'username', values: ['ada'] },
            feature: { slug: 'api-calls' },
            at: SAMPLE_AT,
          },
        ],
      ],
    },
  )
  async lockAndLoadMany(
    loads: readonly ConsumeLoad[],
  ): Promise<{ locked: Set<number>; states: Array<CustomerState | null>; usageIds: string[] }> {
    if (!this.transactions.isTransactionActive())
      throw new Error('lockAndLoadMany runs inside a unit of work: its row locks last until it commits');
    const { name: kind } = loads[0].lock;
    const featureKind = featureKindOf(loads[0].feature);
    const keys = loads.map((l) => guessKeyOf(l.projectId, l.lock, l.feature));
    const guessing = loads.map((l, k) => ({ ...l, guess: this.guesses.get(keys[k]) }));
    const lockedRows = await this.statements.rows<{ id: number }>(
      undefined,
      this.shaped(`lock:${kind}`, () => lockBatchStatement(kind)),
      lockValues(loads),
    );
    // a hold and its release read no record by event id (the check's statement, after the lock)
    const withEvent = loads[0].eventId !== undefined;
    const statement = this.shaped(`consume:${kind}:${featureKind}:${withEvent}`, (months) =>
      stateBatchStatement(months, kind, featureKind, withEvent),
    );
    const leads = leadsOf(keys, guessing);
    const rows = withEvent
      ? byOrdinality(
          loads,
          await this.statements.rows<BatchRow>(undefined, statement, batchValues(guessing, leads)),
        )
      : await this.leadRows(statement, guessing, leads);
    const states = rows.map((row, k) =>
      row && leads[k] === k ? this.stateOf(row, guessing[k], keys[k]) : null,
    );
    // a load that shares its lead's state: that state (a consume's with its own event id's record)
    rows.forEach((row, k) => {
      const lead = states[leads[k]];
      if (row && leads[k] !== k && lead) states[k] = withEvent ? this.withEventOf(lead, row) : lead;
    });
    return {
      locked: new Set(lockedRows.map((r) => r.id)),
      states,
      // ids for the batch's records, in the order drawn: given in the batch's order, a customer's
      // records of one instant keep their order (the running totals follow it)
      usageIds: rows
        .flatMap((r) => (r?.usage_id === undefined ? [] : [BigInt(r.usage_id)]))
        .sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
        .map(String),
    };
  }

  /**
   * For each of `periods`, the micro-units allocated to its group by the customer's records of its
   * feature recorded within `[periodStart, periodEnd)`, reversed ones excluded; and for each of
   * `overages`, the overage of the feature's records recorded since `since`. Each is a difference
   * of running totals (`sumsColumns`), whatever the usage so far.
   *
   * When `state` was read with a guess of exactly these periods, their sums came with it (same
   * snapshot) and nothing is sent. These periods are the next guess for the same request.
   */
  @GenerateSql(
    {
      name: 'in a unit of work',
      params: SUMS_SAMPLE,
    },
    {
      name: 'outside one',
      params: SUMS_SAMPLE,
      transaction: false,
    },
  )
  async sums(
    projectId: string,
    state: CustomerState,
    periods: SumRequest[],
    overages: OverageRequest[],
  ): Promise<Sums> {
    const guessed = this.guessedFor.get(state);
    if (guessed) this.guesses.set(guessed.key, { periods, overages });
    if (guessed?.sums && sameRequests(guessed.sums, periods, overages)) return guessed.sums;
    if (periods.length === 0 && overages.length === 0) return { used: [], overage: [] };
    let row: SumsRow;
    if (this.transactions.isTransactionActive()) {
      const values: unknown[] = [projectId, state.customerId, ...sumsValues(periods, overages)];
      [row] = await this.statements.rows<SumsRow>(undefined, this.shaped('sums', sumsStatement), values);
    } else {
      // a read's: gathered with the other reads' of this turn of the event loop, as `loadBatched`
      row = await this.sumsBatches.load('sums', {
        projectId,
        customerId: state.customerId,
        guess: { periods, overages },
      });
    }
    return { used: row.used.map(toMicros), overage: row.overage.map(toMicros) };
  }

  /** A state row as the rules take it, with the guess it was read with, if any. */
  private stateOf(
    row: StateRow & { used?: string[]; overage?: string[] },
    options: StateOptions,
    key: string | undefined,
  ): CustomerState {
    const state = toState(row, options);
    const { guess } = options;
    if (key !== undefined)
      this.guessedFor.set(state, {
        key,
        sums: guess
          ? { ...guess, used: row.used!.map(toMicros), overage: row.overage!.map(toMicros) }
          : undefined,
      });
    return state;
  }

  /** `state` (a lead's) as another consume of the batch reads it: with that one's record of its event id. */
  private withEventOf(state: CustomerState, row: BatchRow): CustomerState {
    const shared: CustomerState = { ...state, existing: row.existing ?? null };
    const guessed = this.guessedFor.get(state);
    if (guessed) this.guessedFor.set(shared, guessed);
    return shared;
  }

  /** A batch of checks: one statement, each customer and feature read once (see `leadRows`). */
  private async runCheckBatch(loads: readonly CheckLoad[]): Promise<Array<BatchRow | null>> {
    const { lock, feature } = loads[0];
    const statement = this.shaped(`check:${batchShapeOf(lock, feature)}`, (months) =>
      stateBatchStatement(months, lock.name, featureKindOf(feature), false),
    );
    const keys = loads.map((l) => l.key);
    return this.leadRows(statement, loads, leadsOf(keys, loads));
  }

  /**
   * The rows of a batch's state statement without event ids for `loads`, each customer and
   * feature sent once, for its lead (`leads`, see `leadsOf`): each load gets its lead's row.
   */
  private async leadRows(
    statement: Statement,
    loads: readonly BatchedLoad[],
    leads: number[],
  ): Promise<Array<BatchRow | null>> {
    const read = [...new Set(leads)];
    const values = batchValues(read.map((k) => loads[k]));
    const rows = byOrdinality(read, await this.statements.rows<BatchRow>(undefined, statement, values));
    const rowOf = new Map(read.map((k, n) => [k, rows[n]]));
    return leads.map((lead) => rowOf.get(lead) ?? null);
  }

  private async runSumsBatch(loads: readonly SumsLoad[]): Promise<SumsRow[]> {
    const [bounds, flat] = guessValues(loads);
    const values = [loads.map((l) => l.projectId), loads.map((l) => l.customerId), ...bounds, ...flat];
    const rows = await this.statements.rows<SumsRow & { i: string }>(
      undefined,
      this.shaped('sums-batch', sumsBatchStatement),
      values,
    );
    return byOrdinality(loads, rows).map((row) => row!);
  }

  /** A statement of this repository's, built once per shape (and month: see `LedgerStatements`). */
  private shaped(key: string, build: (months: NamedPartitions) => Statement): Statement {
    return this.ledgerStatements.get(key, build);
  }

  /** The state statement of a lock, a feature selector and a guess, and its values. */
  private stateQuery(
    projectId: string,
    lock: CustomerLock,
    feature: FeatureSelector,
    at: Date,
    guess: SumsGuess | undefined,
  ): { statement: Statement; values: unknown[] } {
    const featureKind = featureKindOf(feature);
    const statement = this.shaped(`state:${lock.name}:${featureKind}:${!!guess}`, (months) =>
      stateStatement(months, lock.name, featureKind, !!guess),
    );
    const values: unknown[] = [projectId, ...lock.values];
    if (feature !== 'all') values.push('id' in feature ? feature.id : feature.slug);
    values.push(at);
    if (guess) values.push(...sumsValues(guess.periods, guess.overages));
    return { statement, values };
  }
}

/** A row of the sums statements: each sum as the text of a numeric. */
interface SumsRow {
  used: string[];
  overage: string[];
}

/** What a state was read with: its request's key, and the guess with its sums (none: no guess yet). */
interface Guessed {
  key: string;
  sums?: SumsGuess & Sums;
}

/**
 * Requests whose guesses (the periods last summed per request: a customer and a feature, or all
 * features) this process keeps at most: when full, the least recently used goes, so a process
 * serving more customers than this keeps the guesses of those it reads often.
 */
const GUESSES_LIMIT = 50_000;

/** The key of a request's guess: the project, how it names the customer, and the feature(s). */
function guessKeyOf(projectId: string, lock: CustomerLock, selector: FeatureSelector): string {
  const feature = selector === 'all' ? '*' : 'id' in selector ? `#${selector.id}` : selector.slug;
  return [projectId, lock.name, ...lock.values.map(String), feature].join('\u0000');
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
      (x, i) =>
        x.featureId === guess.overages[i].featureId &&
        sameTime(x.since, guess.overages[i].since) &&
        sameTime(x.until, guess.overages[i].until),
    )
  );
}

/** One read of period sums of a batch (`sums` outside a transaction). */
interface SumsLoad {
  projectId: string;
  customerId: number;
  guess: SumsGuess;
}

/** One load of a batch's state statement: a check's (`loadBatched`), a consume's or a hold's. */
interface BatchedLoad {
  projectId: string;
  lock: CustomerLock;
  feature: OneFeature;
  /** The instant the rules will decide at (grants ended long before it are not read). */
  at: Date;
  guess?: SumsGuess;
}

/** A check of a batch with its request's key (`guessKeyOf`), which names its lead (`leadsOf`). */
interface CheckLoad extends BatchedLoad {
  key: string;
}

/**
 * One consume of a batch (`lockAndLoadMany`); without `eventId` (every load of the batch), the
 * state reads no record by event id and no latest record (a hold, a release).
 */
export interface ConsumeLoad {
  projectId: string;
  lock: CustomerLock;
  feature: OneFeature;
  eventId?: string;
  at: Date;
}

/** A row of a batched state statement: a state and the ordinality of its request. */
type BatchRow = StateRow & { i: string; usage_id?: string };

/** The rows of a batch's statement in the order of its requests (null: no such customer). */
function byOrdinality<R extends { i: string }>(loads: readonly unknown[], rows: R[]): Array<R | null> {
  const ordered: Array<R | null> = loads.map(() => null);
  for (const row of rows) ordered[Number(row.i) - 1] = row;
  return ordered;
}

/**
 * The values of `stateBatchStatement` for `loads`; for consumes, with their event ids and `leads`
 * (each load's lead, an index of `loads`).
 */
function batchValues(loads: readonly (BatchedLoad & { eventId?: string })[], leads?: number[]): unknown[] {
  const [bounds, flat] = guessValues(loads);
  return [
    ...lockValues(loads),
    loads.map((l) => ('id' in l.feature ? l.feature.id : l.feature.slug)),
    loads.map((l) => l.at),
    ...bounds,
    ...(leads ? [loads.map((l) => l.eventId), leads.map((lead) => lead + 1)] : []),
    ...flat,
  ];
}

/**
 * For each of a batch's loads, the index of the one whose state it shares: of the loads with the
 * same key (project, customer reference and feature) and the same guess of sums, the one with
 * the earliest instant (the first of those of one instant). Its state, read with the grants and
 * holds that ended within a day before its instant, holds all that any later instant's would;
 * the rules keep those in effect at the instant they decide at.
 */
export function leadsOf(
  keys: readonly string[],
  loads: readonly { at: Date; guess?: SumsGuess }[],
): number[] {
  const leadsOfKey = new Map<string, number[]>();
  const leads = keys.map((key, k) => {
    const candidates = leadsOfKey.get(key) ?? [];
    leadsOfKey.set(key, candidates);
    const lead = candidates.find((c) => loads[c].guess === loads[k].guess);
    if (lead !== undefined) return lead;
    candidates.push(k);
    return k;
  });
  // the earliest instant of each group leads it
  const earliest = new Map<number, number>();
  leads.forEach((lead, k) => {
    const e = earliest.get(lead) ?? lead;
    earliest.set(lead, loads[k].at < loads[e].at ? k : e);
  });
  return leads.map((lead) => earliest.get(lead)!);
}

/**
 * The guesses of `loads` (none: no sums) as each load's slices, from and to, of the periods and
 * of the overage requests (four arrays, one row a load), and the seven flattened arrays they slice
 * (see `slicedSums`).
 */
function guessValues(loads: readonly { guess?: SumsGuess }[]): [unknown[], unknown[]] {
  const guesses = loads.map((l) => l.guess ?? { periods: [], overages: [] });
  const periodSlices = slicesOf(guesses.map((g) => g.periods.length));
  const overageSlices = slicesOf(guesses.map((g) => g.overages.length));
  return [
    [
      periodSlices.map(([from]) => from),
      periodSlices.map(([, to]) => to),
      overageSlices.map(([from]) => from),
      overageSlices.map(([, to]) => to),
    ],
    sumsValues(
      guesses.flatMap((g) => g.periods),
      guesses.flatMap((g) => g.overages),
    ),
  ];
}

/**
 * The bounds, from and to (1-based, inclusive), of consecutive slices of `counts` elements each
 * of one flattened array: how a batch's request names its part of an array parameter.
 */
export function slicesOf(counts: number[]): Array<[number, number]> {
  let next = 1;
  return counts.map((count) => [next, (next += count) - 1]);
}

/** The projects and the customer locks' values of `loads`, one array per column. */
const lockValues = (loads: readonly BatchedLoad[]): unknown[] => [
  loads.map((l) => l.projectId),
  ...loads[0].lock.values.map((_, k) => loads.map((l) => l.lock.values[k])),
];

/** What `loadState` reads besides the state: the sums of a guess, the record holding an event id. */
export interface StateOptions {
  guess?: SumsGuess;
  eventId?: string;
}

/** A state statement's row as the rules take it. */
function toState(row: StateRow, { eventId }: StateOptions): CustomerState {
  const windows = row.windows.map((w) => ({
    ...w,
    validFrom: new Date(w.validFrom),
    validTo: w.validTo === null ? null : new Date(w.validTo),
  }));
  const date = (ms: number | null) => (ms === null ? null : new Date(ms));
  const grants: StateGrant[] = row.grants.map(
    ([id, featureId, amount, used, priority, effectiveAt, expiresAt, voidedAt]) => ({
      id,
      featureId,
      amount: toMicros(amount),
      used: toMicros(used),
      priority,
      effectiveAt: new Date(effectiveAt),
      expiresAt: date(expiresAt),
      voidedAt: date(voidedAt),
    }),
  );
  const holds: StateHold[] = row.holds.map(([id, featureId, createdAt, expiresAt, allocations]) => ({
    id,
    featureId,
    createdAt: new Date(createdAt),
    expiresAt: new Date(expiresAt),
    allocations: allocations.map(toAllocation),
  }));
  const overrides: OverrideRow[] = row.overrides.map((o) => ({
    ...o,
    customerId: row.customer_id,
    limit: o.limit === null ? null : toMicros(o.limit),
    anchor: date(o.anchor),
    expiresAt: date(o.expiresAt),
    createdAt: new Date(o.createdAt),
  }));
  return {
    customerId: row.customer_id,
    username: row.username,
    enabled: row.enabled,
    createdAt: new Date(Number(row.created_at)),
    features: row.features,
    ...(eventId !== undefined
      ? { existing: row.existing ?? null, lastRecordedAt: row.last_recorded_at ?? null }
      : {}),
    zones: customerZones(toZoneChanges(row.project_zones), toZoneChanges(row.customer_zones)),
    grantsFor: (featureId: number): StateGrant[] => grants.filter((g) => g.featureId === featureId),
    overrideFor: (featureId: number): OverrideRow | null =>
      overrides.find((o) => o.featureId === featureId) ?? null,
    holdsFor: (featureId: number): StateHold[] => holds.filter((h) => h.featureId === featureId),
    windowsFor: (featureId: number): EngineWindow[] => {
      // one quota per plan, shared by its windows (the engine only reads them)
      const quotaOf = new Map<number, EngineQuota | null>();
      return windows.map((w) => {
        let quota = quotaOf.get(w.planId);
        if (quota === undefined) {
          const q = row.plans[w.planId]?.quotas.find((x) => x.featureId === featureId);
          quota = q
            ? {
                id: q.id,
                limit: q.limit === null ? null : toMicros(q.limit),
                priority: q.priority,
                resetInterval: q.resetInterval,
                resetAnchor: q.resetAnchor,
                resetDayOfMonth: q.resetDayOfMonth,
                resetTimeZone: q.resetTimeZone,
                thresholds: q.thresholds,
              }
            : null;
          quotaOf.set(w.planId, quota);
        }
        return {
          id: w.id,
          planId: w.planId,
          planSlug: row.plans[w.planId]?.slug ?? '',
          group: w.group,
          validFrom: w.validFrom,
          validTo: w.validTo,
          quota,
        };
      });
    },
  };
}

/**
 * `WHERE i BETWEEN 1 AND 2147483647` is always true; it is there for the planner. Without it a
 * generic plan assumes many rows for the `unnest` of an array parameter (a custom plan sees the
 * array, usually of one or two), so its cost looked far above a custom plan's and PostgreSQL
 * planned these prepared statements again on every call, planning costing more than running
 * them. A range on the ordinality has the planner's small default selectivity: about one row.
 */
export const ORDINALITY_MAX = 2147483647;

/**
 * `upto` and `before` of the rows of `table` matching `where` (alias `t`) within `range` (of
 * `recorded_at`): the running total `total` of the last of them, and the total just before the
 * first (its total less its `amount`), in `(recorded_at, id)` order; both null when no row
 * matches. Each looks month by month (`eachPartition`), from the newest or the oldest.
 */
const runningSpan = (
  months: NamedPartitions,
  table: string,
  total: string,
  amount: string,
  where: string,
  range: ColumnRange,
) => `
    LATERAL (SELECT (${eachPartition(months, `SELECT t.${total} FROM ${table} t WHERE ${where}`, 't', 'recorded_at', 'DESC', '1', range)}) AS upto,
                    (${eachPartition(months, `SELECT t.${total} - t.${amount} FROM ${table} t WHERE ${where}`, 't', 'recorded_at', 'ASC', '1', range)}) AS before
              OFFSET 0) span`;

/**
 * The arrays (SQL expressions) the sums of `sumsColumns` are asked for: the periods' feature ids,
 * groups, starts and ends, and the overage requests' feature ids and instants.
 */
interface SumsInputs {
  fids: string;
  groups: string;
  starts: string;
  ends: string;
  overageFids: string;
  overageSince: string;
  overageUntil: string;
}

/** The sums' arrays as parameters `$p` to `$p+5` of one statement. */
const sumsParams = (p: number): SumsInputs => ({
  fids: `$${p}::int[]`,
  groups: `$${p + 1}::text[]`,
  starts: `$${p + 2}::timestamptz[]`,
  ends: `$${p + 3}::timestamptz[]`,
  overageFids: `$${p + 4}::int[]`,
  overageSince: `$${p + 5}::timestamptz[]`,
  overageUntil: `$${p + 6}::timestamptz[]`,
});

/**
 * The two sum columns (`used`, `overage`) for customer `customer` of project `project` (SQL
 * expressions), for the periods and overage requests of `sums`.
 *
 * A period's usage is the running total (`usage_allocations.running`, migration
 * UsageRunningTotals) of the group's last allocation in the period, minus the total just before
 * its first allocation in the period (that row's total less its amount), minus the allocations
 * reversed within the period: two probes of `usage_allocations_running_idx` and a walk of the
 * reversed ones only, where summing the period's allocations walked all of them (slow for a busy
 * customer, on every check and consume). Only rows inside the period are read,
 * so records pruned from before it change nothing (docs/entitlements.md#retention-of-the-ledger). No allocation in the
 * period: 0, without the walk. The overage since an instant is the same difference of
 * `usage_records.overage_running` over the records since; equal totals (no overage since) answer
 * 0 without the walk. `OFFSET 0` keeps each span a subquery of its own, evaluated once: pulled up
 * into the `CASE`, each of its probes ran once per mention.
 */
const sumsColumns = (months: NamedPartitions, customer: string, project: string, sums: SumsInputs) => `
    ARRAY(SELECT (CASE WHEN b.grp IS NULL THEN (SELECT coalesce(sum(u.amount - u.overage - u.granted), 0) FROM usage_records u
                              WHERE u.customer_id = ${customer} AND u.feature_id = b.fid AND u.reversed_at IS NULL
                                AND u.recorded_at >= b.ps AND u.recorded_at < coalesce(b.pe, 'infinity') AND u.project_id = ${project})
                       WHEN span.upto IS NULL THEN 0
                       ELSE span.upto - span.before - (SELECT coalesce(sum(a.amount), 0) FROM usage_allocations a
                              WHERE a.customer_id = ${customer} AND a.feature_id = b.fid AND a.plan_group = b.grp AND a.reversed
                                AND a.recorded_at >= b.ps AND a.recorded_at < coalesce(b.pe, 'infinity') AND a.project_id = ${project})
                  END)::text
            FROM unnest(${sums.fids}, ${sums.groups}, ${sums.starts}, ${sums.ends}) WITH ORDINALITY AS b(fid, grp, ps, pe, i),
                 ${runningSpan(
                   months,
                   'usage_allocations',
                   'running',
                   'amount',
                   `t.customer_id = ${customer} AND t.feature_id = b.fid AND t.plan_group = b.grp
                    AND t.recorded_at >= b.ps AND t.recorded_at < coalesce(b.pe, 'infinity') AND t.project_id = ${project}`,
                   { from: 'b.ps', to: `coalesce(b.pe, 'infinity')` },
                 )}
           WHERE b.i BETWEEN 1 AND ${ORDINALITY_MAX}
           ORDER BY b.i) AS used,
    ARRAY(SELECT (CASE WHEN span.upto IS NULL OR span.upto = span.before THEN 0
                       ELSE span.upto - span.before - (SELECT coalesce(sum(u.overage), 0) FROM usage_records u
                              WHERE u.customer_id = ${customer} AND u.feature_id = o.fid AND u.reversed_at IS NOT NULL
                                AND u.recorded_at >= o.since AND u.recorded_at < coalesce(o.until, 'infinity')
                                AND u.project_id = ${project})
                  END)::text
            FROM unnest(${sums.overageFids}, ${sums.overageSince}, ${sums.overageUntil}) WITH ORDINALITY AS o(fid, since, until, i),
                 ${runningSpan(
                   months,
                   'usage_records',
                   'overage_running',
                   'overage',
                   `t.customer_id = ${customer} AND t.feature_id = o.fid AND t.recorded_at >= o.since
                    AND t.recorded_at < coalesce(o.until, 'infinity') AND t.project_id = ${project}`,
                   { from: 'o.since', to: `coalesce(o.until, 'infinity')` },
                 )}
           WHERE o.i BETWEEN 1 AND ${ORDINALITY_MAX}
           ORDER BY o.i) AS overage`;

const sumsStatement = (months: NamedPartitions): Statement => ({
  name: `entitlements.sums-${months.key}`,
  text: `SELECT ${sumsColumns(months, '$2', '$1', sumsParams(3))}`,
});

/** A batch request's slices of the flattened sums arrays: periods from and to, overages from and to. */
const SLICE_COLUMNS: Array<[string, string]> = [
  ['pf', 'int'],
  ['pt', 'int'],
  ['of', 'int'],
  ['ot', 'int'],
];

/** The sums' arrays of a batch's request `r`: its slices (`SLICE_COLUMNS`) of the seven flattened arrays from `$flat`. */
function slicedSums(flat: number): SumsInputs {
  const slice = (k: number, type: string, from: string, to: string) =>
    `($${flat + k}::${type}[])[r.${from}:r.${to}]`;
  return {
    fids: slice(0, 'int', 'pf', 'pt'),
    groups: slice(1, 'text', 'pf', 'pt'),
    starts: slice(2, 'timestamptz', 'pf', 'pt'),
    ends: slice(3, 'timestamptz', 'pf', 'pt'),
    overageFids: slice(4, 'int', 'of', 'ot'),
    overageSince: slice(5, 'timestamptz', 'of', 'ot'),
    overageUntil: slice(6, 'timestamptz', 'of', 'ot'),
  };
}

/** `sumsStatement` for a batch of reads (`sums` outside a transaction): one row of arrays a request, then the flattened arrays. */
function sumsBatchStatement(months: NamedPartitions): Statement {
  const columns: Array<[string, string]> = [['project', 'text'], ['customer', 'int'], ...SLICE_COLUMNS];
  return {
    name: `entitlements.sums-batch-${months.key}`,
    text: `SELECT r.i, ${sumsColumns(months, 'r.customer', 'r.project', slicedSums(columns.length + 1))}
      FROM ${unnestRequests(columns)} WHERE r.i BETWEEN 1 AND ${ORDINALITY_MAX}`,
  };
}

/**
 * A `timestamptz` column as milliseconds since the epoch, for JSON built in SQL: a number is
 * read back as `new Date(ms)`, several times cheaper than parsing the ISO text json_build_object
 * writes (a customer's state may hold hundreds of windows). `date_part` is a float8 (cheaper than
 * `extract`'s numeric): the columns hold milliseconds (precision 3), about 1.8e12 of them, far
 * within a float8's 15 exact digits, and the cast to bigint rounds, so the value is exact; null
 * stays null.
 */
const epochMs = (column: string) => `(date_part('epoch', ${column}) * 1000)::bigint`;

/** What a state statement reads its inputs from (SQL expressions): see `stateSelect`. */
interface StateInputs {
  project: string;
  /** The customer lock's values. */
  customer: string[];
  /** The feature's id (`int`) or slug (`text`); absent: every feature of the project. */
  feature?: string;
  /** The instant the rules decide at (`timestamptz`). */
  at: string;
  sums?: SumsInputs;
  /** Whether to read the customer's latest record of the feature (a consume's). */
  latest?: boolean;
  /**
   * A condition on the request (SQL) for the state to be read: where it is false there is no row
   * (a request of a batch that takes another's state).
   */
  only?: string;
}

/**
 * The state of one customer (`stateQuery`): the customer named by a lock of kind `kind`, the
 * feature(s) (`featureKind`: by id, by slug, or all), every live window of the customer and its
 * plans' quotas for those features (once per plan), its grants and overrides, the sums asked for
 * and the record holding an event id, with every input read from `inputs`: the parameters of one
 * statement (`stateStatement`), or the columns of one request of a batch (`stateBatchStatement`).
 * The parts that read the customers, plans and subscriptions modules' tables are theirs
 * (`customer-sql.ts`, `plan-sql.ts`, `subscription-sql.ts`), embedded here so that a check or a
 * consume reads everything in one round trip.
 */
function stateSelect(
  months: NamedPartitions,
  kind: CustomerLockKind,
  featureKind: FeatureKind,
  inputs: StateInputs,
): string {
  const { project, feature, at, sums, latest, only } = inputs;
  const featureIn = (column: string) =>
    featureKind === 'all' ? '' : ` AND ${column} IN (${featureIds(project, featureKind, feature)})`;
  const grantWhere = featureIn('g.feature_id');
  const overrideWhere = featureIn('o.feature_id');
  const holdWhere = featureIn('h.feature_id');
  return `SELECT c.id AS customer_id, c.username, c.enabled, ${epochMs('c.created_at')} AS created_at,
        ${featuresJson(project, featureKind, feature)} AS features,
        ${liveWindowsJson('c.id', project, epochMs)} AS windows,
        ${plansWithQuotasJson(project, livePlanIds('c.id', project), featureKind, feature)} AS plans,
        ${customerZonesJson(epochMs)} AS customer_zones,
        ${projectZonesJson(project, epochMs)} AS project_zones,
        (SELECT coalesce(json_agg(json_build_array(g.id, g.feature_id, g.amount::text, g.used::text, g.priority,
                  ${epochMs('g.effective_at')}, ${epochMs('g.expires_at')}, ${epochMs('g.voided_at')}) ORDER BY g.id), '[]'::json)
           FROM (SELECT g.* FROM grants g
                  WHERE g.customer_id = c.id AND g.project_id = ${project} AND g.voided_at IS NULL
                    AND coalesce(g.expires_at, 'infinity') > ${at} - interval '${GRANTS_EXPIRED_READ}'${grantWhere}
                 UNION ALL
                 -- voided after the instant (a read of an earlier one): none at the present
                 SELECT g.* FROM grants g
                  WHERE g.customer_id = c.id AND g.project_id = ${project} AND g.voided_at > ${at}${grantWhere}) g) AS grants,
        (SELECT coalesce(json_agg(json_build_object('featureId', o.feature_id, 'mode', o.mode,
                  'limit', o.override_limit::text, 'priority', o.priority, 'resetInterval', o.reset_interval,
                  'resetAnchor', o.reset_anchor, 'resetDayOfMonth', o.reset_day_of_month,
                  'resetTimeZone', o.reset_time_zone, 'anchor', ${epochMs('o.anchor')}, 'expiresAt', ${epochMs('o.expires_at')}, 'reason', o.reason,
                  'createdAt', ${epochMs('o.created_at')}) ORDER BY o.feature_id), '[]'::json)
           FROM customer_overrides o
          WHERE o.customer_id = c.id AND o.project_id = ${project}${overrideWhere}) AS overrides,
        (SELECT coalesce(json_agg(json_build_array(h.id, h.feature_id, ${epochMs('h.created_at')}, ${epochMs('h.expires_at')},
                  h.allocations) ORDER BY h.id), '[]'::json)
           FROM usage_holds h
          WHERE h.customer_id = c.id AND h.project_id = ${project} AND h.status = 'held'
            AND h.expires_at > ${at} - interval '${HOLDS_EXPIRED_READ}'${holdWhere}) AS holds
        ${sums ? `, ${sumsColumns(months, 'c.id', project, sums)}` : ''}
        ${
          latest
            ? `, (${eachPartition(
                months,
                `SELECT u.recorded_at FROM usage_records u
                WHERE u.customer_id = c.id AND u.feature_id = (${featureIds(project, featureKind, feature)})
                  AND u.recorded_at > ${at} - interval '${LATEST_RECORD_READ}'`,
                'u',
                'recorded_at',
                'DESC',
                '1',
                { from: `${at} - interval '${LATEST_RECORD_READ}'` },
              )}) AS last_recorded_at`
            : ''
        }
      ${customerFrom(kind, project, inputs.customer)}${only ? ` AND ${only}` : ''}`;
}

type FeatureKind = FeatureLookupKind;

/**
 * How long before the instant a read is made for a grant that has expired is still read with the
 * state: a consume decides at the instant it reads once it holds the lock, a little after the one
 * it was sent with, and never before the customer's latest record; a grant ended longer ago than
 * this adds nothing to a read.
 */
const GRANTS_EXPIRED_READ = '1 day';

/**
 * Likewise for holds not ended: one that expired longer ago than this counts nowhere (the expiry
 * scheduler marks it within seconds while the service runs).
 */
const HOLDS_EXPIRED_READ = '1 day';

/**
 * How far before the instant a consume was sent with its customer's latest record of the feature
 * is looked for: the consume is placed after that record only when the record is later than the
 * instant it decides at (a replica whose clock lags), so an older one changes nothing, and the
 * months before are not read.
 */
const LATEST_RECORD_READ = '1 day';

/**
 * `$1` the project, `$2...` the customer lock's values, then the feature (id or slug) unless
 * all, the instant, then the guess's seven arrays when asked.
 */
function stateStatement(
  months: NamedPartitions,
  kind: CustomerLockKind,
  featureKind: FeatureKind,
  withGuess: boolean,
): Statement {
  let n = 1;
  const customer = (kind === 'identifier' ? [0, 1] : [0]).map(() => `$${++n}`);
  const feature = featureKind === 'all' ? undefined : `$${++n}::${featureKind === 'id' ? 'int' : 'text'}`;
  const at = `$${++n}::timestamptz`;
  return {
    name: `entitlements.state-${kind}-${featureKind}${withGuess ? '-sums' : ''}-${months.key}`,
    text: stateSelect(months, kind, featureKind, {
      project: '$1',
      customer,
      feature,
      at,
      sums: withGuess ? sumsParams(n + 1) : undefined,
    }),
  };
}

/**
 * The states of a batch in one statement (checks: `EntitlementsRepository.loadBatched`; consumes,
 * `withEvent`: `lockAndLoadMany`), each as `stateStatement` with the sums would read it, with its
 * request's ordinality `i`. One row of arrays per request (`$1` the projects, then the lock's
 * values, the features, the instants, each request's slice of the flattened sums arrays, from and
 * to, and for consumes the event ids and the leads), then those seven flattened arrays. A request
 * whose customer does not exist has no row.
 *
 * A consume's row also holds the record its event id names (`existing`) and its record id. Its
 * state is read only when it leads (`lead` is its own ordinality): a request that names the same
 * customer and feature as its lead has the state's columns null and takes its lead's, so that a
 * hot customer's batch reads that customer's state once, not once per consume.
 */
function stateBatchStatement(
  months: NamedPartitions,
  kind: CustomerLockKind,
  featureKind: 'id' | 'slug',
  withEvent: boolean,
): Statement {
  const columns: Array<[string, string]> = [
    ...lockColumns(kind),
    ['feature', featureKind === 'id' ? 'int' : 'text'],
    ['at', 'timestamptz'],
    ...SLICE_COLUMNS,
    ...(withEvent
      ? ([
          ['event', 'text'],
          ['lead', 'bigint'],
        ] as Array<[string, string]>)
      : []),
  ];
  const customer = kind === 'identifier' ? ['r.v1', 'r.v2'] : ['r.v1'];
  const inputs: StateInputs = {
    project: 'r.project',
    customer,
    feature: 'r.feature',
    at: 'r.at',
    sums: slicedSums(columns.length + 1),
  };
  const name = `entitlements.state-batch-${kind}-${featureKind}${withEvent ? '-event' : ''}-${months.key}`;
  const requests = `FROM ${unnestRequests(columns)}`;
  const bounded = `WHERE r.i BETWEEN 1 AND ${ORDINALITY_MAX}`;
  if (!withEvent)
    return {
      name,
      text: `SELECT r.i, x.* ${requests}
      CROSS JOIN LATERAL (${stateSelect(months, kind, featureKind, inputs)}) x
     ${bounded}`,
    };
  // the customer of each consume, with the record of its event id; the state by the customer's id,
  // for the leads only (`OFFSET 0` keeps the state a subquery of its own, so that its columns are
  // computed only for the rows that pass its lead condition, not for every request before the
  // join filters them); a consume's record id is drawn here, under the customers' locks (see
  // `lockAndLoadMany`)
  const state = stateSelect(months, 'id', featureKind, {
    ...inputs,
    customer: ['e.id'],
    latest: true,
    only: 'r.lead = r.i',
  });
  return {
    name,
    text: `SELECT r.i, x.*, e.existing, nextval('usage_records_id_seq')::text AS usage_id ${requests}
      CROSS JOIN LATERAL (SELECT c.id, (SELECT ${EVENT_USAGE_JSON} FROM usage_event_ids k
                                          WHERE k.project_id = r.project AND k.customer_id = c.id AND k.event_id = r.event) AS existing
                           ${customerFrom(kind, 'r.project', customer)}) e
      LEFT JOIN LATERAL (${state} OFFSET 0) x ON true
     ${bounded}`,
  };
}

/** The request columns naming a customer: its project and the lock's values. */
const lockColumns = (kind: CustomerLockKind): Array<[string, string]> => [
  ['project', 'text'],
  ...(kind === 'identifier'
    ? ([
        ['v1', 'text'],
        ['v2', 'text'],
      ] as Array<[string, string]>)
    : ([['v1', kind === 'id' ? 'int' : 'text']] as Array<[string, string]>)),
];

/** A batch's requests as rows `r` (with their ordinality `i`), one array parameter per column, from `$1`. */
function unnestRequests(columns: Array<[string, string]>): string {
  return `unnest(${columns.map(([, type], k) => `$${k + 1}::${type}[]`).join(', ')})
           WITH ORDINALITY AS r(${columns.map(([name]) => name).join(', ')}, i)`;
}

/**
 * Locks the customers a batch names (`lockAndLoadMany`), `FOR UPDATE` in id order: the lock a
 * redemption or activation takes, so a consume, a grant and another consume for one customer
 * never interleave.
 */
function lockBatchStatement(kind: CustomerLockKind): Statement {
  const values = kind === 'identifier' ? ['r.v1', 'r.v2'] : ['r.v1'];
  return {
    name: `entitlements.lock-batch-${kind}`,
    text: lockCustomersSql(`SELECT x.id FROM ${unnestRequests(lockColumns(kind))}
                              CROSS JOIN LATERAL (SELECT c.id ${customerFrom(kind, 'r.project', values)}) x
                             WHERE r.i BETWEEN 1 AND ${ORDINALITY_MAX}`),
  };
}
