import fc from 'fast-check';
import {
  boundaryAfter,
  boundaryAtOrBefore,
  calendarPeriodAt,
  CALENDAR_INTERVALS,
  CalendarInterval,
} from './calendar';

import { customerZones } from './zones';
const ms = (iso: string) => Date.parse(iso);
const iso = (t: number) => new Date(t).toISOString();
const RUN_START = ms('2020-01-01T00:00:00.000Z');

/** The period of a run started long before, in one zone. */
const periodIn = (zone: string, interval: CalendarInterval, dayOfMonth: number | null, at: string) => {
  const p = calendarPeriodAt({ interval, dayOfMonth }, [{ from: null, zone }], RUN_START, ms(at));
  return [iso(p.start), iso(p.end)];
};

/** 2027 unless the time names another year: "03-14 05:00" is 2027-03-14T05:00:00.000Z. */
const t = (short: string) => {
  const [date, time] = short.split(' ');
  const full = date.length === 5 ? `2027-${date}` : date;
  const [hm, frac = '0'] = time.split('.');
  const seconds = hm.split(':').length === 3 ? hm : `${hm}:00`;
  return new Date(`${full}T${seconds}.${frac.padEnd(3, '0')}Z`).toISOString();
};

describe('calendar periods: the worked examples', () => {
  const NY = 'America/New_York';
  const BERLIN = 'Europe/Berlin';
  const HAVANA = 'America/Havana';
  const TOKYO = 'Asia/Tokyo';
  const KOLKATA = 'Asia/Kolkata';
  const KATHMANDU = 'Asia/Kathmandu';
  const rows: Array<[string, string, CalendarInterval, number | null, string, string, string]> = [
    ['a 23-hour day', NY, 'P1D', null, '03-14 12:00', '03-14 05:00', '03-15 04:00'],
    ['a 25-hour day', NY, 'P1D', null, '11-07 12:00', '11-07 04:00', '11-08 05:00'],
    ['02:00 is in the gap: 07:00Z', NY, 'PT1H', null, '03-14 06:30', '03-14 06:00', '03-14 07:00'],
    ['01:00 occurs twice: the first', NY, 'PT1H', null, '11-07 05:30', '11-07 05:00', '11-07 07:00'],
    ['the second 01:30 too', NY, 'PT1H', null, '11-07 06:30', '11-07 05:00', '11-07 07:00'],
    ['Monday to Monday', NY, 'P1W', null, '11-04 12:00', '11-01 04:00', '11-08 05:00'],
    ['clamped to Feb 28', NY, 'P1M', 31, '02-15 12:00', '01-31 05:00', '02-28 05:00'],
    ['back to the 31st', NY, 'P1M', 31, '03-20 12:00', '02-28 05:00', '03-31 04:00'],
    ['Berlin: a 23-hour day', BERLIN, 'P1D', null, '03-28 12:00', '03-27 23:00', '03-28 22:00'],
    ['Berlin: a 25-hour day', BERLIN, 'P1D', null, '10-31 12:00', '10-30 22:00', '10-31 23:00'],
    ['02:00 and 03:00 are one boundary', BERLIN, 'PT1H', null, '03-28 00:30', '03-28 00:00', '03-28 01:00'],
    [
      'Berlin: 02:00 occurs twice: the first',
      BERLIN,
      'PT1H',
      null,
      '10-31 01:30',
      '10-31 00:00',
      '10-31 02:00',
    ],
    ['a 167-hour week', BERLIN, 'P1W', null, '03-25 12:00', '03-21 23:00', '03-28 22:00'],
    ['across the change', BERLIN, 'P1M', 15, '04-02 12:00', '03-14 23:00', '04-14 22:00'],
    ['midnight in the gap: 01:00 CDT', HAVANA, 'P1D', null, '03-14 12:00', '03-14 05:00', '03-15 04:00'],
    ['midnight twice: the first', HAVANA, 'P1D', null, '11-07 04:30', '11-07 04:00', '11-08 05:00'],
    ['Havana: the second 00:30 too', HAVANA, 'P1D', null, '11-07 05:30', '11-07 04:00', '11-08 05:00'],
    ['UTC months', 'UTC', 'P1M', null, '05-17 12:00', '05-01 00:00', '06-01 00:00'],
    ['quarters, clamped', 'UTC', 'P3M', 31, '06-01 00:00', '04-30 00:00', '07-31 00:00'],
    ['half-years', 'UTC', 'P6M', null, '08-01 00:00', '07-01 00:00', '2028-01-01 00:00'],
    ['Tokyo years', TOKYO, 'P1Y', null, '06-15 00:00', '2026-12-31 15:00', '12-31 15:00'],
    ['Kolkata quarters', KOLKATA, 'P3M', null, '05-10 00:00', '03-31 18:30', '06-30 18:30'],
    [
      'Kathmandu hours: local 16:00',
      KATHMANDU,
      'PT1H',
      null,
      '01-10 10:20:30.500',
      '01-10 10:15',
      '01-10 11:15',
    ],
    ['Kathmandu minutes', KATHMANDU, 'PT1M', null, '01-10 10:20:30.500', '01-10 10:20', '01-10 10:21'],
  ];
  it.each(rows)('%s (%s %s, day %s, at %s)', (_rule, zone, interval, day, at, start, end) => {
    expect(periodIn(zone, interval, day, t(at))).toEqual([t(start), t(end)]);
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
        (zone, interval, day, at) => {
          const dayOfMonth = ['P1M', 'P3M', 'P6M'].includes(interval) ? day : null;
          const grid = { interval, dayOfMonth, zone };
          const p = calendarPeriodAt({ interval, dayOfMonth }, [{ from: null, zone }], RUN_START, at);
          expect(p.start <= at && at < p.end).toBe(true);
          // the next period starts where this one ends, and the one before ends where it starts
          const next = calendarPeriodAt({ interval, dayOfMonth }, [{ from: null, zone }], RUN_START, p.end);
          expect(next.start).toBe(p.end);
          const before = calendarPeriodAt(
            { interval, dayOfMonth },
            [{ from: null, zone }],
            RUN_START,
            p.start - 1,
          );
          expect(before.end).toBe(p.start);
          // both bounds are boundaries of the grid
          expect(boundaryAtOrBefore(grid, p.start)).toBe(p.start);
          expect(boundaryAfter(grid, p.start - 1)).toBe(p.start);
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
