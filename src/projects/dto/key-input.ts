import { ValidateBy, ValidationArguments } from 'class-validator';
import { ALL_SCOPES, SCOPE_NAMES } from '../../auth/scopes';

/** The names a key's `scopes` may hold. */
export const SCOPE_INPUTS: readonly string[] = [...SCOPE_NAMES, ALL_SCOPES];

/** Longest `scopes` list a request may send (duplicates are dropped, so it may exceed the names). */
export const MAX_SCOPE_ITEMS = 50;

/** What is wrong with a `scopes` value, or undefined when it is a valid list. */
export function scopeListProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return 'scopes must be a list of scope names, or ["*"]';
  if (value.length === 0) return 'scopes must name at least one scope, or be ["*"]';
  if (value.length > MAX_SCOPE_ITEMS) return `scopes must hold at most ${MAX_SCOPE_ITEMS} names`;
  const unknown = value.filter((v) => typeof v !== 'string' || !SCOPE_INPUTS.includes(v));
  if (unknown.length > 0)
    return `scopes holds unknown names (${unknown.map((v) => JSON.stringify(v)).join(', ')}); the names are ${SCOPE_INPUTS.join(', ')}`;
  if (value.includes(ALL_SCOPES) && value.some((v) => v !== ALL_SCOPES))
    return 'scopes must be ["*"] alone, or names without "*"';
  return undefined;
}

/**
 * A private key's `scopes`: a non-empty list of the table's names, or `["*"]` alone. With
 * `kindField`, a key of another kind than private may not have them at all.
 */
export function IsScopeList(kindField?: string) {
  const problem = (value: unknown, args?: ValidationArguments): string | undefined => {
    const kind = kindField ? (args?.object as Record<string, unknown>)[kindField] : 'private';
    if (kind === 'public') return 'scopes are for private keys only: a public key has none';
    return scopeListProblem(value);
  };
  return ValidateBy({
    name: 'isScopeList',
    validator: {
      validate: (value: unknown, args?: ValidationArguments) => problem(value, args) === undefined,
      defaultMessage: (args?: ValidationArguments) => problem(args?.value, args) ?? 'scopes is not valid',
    },
  });
}

/** A date (`2030-01-01`, UTC midnight) or a date-time with `Z` or an offset, seconds and fractions optional. */
const EXPIRY_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,9})?)?(Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d))?$/i;

/** The first instant of year 10000: a key's expiry must come before it. */
const YEAR_10000 = Date.UTC(10000, 0, 1);

export const MAX_EXPIRY_LENGTH = 40;

/** The instant an `expiresAt` input names, or undefined when it is not a date or a date-time with an offset. */
export function parseKeyExpiry(value: unknown): Date | undefined {
  if (typeof value !== 'string' || value.length > MAX_EXPIRY_LENGTH) return undefined;
  const text = value.toUpperCase();
  const m = EXPIRY_PATTERN.exec(text);
  if (!m) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // a day the month has (JavaScript would roll 2030-02-30 over into March)
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day)
    return undefined;
  const offset = m[7] && /^[+-]\d{4}$/.test(m[7]) ? `${m[7].slice(0, 3)}:${m[7].slice(3)}` : m[7];
  const instant = new Date(m[4] === undefined ? text : text.slice(0, text.length - m[7].length) + offset);
  return Number.isFinite(instant.getTime()) ? instant : undefined;
}

/** What is wrong with an `expiresAt` value (null allowed: never), or undefined. */
export function keyExpiryProblem(value: unknown, now = Date.now()): string | undefined {
  if (value === null) return undefined;
  const instant = parseKeyExpiry(value);
  if (!instant)
    return 'expiresAt must be an ISO 8601 date (UTC midnight) or a date-time with Z or an offset, such as 2030-01-01T00:00:00Z, or null';
  if (instant.getTime() <= now) return 'expiresAt must be later than now';
  if (instant.getTime() >= YEAR_10000) return 'expiresAt must be before the year 10000';
  return undefined;
}

/** A key's `expiresAt`: later than now, before the year 10000; null: never. */
export function IsKeyExpiry() {
  return ValidateBy({
    name: 'isKeyExpiry',
    validator: {
      validate: (value: unknown) => keyExpiryProblem(value) === undefined,
      defaultMessage: (args?: ValidationArguments) =>
        keyExpiryProblem(args?.value) ?? 'expiresAt must be later than now',
    },
  });
}
