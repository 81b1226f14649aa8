import { randomBytes, randomInt, randomUUID } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const BASE32_LOWER = 'abcdefghijklmnopqrstuvwxyz234567';

/** `length` characters from `alphabet`, each drawn uniformly from a cryptographic source. */
export function randomString(alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

export const randomBase62 = (length: number) => randomString(BASE62, length);
export const randomBase32Lower = (length: number) => randomString(BASE32_LOWER, length);

/** `BASE32_LOWER`'s characters in code-point order: a number written with them sorts as text as it does as a number. */
const BASE32_LOWER_SORTED = '234567abcdefghijklmnopqrstuvwxyz';
/** Characters of the time: 50 bits of milliseconds since 1970, enough for more than 35,000 years. */
const TIME_CHARACTERS = 10;

/**
 * `length` characters of `BASE32_LOWER` (at least 16) that sort as text in the order they were
 * made, to a millisecond: the first ten are the time `now` in milliseconds, the rest are drawn at
 * random. A key made this way goes to the right-hand end of its B-tree index, where the pages are
 * already in memory, instead of to a random page of all of it, which a large table reads from
 * disk and writes to the write-ahead log whole after every checkpoint.
 */
export function timeOrderedBase32Lower(length: number, now: number = Date.now()): string {
  if (length < TIME_CHARACTERS + 6) throw new RangeError(`a time-ordered id needs at least 16 characters`);
  let time = '';
  for (let i = 0, t = now; i < TIME_CHARACTERS; i++, t = Math.floor(t / 32))
    time = BASE32_LOWER_SORTED[t % 32] + time;
  return time + randomString(BASE32_LOWER, length - TIME_CHARACTERS);
}

/**
 * A version 7 UUID (RFC 9562): 48 bits of milliseconds since 1970, then random bits, so that ids
 * made one after the other sort in that order. Made from Node's `randomUUID` (a version 4 UUID
 * drawn from a pooled random source) with its first 48 bits and its version replaced: about a quarter
 * of the time of the `uuid` package's `v7`, which draws each id's random bytes on its own
 * (docs/benchmarks.md#measurements-behind-decisions).
 */
export function timeOrderedUuid(now: number = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  // xxxxxxxx-xxxx-4xxx-…: the random bits after the version digit, the variant bits included, stay
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}

/** An opaque random token (URL-safe), for customer sessions. */
export const randomToken = (bytes = 32) => randomBytes(bytes).toString('base64url');
