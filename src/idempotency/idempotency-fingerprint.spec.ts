import { createHash, randomBytes } from 'node:crypto';
import {
  canonicalJson,
  fingerprintKey,
  IDEMPOTENCY_KEY_FORMAT,
  requestFingerprint,
} from './idempotency-fingerprint';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
    expect(canonicalJson([2, 1])).not.toBe(canonicalJson([1, 2]));
  });

  it('tells "no body" from an empty object and escapes strings', () => {
    expect(canonicalJson(undefined)).toBe('');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson({ 'a"b': 'x\ny' })).toBe('{"a\\"b":"x\\ny"}');
  });
});

describe('requestFingerprint', () => {
  const secret = randomBytes(32).toString('base64');
  const key = fingerprintKey(secret);
  const fp = (method: string, path: string, body: unknown) => requestFingerprint(key, method, path, body);

  it('is 64 hex characters and changes with the method, the path, the query and the body', () => {
    const base = fp('POST', '/api/private/v1/customers', { username: 'someuser01' });
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(fp('post', '/api/private/v1/customers', { username: 'someuser01' })).toBe(base);
    expect(fp('PATCH', '/api/private/v1/customers', { username: 'someuser01' })).not.toBe(base);
    expect(fp('POST', '/api/private/v1/customers?x=1', { username: 'someuser01' })).not.toBe(base);
    expect(fp('POST', '/api/private/v1/customers', { username: 'someuser02' })).not.toBe(base);
    expect(fp('POST', '/api/private/v1/customers', undefined)).not.toBe(
      fp('POST', '/api/private/v1/customers', {}),
    );
  });

  it('is keyed: another secret gives another fingerprint, and none is the plain hash a password could be tried against', () => {
    const body = { username: 'someuser01', password: 'correct horse' };
    const base = fp('POST', '/api/private/v1/customers', body);
    expect(fingerprintKey(secret)).toEqual(key);
    expect(
      requestFingerprint(
        fingerprintKey(randomBytes(32).toString('base64')),
        'POST',
        '/api/private/v1/customers',
        body,
      ),
    ).not.toBe(base);
    const plain = createHash('sha256')
      .update(`POST\n/api/private/v1/customers\n${canonicalJson(body)}`)
      .digest('hex');
    expect(base).not.toBe(plain);
    expect(key.equals(Buffer.from(secret, 'base64'))).toBe(false);
  });
});

describe('IDEMPOTENCY_KEY_FORMAT', () => {
  it('accepts 1 to 255 printable ASCII characters, the space included', () => {
    for (const good of ['a', '!~'.repeat(127) + 'x', 'order 42 retry'])
      expect(IDEMPOTENCY_KEY_FORMAT.test(good)).toBe(true);
    for (const bad of ['', 'a'.repeat(256), 'tab\t', 'é', 'line\n', 'nul\0'])
      expect(IDEMPOTENCY_KEY_FORMAT.test(bad)).toBe(false);
  });
});
