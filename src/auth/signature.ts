/**
 * Request signature v1 of the public interface (docs/public-api.md#signature-v1). Dependency-free (only
 * `node:crypto`) so that client developers can copy this file as it is.
 *
 *   canonical = METHOD \n path-with-query \n timestamp \n nonce \n hex(SHA-256(raw body))
 *   signature = lowercase hex(HMAC-SHA256(signing secret, canonical))
 *
 * `\n` is a single line feed; the method is upper case; the path is exactly what goes on the
 * request line (`/api/public/v1/me/subscriptions?history=true`, no scheme or host, not
 * re-encoded); the timestamp is Unix seconds as decimal digits; an empty body is hashed as
 * the empty string (`e3b0c442...b855`).
 *
 * Example, secret `ss_example`, `GET /api/public/v1/me`, timestamp `1767225600`, nonce
 * `n0nce-0000000001`, no body; the canonical string is
 *
 *   GET
 *   /api/public/v1/me
 *   1767225600
 *   n0nce-0000000001
 *   e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../common/crypto/sha256';

export const SIGNATURE_HEADERS = {
  timestamp: 'X-Service-Timestamp',
  nonce: 'X-Service-Nonce',
  signature: 'X-Service-Signature',
} as const;

/** A timestamp further than this from the server's clock, either way, is `SIGNATURE_EXPIRED`. */
export const SIGNATURE_WINDOW_SECONDS = 300;

/** 16 to 64 characters of `A-Za-z0-9_-`. */
export const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;

/** Decimal Unix seconds (no sign, no fraction). */
export const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;

/** 32 bytes as hex; upper case is tolerated on input, clients send lower case. */
export const SIGNATURE_PATTERN = /^[0-9a-fA-F]{64}$/;

export const sha256HexOf = (body: Buffer | string): string => sha256Hex(body);

/** The string that is signed. */
export function canonicalString(
  method: string,
  pathWithQuery: string,
  timestamp: string | number,
  nonce: string,
  rawBody: Buffer | string = '',
): string {
  return [method.toUpperCase(), pathWithQuery, String(timestamp), nonce, sha256HexOf(rawBody)].join('\n');
}

/** Lowercase hex HMAC-SHA256 of the canonical string with the key's signing secret. */
export function sign(
  secret: string,
  method: string,
  pathWithQuery: string,
  timestamp: string | number,
  nonce: string,
  rawBody: Buffer | string = '',
): string {
  return createHmac('sha256', secret)
    .update(canonicalString(method, pathWithQuery, timestamp, nonce, rawBody))
    .digest('hex');
}

/** Constant-time comparison of a presented signature with the expected one (both hex). */
export function signaturesMatch(expectedHex: string, presentedHex: string): boolean {
  if (!SIGNATURE_PATTERN.test(presentedHex) || !SIGNATURE_PATTERN.test(expectedHex)) return false;
  return timingSafeEqual(Buffer.from(expectedHex, 'hex'), Buffer.from(presentedHex, 'hex'));
}

/** The three headers a client adds to a request, ready to merge into its header object. */
export function signatureHeaders(
  secret: string,
  method: string,
  pathWithQuery: string,
  rawBody: Buffer | string = '',
  options: { timestamp?: number; nonce: string },
): Record<string, string> {
  const timestamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  return {
    [SIGNATURE_HEADERS.timestamp]: timestamp,
    [SIGNATURE_HEADERS.nonce]: options.nonce,
    [SIGNATURE_HEADERS.signature]: sign(secret, method, pathWithQuery, timestamp, options.nonce, rawBody),
  };
}
