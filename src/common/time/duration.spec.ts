import fc from 'fast-check';
import { DateTime, Duration } from 'luxon';
import { addIsoDuration, isValidIsoDuration, parseIsoDuration } from './duration';

const utc = (iso: string): Date => new Date(iso);

describe('parseIsoDuration', () => {
  it.each([
    ['P1D', { days: 1 }],
    ['P1M', { months: 1 }],
    ['PT1H', { hours: 1 }],
    ['P1Y2M3DT4H5M6S', { years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6 }],
    ['P2W', { weeks: 2 }],
    ['P1W1D', { weeks: 1, days: 1 }],
    ['P30D', { days: 30 }],
    ['PT1.5H', { hours: 1.5 }],
    ['P1DT0.5S', { days: 1, seconds: 0, milliseconds: 500 }],
    ['PT1,5S', { seconds: 1, milliseconds: 500 }],
  ])('accepts %s', (s, expected) => {
    const d = parseIsoDuration(s);
    expect(d).not.toBeNull();
    expect(d?.toObject()).toEqual(expected);
    expect(isValidIsoDuration(s)).toBe(true);
  });

  it.each([
    '',
    'P',
    'PT',
    'P1DT',
    'P0D',
    'PT0S',
    'P0Y0M0DT0H0M0S',
    'PT0.0001S',
    '-P1D',
    'P-1D',
    'P1M-1D',
    'p1d',
    ' P1D',
    'P1D ',
    '1D',
    'P1.5D',
    'P1.5M',
    'P0.5Y',
    'PT1.5H30M',
    'P1,5D',
    'P99999999999999999999Y',
    'P300000Y',
    '30 days',
    'abc',
  ])('rejects %j', (s) => {
    expect(parseIsoDuration(s)).toBeNull();
    expect(isValidIsoDuration(s)).toBe(false);
  });

  it('rejects non-strings', () => {
    expect(parseIsoDuration(null as unknown as string)).toBeNull();
    expect(parseIsoDuration(1 as unknown as string)).toBeNull();
    expect(isValidIsoDuration(null)).toBe(false);
    expect(isValidIsoDuration(undefined)).toBe(false);
    expect(isValidIsoDuration(30)).toBe(false);
    expect(isValidIsoDuration({})).toBe(false);
  });
});

describe('addIsoDuration', () => {
  it.each([
    ['2025-01-31T00:00:00.000Z', 'P1M', '2025-02-28T00:00:00.000Z'],
    ['2024-01-31T00:00:00.000Z', 'P1M', '2024-02-29T00:00:00.000Z'],
    ['2024-02-29T00:00:00.000Z', 'P1Y', '2025-02-28T00:00:00.000Z'],
    ['2024-02-29T00:00:00.000Z', 'P4Y', '2028-02-29T00:00:00.000Z'],
    ['2025-03-31T12:34:56.789Z', 'P1M', '2025-04-30T12:34:56.789Z'],
    ['2025-01-01T00:00:00.000Z', 'P30D', '2025-01-31T00:00:00.000Z'],
    ['2025-12-31T23:00:00.000Z', 'PT1H', '2026-01-01T00:00:00.000Z'],
    ['2025-01-01T00:00:00.000Z', 'P2W', '2025-01-15T00:00:00.000Z'],
    ['2025-01-01T00:00:00.000Z', 'P1Y2M3DT4H5M6S', '2026-03-04T04:05:06.000Z'],
    ['2025-01-01T00:00:00.000Z', 'PT0.5S', '2025-01-01T00:00:00.500Z'],
    // UTC: the DST switches of any local zone do not matter.
    ['2025-03-30T00:30:00.000Z', 'P1D', '2025-03-31T00:30:00.000Z'],
    ['2025-10-26T00:30:00.000Z', 'PT24H', '2025-10-27T00:30:00.000Z'],
  ])('%s + %s = %s', (from, iso, expected) => {
    expect(addIsoDuration(utc(from), iso).toISOString()).toBe(expected);
  });

  it('durations without years or months (added as plain milliseconds) give what the calendar arithmetic of luxon gives', () => {
    const unit = fc.constantFrom('W', 'D', 'H', 'M', 'S');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_102_444_800_000 }),
        fc.array(fc.tuple(unit, fc.integer({ min: 1, max: 500 })), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        (fromMs, parts, fraction) => {
          const date = parts
            .filter(([u]) => u === 'W' || u === 'D')
            .map(([u, n]) => `${n}${u}`)
            .join('');
          const time = parts
            .filter(([u]) => u !== 'W' && u !== 'D')
            .map(([u, n]) => `${n}${u}`)
            .join('');
          const iso = `P${date}${time || fraction ? 'T' : ''}${time}${fraction ? '0.25S' : ''}`;
          if (!isValidIsoDuration(iso)) return;
          const expected = DateTime.fromMillis(fromMs, { zone: 'utc' })
            .plus(Duration.fromISO(iso))
            .toJSDate();
          expect(addIsoDuration(new Date(fromMs), iso).toISOString()).toBe(expected.toISOString());
        },
      ),
      { numRuns: 500 },
    );
  });

  it('does not mutate its argument', () => {
    const from = utc('2025-01-31T00:00:00.000Z');
    addIsoDuration(from, 'P1M');
    expect(from.toISOString()).toBe('2025-01-31T00:00:00.000Z');
  });

  it('throws a RangeError for an invalid duration or date, or a result past the Date range', () => {
    expect(() => addIsoDuration(utc('2025-01-01T00:00:00Z'), 'P0D')).toThrow(RangeError);
    expect(() => addIsoDuration(utc('2025-01-01T00:00:00Z'), 'nope')).toThrow(RangeError);
    expect(() => addIsoDuration(new Date(NaN), 'P1D')).toThrow(RangeError);
    expect(() => addIsoDuration(utc('2025-01-01T00:00:00Z'), 'P274000Y')).toThrow(RangeError);
  });
});
