import { MAX_RETRY_WAIT_MS, nextRetryDelay, parseRetryAfter, parseSchedule } from './retry';

describe('webhook retries', () => {
  const spec = parseSchedule('5s,5m,30m,2h,5h,10h,10h')!;

  it('reads the schedule of the spec', () => {
    expect(spec).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(parseSchedule('5x')).toBeNull();
    expect(parseSchedule('')).toBeNull();
  });

  it('waits the scheduled time ±10 %, then gives up', () => {
    expect(nextRetryDelay(spec, 1, undefined, 0)).toBe(4_500);
    expect(nextRetryDelay(spec, 1, undefined, 0.999999)).toBeCloseTo(5_500, 0);
    expect(nextRetryDelay(spec, 2, undefined, 0.5)).toBe(300_000);
    expect(nextRetryDelay(spec, 7, undefined, 0.5)).toBe(36_000_000);
    expect(nextRetryDelay(spec, 8, undefined, 0.5)).toBeNull();
  });

  it('honours Retry-After (the larger wait, at most 24 hours)', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    expect(nextRetryDelay(spec, 1, parseRetryAfter('120', now), 0.5)).toBe(120_000);
    expect(nextRetryDelay(spec, 2, parseRetryAfter('1', now), 0.5)).toBe(300_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:10:00 GMT', now)).toBe(600_000);
    expect(nextRetryDelay(spec, 1, parseRetryAfter('999999', now), 0.5)).toBe(MAX_RETRY_WAIT_MS);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});
