import { IANAZone } from 'luxon';
import type { CalendarInterval } from '../../common/time/calendar-units';

export {
  CALENDAR_INTERVALS,
  type CalendarInterval,
  isCalendarInterval,
} from '../../common/time/calendar-units';

/**
 * Calendar periods: boundaries at the start of local calendar units (a minute, an hour, midnight,
 * Monday, the 1st or a chosen day of a month, a quarter, a half-year, a year) in a time zone. Zone
 * rules come from the runtime's IANA database through luxon; nothing here does DST arithmetic by
 * hand. A local time that occurs twice (clocks set back) is its first occurrence; one that does not
 * occur (clocks set forward) is the first instant after the gap; boundaries that fall on one
 * instant are one, so no period is empty.
 */

/** A calendar grid: its unit, the day of month of month-based units (null: the 1st), and its zone. */
export interface Grid {
  interval: CalendarInterval;
  dayOfMonth: number | null;
  zone: string;
}

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * A zone's UTC offsets, worked out from luxon's zone once per zone and year and kept for the
 * process: the offset at the year's start and each change in it (found by sampling every six hours
 * and narrowing each change to the millisecond). A request's periods are then lookups, not calls
 * into the runtime's time zone data.
 */
class ZoneOffsets {
  private readonly years = new Map<
    number,
    { start: number; changes: Array<{ at: number; offset: number }> }
  >();

  constructor(private readonly zone: IANAZone) {}

  /** The offset in minutes at instant `ms`. */
  offset(ms: number): number {
    const year = this.yearOf(new Date(ms).getUTCFullYear());
    let offset = year.start;
    for (const c of year.changes) {
      if (c.at > ms) break;
      offset = c.offset;
    }
    return offset;
  }

  private yearOf(y: number) {
    let year = this.years.get(y);
    if (!year) {
      const from = Date.UTC(y, 0, 1);
      const to = Date.UTC(y + 1, 0, 1);
      const changes: Array<{ at: number; offset: number }> = [];
      let at = from;
      let offset = this.zone.offset(at);
      const start = offset;
      for (let next = at + SAMPLE; at < to; next = Math.min(at + SAMPLE, to)) {
        const o = this.zone.offset(next);
        if (o !== offset) {
          // the change lies in (at, next]: the first instant with the new offset
          let lo = at + 1;
          let hi = next;
          while (lo < hi) {
            const mid = Math.floor((lo + hi) / 2);
            if (this.zone.offset(mid) === offset) lo = mid + 1;
            else hi = mid;
          }
          changes.push({ at: lo, offset: this.zone.offset(lo) });
          offset = this.zone.offset(lo);
        }
        at = next;
      }
      year = { start, changes };
      this.years.set(y, year);
    }
    return year;
  }
}

const SAMPLE = 6 * 3_600_000;

// one per zone name, for the process (names are few: those of quotas, customers and projects)
const zones = new Map<string, ZoneOffsets>();
function zoneOf(name: string): ZoneOffsets {
  let zone = zones.get(name);
  if (!zone) {
    const iana = IANAZone.create(name);
    if (!iana.isValid) throw new RangeError(`not a time zone: ${name}`);
    if (zones.size >= 1000) zones.clear();
    zone = new ZoneOffsets(iana);
    zones.set(name, zone);
  }
  return zone;
}

/** The offset of `zone` at instant `ms`, in minutes (for tests against the runtime's own). */
export const offsetOf = (zone: string, ms: number): number => zoneOf(zone).offset(ms);

/** The local wall-clock time of instant `ms` in `zone`, as the milliseconds of a UTC date with those fields. */
const wallOf = (zone: ZoneOffsets, ms: number): number => ms + zone.offset(ms) * MINUTE;

/**
 * The instant of local wall-clock time `wall` (UTC fields) in `zone`: its first occurrence, or,
 * in a gap, the first instant after it.
 */
function instantOf(zone: ZoneOffsets, wall: number): number {
  const before = wall - zone.offset(wall - 1.5 * DAY) * MINUTE;
  const after = wall - zone.offset(wall + 1.5 * DAY) * MINUTE;
  const valid = [before, after].filter((ms) => wallOf(zone, ms) === wall);
  if (valid.length > 0) return Math.min(...valid);
  // in a gap: the first instant whose wall-clock time is at or after `wall` (the transition)
  let lo = Math.min(before, after);
  let hi = Math.max(before, after);
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (wallOf(zone, mid) >= wall) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

const daysIn = (year: number, month: number): number => new Date(Date.UTC(year, month + 1, 0)).getUTCDate();

/** The months (0-11) a month-based unit starts in. */
const MONTHS: Record<string, number[]> = {
  P1M: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
  P3M: [0, 3, 6, 9],
  P6M: [0, 6],
  P1Y: [0],
};

/** The month-based boundary of `year`/`month` (UTC fields of a wall time), its day clamped to the month. */
const monthBoundary = (year: number, month: number, day: number): number =>
  Date.UTC(year, month, Math.min(day, daysIn(year, month)));

/** The latest boundary wall time at or before wall time `wall` on `grid`. */
function floorWall(grid: Grid, wall: number): number {
  const d = new Date(wall);
  const [y, m, day, h, mi] = [
    d.getUTCFullYear(),
    d.getUTCMonth(),
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
  ];
  switch (grid.interval) {
    case 'PT1M':
      return Date.UTC(y, m, day, h, mi);
    case 'PT1H':
      return Date.UTC(y, m, day, h);
    case 'P1D':
      return Date.UTC(y, m, day);
    case 'P1W':
      // ISO weeks start on Monday: getUTCDay() is 0 on Sunday
      return Date.UTC(y, m, day) - ((d.getUTCDay() + 6) % 7) * DAY;
    default: {
      const months = MONTHS[grid.interval];
      const dom = grid.dayOfMonth ?? 1;
      for (let year = y; ; year--)
        for (let k = months.length - 1; k >= 0; k--) {
          const b = monthBoundary(year, months[k], dom);
          if (b <= wall) return b;
        }
    }
  }
}

/** The boundary wall time after boundary wall time `wall` on `grid`. */
function nextWall(grid: Grid, wall: number): number {
  switch (grid.interval) {
    case 'PT1M':
      return wall + MINUTE;
    case 'PT1H':
      return wall + 60 * MINUTE;
    case 'P1D':
      return wall + DAY;
    case 'P1W':
      return wall + 7 * DAY;
    default: {
      const d = new Date(wall);
      const months = MONTHS[grid.interval];
      const dom = grid.dayOfMonth ?? 1;
      for (let year = d.getUTCFullYear(); ; year++)
        for (const month of months) {
          const b = monthBoundary(year, month, dom);
          if (b > wall) return b;
        }
    }
  }
}

/** The first boundary instant strictly after instant `ms` on `grid`. */
export function boundaryAfter(grid: Grid, ms: number): number {
  const zone = zoneOf(grid.zone);
  let wall = floorWall(grid, wallOf(zone, ms));
  for (;;) {
    wall = nextWall(grid, wall);
    const at = instantOf(zone, wall);
    if (at > ms) return at;
  }
}

/** The latest boundary instant at or before instant `ms` on `grid`. */
export function boundaryAtOrBefore(grid: Grid, ms: number): number {
  const zone = zoneOf(grid.zone);
  let wall = floorWall(grid, wallOf(zone, ms));
  for (;;) {
    const at = instantOf(zone, wall);
    if (at <= ms) return at;
    // a boundary in a gap that maps after `ms` (its first instant after the gap): the one before
    wall = floorWall(grid, wall - 1);
  }
}

/**
 * A bucket's zone over time: the zone in effect from each instant on, in order (the first entry's
 * `from` is null: since always).
 */
export type ZoneHistory = ReadonlyArray<{ from: number | null; zone: string }>;

/** The zone a history gives at instant `ms`. */
export const zoneAt = (history: ZoneHistory, ms: number): string => {
  let zone = history[0].zone;
  for (const h of history) if (h.from === null || h.from <= ms) zone = h.zone;
  return zone;
};
const nextChange = (history: ZoneHistory, ms: number): number | null => {
  for (const h of history) if (h.from !== null && h.from > ms) return h.from;
  return null;
};

/**
 * The calendar period `[start, end)` holding instant `t` of a run that starts at `runStart`: the
 * run's first period is `[runStart, first boundary after it)`, each next one goes from a boundary
 * to the first boundary after it on the grid of the bucket's zone at the period's start, so a
 * change of zone applies from the next boundary and the period in progress keeps its bounds.
 */
export function calendarPeriodAt(
  grid: Omit<Grid, 'zone'>,
  zones: ZoneHistory,
  runStart: number,
  t: number,
): { start: number; end: number } {
  let start = runStart;
  for (;;) {
    const on: Grid = { ...grid, zone: zoneAt(zones, start) };
    const change = nextChange(zones, start);
    // the period holding `until` on this zone's grid, from `start` on: the first one when no
    // boundary of the grid lies between `start` and `until`
    const periodOf = (until: number) => {
      const from = boundaryAtOrBefore(on, until);
      if (from <= start) return { start, end: boundaryAfter(on, start) };
      return { start: from, end: boundaryAfter(on, from) };
    };
    if (change === null || t < change) return periodOf(t);
    // the zone changes at `change` <= t: the period in progress then ends on this zone's grid
    const current = periodOf(change);
    if (current.start === change) {
      // a period starting at the change already follows the new zone
      start = change;
      continue;
    }
    if (t < current.end) return current;
    start = current.end;
  }
}
