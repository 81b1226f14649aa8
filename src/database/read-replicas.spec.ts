import { QueryFailedError } from 'typeorm';
import { validateEnv } from '../config/env';
import { isUnavailable, lsnValue } from './read-replicas';

describe('read replicas: pure parts', () => {
  it('WAL positions compare as numbers across the slash', () => {
    expect(lsnValue('0/16B3748') < lsnValue('0/16B3749')).toBe(true);
    expect(lsnValue('0/FFFFFFFF') < lsnValue('1/0')).toBe(true);
    expect(lsnValue('1A/0')).toBe(0x1an << 32n);
  });

  it('only "the server cannot answer now" sends a read back to the primary, never a fault of the query', () => {
    const pg = (code: string, message = 'x') =>
      new QueryFailedError('SELECT 1', [], Object.assign(new Error(message), { code }));
    expect(isUnavailable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      true,
    );
    expect(isUnavailable(pg('57P01'))).toBe(true); // admin_shutdown
    expect(isUnavailable(pg('40001'))).toBe(true); // canceled by a conflict with recovery
    expect(isUnavailable(pg('08006'))).toBe(true);
    expect(isUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isUnavailable(pg('42P01'))).toBe(false); // undefined_table
    expect(isUnavailable(pg('22P02'))).toBe(false); // invalid input
    expect(isUnavailable(new Error('boom'))).toBe(false);
  });

  it('DATABASE_READ_URL takes one or more postgres URLs; the lag bound must cover two checks', () => {
    const base = {
      DATABASE_URL: 'postgres://a/b',
      SECRET_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
    };
    expect(
      validateEnv({ ...base, DATABASE_READ_URL: 'postgres://r1/b, postgresql://r2:5433/b' })
        .DATABASE_READ_URL,
    ).toBe('postgres://r1/b, postgresql://r2:5433/b');
    expect(() => validateEnv({ ...base, DATABASE_READ_URL: 'postgres://r1/b,mysql://r2/b' })).toThrow(
      /DATABASE_READ_URL/,
    );
    expect(() => validateEnv({ ...base, DATABASE_READ_URL: 'postgres://r1/b,' })).toThrow(
      /DATABASE_READ_URL/,
    );
    expect(() =>
      validateEnv({
        ...base,
        DATABASE_READ_URL: 'postgres://r/b',
        DB_READ_MAX_LAG_MS: '1000',
        DB_READ_CHECK_INTERVAL_MS: '800',
      }),
    ).toThrow(/DB_READ_MAX_LAG_MS/);
    expect(() => validateEnv({ ...base, DATABASE_DIRECT_URL: 'http://x' })).toThrow(/DATABASE_DIRECT_URL/);
  });
});
