import { timeOrderedBase32Lower } from './random';

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
