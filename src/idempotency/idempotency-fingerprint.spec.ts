import { canonicalJson, IDEMPOTENCY_KEY_FORMAT, requestFingerprint } from './idempotency-fingerprint';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } })).toBe('{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
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
  it('is 64 hex characters and changes with the method, the path, the query and the body', () => {
    const base = requestFingerprint('POST', '/api/private/v1/customers', { username: 'someuser01' });
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(requestFingerprint('post', '/api/private/v1/customers', { username: 'someuser01' })).toBe(base);
    expect(requestFingerprint('PATCH', '/api/private/v1/customers', { username: 'someuser01' })).not.toBe(base);
    expect(requestFingerprint('POST', '/api/private/v1/customers?x=1', { username: 'someuser01' })).not.toBe(base);
    expect(requestFingerprint('POST', '/api/private/v1/customers', { username: 'someuser02' })).not.toBe(base);
    expect(requestFingerprint('POST', '/api/private/v1/customers', undefined)).not.toBe(requestFingerprint('POST', '/api/private/v1/customers', {}));
  });
});

describe('IDEMPOTENCY_KEY_FORMAT', () => {
  it('accepts 1 to 255 printable ASCII characters, the space included', () => {
    for (const good of ['a', '!~'.repeat(127) + 'x', 'order 42 retry']) expect(IDEMPOTENCY_KEY_FORMAT.test(good)).toBe(true);
    for (const bad of ['', 'a'.repeat(256), 'tab\t', 'é', 'line\n', 'nul\0']) expect(IDEMPOTENCY_KEY_FORMAT.test(bad)).toBe(false);
  });
});
