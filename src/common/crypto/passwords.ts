import * as bcrypt from 'bcrypt';
import { sha256 } from './sha256';

/** bcrypt reads at most this many bytes of its input and ignores the rest. */
export const BCRYPT_MAX_BYTES = 72;

/**
 * What bcrypt is given for a password: the password itself up to 72 bytes; a longer one (the
 * contract allows 128 characters, up to 512 bytes of UTF-8) as the base64 of its SHA-256, 44
 * ASCII characters, so that every character of it counts (two passwords sharing their first 72
 * bytes would otherwise both open the account).
 */
export function bcryptInput(password: string): string {
  return Buffer.byteLength(password, 'utf8') > BCRYPT_MAX_BYTES
    ? sha256(password).toString('base64')
    : password;
}

export function hashPassword(password: string, cost: number): Promise<string> {
  return bcrypt.hash(bcryptInput(password), cost);
}

/**
 * Whether `password` opens `hash`. A long password whose hash was made before the reduction above
 * (from its first 72 bytes) is still accepted; the second comparison runs for every long
 * password, matching or not, so the time taken tells nothing.
 */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const input = bcryptInput(password);
  const [current, earlier] = await Promise.all([
    bcrypt.compare(input, hash),
    input === password ? false : bcrypt.compare(password, hash),
  ]);
  return current || earlier;
}
