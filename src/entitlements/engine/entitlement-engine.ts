import { DateTime, Duration } from 'luxon';
import { parseIsoDuration } from '../../common/time/duration';

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
}

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

/** The bucket of one group at an instant: the quota of the window in effect, and its current period. */
export interface Bucket {
  group: string;
  window: EngineWindow;
  quota: EngineQuota;
  anchor: Date;
  periodStart: Date;
  /** null: the period never ends (`resetInterval: null`). */
  periodEnd: Date | null;
}

export interface BucketUsage extends Bucket {
  /** Micro-units allocated to this group within the period, reversals excluded. */
  used: bigint;
}

export interface Allocation {
  group: string;
  periodStart: Date;
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

/**
 * Order of consumption: higher priority first; then the period that ends
 * first (one that never ends last); then the window that ends first (permanent last); then the
 * lower plan id.
 */
export function consumptionOrder(a: Bucket, b: Bucket): number {
  if (a.quota.priority !== b.quota.priority) return b.quota.priority - a.quota.priority;
  const end = (d: Date | null) => (d === null ? Number.POSITIVE_INFINITY : d.getTime());
  if (end(a.periodEnd) !== end(b.periodEnd)) return end(a.periodEnd) - end(b.periodEnd);
  if (end(a.window.validTo) !== end(b.window.validTo)) return end(a.window.validTo) - end(b.window.validTo);
  return a.window.planId - b.window.planId;
}

/**
 * The buckets at `t`, in the order of consumption: for each group, the window in effect when its
 * plan has a quota for the feature. At most one window per group is in effect (chain rules).
 */
export function bucketsAt(windows: readonly EngineWindow[], t: Date): Bucket[] {
  const buckets: Bucket[] = [];
  const groups = new Set<string>();
  for (const w of windows) {
    if (!w.quota || !inEffect(w, t) || groups.has(w.group)) continue;
    groups.add(w.group);
    const anchor = runAnchor(windows, w);
    const period = periodAt(anchor, w.quota.resetInterval, t);
    buckets.push({
      group: w.group,
      window: w,
      quota: w.quota,
      anchor,
      periodStart: period.start,
      periodEnd: period.end,
    });
  }
  return buckets.sort(consumptionOrder);
}

/**
 * When access to the feature ends: the end of the unbroken coverage, from `t`, by live windows
 * (any group, queued ones included) whose plans grant the feature; null when it reaches a
 * permanent window; null as well when nothing grants it at `t`.
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

/** `remaining = max(0, limit - used)`; null when unlimited. */
export const remainingOf = (b: Pick<BucketUsage, 'quota' | 'used'>): bigint | null =>
  b.quota.limit === null ? null : b.quota.limit > b.used ? b.quota.limit - b.used : 0n;

/** The balance over the buckets: sums, with `limit` and `remaining` null when any bucket is unlimited. */
export function balanceOf(buckets: readonly BucketUsage[]): {
  limit: bigint | null;
  used: bigint;
  remaining: bigint | null;
} {
  let limit: bigint | null = 0n;
  let remaining: bigint | null = 0n;
  let used = 0n;
  for (const b of buckets) {
    used += b.used;
    const r = remainingOf(b);
    limit = limit === null || b.quota.limit === null ? null : limit + b.quota.limit;
    remaining = remaining === null || r === null ? null : remaining + r;
  }
  return { limit, used, remaining };
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
    if (take > 0n) allocations.push({ group: b.group, periodStart: b.periodStart, amount: take });
    left -= take;
  }
  return { ok: true, allocations, overage: left };
}

/** The earliest period end among the buckets (null when none resets). */
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
