import { randomBytes } from 'node:crypto';
import { validateEnv } from './env';

describe('USAGE_RETENTION_MONTHS', () => {
  const base = {
    DATABASE_URL: 'postgres://x@localhost/db',
    SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };

  it('unset keeps the whole ledger; a whole number of months from 1 is taken', () => {
    expect(validateEnv(base).USAGE_RETENTION_MONTHS).toBeUndefined();
    expect(validateEnv({ ...base, USAGE_RETENTION_MONTHS: '' }).USAGE_RETENTION_MONTHS).toBeUndefined();
    expect(validateEnv({ ...base, USAGE_RETENTION_MONTHS: '13' }).USAGE_RETENTION_MONTHS).toBe(13);
  });

  it('refuses 0, fractions, words and more than 1200 at start', () => {
    for (const value of ['0', '-1', '1.5', 'twelve', '1201'])
      expect(() => validateEnv({ ...base, USAGE_RETENTION_MONTHS: value })).toThrow(/USAGE_RETENTION_MONTHS/);
  });
});
