import { DomainError } from '../../common/errors/domain-error';
import { addIsoDuration, parseIsoDuration } from '../../common/time/duration';

/**
 * The subscription chain engine: pure functions, no framework, no I/O. The rules it implements
 * are written in docs/api-guide.md#plan-groups-and-chains.
 *
 * Given the windows of one customer in one plan group, a grant and the time of the call, it
 * checks the invariants of the chain and says what has to change; the caller writes it.
 * Windows are half-open, `[validFrom, validTo)`; a window is *live* when `validTo` is null or
 * later than now, and *in effect* when it is live and `validFrom <= now`.
 */

/** One existing (not cancelled) subscription of the customer in one plan group. */
export interface ChainWindow {
  id: number;
  planId: number;
  /** The plan's value; bad data (negative, NaN, Infinity) gives INVALID_PLAN_VALUE. */
  planValue: number;
  validFrom: Date;
  /** `null` = permanent. */
  validTo: Date | null;
  /**
   * A trial window (docs/api-guide.md#trials): in every grant it counts as a window of value 0
   * (kept, converted and ordered as such), whatever its plan's value, so that a paid grant ends it
   * at now and converts none of its time.
   */
  trial?: boolean;
}

/** What is granted: a plan for an ISO 8601 duration, or permanently (`duration: null`). */
export interface Grant {
  planId: number;
  planValue: number;
  duration: string | null;
}

/** The new values of an existing window. */
export interface WindowChange {
  id: number;
  planId: number;
  validFrom: Date;
  validTo: Date | null;
}

/** A window to create. */
export interface NewWindow {
  planId: number;
  validFrom: Date;
  validTo: Date | null;
}

/** The changes a grant makes to a chain. */
export interface ChainPlan {
  /** Windows in effect that end at `now` (their `validTo` set to now). */
  ended: WindowChange[];
  /** Windows not yet started that are cancelled (values unchanged). */
  cancelled: WindowChange[];
  /** A not-yet-started permanent tail moved to a new `validFrom`. */
  moved: WindowChange[];
  /** The new windows, in chronological order (the granted one first). */
  created: NewWindow[];
}

/**
 * The live windows of `chain` at `now` (`validTo` null or later than now), sorted by
 * `validFrom` (then by id). Returns a new array; the windows themselves are not copied.
 */
export function liveWindows(chain: readonly ChainWindow[], now: Date): ChainWindow[] {
  const t = now.getTime();
  return sortByStart(chain.filter((w) => w.validTo === null || w.validTo.getTime() > t));
}

/**
 * Checks the invariants of the chain (docs/api-guide.md#invariants) on its live part; throws:
 * - 4, no negative or non-finite plan value: `INVALID_PLAN_VALUE` (checked first, since the
 *   other checks compare values);
 * - every window has valid dates and, if timed, ends after it starts: `INVALID_SUBSCRIPTION_CHAIN`;
 * - 1, no overlap; 2, at most one permanent window and it is the last; 3, the values of the
 *   timed windows never increase over time: `INVALID_SUBSCRIPTION_CHAIN`.
 */
export function checkChainInvariants(windows: readonly ChainWindow[]): void {
  const live = windows.map(worthOf);
  for (const w of live) {
    if (!isValidPlanValue(w.planValue)) throw new DomainError('INVALID_PLAN_VALUE');
  }
  for (const w of live) {
    if (!hasValidDates(w)) throw new DomainError('INVALID_SUBSCRIPTION_CHAIN');
    if (w.validTo !== null && w.validTo.getTime() <= w.validFrom.getTime()) {
      throw new DomainError('INVALID_SUBSCRIPTION_CHAIN');
    }
  }
  const sorted = sortByStart(live);
  let previousTimedValue = Infinity;
  for (let i = 0; i < sorted.length; i++) {
    const w = sorted[i];
    const next = sorted[i + 1];
    if (next !== undefined) {
      // 2: a permanent window must be the last; 1: each window ends before the next starts.
      if (w.validTo === null) throw new DomainError('INVALID_SUBSCRIPTION_CHAIN');
      if (w.validTo.getTime() > next.validFrom.getTime()) {
        throw new DomainError('INVALID_SUBSCRIPTION_CHAIN');
      }
    }
    if (w.validTo !== null) {
      // 3: values of the timed windows never increase.
      if (w.planValue > previousTimedValue) throw new DomainError('INVALID_SUBSCRIPTION_CHAIN');
      previousTimedValue = w.planValue;
    }
  }
}

/**
 * Plans a grant on the chain of one group (docs/api-guide.md#timed-grant and #permanent-grant).
 *
 * `input` is every non-cancelled window of the group; only the live ones count, trials as worth 0. Order of
 * checks: the grant's duration (`VALIDATION_FAILED`), the granted plan's value and the chain's
 * invariants (`INVALID_PLAN_VALUE`, `INVALID_SUBSCRIPTION_CHAIN`), then the grant rules
 * (`PERMANENT_TAIL_CONFLICT`, `REDUNDANT_PERMANENT_PURCHASE`). Never mutates its input; every
 * Date in the result is a new object.
 */
export function planGrant(input: readonly ChainWindow[], grant: Grant, now: Date): ChainPlan {
  const chain = input.map(worthOf);
  if (!(now instanceof Date) || Number.isNaN(now.getTime())) {
    throw new RangeError('now must be a valid Date');
  }
  if (grant.duration !== null && parseIsoDuration(grant.duration) === null) {
    throw new DomainError('VALIDATION_FAILED', 'duration must be an ISO 8601 duration', [
      {
        field: 'duration',
        message:
          'must be a positive ISO 8601 duration such as P30D, P1M or PT1H, or null for a permanent grant',
      },
    ]);
  }
  // Invariant 4 for the plan being granted.
  if (!isValidPlanValue(grant.planValue)) throw new DomainError('INVALID_PLAN_VALUE');
  // A window with an unreadable date cannot even be classified as live or not.
  if (!chain.every(hasValidDates)) throw new DomainError('INVALID_SUBSCRIPTION_CHAIN');

  const live = liveWindows(chain, now);
  checkChainInvariants(live);

  const last = live[live.length - 1];
  const tail = last !== undefined && last.validTo === null ? last : undefined;
  const timed = live.filter((w) => w.validTo !== null);

  return grant.duration === null
    ? planPermanentGrant(timed, tail, grant, now)
    : planTimedGrant(timed, tail, { ...grant, duration: grant.duration }, now);
}

/** Rules 1 to 5 of a timed grant (docs/api-guide.md#timed-grant), numbered as there. */
function planTimedGrant(
  timed: ChainWindow[],
  tail: ChainWindow | undefined,
  grant: Grant & { duration: string },
  now: Date,
): ChainPlan {
  const vN = grant.planValue;
  // 1. The time could never be used behind an equal or better permanent plan.
  if (tail !== undefined && tail.planValue >= vN) throw new DomainError('PERMANENT_TAIL_CONFLICT');

  // 2. The head (value >= vN) is kept unchanged; 3. the rest is converted.
  const head = timed.filter((w) => w.planValue >= vN);
  const converted = timed.filter((w) => w.planValue < vN);
  const plan = emptyPlan();
  for (const w of converted) endOrCancel(w, now, plan);

  // 4. The new window starts after the head (or now) and lasts D plus the converted time.
  const start = head.length > 0 ? latestEnd(head) : now;
  const end = addToDate(addDuration(start, grant.duration), convertedMs(converted, vN, now));
  plan.created.push({ planId: grant.planId, validFrom: new Date(start), validTo: end });

  // 5. The tail moves to start where the new window ends.
  if (tail !== undefined) {
    if (isInEffect(tail, now)) {
      plan.ended.push(change(tail, tail.validFrom, now));
      plan.created.push({ planId: tail.planId, validFrom: new Date(end), validTo: null });
    } else {
      plan.moved.push(change(tail, end, null));
    }
  }
  return plan;
}

/** Rules 1 to 4 of a permanent grant (docs/api-guide.md#permanent-grant), numbered as there. */
function planPermanentGrant(
  timed: ChainWindow[],
  tail: ChainWindow | undefined,
  grant: Grant,
  now: Date,
): ChainPlan {
  const vN = grant.planValue;
  // 1. An equal or better permanent plan is already held.
  if (tail !== undefined && tail.planValue >= vN) throw new DomainError('REDUNDANT_PERMANENT_PURCHASE');

  // 2. Keep the timed windows better than N; the others end or are cancelled, unconverted.
  const kept = timed.filter((w) => w.planValue > vN);
  const plan = emptyPlan();
  for (const w of timed) if (w.planValue <= vN) endOrCancel(w, now, plan);
  // 3. The lower tail ends or is cancelled.
  if (tail !== undefined) endOrCancel(tail, now, plan);

  // 4. The new permanent window starts after the kept windows, or now.
  const start = kept.length > 0 ? latestEnd(kept) : now;
  plan.created.push({ planId: grant.planId, validFrom: new Date(start), validTo: null });
  return plan;
}

/**
 * Converted time (rules 3 and 4 of a timed grant): the sum over `windows` of
 * `remaining * value / vN`, rounded down to whole seconds, in ms. Computed exactly on the
 * decimal values (0.7 -> 0.9 over 45 s is 35 s, where floating point would give 34.999... s).
 */
function convertedMs(windows: ChainWindow[], vN: number, now: Date): number {
  if (windows.length === 0) return 0;
  if (!(vN > 0)) throw new DomainError('INVALID_PLAN_VALUE'); // would divide by a value <= 0
  const target = toDecimal(vN);
  const parts = windows.map((w) => ({ remaining: remainingMs(w, now), value: toDecimal(w.planValue) }));
  const scale = Math.max(target.scale, ...parts.map((p) => p.value.scale));
  const numerator = parts.reduce(
    (sum, p) => sum + BigInt(p.remaining) * p.value.digits * 10n ** BigInt(scale - p.value.scale),
    0n,
  );
  const denominator = target.digits * 10n ** BigInt(scale - target.scale) * 1000n;
  return Number(numerator / denominator) * 1000;
}

/** Remaining time of a timed window: `validTo - max(validFrom, now)`, in ms. */
function remainingMs(w: ChainWindow, now: Date): number {
  const to = (w.validTo as Date).getTime();
  return to - Math.max(w.validFrom.getTime(), now.getTime());
}

/** A finite, non-negative number as an exact decimal `digits / 10^scale`. */
function toDecimal(v: number): { digits: bigint; scale: number } {
  const match = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(v));
  if (match === null) throw new DomainError('INVALID_PLAN_VALUE');
  const fraction = match[2] ?? '';
  const scale = fraction.length - Number(match[3] ?? 0);
  const digits = BigInt(match[1] + fraction);
  return scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 };
}

/** Adds a validated ISO duration; a result past the `Date` range is a validation error. */
function addDuration(start: Date, duration: string): Date {
  try {
    return addIsoDuration(start, duration);
  } catch {
    throw outOfRange();
  }
}

function addToDate(date: Date, ms: number): Date {
  const result = new Date(date.getTime() + ms);
  if (Number.isNaN(result.getTime())) throw outOfRange();
  return result;
}

function outOfRange(): DomainError {
  return new DomainError('VALIDATION_FAILED', 'duration must be an ISO 8601 duration', [
    { field: 'duration', message: 'the subscription would end past the supported date range' },
  ]);
}

/**
 * The window as the grant rules read it: a trial is worth 0 (it was not paid for, so converting
 * it would turn free time into paid time, and keeping it as a head would make a paying customer
 * wait). A copy, so the input is never changed.
 */
function worthOf(w: ChainWindow): ChainWindow {
  return w.trial === true ? { ...w, planValue: 0 } : w;
}

/** A window in effect ends at `now`; one not started yet is cancelled. */
function endOrCancel(w: ChainWindow, now: Date, plan: ChainPlan): void {
  if (isInEffect(w, now)) plan.ended.push(change(w, w.validFrom, now));
  else plan.cancelled.push(change(w, w.validFrom, w.validTo));
}

/**
 * A live window is in effect once it has run for some time, `validFrom < now`. One that starts
 * exactly now (a sign-up grant made in the same call) is treated as not yet started, so it is
 * cancelled or moved rather than left behind as an empty `[now, now)` window.
 */
function isInEffect(w: ChainWindow, now: Date): boolean {
  return w.validFrom.getTime() < now.getTime();
}

function latestEnd(windows: ChainWindow[]): Date {
  return new Date(Math.max(...windows.map((w) => (w.validTo as Date).getTime())));
}

function change(w: ChainWindow, validFrom: Date, validTo: Date | null): WindowChange {
  return {
    id: w.id,
    planId: w.planId,
    validFrom: new Date(validFrom),
    validTo: validTo === null ? null : new Date(validTo),
  };
}

function emptyPlan(): ChainPlan {
  return { ended: [], cancelled: [], moved: [], created: [] };
}

/** Invariant 4: a plan value is finite and at least 0. */
function isValidPlanValue(v: number): boolean {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

function hasValidDates(w: ChainWindow): boolean {
  const validDate = (d: unknown): boolean => d instanceof Date && !Number.isNaN(d.getTime());
  return validDate(w.validFrom) && (w.validTo === null || validDate(w.validTo));
}

function sortByStart(windows: readonly ChainWindow[]): ChainWindow[] {
  return [...windows].sort((a, b) => a.validFrom.getTime() - b.validFrom.getTime() || a.id - b.id);
}
