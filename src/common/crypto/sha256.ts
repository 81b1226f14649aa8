import { createHash } from 'node:crypto';

/** SHA-256 of a string (UTF-8) or bytes: the one helper for keys, tokens, signed bodies and long passwords. */
export const sha256 = (value: string | Buffer): Buffer => createHash('sha256').update(value).digest();

/** `sha256` as lowercase hex (stored key and token hashes, the signature's body hash). */
export const sha256Hex = (value: string | Buffer): string => createHash('sha256').update(value).digest('hex');
