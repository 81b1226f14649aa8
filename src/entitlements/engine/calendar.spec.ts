import fc from 'fast-check';
import {
  boundaryAfter,
  boundaryAtOrBefore,
  calendarPeriodAt,
  CALENDAR_INTERVALS,
  CalendarInterval,
  offsetOf,
} from './calendar';
import { IANAZone } from 'luxon';

import { CALENDAR_EXAMPLES, exampleInstant } from '../../../test/support/calendar-examples';
import { customerZones } from './zones';
const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();
const RUN_START = ms('2020-01-01T00:00:00.000Z');

/** The period of a run started long before, in one zone. */
const periodIn = (zone: string, interval: CalendarInterval, dayOfMonth: number | null, at: string) => {
  const p = calendarPeriodAt({ interval, dayOfMonth }, [{ from: null, zone }], RUN_START, ms(at));
  return [iso(p.start), iso(p.end)];
};

describe('calendar periods: the worked examples', () => {
  it.each(CALENDAR_EXAMPLES)('%s (%s %s, day %s, at %s)', (_rule, zone, interval, day, at, start, end) => {
    expect(periodIn(zone, interval, day, exampleInstant(at))).toEqual([
      exampleInstant(start),
      exampleInstant(end),
    ]);
  });
});

describe('calendar periods: runs and zone changes', () => {
  it("a run's first period starts with the run, never before it", () => {
    const p = calendarPeriodAt(
      { interval: 'P1M', dayOfMonth: null },
      [{ from: null, zone: 'UTC' }],
      ms('2027-05-17T10:00:00.000Z'),
      ms('2027-05-20T00:00:00.000Z'),
    );
    expect([iso(p.start), iso(p.end)]).toEqual(['2027-05-17T10:00:00.000Z', '2027-06-01T00:00:00.000Z']);
  });

  it('a change of zone applies from the next boundary: P1D Tokyo changed to UTC gives a short day, 15:00Z to 00:00Z', () => {
    const zones = [
      { from: null, zone: 'Asia/Tokyo' },
      { from: ms('2027-05-10T03:00:00.000Z'), zone: 'UTC' },
    ];
    const at = (x: string) => {
      const p = calendarPeriodAt({ interval: 'P1D', dayOfMonth: null }, zones, RUN_START, ms(x));
      return [iso(p.start), iso(p.end)];
    };
    // the period in progress at the change keeps its Tokyo bounds
    expect(at('2027-05-10T05:00:00.000Z')).toEqual(['2027-05-09T15:00:00.000Z', '2027-05-10T15:00:00.000Z']);
    // the next ends at the first UTC midnight after its start
    expect(at('2027-05-10T20:00:00.000Z')).toEqual(['2027-05-10T15:00:00.000Z', '2027-05-11T00:00:00.000Z']);
    expect(at('2027-05-11T12:00:00.000Z')).toEqual(['2027-05-11T00:00:00.000Z', '2027-05-12T00:00:00.000Z']);
    // several changes within one period: the last counts
    const twice = [...zones, { from: ms('2027-05-10T04:00:00.000Z'), zone: 'Asia/Kolkata' }];
    const p = calendarPeriodAt(
      { interval: 'P1D', dayOfMonth: null },
      twice,
      RUN_START,
      ms('2027-05-10T17:00:00.000Z'),
    );
    expect([iso(p.start), iso(p.end)]).toEqual(['2027-05-10T15:00:00.000Z', '2027-05-10T18:30:00.000Z']);
    const q = calendarPeriodAt(
      { interval: 'P1D', dayOfMonth: null },
      twice,
      RUN_START,
      ms('2027-05-10T20:00:00.000Z'),
    );
    expect([iso(q.start), iso(q.end)]).toEqual(['2027-05-10T18:30:00.000Z', '2027-05-11T18:30:00.000Z']);
  });
});

describe('calendar periods: properties', () => {
  const ZONES = [
    'UTC',
    'America/New_York',
    'Europe/Berlin',
    'America/Havana',
    'Asia/Tokyo',
    'Asia/Kolkata',
    'Asia/Kathmandu',
    'Australia/Lord_Howe',
    'Pacific/Chatham',
    'America/Santiago',
  ];
  it('every boundary is a local calendar boundary, and periods tile time without gaps or overlaps', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ZONES),
        fc.constantFrom(...CALENDAR_INTERVALS),
        fc.option(fc.integer({ min: 1, max: 31 }), { nil: null }),
        fc.integer({ min: ms('2021-01-01T00:00:00Z'), max: ms('2030-01-01T00:00:00Z') }),
        fc.integer({ min: 0, max: 400 * 86_400_000 }),
        (zone, interval, day, at, sinceRun) => {
          const dayOfMonth = ['P1M', 'P3M', 'P6M'].includes(interval) ? day : null;
          const grid = { interval, dayOfMonth, zone };
          const runStart = at - sinceRun;
          const p = calendarPeriodAt({ interval, dayOfMonth }, [{ from: null, zone }], runStart, at);
          // never before the run; the run's first period starts with it
          expect(p.start >= runStart).toBe(true);
          if (p.start > runStart) expect(boundaryAtOrBefore(grid, p.start)).toBe(p.start);
          expect(p.start <= at && at < p.end).toBe(true);
          // the next period starts where this one ends, and the one before ends where it starts
          const zones = [{ from: null, zone }];
          const next = calendarPeriodAt({ interval, dayOfMonth }, zones, runStart, p.end);
          expect(next.start).toBe(p.end);
          if (p.start > runStart)
            expect(calendarPeriodAt({ interval, dayOfMonth }, zones, runStart, p.start - 1).end).toBe(
              p.start,
            );
          // the end is the grid's first boundary after the start, a boundary itself
          expect(boundaryAfter(grid, p.start)).toBe(p.end);
          expect(boundaryAtOrBefore(grid, p.end)).toBe(p.end);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('a customer zone over time', () => {
  it("the customer's own zone as it was, else the project's as it was", () => {
    const project = { zone: 'Europe/Berlin', changes: [{ at: 100, from: 'UTC', to: 'Europe/Berlin' }] };
    const customer = {
      zone: null,
      changes: [
        { at: 50, from: null, to: 'Asia/Tokyo' },
        { at: 200, from: 'Asia/Tokyo', to: null },
      ],
    };
    expect(customerZones(project, customer)).toEqual([
      { from: null, zone: 'UTC' },
      { from: 50, zone: 'Asia/Tokyo' },
      { from: 100, zone: 'Asia/Tokyo' },
      { from: 200, zone: 'Europe/Berlin' },
    ]);
    expect(customerZones({ zone: 'UTC', changes: [] }, { zone: null, changes: [] })).toEqual([
      { from: null, zone: 'UTC' },
    ]);
  });
});

describe("a zone's offsets, worked out once per year", () => {
  it("agree with the runtime's at any instant", () => {
    const ZONES = [
      'America/New_York',
      'Europe/Berlin',
      'America/Havana',
      'Australia/Lord_Howe',
      'Asia/Kathmandu',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...ZONES),
        fc.integer({ min: ms('2000-01-01T00:00:00Z'), max: ms('2040-01-01T00:00:00Z') }),
        (zone, at) => {
          expect(offsetOf(zone, at)).toBe(IANAZone.create(zone).offset(at));
        },
      ),
      { numRuns: 2000 },
    );
  });
});
