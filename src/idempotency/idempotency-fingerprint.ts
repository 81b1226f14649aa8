import { createHmac, hkdfSync } from 'node:crypto';

/**
 * `Idempotency-Key`: 1 to 255 printable ASCII characters, the space included.
 * Spaces around the value are not part of it: HTTP drops them before the value arrives.
 */
export const IDEMPOTENCY_KEY_FORMAT = /^[\x20-\x7E]{1,255}$/;

/**
 * JSON with the keys of every object sorted, so that `{"a":1,"b":2}` and `{"b":2,"a":1}` are
 * the same request. Array order is kept. `undefined` (a request without a body) is the empty
 * string, which no JSON text is, so "no body" and `{}` stay different requests.
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  return serialize(value);
}

function serialize(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    // Parsed JSON holds only strings, finite numbers, booleans and null here.
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value))
    return `[${value.map((item) => serialize(item === undefined ? null : item)).join(',')}]`;
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${serialize(record[key])}`);
  return `{${members.join(',')}}`;
}

/**
 * The key of the fingerprints, derived from SECRET_ENCRYPTION_KEY (HKDF-SHA-256, its own label):
 * the same on every replica, and never the encryption key itself.
 */
export function fingerprintKey(base64Secret: string): Buffer {
  return Buffer.from(
    hkdfSync(
      'sha256',
      Buffer.from(base64Secret, 'base64'),
      Buffer.alloc(0),
      'idempotency-fingerprint v1',
      32,
    ),
  );
}

/**
 * HMAC-SHA-256 (hex, 64 characters) of the method, the path with its query string and the
 * canonical JSON body: what makes two requests "the same request" for one key. Keyed, because a
 * body may hold a password: a plain hash stored for 24 hours beside the rest of the request would
 * let whoever reads the table try passwords at hash speed instead of bcrypt's.
 */
export function requestFingerprint(
  key: Buffer,
  method: string,
  pathWithQuery: string,
  body: unknown,
): string {
  return createHmac('sha256', key)
    .update(`${method.toUpperCase()}\n${pathWithQuery}\n${canonicalJson(body)}`)
    .digest('hex');
}
