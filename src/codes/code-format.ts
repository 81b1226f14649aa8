import { randomBytes } from 'node:crypto';

/**
 * Redeemable code format (docs/api-guide.md#codes): 16 characters of Crockford base32 (80 random bits
 * from a cryptographic source), shown in four groups of four, `7KQ2-M9XD-4TRB-C1ZP`.
 * The database keeps the normalised form: 16 upper-case characters, no dashes.
 * Pure functions, no framework.
 */
export const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const CODE_LENGTH = 16;
/** Random bytes per code: 80 bits, 5 per character. */
const CODE_BYTES = 10;

/** A normalised code: exactly 16 characters of the alphabet. */
const NORMALISED = /^[0-9A-HJKMNP-TV-Z]{16}$/;
/** Characters of the alphabet only (any length): a fragment of a code. */
const FRAGMENT = /^[0-9A-HJKMNP-TV-Z]+$/;
/** What a person may type around the characters: spaces (any white space) and dashes. */
const SEPARATORS = /[\s-]+/g;
/** Longer input cannot be a code; refuse it before any work. */
const MAX_INPUT_LENGTH = 64;

/** 10 bytes from `offset` read as 16 groups of 5 bits, most significant first (80 bits → 16 characters). */
export function encodeCode(bytes: Uint8Array, offset = 0): string {
  let out = '';
  let buffer = 0;
  let bits = 0;
  for (let i = offset; i < offset + CODE_BYTES; i++) {
    buffer = ((buffer << 8) | bytes[i]) & 0xfff; // never more than 12 live bits
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += CODE_ALPHABET[(buffer >>> bits) & 31];
    }
  }
  return out;
}

/** A fresh code, normalised: 80 random bits from `crypto.randomBytes(10)`. */
export function generateCode(): string {
  return encodeCode(randomBytes(CODE_BYTES), 0);
}

/**
 * `count` fresh codes from one `crypto.randomBytes(10 * count)` call (each code still holds
 * 80 bits of its own); a batch of 10,000 then costs one system call instead of 10,000.
 * Codes may repeat in theory (1 in 2^80 per pair); the database's unique index decides.
 */
export function generateCodes(count: number): string[] {
  const bytes = randomBytes(CODE_BYTES * count);
  const out = new Array<string>(count);
  for (let i = 0; i < count; i++) out[i] = encodeCode(bytes, i * CODE_BYTES);
  return out;
}

/** `7KQ2M9XD4TRBC1ZP` → `7KQ2-M9XD-4TRB-C1ZP`. */
export function formatCode(normalised: string): string {
  return normalised.match(/.{1,4}/g)?.join('-') ?? '';
}

/** Upper case, separators removed, `O` read as `0`, `I` and `L` as `1`. */
function canonicalise(input: string): string {
  return input.replace(SEPARATORS, '').toUpperCase().replace(/O/g, '0').replace(/[IL]/g, '1');
}

/**
 * What a person typed → the stored form, or `null` when it cannot be a code. Case, spaces and
 * dashes are ignored; `O` reads as `0`, `I` and `L` as `1`; `U` is not in the alphabet.
 */
export function normaliseCode(input: string): string | null {
  if (typeof input !== 'string' || input.length > MAX_INPUT_LENGTH) return null;
  const value = canonicalise(input);
  return NORMALISED.test(value) ? value : null;
}

/**
 * A search term read like a code fragment (`m9xd-4t` → `M9XD4T`), for a substring match on
 * the stored codes; `null` when the term holds a character no code can contain.
 */
export function normaliseCodeFragment(input: string): string | null {
  if (typeof input !== 'string') return null;
  const value = canonicalise(input);
  return value.length <= CODE_LENGTH && FRAGMENT.test(value) ? value : null;
}

/** A campaign code's string as the caller may give it (docs/api-guide.md#campaign-codes). */
export const CAMPAIGN_CODE_PATTERN = /^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/;
/** Characters of a generated campaign code (shown `XXXX-XXXX-XXXX`). */
const CAMPAIGN_CODE_LENGTH = 12;

/**
 * The key under which a campaign code is looked up: the normalisation of batch codes (case,
 * spaces and dashes ignored, `O` read as `0`, `I` and `L` as `1`) without their length and
 * alphabet, so that `launch5o`, `1AUNCH-50` and `LAUNCH50` are one key. `null` when the input
 * cannot be a code.
 */
export function codeKey(input: string): string | null {
  if (typeof input !== 'string' || input.length > MAX_INPUT_LENGTH) return null;
  const value = canonicalise(input);
  return value.length > 0 && value.length <= 32 && /^[0-9A-Z]+$/.test(value) ? value : null;
}

/** A fresh campaign code as shown: 12 Crockford base32 characters in groups of four (60 random bits). */
export function generateCampaignCode(): string {
  const bytes = randomBytes(CAMPAIGN_CODE_LENGTH);
  let out = '';
  // 256 is a multiple of 32: every character is equally likely
  for (const byte of bytes) out += CODE_ALPHABET[byte & 31];
  return formatCode(out);
}
