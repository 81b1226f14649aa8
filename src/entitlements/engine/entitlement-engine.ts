import { DateTime, Duration } from 'luxon';
import type { ResetAnchor } from '../../common/time/calendar-units';
import { parseIsoDuration } from '../../common/time/duration';
import { calendarPeriodAt, isCalendarInterval, ZoneHistory, zoneAt } from './calendar';

/**
 * The pure rules of entitlements: which buckets a customer has at an
 * instant, their run-anchored periods, the order of consumption and the allocation of an amount.
 * No I/O and no framework: plain values in, plain decisions out.
 *
 * Amounts are exact: integers of micro-units (`bigint`, 1 unit = 1,000,000), since an amount has
 * at most 6 decimal places and a limit at most 4.
 */

export const MICROS = 1_000_000n;

/** A quota of a plan for the feature in question; `limit` in micro-units, null: unlimited. */
export interface EngineQuota {
  id: number;
  limit: bigint | null;
  priority: number;
  resetInterval: string | null;
  /** `run`: `anchor + k x resetInterval` in UTC; `calendar`: local calendar units in a zone. */
  resetAnchor: ResetAnchor;
  resetDayOfMonth: number | null;
  /** The quota's own zone (calendar); null: the customer's, else the project's. */
  resetTimeZone: string | null;
  /** Percents of `limit` whose crossing a consume announces, ascending. */
  thresholds: number[];
}

export type { ResetAnchor } from '../../common/time/calendar-units';

/** A live (not cancelled) window of the customer, in any group, with its plan's quota for the feature. */
export interface EngineWindow {
  id: number;
  planId: number;
  planSlug: string;
  group: string;
  validFrom: Date;
  validTo: Date | null;
  quota: EngineQuota | null;
}

/** Where a bucket comes from: a plan's quota, the customer's override of the feature, or a grant. */
export type BucketSource = 'plan' | 'override' | 'grant';

/** A grant of the feature to the customer (amounts in micro-units). */
export interface EngineGrant {
  id: number;
  amount: bigint;
  used: bigint;
  priority: number;
  effectiveAt: Date;
  expiresAt: Date | null;
  voidedAt: Date | null;
}

/** The customer's override of the feature (`limit` in micro-units, null: unlimited). */
export interface EngineOverride {
  mode: 'set' | 'deny';
  limit: bigint | null;
  priority: number | null;
  resetInterval: string | null;
  /** Copied with `resetInterval` from the plan bucket; null for `deny` and a boolean feature (then `run`). */
  resetAnchor: ResetAnchor | null;
  resetDayOfMonth: number | null;
  resetTimeZone: string | null;
  anchor: Date | null;
  expiresAt: Date | null;
  /** Its `PUT`'s instant: in effect from then (a read of an earlier instant does not see it). */
  createdAt?: Date;
}

/**
 * One bucket of a feature at an instant: a plan group's quota in the window in effect, the
 * override, or a grant in effect; with its current period (a grant has one period, from its
 * `effectiveAt`, that never ends).
 */
export interface Bucket {
  source: BucketSource;
  /** The plan group (plan buckets); null otherwise. */
  group: string | null;
  /** Plan buckets: the window in effect and its plan's quota; null otherwise. */
  window: EngineWindow | null;
  quota: EngineQuota | null;
  grant: EngineGrant | null;
  /** null: unlimited. */
  limit: bigint | null;
  priority: number;
  anchor: Date;
  periodStart: Date;
  /** null: the period never ends (`resetInterval: null`, and every grant). */
  periodEnd: Date | null;
  /** When the bucket ends: a plan bucket's window end, an override's or a grant's `expiresAt` (null: never). */
  expiresAt: Date | null;
  /** How its periods are laid out; null for a grant (no periods). */
  resetAnchor: ResetAnchor | null;
  /** The zone of its current period: `UTC` for `run`, null for a grant. */
  timeZone: string | null;
}

export interface BucketUsage extends Bucket {
  /** Micro-units taken from this bucket within the period, reversals excluded. */
  used: bigint;
  /** Micro-units live holds hold in this bucket's current period (`heldIn`); none when absent. */
  held?: bigint;
}

/** The key that ties an allocation to its bucket: the group, `override`, or the grant's id. */
export const bucketKey = (b: Pick<Bucket, 'source' | 'group' | 'grant'>): string =>
  b.source === 'plan' ? `plan:${b.group}` : b.source === 'override' ? 'override' : `grant:${b.grant!.id}`;

export interface Allocation {
  source: BucketSource;
  group: string | null;
  /** A grant's allocation: null. */
  periodStart: Date | null;
  grantId: number | null;
  amount: bigint;
}

export type AllocationResult =
  { ok: true; allocations: Allocation[]; overage: bigint } | { ok: false; remaining: bigint | null };

export const inEffect = (w: Pick<EngineWindow, 'validFrom' | 'validTo'>, t: Date): boolean =>
  w.validFrom.getTime() <= t.getTime() && (w.validTo === null || t.getTime() < w.validTo.getTime());

/**
 * The anchor of the run that holds `w`: the `validFrom` of the earliest window of the unbroken
 * sequence of abutting live windows of its group (one ends exactly where the next starts).
 */
export function runAnchor(windows: readonly EngineWindow[], w: EngineWindow): Date {
  const byEnd = new Map<number, EngineWindow>();
  for (const x of windows) {
    if (x.group !== w.group || x.validTo === null) continue;
    const prev = byEnd.get(x.validTo.getTime());
    // two windows ending at the same instant cannot both be live in one chain; take the earlier start
    if (!prev || x.validFrom.getTime() < prev.validFrom.getTime()) byEnd.set(x.validTo.getTime(), x);
  }
  let current = w;
  const seen = new Set<number>([w.id]);
  for (;;) {
    const before = byEnd.get(current.validFrom.getTime());
    if (!before || seen.has(before.id) || before.validFrom.getTime() >= current.validFrom.getTime())
      return current.validFrom;
    seen.add(before.id);
    current = before;
  }
}

/** A reset interval as the engine uses it: its components, and its approximate length in ms. */
interface ParsedInterval {
  components: Array<[string, number]>;
  approxMs: number;
}

// reset intervals are few (those of the project's quotas) and a parse is immutable: kept per process
const intervals = new Map<string, ParsedInterval>();

function parsedInterval(interval: string): ParsedInterval {
  let parsed = intervals.get(interval);
  if (!parsed) {
    const duration = parseIsoDuration(interval);
    if (!duration) throw new RangeError(`not a valid ISO 8601 duration: ${interval}`);
    parsed = {
      components: Object.entries(duration.toObject()) as Array<[string, number]>,
      approxMs: duration.as('milliseconds'),
    };
    if (intervals.size >= 1000) intervals.clear();
    intervals.set(interval, parsed);
  }
  return parsed;
}

/** `anchor + k x interval`, computed from the anchor (calendar arithmetic in UTC, months clamped). */
export function boundary(anchor: Date, interval: string, k: number): Date {
  const { components } = parsedInterval(interval);
  if (k === 0) return anchor;
  const scaled = Duration.fromObject(Object.fromEntries(components.map(([unit, v]) => [unit, v * k])));
  return DateTime.fromMillis(anchor.getTime(), { zone: 'utc' }).plus(scaled).toJSDate();
}

/** The period `[start, end)` of a run anchored at `anchor` that holds `t` (t >= anchor). */
export function periodAt(anchor: Date, interval: string | null, t: Date): { start: Date; end: Date | null } {
  if (interval === null) return { start: anchor, end: null };
  const { approxMs } = parsedInterval(interval);
  const elapsed = t.getTime() - anchor.getTime();
  let k = Math.max(0, Math.floor(elapsed / approxMs));
  // the estimate is exact for fixed lengths; calendar units (months, years) move it by a step or two
  let start = boundary(anchor, interval, k);
  while (k > 0 && start.getTime() > t.getTime()) start = boundary(anchor, interval, --k);
  let end = boundary(anchor, interval, k + 1);
  while (end.getTime() <= t.getTime()) {
    k++;
    start = end;
    end = boundary(anchor, interval, k + 1);
  }
  return { start, end };
}

const endMs = (d: Date | null) => (d === null ? Number.POSITIVE_INFINITY : d.getTime());

/** When a bucket's allowance lapses: a plan or override bucket at its period's end, a grant at its expiry. */
const lapsesAt = (b: Bucket): Date | null => (b.source === 'grant' ? b.expiresAt : b.periodEnd);

/**
 * Order of consumption (also the order buckets are shown in): higher priority first; then what
 * lapses first; then what ends first (never last); then plan and override buckets before grants;
 * then the lower plan id, among grants the lower grant id. So at equal priority a top-up that
 * never expires is spent after the plan's monthly allowance, and a promotion ending tomorrow
 * before it.
 */
export function consumptionOrder(a: Bucket, b: Bucket): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (endMs(lapsesAt(a)) !== endMs(lapsesAt(b))) return endMs(lapsesAt(a)) - endMs(lapsesAt(b));
  if (endMs(a.expiresAt) !== endMs(b.expiresAt)) return endMs(a.expiresAt) - endMs(b.expiresAt);
  const grantA = a.source === 'grant' ? 1 : 0;
  const grantB = b.source === 'grant' ? 1 : 0;
  if (grantA !== grantB) return grantA - grantB;
  if (a.grant && b.grant) return a.grant.id - b.grant.id;
  return (a.window?.planId ?? 0) - (b.window?.planId ?? 0);
}

/**
 * The plan buckets at `t`, in the order of consumption: for each group, the window in effect when
 * its plan has a quota for the feature. At most one window per group is in effect (chain rules).
 */
export function bucketsAt(
  windows: readonly EngineWindow[],
  t: Date,
  zones: ZoneHistory = UTC_ONLY,
): Bucket[] {
  const buckets: Bucket[] = [];
  const groups = new Set<string>();
  for (const w of windows) {
    if (!w.quota || !inEffect(w, t) || groups.has(w.group)) continue;
    groups.add(w.group);
    const anchor = runAnchor(windows, w);
    const { period, timeZone } = resetPeriodAt(w.quota, zones, anchor, t);
    buckets.push({
      source: 'plan',
      group: w.group,
      window: w,
      quota: w.quota,
      grant: null,
      limit: w.quota.limit,
      priority: w.quota.priority,
      anchor,
      periodStart: period.start,
      periodEnd: period.end,
      expiresAt: w.validTo,
      resetAnchor: w.quota.resetAnchor,
      timeZone,
    });
  }
  return buckets.sort(consumptionOrder);
}

/** A customer's zone when nothing names another: UTC, since always. */
export const UTC_ONLY: ZoneHistory = [{ from: null, zone: 'UTC' }];

/** How a bucket's periods are laid out: a quota's reset fields, or those an override copied from one. */
type ResetRule = Pick<EngineQuota, 'resetInterval' | 'resetDayOfMonth' | 'resetTimeZone'> & {
  resetAnchor: ResetAnchor | null;
};

/**
 * The period holding `t` of a bucket whose periods start at `anchor` (a quota's run start, an
 * override's anchor), and the zone it is in: `run` in UTC; `calendar` in the rule's own zone, else
 * in `zones` (the customer's, as it was over time).
 */
function resetPeriodAt(
  rule: ResetRule,
  zones: ZoneHistory,
  anchor: Date,
  t: Date,
): { period: { start: Date; end: Date | null }; timeZone: string } {
  if (rule.resetAnchor !== 'calendar' || !isCalendarInterval(rule.resetInterval))
    return { period: periodAt(anchor, rule.resetInterval, t), timeZone: 'UTC' };
  const history: ZoneHistory = rule.resetTimeZone ? [{ from: null, zone: rule.resetTimeZone }] : zones;
  const p = calendarPeriodAt(
    { interval: rule.resetInterval, dayOfMonth: rule.resetDayOfMonth },
    history,
    anchor.getTime(),
    t.getTime(),
  );
  return { period: { start: new Date(p.start), end: new Date(p.end) }, timeZone: zoneAt(history, p.start) };
}

/** Whether an override is in effect at `t`: from its `PUT` until its `expiresAt`. */
export const overrideInEffect = <O extends Pick<EngineOverride, 'createdAt' | 'expiresAt'>>(
  o: O | null,
  t: Date,
): o is O =>
  o !== null &&
  (o.createdAt === undefined || o.createdAt.getTime() <= t.getTime()) &&
  (o.expiresAt === null || t.getTime() < o.expiresAt.getTime());

/** Whether a grant is in effect at `t`: started, and neither expired nor voided by then. */
export const grantInEffect = (g: EngineGrant, t: Date): boolean =>
  (g.voidedAt === null || t.getTime() < g.voidedAt.getTime()) &&
  inEffect({ validFrom: g.effectiveAt, validTo: g.expiresAt }, t);

/** A grant's status at `t`, in the order the rules name them. */
export type GrantStatus = 'voided' | 'expired' | 'scheduled' | 'exhausted' | 'active';

/** A grant's figures at `t`: always `amount = used + remaining + forfeited`. */
export function grantFigures(
  g: EngineGrant,
  t: Date,
): { status: GrantStatus; used: bigint; remaining: bigint; forfeited: bigint } {
  const left = g.amount > g.used ? g.amount - g.used : 0n;
  const status: GrantStatus =
    g.voidedAt !== null
      ? 'voided'
      : g.expiresAt !== null && g.expiresAt.getTime() <= t.getTime()
        ? 'expired'
        : t.getTime() < g.effectiveAt.getTime()
          ? 'scheduled'
          : left === 0n
            ? 'exhausted'
            : 'active';
  const ended = status === 'voided' || status === 'expired';
  return { status, used: g.used, remaining: ended ? 0n : left, forfeited: ended ? left : 0n };
}

/** What grants, overrides and plans give one feature at `t`: granted or not, and its buckets in order. */
export interface FeatureBuckets {
  granted: boolean;
  buckets: Bucket[];
  accessEndsAt: Date | null;
}

/**
 * The buckets of a feature at `t`: the plan buckets, unless a `set` override replaces them with
 * its own bucket (metered features), and the grants in effect; nothing under a `deny`. Grants
 * count only for a metered feature. When access ends: the latest end among what grants the
 * feature now (the plans' coverage, a `set` override's expiry, each grant in effect's expiry);
 * null when any of them never ends, and when the feature is not granted.
 */
export function featureBucketsAt(
  input: {
    metered: boolean;
    windows: readonly EngineWindow[];
    override: EngineOverride | null;
    grants: readonly EngineGrant[];
    /** The customer's zone over time (calendar quotas without their own zone). */
    zones?: ZoneHistory;
  },
  t: Date,
): FeatureBuckets {
  const override = overrideInEffect(input.override, t) ? input.override : null;
  if (override?.mode === 'deny') return { granted: false, buckets: [], accessEndsAt: null };
  const plans = bucketsAt(input.windows, t, input.zones);
  const grants = input.metered ? input.grants.filter((g) => grantInEffect(g, t)) : [];
  const buckets: Bucket[] =
    override && input.metered ? [overrideBucket(override, t, input.zones ?? UTC_ONLY)] : [...plans];
  for (const g of grants) buckets.push(grantBucket(g));
  const planEnd = plans.length > 0 ? accessEndsAt(input.windows, t) : undefined;
  const ends: Array<Date | null> = [
    ...(planEnd === undefined ? [] : [planEnd]),
    ...(override ? [override.expiresAt] : []),
    ...grants.map((g) => g.expiresAt),
  ];
  const granted = ends.length > 0 && (!input.metered || buckets.length > 0);
  const latest = ends.some((e) => e === null) ? null : Math.max(...ends.map((e) => e!.getTime()));
  return {
    granted,
    buckets: buckets.sort(consumptionOrder),
    accessEndsAt: granted && latest !== null ? new Date(latest) : null,
  };
}

/**
 * The override's bucket at `t`: periods from its `anchor` as the quota it copied its reset rule from
 * would have them (`anchor + k x resetInterval`, or calendar units in the rule's or the customer's
 * zone).
 */
function overrideBucket(o: EngineOverride, t: Date, zones: ZoneHistory): Bucket {
  const anchor = o.anchor ?? t;
  const resetAnchor = o.resetAnchor ?? 'run';
  const { period, timeZone } = resetPeriodAt(
    { ...o, resetAnchor },
    zones,
    anchor,
    t.getTime() < anchor.getTime() ? anchor : t,
  );
  return {
    source: 'override',
    group: null,
    window: null,
    quota: null,
    grant: null,
    limit: o.limit,
    priority: o.priority ?? 0,
    anchor,
    periodStart: period.start,
    periodEnd: period.end,
    expiresAt: o.expiresAt,
    resetAnchor,
    timeZone,
  };
}

/** A grant's bucket: its amount, one period from `effectiveAt` that never ends. */
function grantBucket(g: EngineGrant): Bucket {
  return {
    source: 'grant',
    group: null,
    window: null,
    quota: null,
    grant: g,
    limit: g.amount,
    priority: g.priority,
    anchor: g.effectiveAt,
    periodStart: g.effectiveAt,
    periodEnd: null,
    expiresAt: g.expiresAt,
    resetAnchor: null,
    timeZone: null,
  };
}

/**
 * When access to the feature ends by the plans: the end of the unbroken coverage, from `t`, by
 * live windows (any group, queued ones included) whose plans grant the feature; null when it
 * reaches a permanent window; null as well when nothing grants it at `t`.
 */
export function accessEndsAt(windows: readonly EngineWindow[], t: Date): Date | null {
  const granting = windows.filter((w) => w.quota !== null);
  if (!granting.some((w) => inEffect(w, t))) return null;
  let end = t.getTime();
  for (let moved = true; moved;) {
    moved = false;
    for (const w of granting) {
      if (w.validFrom.getTime() > end) continue;
      if (w.validTo === null) return null;
      if (w.validTo.getTime() > end) {
        end = w.validTo.getTime();
        moved = true;
      }
    }
  }
  return new Date(end);
}

/** `remaining = max(0, limit - used - held)`; null when unlimited. */
export const remainingOf = (b: Pick<BucketUsage, 'limit' | 'used' | 'held'>): bigint | null => {
  if (b.limit === null) return null;
  const taken = b.used + (b.held ?? 0n);
  return b.limit > taken ? b.limit - taken : 0n;
};

/** The balance over the buckets: sums, with `limit` and `remaining` null when any bucket is unlimited. */
export function balanceOf(buckets: readonly BucketUsage[]): {
  limit: bigint | null;
  used: bigint;
  held: bigint;
  remaining: bigint | null;
} {
  let limit: bigint | null = 0n;
  let remaining: bigint | null = 0n;
  let used = 0n;
  let held = 0n;
  for (const b of buckets) {
    used += b.used;
    held += b.held ?? 0n;
    const r = remainingOf(b);
    limit = limit === null || b.limit === null ? null : limit + b.limit;
    remaining = remaining === null || r === null ? null : remaining + r;
  }
  return { limit, used, held, remaining };
}

/**
 * A usage hold not ended, as the rules take it (docs/entitlements.md#holds): what it took from
 * each bucket when it was made, at `createdAt`; it counts until `expiresAt`.
 */
export interface EngineHold {
  id: number;
  createdAt: Date;
  expiresAt: Date;
  allocations: readonly Allocation[];
}

/** Whether a hold not ended still counts at `t` (its expiry needs no job: it is computed). */
export const holdLiveAt = (h: Pick<EngineHold, 'expiresAt'>, t: Date): boolean =>
  t.getTime() < h.expiresAt.getTime();

/**
 * What the holds not ended that are live at `t` hold in bucket `b` (the bucket at `t`): a plan
 * bucket their allocations to its group, an override bucket their allocations not to a grant,
 * each only while the bucket's current period holds the hold's `createdAt` (as a record counts
 * by its `recordedAt`); a grant's bucket their allocations to that grant, while it is in effect.
 */
export function heldIn(b: Bucket, holds: readonly EngineHold[], t: Date): bigint {
  let held = 0n;
  for (const h of holds) {
    if (!holdLiveAt(h, t)) continue;
    if (b.source !== 'grant') {
      const made = h.createdAt.getTime();
      if (made < b.periodStart.getTime() || (b.periodEnd !== null && made >= b.periodEnd.getTime())) continue;
    }
    for (const a of h.allocations)
      if (
        b.source === 'grant'
          ? a.grantId === b.grant!.id
          : b.source === 'override'
            ? a.source !== 'grant'
            : a.source === 'plan' && a.group === b.group
      )
        held += a.amount;
  }
  return held;
}

/**
 * Takes `amount` from `buckets` (already in the order of consumption). Short of room: refused,
 * unless `allowOverage`, in which case the excess is the record's overage.
 */
export function allocate(
  buckets: readonly BucketUsage[],
  amount: bigint,
  allowOverage: boolean,
): AllocationResult {
  const { remaining } = balanceOf(buckets);
  if (remaining !== null && remaining < amount && !allowOverage) return { ok: false, remaining };
  const allocations: Allocation[] = [];
  let left = amount;
  for (const b of buckets) {
    if (left === 0n) break;
    const room = remainingOf(b);
    const take = room === null || room >= left ? left : room;
    if (take > 0n)
      allocations.push({
        source: b.source,
        group: b.group,
        periodStart: b.source === 'grant' ? null : b.periodStart,
        grantId: b.grant?.id ?? null,
        amount: take,
      });
    left -= take;
  }
  return { ok: true, allocations, overage: left };
}

/** The earliest period end among the buckets (null when none resets; a grant's never does). */
export function resetsAt(buckets: readonly Bucket[]): Date | null {
  const ends = buckets.map((b) => b.periodEnd).filter((d): d is Date => d !== null);
  return ends.length ? new Date(Math.min(...ends.map((d) => d.getTime()))) : null;
}

/** A decimal string or number (at most 6 decimal places) as micro-units. */
export function toMicros(value: string | number): bigint {
  const text = typeof value === 'number' ? numberText(value) : value.trim();
  const match = /^(-?)(\d+)(?:\.(\d*))?$/.exec(text);
  if (!match) throw new RangeError(`not a decimal: ${text}`);
  const fraction = (match[3] ?? '').padEnd(6, '0');
  if (/[1-9]/.test(fraction.slice(6))) throw new RangeError(`more than 6 decimal places: ${text}`);
  const micros = BigInt(match[2]) * MICROS + BigInt(fraction.slice(0, 6));
  return match[1] ? -micros : micros;
}

/** Micro-units as a JSON number (exact for the amounts the API accepts). */
export const fromMicros = (micros: bigint): number => Number(micros) / 1e6;

/** Micro-units as a decimal string, for `numeric` parameters. */
export function microsText(micros: bigint): string {
  const sign = micros < 0n ? '-' : '';
  const abs = micros < 0n ? -micros : micros;
  return `${sign}${abs / MICROS}.${(abs % MICROS).toString().padStart(6, '0')}`;
}

/** A JS number written without exponent (1e-7 → "0.0000001"). */
function numberText(n: number): string {
  if (!Number.isFinite(n)) throw new RangeError('not a finite number');
  const s = String(n);
  if (!/e/i.test(s)) return s;
  return n.toFixed(20).replace(/0+$/, '').replace(/\.$/, '');
}
