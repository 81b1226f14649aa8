import { Transform } from 'class-transformer';
import { ValidateBy, ValidateIf, ValidationOptions, buildMessage } from 'class-validator';
import { isValidIsoDuration } from '../time/duration';
import { isTimeZoneName } from '../time/time-zone';

// Shared class-validator decorators for request DTOs.

/**
 * May be left out, but when sent it must not be `null`: unlike `@IsOptional()`, a `null`
 * still runs the other validators (and fails them) instead of reaching a NOT NULL column.
 */
export const OptionalNotNull = () => ValidateIf((_: object, value: unknown) => value !== undefined);

/**
 * Decimal places of a number as written in JSON (`1.25` → 2, `1e-7` → 7, `1e21` → 0).
 * class-validator's `maxDecimalPlaces` crashes on exponent notation, hence this.
 */
export function decimalPlaces(value: number): number {
  const match = /^-?\d+(?:\.(\d+))?(?:e([+-]\d+))?$/i.exec(String(value));
  if (!match) return Number.POSITIVE_INFINITY;
  return Math.max(0, (match[1]?.length ?? 0) - Number(match[2] ?? 0));
}

/** A finite number with at most `places` decimal places. */
export function MaxDecimalPlaces(places: number, options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'maxDecimalPlaces',
      constraints: [places],
      validator: {
        validate: (value: unknown) =>
          typeof value === 'number' && Number.isFinite(value) && decimalPlaces(value) <= places,
        defaultMessage: buildMessage(
          (each) => `${each}$property must have at most $constraint1 decimal places`,
          options,
        ),
      },
    },
    options,
  );
}

/** An ISO 8601 duration such as `P1D`, `P1M`, `PT1H` (positive; rules in common/time/duration.ts). */
export function IsIsoDuration(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isIsoDuration',
      validator: {
        validate: (value: unknown) => isValidIsoDuration(value),
        defaultMessage: buildMessage(
          (each) => `${each}$property must be a positive ISO 8601 duration such as P1D, P1M or PT1H`,
          options,
        ),
      },
    },
    options,
  );
}

/** A query-string flag: `'true'` and `'false'` become booleans; anything else is left for `@IsBoolean()` to refuse. */
export const QueryBoolean = () =>
  Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value));

/** A zone name of the IANA database, any letter case, 1 to 64 characters, no UTC offset (common/time/time-zone.ts). */
export function IsTimeZone(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isTimeZone',
      validator: {
        validate: (value: unknown) => isTimeZoneName(value),
        defaultMessage: buildMessage(
          (each) =>
            `${each}$property must name a zone of the IANA time zone database, such as America/New_York or UTC`,
          options,
        ),
      },
    },
    options,
  );
}
