import { DomainError } from '../common/errors/domain-error';
import { assertResetFields, QuotaResetInput } from './reset-rules';

/** The fields INVALID_RESET_ANCHOR names for `quotas`, or [] when they pass. */
function refused(quotas: QuotaResetInput[]): string[] {
  try {
    assertResetFields(quotas);
    return [];
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).code).toBe('INVALID_RESET_ANCHOR');
    return (error as DomainError).details!.map((d) => d.field);
  }
}

describe('assertResetFields', () => {
  it('passes run quotas and calendar quotas with a calendar interval', () => {
    expect(refused([{}, { resetInterval: 'P7D' }, { resetAnchor: 'run', resetInterval: null }])).toEqual([]);
    for (const resetInterval of ['PT1M', 'PT1H', 'P1D', 'P1W', 'P1M', 'P3M', 'P6M', 'P1Y'])
      expect(refused([{ resetAnchor: 'calendar', resetInterval, resetTimeZone: 'UTC' }])).toEqual([]);
    for (const resetInterval of ['P1M', 'P3M', 'P6M'])
      expect(refused([{ resetAnchor: 'calendar', resetInterval, resetDayOfMonth: 31 }])).toEqual([]);
  });

  it('names the interval of a calendar quota outside the list, null included', () => {
    for (const resetInterval of [undefined, null, 'P7D', 'P12M', 'PT2S', 'P1DT12H', 'p1d'])
      expect(refused([{}, { resetAnchor: 'calendar', resetInterval }])).toEqual(['quotas.1.resetInterval']);
  });

  it('names a day of the month with run or another interval, and a zone with run', () => {
    expect(refused([{ resetInterval: 'P1M', resetDayOfMonth: 1 }])).toEqual(['quotas.0.resetDayOfMonth']);
    expect(refused([{ resetAnchor: 'calendar', resetInterval: 'P1Y', resetDayOfMonth: 1 }])).toEqual([
      'quotas.0.resetDayOfMonth',
    ]);
    expect(refused([{ resetInterval: 'P1D', resetTimeZone: 'UTC' }])).toEqual(['quotas.0.resetTimeZone']);
    expect(refused([{ resetAnchor: 'calendar', resetInterval: 'P2D', resetDayOfMonth: 2 }])).toEqual([
      'quotas.0.resetInterval',
      'quotas.0.resetDayOfMonth',
    ]);
  });
});
