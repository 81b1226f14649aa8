import { leadsOf } from './entitlements.repository';

describe('leadsOf: which load of a batch reads the state the others share', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 10, 1, 0, 0, s));
  const guess = { periods: [], overages: [] };

  it('a load alone leads itself', () => {
    expect(leadsOf(['a', 'b', 'c'], [{ at: at(1) }, { at: at(2) }, { at: at(3) }])).toEqual([0, 1, 2]);
  });

  it('loads of one key share the one with the earliest instant, the first of equal instants', () => {
    const loads = [{ at: at(5) }, { at: at(2) }, { at: at(9) }, { at: at(2) }, { at: at(1) }];
    expect(leadsOf(['a', 'a', 'b', 'a', 'b'], loads)).toEqual([1, 1, 4, 1, 4]);
  });

  it('loads of one key with different guesses of sums read their states apart', () => {
    const other = { periods: [], overages: [] };
    const loads = [{ at: at(1), guess }, { at: at(2), guess: other }, { at: at(3), guess }, { at: at(0) }];
    expect(leadsOf(['a', 'a', 'a', 'a'], loads)).toEqual([0, 1, 0, 3]);
  });
});
