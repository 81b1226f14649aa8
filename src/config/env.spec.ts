import { randomBytes } from 'node:crypto';
import { validateEnv } from './env';

const base = {
  DATABASE_URL: 'postgres://x@localhost/db',
  SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
};

describe('USAGE_RETENTION_MONTHS', () => {
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

describe('DB_POOL_IDLE_MS', () => {
  it('keeps unused connections 5 minutes unless told otherwise', () => {
    expect(validateEnv(base).DB_POOL_IDLE_MS).toBe(300_000);
    expect(validateEnv({ ...base, DB_POOL_IDLE_MS: '1000' }).DB_POOL_IDLE_MS).toBe(1000);
  });

  it('refuses less than a second, more than an hour, fractions and words at start', () => {
    for (const value of ['999', '0', '3600001', '1500.5', 'long'])
      expect(() => validateEnv({ ...base, DB_POOL_IDLE_MS: value })).toThrow(/DB_POOL_IDLE_MS/);
  });
});
