import { randomUUID } from 'node:crypto';
import { timeOrderedBase32Lower, timeOrderedUuid } from './random';

describe('timeOrderedBase32Lower', () => {
  it('writes lowercase base32 of the length asked', () => {
    for (const length of [16, 24, 40])
      expect(timeOrderedBase32Lower(length)).toMatch(new RegExp(`^[a-z2-7]{${length}}$`));
    expect(() => timeOrderedBase32Lower(15)).toThrow(RangeError);
  });

  it('sorts as text in the order of its times, whatever the random part', () => {
    const times = [0, 1, 31, 32, 1_000, 1_799_999_999_999, 1_800_000_000_000, 2 ** 50 - 1];
    const ids = times.map((t, i) => timeOrderedBase32Lower(24, t) + String(times.length - i));
    expect([...ids].sort()).toEqual(ids);
    // the same millisecond: the same ten characters first
    expect(timeOrderedBase32Lower(24, 1_000).slice(0, 10)).toBe(ids[4].slice(0, 10));
    expect(ids[0].slice(0, 10)).toBe('2222222222');
  });

  it('draws the rest at random', () => {
    const tails = new Set(Array.from({ length: 1_000 }, () => timeOrderedBase32Lower(24, 5).slice(10)));
    expect(tails.size).toBe(1_000);
  });
});

describe('timeOrderedUuid', () => {
  const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('writes the milliseconds first, so that later ids sort after earlier ones', () => {
    const at = Date.UTC(2026, 10, 29, 12, 0, 0, 123);
    const id = timeOrderedUuid(at);
    expect(id).toMatch(V7);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
    const ids = [0, 1, 255, 256, at, at + 1, 2 ** 48 - 1].map((t) => timeOrderedUuid(t));
    expect([...ids].sort()).toEqual(ids);
  });

  it('draws the rest at random', () => {
    const tails = new Set(Array.from({ length: 1_000 }, () => timeOrderedUuid(5).slice(15)));
    expect(tails.size).toBe(1_000);
    expect(randomUUID().slice(14, 15)).toBe('4'); // the digit replaced is the version's
  });
});
