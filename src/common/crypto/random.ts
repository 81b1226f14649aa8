import { randomBytes, randomInt } from 'node:crypto';

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

/** An opaque random token (URL-safe), for customer sessions. */
export const randomToken = (bytes = 32) => randomBytes(bytes).toString('base64url');
