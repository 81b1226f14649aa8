import type { CalendarInterval } from '../../src/entitlements/engine/calendar';

/**
 * The worked examples of calendar periods (docs/entitlements.md#calendar-periods): zone, interval,
 * day of month, the instant asked, and the period that holds it. Times are short: "03-14 05:00" is
 * 2027-03-14T05:00:00.000Z unless they name another year. The engine's unit test and the HTTP test
 * of `?at=` both ask every row.
 */
const NY = 'America/New_York';
const BERLIN = 'Europe/Berlin';
const HAVANA = 'America/Havana';
const TOKYO = 'Asia/Tokyo';
const KOLKATA = 'Asia/Kolkata';
const KATHMANDU = 'Asia/Kathmandu';
export const CALENDAR_EXAMPLES: Array<
  [string, string, CalendarInterval, number | null, string, string, string]
> = [
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

/** An example's short time as an ISO instant. */
export function exampleInstant(short: string): string {
  const [date, time] = short.split(' ');
  const full = date.length === 5 ? `2027-${date}` : date;
  const [hm, frac = '0'] = time.split('.');
  const seconds = hm.split(':').length === 3 ? hm : `${hm}:00`;
  return new Date(`${full}T${seconds}.${frac.padEnd(3, '0')}Z`).toISOString();
}
