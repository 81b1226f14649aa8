import { DateTime, Duration } from 'luxon';

/**
 * ISO 8601 durations (a quota's reset interval, a code's or a grant's duration: `P1D`, `P1M`,
 * `PT1H`, ...), parsed with luxon and added with calendar arithmetic in UTC.
 *
 * Luxon's parser is lenient; on top of it a duration is only valid when:
 * - no component is negative (no `-` anywhere) and the total is positive (`P0D`, `PT0S`, `P`
 *   and `PT` are rejected);
 * - a `T` is followed by at least one time component (`P1DT` is rejected);
 * - a decimal fraction appears only on the last component and only on a time unit
 *   (`PT1.5H`, `P1DT0.5S` are fine; `P1.5M`, `P1.5D`, `PT1.5H30M` are not), so the length of a
 *   fractional part never depends on the calendar;
 * - added to 1970-01-01 it stays inside the range of a JavaScript `Date`.
 * Weeks may be mixed with other units because luxon accepts it (`P1W1D`).
 */

/** One component of a duration: a number and its unit letter. */
const COMPONENT = /(\d+(?:[.,]\d+)?)([YMWDHS])/g;

/**
 * Parsed durations by their text, with their fixed length in ms when they have one (no years,
 * quarters or months, whose length depends on the calendar). A project uses a handful (`P30D`,
 * `P1M`, ...) and every redemption adds one, so they are kept; luxon's `Duration` is immutable.
 * The map is emptied when it reaches `PARSED_LIMIT` entries, so odd inputs cannot grow it
 * without bound.
 */
const parsed = new Map<string, { duration: Duration; fixedMs: number | null } | null>();
const PARSED_LIMIT = 1000;

function parsedEntry(s: string): { duration: Duration; fixedMs: number | null } | null {
  let entry = parsed.get(s);
  if (entry === undefined) {
    if (parsed.size >= PARSED_LIMIT) parsed.clear();
    const duration = parseUncached(s);
    if (duration === null) {
      entry = null;
    } else {
      const { years, quarters, months } = duration.toObject();
      entry = { duration, fixedMs: years || quarters || months ? null : duration.as('milliseconds') };
    }
    parsed.set(s, entry);
  }
  return entry;
}

/** Parses an ISO 8601 duration; `null` when it is not a valid, positive duration. */
export function parseIsoDuration(s: string): Duration | null {
  if (typeof s !== 'string') return null;
  return parsedEntry(s)?.duration ?? null;
}

function parseUncached(s: string): Duration | null {
  const duration = Duration.fromISO(s);
  if (!duration.isValid) return null;
  if (s.includes('-') || s.endsWith('T')) return null;

  const components = [...s.matchAll(COMPONENT)];
  if (components.length === 0) return null;
  const timeStart = s.indexOf('T');
  const fractional = components.findIndex((m) => /[.,]/.test(m[1]));
  if (fractional !== -1) {
    const isLast = fractional === components.length - 1;
    const isTimeUnit = timeStart !== -1 && (components[fractional].index ?? 0) > timeStart;
    if (!isLast || !isTimeUnit) return null;
  }

  const values = Object.values(duration.toObject()) as number[];
  if (!values.every((v) => Number.isFinite(v) && v >= 0)) return null;
  if (!values.some((v) => v > 0)) return null;
  if (!DateTime.fromMillis(0, { zone: 'utc' }).plus(duration).isValid) return null;
  return duration;
}

/** True when `s` is a string holding a valid, positive ISO 8601 duration. */
export function isValidIsoDuration(s: unknown): s is string {
  return typeof s === 'string' && parseIsoDuration(s) !== null;
}

/**
 * `from` plus the duration `iso`, with calendar arithmetic in UTC: `P1M` from 2025-01-31 is
 * 2025-02-28, from 2024-01-31 it is 2024-02-29; `P1Y` from 2024-02-29 is 2025-02-28.
 * Throws a `RangeError` for an invalid `from` or duration, or a result outside the `Date` range.
 */
export function addIsoDuration(from: Date, iso: string): Date {
  if (!(from instanceof Date) || Number.isNaN(from.getTime())) {
    throw new RangeError('from must be a valid Date');
  }
  const entry = typeof iso === 'string' ? parsedEntry(iso) : null;
  if (entry === null) throw new RangeError(`not a valid ISO 8601 duration: ${String(iso)}`);
  const { duration, fixedMs } = entry;
  if (fixedMs !== null) {
    // weeks, days and time units have one length in UTC: plain arithmetic, as luxon would do
    const end = new Date(from.getTime() + fixedMs);
    if (Number.isNaN(end.getTime())) throw new RangeError('the result is outside the supported date range');
    return end;
  }
  const end = DateTime.fromMillis(from.getTime(), { zone: 'utc' }).plus(duration);
  if (!end.isValid) throw new RangeError('the result is outside the supported date range');
  return end.toJSDate();
}
