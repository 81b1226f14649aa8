import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsBoolean,
  IsDateString,
  IsDefined,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateIf,
  ValidateNested,
  ValidationArguments,
} from 'class-validator';
import { CustomerRefDto } from '../../customers/dto/customer.dto';
import { MAX_INT4, PageQueryDto, toNumber } from '../../common/http/pagination';
import { MaxDecimalPlaces } from '../../common/http/validators';
import { SLUG_MESSAGE, SLUG_PATTERN } from '../../plans/dto/slug';

/** The largest amount one record or check takes (in the feature's units). */
export const MAX_USAGE_AMOUNT = 1_000_000_000_000;
/** An event id: 1 to 255 characters of printable ASCII, space included (like Idempotency-Key). */
export const EVENT_ID_PATTERN = /^[\x20-\x7E]{1,255}$/;
export const MAX_BATCH = 100;

/** This property and `other` are not both given. */
export function NotWith(other: string) {
  return ValidateBy({
    name: 'notWith',
    constraints: [other],
    validator: {
      validate: (_: unknown, args?: ValidationArguments) =>
        (args!.object as Record<string, unknown>)[other] === undefined,
      defaultMessage: (args?: ValidationArguments) => `give either ${args!.property} or ${other}, not both`,
    },
  });
}

/** A feature by slug (`feature`) or by id (`featureId`), one of the two: the private and public checks share it. */
export class FeatureRefDto {
  @ApiPropertyOptional({
    example: 'api-calls',
    pattern: SLUG_PATTERN.source,
    description: 'The feature by slug; or `featureId`.',
  })
  @ValidateIf((o: FeatureRefDto) => o.featureId === undefined || o.feature !== undefined)
  @IsDefined({ message: 'feature (or featureId) is required' })
  @NotWith('featureId')
  @IsString()
  @Matches(SLUG_PATTERN, { message: `feature: ${SLUG_MESSAGE}` })
  feature?: string;

  @ApiPropertyOptional({ example: 3, minimum: 1, maximum: MAX_INT4, description: 'Or `feature`.' })
  @ValidateIf((o: FeatureRefDto) => o.featureId !== undefined)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  featureId?: number;
}

/** A customer named as in redemption (`customer`) or by `customerId`; a feature by slug or id. */
export class CustomerFeatureDto extends FeatureRefDto {
  @ApiPropertyOptional({ type: CustomerRefDto, description: 'The customer by identifier; or `customerId`.' })
  @ValidateIf((o: CustomerFeatureDto) => o.customerId === undefined || o.customer !== undefined)
  @IsDefined({ message: 'customer (or customerId) is required' })
  @NotWith('customerId')
  @IsObject()
  @ValidateNested()
  @Type(() => CustomerRefDto)
  customer?: CustomerRefDto;

  @ApiPropertyOptional({ example: 12, minimum: 1, maximum: MAX_INT4, description: 'Or `customer`.' })
  @ValidateIf((o: CustomerFeatureDto) => o.customerId !== undefined)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  customerId?: number;
}

/**
 * `?at=`: `YYYY-MM-DDTHH:mm:ss`, optionally `.` and 1 to 3 digits, then `Z` or `±HH:mm`; a real
 * date and time.
 */
const AT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?(?:Z|[+-]\d{2}:\d{2})$/;

/** Whether `value` is an instant `?at=` takes, a real date and time. */
export function isAtInstant(value: unknown): value is string {
  if (typeof value !== 'string' || !AT_PATTERN.test(value)) return false;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) return false;
  // a real date: the calendar fields survive a round trip (2027-02-30 does not)
  const [date, time] = value.split('T');
  const offset = /(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(time)!;
  const minutes = offset[1] ? (offset[1] === '-' ? -1 : 1) * (Number(offset[2]) * 60 + Number(offset[3])) : 0;
  const local = new Date(ms + minutes * 60_000).toISOString();
  return (
    local.slice(0, 10) === date && local.slice(11, 19) === time.slice(0, 8) && Math.abs(minutes) < 24 * 60
  );
}

/** `?at=` of the entitlement reads: answer as a call at that instant would (read only). */
export class AtQueryDto {
  @ApiPropertyOptional({
    example: '2027-03-14T12:00:00.000Z',
    format: 'date-time',
    maxLength: 29,
    description:
      "Answer as of this instant: windows in effect, periods, usage recorded in them so far (the ledger as it stands now). From the customer's `createdAt` to 2 years from now; with `Z` or an offset (`+` encoded as `%2B`).",
  })
  @IsOptional()
  @ValidateBy({
    name: 'isAtInstant',
    validator: {
      validate: isAtInstant,
      defaultMessage: (args?: ValidationArguments) =>
        `${args!.property} must be a date-time YYYY-MM-DDTHH:mm:ss[.sss] with Z or an offset ±HH:mm`,
    },
  })
  at?: string;
}

export class CheckDto extends CustomerFeatureDto {
  @ApiPropertyOptional({
    example: 1,
    default: 1,
    minimum: 0,
    description:
      'Amount to check; 0 asks "is it granted at all". At most 6 decimals; ignored for a boolean feature.',
  })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(MAX_USAGE_AMOUNT)
  @MaxDecimalPlaces(6)
  amount?: number;
}

/** The public check: the logged-in customer only, so no `customer` or `customerId` (refused, 400). */
export class PublicCheckDto extends FeatureRefDto {
  @ApiPropertyOptional({ example: 1, default: 1, minimum: 0, description: 'As in the private check.' })
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(MAX_USAGE_AMOUNT)
  @MaxDecimalPlaces(6)
  amount?: number;
}

export class UsageEventDto extends CustomerFeatureDto {
  @ApiProperty({
    example: 1,
    exclusiveMinimum: true,
    minimum: 0,
    maximum: MAX_USAGE_AMOUNT,
    description: "Greater than 0, at most 6 decimal places, in the feature's unit.",
  })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @ValidateBy({
    name: 'positive',
    validator: {
      validate: (v: unknown) => typeof v === 'number' && v > 0,
      defaultMessage: () => 'amount must be greater than 0',
    },
  })
  @Max(MAX_USAGE_AMOUNT)
  @MaxDecimalPlaces(6)
  amount: number;

  @ApiProperty({
    example: 'req_7f3a9c',
    minLength: 1,
    maxLength: 255,
    pattern: EVENT_ID_PATTERN.source,
    description:
      'Your id of this event: unique per customer forever. The same id again answers the first record (`replayed: true`).',
  })
  @IsString()
  @Matches(EVENT_ID_PATTERN, { message: 'eventId must be 1 to 255 printable ASCII characters' })
  eventId: string;

  @ApiPropertyOptional({
    default: false,
    description: 'Record the part no bucket can take as `overage` instead of refusing with QUOTA_EXCEEDED.',
  })
  @IsOptional()
  @IsBoolean()
  allowOverage?: boolean;
}

export class UsageBatchDto {
  @ApiProperty({
    type: [UsageEventDto],
    minItems: 1,
    maxItems: MAX_BATCH,
    description: 'Decided one by one, in order.',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH)
  @IsObject({ each: true, message: 'each of events must be an object' })
  @ValidateNested({ each: true })
  @Type(() => UsageEventDto)
  events: UsageEventDto[];
}

export class UsageListQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ example: 3, description: 'Only records of this feature.' })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  featureId?: number;

  @ApiPropertyOptional({
    example: '2026-01-01T00:00:00.000Z',
    description: 'Recorded at or after (inclusive).',
  })
  @IsOptional()
  @IsDateString({ strict: true })
  from?: string;

  @ApiPropertyOptional({ example: '2026-02-01T00:00:00.000Z', description: 'Recorded before (exclusive).' })
  @IsOptional()
  @IsDateString({ strict: true })
  to?: string;

  /** Not used by the ledger. */
  declare search?: string;
}

// ---- answers ----

export class FeatureSummaryView {
  @ApiProperty({ example: 3 }) id: number;
  @ApiProperty({ example: 'api-calls' }) slug: string;
  @ApiProperty({ example: 'API calls' }) name: string;
  @ApiProperty({ example: true }) metered: boolean;
  @ApiProperty({ example: 'call' }) unit: string;
}

export class BalanceView {
  @ApiProperty({ example: 1000, nullable: true, type: Number, description: 'null: unlimited' })
  limit: number | null;
  @ApiProperty({ example: 250 }) used: number;
  @ApiProperty({
    example: 0,
    description: 'what live usage holds hold, unavailable until committed, released or expired',
  })
  held: number;
  @ApiProperty({
    example: 750,
    nullable: true,
    type: Number,
    description: '`max(0, limit - used - held)`; null: unlimited',
  })
  remaining: number | null;
  @ApiProperty({ example: 0, description: 'overage recorded since the earliest current period start' })
  overage: number;
}

const nullableText = (example: string | null, description: string) => ({
  example,
  nullable: true,
  type: String,
  description,
});
const nullableNumber = (example: number | null, description: string) => ({
  example,
  nullable: true,
  type: Number,
  description,
});

export class BucketView extends BalanceView {
  @ApiProperty({
    enum: ['plan', 'override', 'grant'],
    example: 'plan',
    description: 'where the bucket comes from',
  })
  source: 'plan' | 'override' | 'grant';
  @ApiProperty(nullableText('tier', 'the plan group; null for an override or a grant')) group: string | null;
  @ApiProperty(nullableNumber(2, 'null for an override or a grant')) planId: number | null;
  @ApiProperty(nullableText('pro', 'null for an override or a grant')) planSlug: string | null;
  @ApiProperty(nullableNumber(5, 'null for an override or a grant')) quotaId: number | null;
  @ApiProperty(nullableNumber(null, "a grant's id; null otherwise")) grantId: number | null;
  @ApiProperty({ example: 0 }) priority: number;
  @ApiProperty({ example: '2026-01-31T00:00:00.000Z', description: "a grant's: its effectiveAt" })
  periodStart: string;
  @ApiProperty(nullableText('2026-02-28T00:00:00.000Z', 'null: never resets (always for a grant)'))
  periodEnd: string | null;
  @ApiProperty(nullableNumber(40, 'null for an override or a grant')) windowId: number | null;
  @ApiProperty(nullableText(null, "the bucket's window end; null: permanent, or an override or a grant"))
  windowValidTo: string | null;
  @ApiProperty(
    nullableText(
      null,
      "when the bucket ends: a plan bucket's windowValidTo, an override's or a grant's expiresAt; null: never",
    ),
  )
  expiresAt: string | null;
  @ApiProperty({
    enum: ['run', 'calendar'],
    nullable: true,
    example: 'run',
    description: "how the bucket's periods are laid out (the quota's `resetAnchor`); null for a grant",
  })
  resetAnchor: 'run' | 'calendar' | null;
  @ApiProperty(
    nullableText(
      'UTC',
      'the zone of the current period (its zone at `periodStart`): `UTC` for `run`; null for a grant',
    ),
  )
  timeZone: string | null;
}

export class OverrideView {
  @ApiProperty({ example: 12 }) customerId: number;
  @ApiProperty({ example: 3 }) featureId: number;
  @ApiProperty({ enum: ['set', 'deny'], example: 'set', description: '`set` or `deny`' }) mode:
    'set' | 'deny';
  @ApiProperty({
    example: 5000,
    nullable: true,
    type: Number,
    description: "the bucket's limit per period; null: unlimited, and for `deny` or a boolean feature",
  })
  limit: number | null;
  @ApiProperty({
    example: 0,
    nullable: true,
    type: 'integer',
    format: 'int32',
    minimum: -2147483648,
    maximum: 2147483647,
    description: 'null for `deny` or a boolean feature',
  })
  priority: number | null;
  @ApiProperty({
    example: 'P1M',
    nullable: true,
    type: String,
    description: 'null: never resets (and for `deny` or a boolean feature)',
  })
  resetInterval: string | null;
  @ApiProperty({
    enum: ['run', 'calendar'],
    nullable: true,
    example: 'run',
    description:
      "copied with resetInterval from the plan bucket's quota (`run` when the PUT names resetInterval or no plan bucket is in effect); null for `deny` or a boolean feature",
  })
  resetAnchor: 'run' | 'calendar' | null;
  @ApiProperty({
    example: null,
    nullable: true,
    type: 'integer',
    format: 'int32',
    minimum: 1,
    maximum: 31,
    description: "copied with resetInterval: a calendar month's day (null: the 1st, or none)",
  })
  resetDayOfMonth: number | null;
  @ApiProperty({
    example: null,
    nullable: true,
    type: String,
    description:
      "copied with resetInterval: a calendar bucket's own zone; null: the customer's, else the project's",
  })
  resetTimeZone: string | null;
  @ApiProperty({
    example: '2026-01-15T00:00:00.000Z',
    nullable: true,
    type: String,
    description:
      "the start of the bucket's periods (`anchor + k x resetInterval`), copied at the PUT; null for `deny` or a boolean feature",
  })
  anchor: string | null;
  @ApiProperty({ example: null, nullable: true, type: String, description: 'null: no end' }) expiresAt:
    string | null;
  @ApiProperty({
    example: 'enterprise trial',
    nullable: true,
    type: String,
    description: 'as given; null when not',
  })
  reason: string | null;
  @ApiProperty({ example: '2026-02-01T00:00:00.000Z', description: "this PUT's instant" }) createdAt: string;
}

export class EntitlementView {
  @ApiProperty({ type: FeatureSummaryView }) feature: FeatureSummaryView;
  @ApiProperty({ example: true }) granted: boolean;
  @ApiProperty({ type: BalanceView, nullable: true, description: 'null for a boolean feature' })
  balance: BalanceView | null;
  @ApiProperty({ type: [BucketView] }) buckets: BucketView[];
  @ApiProperty({ type: OverrideView, nullable: true, description: 'the override in effect; null: none' })
  override: OverrideView | null;
  @ApiProperty({ example: '2026-02-28T00:00:00.000Z', nullable: true, type: String }) resetsAt: string | null;
  @ApiProperty({
    example: null,
    nullable: true,
    type: String,
    description: 'null: permanent (or not granted)',
  })
  accessEndsAt: string | null;
  @ApiProperty({
    example: '2027-03-14T12:00:00.000Z',
    description: 'the instant answered for: `?at=`, or the time of the request',
  })
  at: string;
}

export class CheckView {
  @ApiProperty({ example: true }) allowed: boolean;
  @ApiProperty({
    example: null,
    nullable: true,
    enum: ['NOT_GRANTED', 'LIMIT_REACHED', 'CUSTOMER_DISABLED'],
    description: 'null when allowed',
  })
  reason: 'NOT_GRANTED' | 'LIMIT_REACHED' | 'CUSTOMER_DISABLED' | null;
  @ApiProperty({ type: FeatureSummaryView }) feature: FeatureSummaryView;
  @ApiProperty({
    example: 1,
    nullable: true,
    type: Number,
    description: 'the amount checked; null for a boolean feature',
  })
  requested: number | null;
  @ApiProperty({ type: BalanceView, nullable: true, description: 'null for a boolean feature' })
  balance: BalanceView | null;
  @ApiProperty({ type: [BucketView] }) buckets: BucketView[];
  @ApiProperty({ type: OverrideView, nullable: true, description: 'the override in effect; null: none' })
  override: OverrideView | null;
  @ApiProperty({ example: null, nullable: true, type: String }) resetsAt: string | null;
  @ApiProperty({ example: null, nullable: true, type: String }) accessEndsAt: string | null;
  @ApiProperty({
    example: '2027-03-14T12:00:00.000Z',
    description: 'the instant answered for: `?at=`, or the time of the request',
  })
  at: string;
}

export class AllocationView {
  @ApiProperty({
    enum: ['plan', 'override', 'grant'],
    example: 'plan',
    description: 'the bucket it was taken from: a plan group, the override, or a grant',
  })
  source: 'plan' | 'override' | 'grant';
  @ApiProperty(nullableText('tier', 'the plan group; null for an override or a grant')) group: string | null;
  @ApiProperty(
    nullableText('2026-01-31T00:00:00.000Z', "informational: the bucket's period start; null for a grant"),
  )
  periodStart: string | null;
  @ApiProperty(nullableNumber(null, "a grant's id; null otherwise")) grantId: number | null;
  @ApiProperty({ example: 1 }) amount: number;
  @ApiProperty({
    example: null,
    nullable: true,
    type: Boolean,
    description: 'once the record is reversed: whether this part came back; null while the record counts',
  })
  restored: boolean | null;
}

export class UsageView {
  @ApiProperty({ example: 101 }) id: number;
  @ApiProperty({ example: 'req_7f3a9c' }) eventId: string;
  @ApiProperty({ example: 12 }) customerId: number;
  @ApiProperty({ example: 3 }) featureId: number;
  @ApiProperty({ example: 1 }) amount: number;
  @ApiProperty({ example: 0 }) overage: number;
  @ApiProperty({ type: [AllocationView] }) allocations: AllocationView[];
  @ApiProperty({ example: '2026-02-01T10:00:00.000Z' }) recordedAt: string;
  @ApiProperty({ example: null, nullable: true, type: String }) reversedAt: string | null;
}

export class UsageResultView {
  @ApiProperty({ type: UsageView }) usage: UsageView;
  @ApiProperty({
    type: BalanceView,
    description: 'the balance of the feature after the record (now, for a replay)',
  })
  balance: BalanceView;
  @ApiPropertyOptional({ example: true, description: 'present (true) when the eventId was already recorded' })
  replayed?: true;
  @ApiPropertyOptional({
    example: 0,
    description: 'a reversal: the sum not given back (taken from grants that ended); 0 when everything was',
  })
  forfeited?: number;
}

export class BatchErrorView {
  @ApiProperty({ example: 'QUOTA_EXCEEDED' }) code: string;
  @ApiProperty({ example: 'The quota is exhausted.' }) message: string;
  @ApiPropertyOptional({ type: 'array', items: { type: 'object' } }) details?: object[];
}

export class BatchItemView {
  @ApiProperty({ example: 201, description: 'the HTTP status the single call would answer' }) status: number;
  @ApiPropertyOptional({ type: UsageView }) usage?: UsageView;
  @ApiPropertyOptional({ type: BalanceView }) balance?: BalanceView;
  @ApiPropertyOptional({ example: true }) replayed?: true;
  @ApiPropertyOptional({ type: BatchErrorView }) error?: BatchErrorView;
}

export class BatchResultView {
  @ApiProperty({ type: [BatchItemView], description: 'in the order of `events`' }) results: BatchItemView[];
}
