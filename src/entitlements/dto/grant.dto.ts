import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  isISO8601,
  IsNumber,
  IsOptional,
  IsString,
  Length,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
  ValidationArguments,
} from 'class-validator';
import { MAX_INT4, PageQueryDto, toNumber } from '../../common/http/pagination';
import { decimalPlaces, MaxDecimalPlaces, OptionalNotNull, QueryBoolean } from '../../common/http/validators';
import { isValidIsoDuration } from '../../common/time/duration';
import { EntitlementView, FeatureRefDto, OverrideView } from './entitlement.dto';

/** The largest grant amount and override limit (in the feature's units). */
export const MAX_GRANT_AMOUNT = 1_000_000_000_000;
export const MIN_INT4 = -MAX_INT4 - 1;
export const GRANT_STATUSES = ['voided', 'expired', 'scheduled', 'exhausted', 'active'] as const;
export type GrantStatusName = (typeof GRANT_STATUSES)[number];
export const OVERRIDE_MODES = ['set', 'deny'] as const;
export const METADATA_MAX_KEYS = 20;
export const METADATA_KEY_MAX = 40;
export const METADATA_VALUE_MAX = 500;

/** A date-time with its time and a `Z` or an offset: an instant, never a local time or a bare date. */
const INSTANT_PATTERN = /^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:?\d\d)$/i;

export function isInstant(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length <= 40 &&
    INSTANT_PATTERN.test(value) &&
    isISO8601(value, { strict: true, strictSeparator: true }) &&
    Number.isFinite(Date.parse(value))
  );
}

/** An ISO 8601 date-time with `Z` or an offset; `nullable`: null passes too. */
function IsInstant(nullable = false) {
  return ValidateBy({
    name: 'isInstant',
    validator: {
      validate: (value: unknown) => (nullable && value === null) || isInstant(value),
      defaultMessage: (args?: ValidationArguments) =>
        `${args!.property} must be an ISO 8601 date-time with Z or an offset, such as 2026-01-31T00:00:00.000Z${nullable ? ', or null' : ''}`,
    },
  });
}

/** Greater than 0. */
const Positive = () =>
  ValidateBy({
    name: 'positive',
    validator: {
      validate: (v: unknown) => typeof v === 'number' && v > 0,
      defaultMessage: (args?: ValidationArguments) => `${args!.property} must be greater than 0`,
    },
  });

/** At most 20 keys of 1 to 40 characters, each with a string of at most 500. */
const IsMetadata = () =>
  ValidateBy({
    name: 'isMetadata',
    validator: {
      validate: (v: unknown) => {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
        const entries = Object.entries(v);
        return (
          entries.length <= METADATA_MAX_KEYS &&
          entries.every(
            ([key, value]) =>
              key.length >= 1 &&
              key.length <= METADATA_KEY_MAX &&
              typeof value === 'string' &&
              value.length <= METADATA_VALUE_MAX,
          )
        );
      },
      defaultMessage: () =>
        `metadata must be an object of at most ${METADATA_MAX_KEYS} keys of 1 to ${METADATA_KEY_MAX} characters, each with a string of at most ${METADATA_VALUE_MAX} characters`,
    },
  });

/** Refused with `mode: "deny"`, even as null: a deny has no limit, period or priority. */
const NotWithDeny = () =>
  ValidateBy({
    name: 'notWithDeny',
    validator: {
      validate: (_: unknown, args?: ValidationArguments) =>
        (args!.object as { mode?: unknown }).mode !== 'deny',
      defaultMessage: (args?: ValidationArguments) =>
        `${args!.property} is refused with mode "deny" (even as null)`,
    },
  });

/** `check` on the value, unless it is null (when `nullable`) or the override is a deny (refused by `NotWithDeny`). */
function OverrideValue(
  name: string,
  nullable: boolean,
  check: (v: unknown) => boolean,
  message: (property: string) => string,
) {
  return ValidateBy({
    name,
    validator: {
      validate: (v: unknown, args?: ValidationArguments) =>
        (args!.object as { mode?: unknown }).mode === 'deny' || (nullable && v === null) || check(v),
      defaultMessage: (args?: ValidationArguments) => message(args!.property),
    },
  });
}

const isLimit = (v: unknown) =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_GRANT_AMOUNT && decimalPlaces(v) <= 6;
const isResetInterval = (v: unknown) =>
  typeof v === 'string' && v.length <= 32 && isValidIsoDuration(v) && /^[^.,]*$/.test(v);
const isInt4 = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= MIN_INT4 && v <= MAX_INT4;

const REASON = { minLength: 1, maxLength: 500 };

export class CreateGrantDto extends FeatureRefDto {
  @ApiProperty({
    example: 500,
    exclusiveMinimum: true,
    minimum: 0,
    maximum: MAX_GRANT_AMOUNT,
    description: "What the grant gives, in the feature's unit: greater than 0, at most 6 decimal places.",
  })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Positive()
  @Max(MAX_GRANT_AMOUNT)
  @MaxDecimalPlaces(6)
  amount: number;

  @ApiPropertyOptional({
    example: '2026-02-01T00:00:00.000Z',
    format: 'date-time',
    maxLength: 40,
    description:
      'When the grant takes effect (ISO 8601 with `Z` or an offset); absent: its creation. A later one makes it `scheduled`.',
  })
  @OptionalNotNull()
  @IsInstant()
  effectiveAt?: string;

  @ApiPropertyOptional({
    example: '2026-03-01T00:00:00.000Z',
    format: 'date-time',
    maxLength: 40,
    nullable: true,
    type: String,
    description: 'When the grant ends, later than now and than `effectiveAt`; null or absent: never.',
  })
  @IsOptional()
  @IsInstant(true)
  expiresAt?: string | null;

  @ApiPropertyOptional({
    example: 0,
    default: 0,
    minimum: MIN_INT4,
    maximum: MAX_INT4,
    format: 'int32',
    description: "On the quotas' scale: higher is consumed first.",
  })
  @OptionalNotNull()
  @IsInt()
  @Min(MIN_INT4)
  @Max(MAX_INT4)
  priority?: number;

  @ApiPropertyOptional({
    example: 'goodwill for the outage of 3 March',
    ...REASON,
    description: 'Why the grant is given, shown on it.',
  })
  @OptionalNotNull()
  @IsString()
  @Length(1, 500)
  reason?: string;

  @ApiPropertyOptional({
    example: { ticket: 'SUP-1234' },
    type: 'object',
    additionalProperties: { type: 'string', maxLength: METADATA_VALUE_MAX },
    maxProperties: METADATA_MAX_KEYS,
    description: `Your own strings: at most ${METADATA_MAX_KEYS} keys of 1 to ${METADATA_KEY_MAX} characters, values of at most ${METADATA_VALUE_MAX}. Default \`{}\`.`,
  })
  @OptionalNotNull()
  @IsMetadata()
  metadata?: Record<string, string>;
}

export class VoidGrantDto {
  @ApiPropertyOptional({ example: 'issued by mistake', ...REASON, description: 'Shown as `voidReason`.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 500)
  reason?: string;
}

export class GrantListQueryDto extends OmitType(PageQueryDto, ['search'] as const) {
  @ApiPropertyOptional({ example: 3, description: 'Only grants of this feature.' })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  featureId?: number;

  @ApiPropertyOptional({ enum: GRANT_STATUSES, description: 'Only grants with this status now.' })
  @IsOptional()
  @IsIn(GRANT_STATUSES, { message: `status must be one of: ${GRANT_STATUSES.join(', ')}` })
  status?: GrantStatusName;
}

export class DryRunQueryDto {
  @ApiPropertyOptional({
    default: false,
    description: 'Answer what the call would do (200, `dryRun: true`, `entitlementsAfter`), change nothing.',
  })
  @IsOptional()
  @QueryBoolean()
  @IsBoolean()
  dryRun: boolean = false;
}

export class SetOverrideDto {
  @ApiProperty({
    enum: OVERRIDE_MODES,
    example: 'set',
    description:
      "`deny`: not granted, whatever plans and grants say. `set`: granted; on a metered feature one bucket with `limit` replaces the plans' buckets (grants still add).",
  })
  @IsIn(OVERRIDE_MODES, { message: 'mode must be one of: set, deny' })
  mode: 'set' | 'deny';

  @ApiPropertyOptional({
    example: 5000,
    minimum: 0,
    maximum: MAX_GRANT_AMOUNT,
    nullable: true,
    type: Number,
    description:
      "`set` on a metered feature: required; the bucket's limit per period, at most 6 decimal places; null: unlimited. Refused (even as null) with `deny` or on a boolean feature.",
  })
  @ValidateIf((_: object, v: unknown) => v !== undefined)
  @NotWithDeny()
  @OverrideValue(
    'isLimit',
    true,
    isLimit,
    (p) => `${p} must be null or a number from 0 to ${MAX_GRANT_AMOUNT} with at most 6 decimal places`,
  )
  limit?: number | null;

  @ApiPropertyOptional({
    example: 'P1M',
    maxLength: 32,
    nullable: true,
    type: String,
    description:
      "ISO 8601 duration as on quotas; null: never resets. Absent: copied from the feature's first plan bucket (null when none). Refused (even as null) with `deny` or on a boolean feature.",
  })
  @ValidateIf((_: object, v: unknown) => v !== undefined)
  @NotWithDeny()
  @OverrideValue(
    'isResetInterval',
    true,
    isResetInterval,
    (p) => `${p} must be null or a positive ISO 8601 duration such as P1D, P1M or PT1H, without fractions`,
  )
  resetInterval?: string | null;

  @ApiPropertyOptional({
    example: 0,
    minimum: MIN_INT4,
    maximum: MAX_INT4,
    format: 'int32',
    description:
      "Absent: copied from the feature's first plan bucket (0 when none). Refused with `deny` or on a boolean feature.",
  })
  @ValidateIf((_: object, v: unknown) => v !== undefined)
  @NotWithDeny()
  @OverrideValue('isInt32', false, isInt4, (p) => `${p} must be an integer from ${MIN_INT4} to ${MAX_INT4}`)
  priority?: number;

  @ApiPropertyOptional({
    example: null,
    format: 'date-time',
    maxLength: 40,
    nullable: true,
    type: String,
    description: 'When the override ends, later than now; null or absent: until removed or replaced.',
  })
  @IsOptional()
  @IsInstant(true)
  expiresAt?: string | null;

  @ApiPropertyOptional({ example: 'enterprise trial', ...REASON, description: 'Why, shown on the override.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 500)
  reason?: string;
}

// ---- answers ----

export class GrantView {
  @ApiProperty({
    example: 7,
    nullable: true,
    type: 'integer',
    description: 'Identifier of the grant; `null` in a dry run, where no grant is created.',
  })
  id: number | null;
  @ApiProperty({ example: 12 }) customerId: number;
  @ApiProperty({ example: 3 }) featureId: number;
  @ApiProperty({ example: 500, description: 'always `used + remaining + forfeited`' }) amount: number;
  @ApiProperty({ example: 120, description: 'what records took, less what reversals gave back' })
  used: number;
  @ApiProperty({ example: 380, description: '`amount - used`; 0 once the grant has ended' })
  remaining: number;
  @ApiProperty({ example: 0, description: '0 until the grant ends (voided or expired), then what remained' })
  forfeited: number;
  @ApiProperty({ example: 0, description: "on the quotas' scale: higher is consumed first" })
  priority: number;
  @ApiProperty({
    example: '2026-02-01T00:00:00.000Z',
    description: 'when the grant takes effect: as given, or its creation',
  })
  effectiveAt: string;
  @ApiProperty({
    example: '2026-03-01T00:00:00.000Z',
    nullable: true,
    type: String,
    description: 'null: never',
  })
  expiresAt: string | null;
  @ApiProperty({
    enum: GRANT_STATUSES,
    example: 'active',
    description:
      'derived when read, the first that applies: `voided`, `expired`, `scheduled` (not yet in effect), `exhausted` (nothing remains), `active`',
  })
  status: GrantStatusName;
  @ApiProperty({
    example: 'goodwill for the outage of 3 March',
    nullable: true,
    type: String,
    description: 'as given; null when not',
  })
  reason: string | null;
  @ApiProperty({
    example: { ticket: 'SUP-1234' },
    type: 'object',
    additionalProperties: { type: 'string' },
    description: 'as given; `{}` when not',
  })
  metadata: Record<string, string>;
  @ApiProperty({ example: '2026-02-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({
    example: null,
    nullable: true,
    type: String,
    description: 'when it was voided; null: not voided',
  })
  voidedAt: string | null;
  @ApiProperty({
    example: null,
    nullable: true,
    type: String,
    description: "the void's `reason`; null when not given or not voided",
  })
  voidReason: string | null;
}

export class GrantResultView {
  @ApiProperty({ type: GrantView, description: 'the grant as it is after the call' }) grant: GrantView;
  @ApiPropertyOptional({ example: true, description: 'present (true) on a dry run' }) dryRun?: true;
  @ApiPropertyOptional({
    type: [EntitlementView],
    description:
      "dry run only: the customer's entitlements (every feature of the project) as they would be right after the call",
  })
  entitlementsAfter?: EntitlementView[];
}

export class OverrideResultView {
  @ApiProperty({
    type: OverrideView,
    description: 'the override set (PUT), or removed as it was (DELETE)',
  })
  override: OverrideView;
  @ApiPropertyOptional({ example: true, description: 'present (true) on a dry run' }) dryRun?: true;
  @ApiPropertyOptional({
    type: [EntitlementView],
    description:
      "dry run only: the customer's entitlements (every feature of the project) as they would be right after the call",
  })
  entitlementsAfter?: EntitlementView[];
}
