import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  IsBoolean,
  IsDefined,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
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
import { PageQueryDto } from '../../common/http/pagination';
import { MaxDecimalPlaces, OptionalNotNull } from '../../common/http/validators';
import { SLUG_MESSAGE, SLUG_PATTERN } from '../../plans/dto/slug';
import {
  AllocationView,
  BalanceView,
  EVENT_ID_PATTERN,
  MAX_USAGE_AMOUNT,
  NotWith,
  UsageView,
} from './entitlement.dto';

/** A hold's id, a customer's or a feature's here: a positive integer JSON carries exactly. */
export const MAX_HOLD_ID = Number.MAX_SAFE_INTEGER;
/** A hold's `ttl` when none is given, and the longest one (in ms). */
export const DEFAULT_HOLD_TTL = 'PT15M';
export const MAX_HOLD_TTL_MS = 24 * 3_600_000;
export const HOLD_STATUSES = ['held', 'committed', 'released', 'expired'] as const;
export type HoldStatus = (typeof HOLD_STATUSES)[number];

/** `P[nD][T[nH][nM][nS]]`: whole numbers, upper-case designators, at least one number. */
const TTL_PATTERN = /^P(?:(\d{1,9})D)?(?:T(?=\d)(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,9})S)?)?$/;

/** A `ttl` in milliseconds; undefined when it is not one the rules take (longer than 0, at most 24 hours). */
export function ttlMs(value: unknown): number | undefined {
  if (typeof value !== 'string' || value.length > 40) return undefined;
  const match = TTL_PATTERN.exec(value);
  if (!match || match.slice(1).every((part) => part === undefined)) return undefined;
  const [days, hours, minutes, seconds] = match.slice(1).map((part) => Number(part ?? 0));
  const ms = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000;
  return ms > 0 && ms <= MAX_HOLD_TTL_MS ? ms : undefined;
}

const IsTtl = () =>
  ValidateBy({
    name: 'isTtl',
    validator: {
      validate: (value: unknown) => ttlMs(value) !== undefined,
      defaultMessage: () =>
        'ttl must be an ISO 8601 duration P[nD][T[nH][nM][nS]] of whole numbers, longer than 0 and at most 24 hours (PT15M, PT1H, P1D)',
    },
  });

/** Greater than 0, at most 6 decimals and 10^12: a hold's or a commit's amount. */
const Positive = () =>
  ValidateBy({
    name: 'positive',
    validator: {
      validate: (v: unknown) => typeof v === 'number' && v > 0,
      defaultMessage: (args?: ValidationArguments) => `${args!.property} must be greater than 0`,
    },
  });

const amountDoc = {
  example: 2000,
  exclusiveMinimum: true,
  minimum: 0,
  maximum: MAX_USAGE_AMOUNT,
};

/** An id up to 2^53 - 1 (an unknown one is not found, never refused as a value). */
const idDoc = (example: number, description: string) => ({
  example,
  type: 'integer' as const,
  format: 'int64',
  minimum: 1,
  maximum: MAX_HOLD_ID,
  description,
});

export class CreateHoldDto {
  @ApiPropertyOptional({ type: CustomerRefDto, description: 'The customer by identifier; or `customerId`.' })
  @ValidateIf((o: CreateHoldDto) => o.customerId === undefined || o.customer !== undefined)
  @IsDefined({ message: 'customer (or customerId) is required' })
  @NotWith('customerId')
  @IsObject()
  @ValidateNested()
  @Type(() => CustomerRefDto)
  customer?: CustomerRefDto;

  @ApiPropertyOptional(idDoc(12, 'Or `customer`.'))
  @ValidateIf((o: CreateHoldDto) => o.customerId !== undefined)
  @IsInt()
  @Min(1)
  @Max(MAX_HOLD_ID)
  customerId?: number;

  @ApiPropertyOptional({
    example: 'llm-tokens',
    pattern: SLUG_PATTERN.source,
    description: 'The feature by slug; or `featureId`.',
  })
  @ValidateIf((o: CreateHoldDto) => o.featureId === undefined || o.feature !== undefined)
  @IsDefined({ message: 'feature (or featureId) is required' })
  @NotWith('featureId')
  @IsString()
  @Matches(SLUG_PATTERN, { message: `feature: ${SLUG_MESSAGE}` })
  feature?: string;

  @ApiPropertyOptional(idDoc(3, 'Or `feature`.'))
  @ValidateIf((o: CreateHoldDto) => o.featureId !== undefined)
  @IsInt()
  @Min(1)
  @Max(MAX_HOLD_ID)
  featureId?: number;

  @ApiProperty({
    ...amountDoc,
    description: "What to reserve, in the feature's unit: greater than 0, at most 6 decimal places.",
  })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Positive()
  @Max(MAX_USAGE_AMOUNT)
  @MaxDecimalPlaces(6)
  amount: number;

  @ApiProperty({
    example: 'completion-5f1c',
    minLength: 1,
    maxLength: 255,
    pattern: EVENT_ID_PATTERN.source,
    description:
      'Your id of this hold: unique per customer forever. The same id again answers the first hold (`replayed: true`).',
  })
  @IsString()
  @Matches(EVENT_ID_PATTERN, { message: 'holdId must be 1 to 255 printable ASCII characters' })
  holdId: string;

  @ApiPropertyOptional({
    example: 'PT5M',
    default: DEFAULT_HOLD_TTL,
    maxLength: 40,
    pattern: TTL_PATTERN.source,
    description:
      'How long the hold lasts: an ISO 8601 duration `P[nD][T[nH][nM][nS]]` of whole numbers, longer than 0 and at most 24 hours.',
  })
  @OptionalNotNull()
  @IsTtl()
  ttl?: string;

  @ApiPropertyOptional({
    default: false,
    description: 'Hold what remains and the rest as `overage` instead of refusing with QUOTA_EXCEEDED.',
  })
  @OptionalNotNull()
  @IsBoolean()
  allowOverage?: boolean;
}

export class CommitHoldDto {
  @ApiPropertyOptional({
    ...amountDoc,
    description:
      "What it cost, in the feature's unit (default: the hold's `amount`): less frees the rest, more takes the excess if it fits.",
  })
  @OptionalNotNull()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Positive()
  @Max(MAX_USAGE_AMOUNT)
  @MaxDecimalPlaces(6)
  amount?: number;

  @ApiPropertyOptional({
    example: 'completion-5f1c',
    minLength: 1,
    maxLength: 255,
    pattern: EVENT_ID_PATTERN.source,
    description:
      "The record's `eventId` (default: the `holdId`); one a record of the customer has is refused.",
  })
  @OptionalNotNull()
  @IsString()
  @Matches(EVENT_ID_PATTERN, { message: 'eventId must be 1 to 255 printable ASCII characters' })
  eventId?: string;

  @ApiPropertyOptional({
    description:
      "Record the excess over the held amount that no bucket can take as `overage` (default: the hold's `allowOverage`).",
  })
  @OptionalNotNull()
  @IsBoolean()
  allowOverage?: boolean;
}

/** A release takes no body, or `{}`. */
export class ReleaseHoldDto {}

/** A query id of up to 16 digits as a number (`toNumber` stops at 15). */
const toId = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^[0-9]{1,16}$/.test(value) ? Number(value) : value;

export class HoldListQueryDto extends OmitType(PageQueryDto, ['search'] as const) {
  @ApiPropertyOptional(idDoc(3, 'Only holds of this feature.'))
  @OptionalNotNull()
  @Transform(toId)
  @IsInt()
  @Min(1)
  @Max(MAX_HOLD_ID)
  featureId?: number;

  @ApiPropertyOptional({ enum: HOLD_STATUSES, description: 'Only holds with this status now.' })
  @OptionalNotNull()
  @IsIn(HOLD_STATUSES, { message: `status must be one of: ${HOLD_STATUSES.join(', ')}` })
  status?: HoldStatus;
}

// ---- answers ----

export class HoldAllocationView extends OmitType(AllocationView, ['restored', 'amount'] as const) {
  @ApiProperty({ example: 1500, description: 'what the hold holds in this bucket' }) amount: number;
}

export class HoldView {
  @ApiProperty(idDoc(51, 'Identifier of the hold.')) id: number;
  @ApiProperty({ example: 'completion-5f1c', description: 'your id of the hold' }) holdId: string;
  @ApiProperty({ example: 12 }) customerId: number;
  @ApiProperty({ example: 3 }) featureId: number;
  @ApiProperty({ example: 2000, description: 'the sum of the allocations plus `overage`' }) amount: number;
  @ApiProperty({ example: 0, description: 'the part held from no bucket (`allowOverage`)' }) overage: number;
  @ApiProperty({ example: false, description: "the hold's `allowOverage`" }) allowOverage: boolean;
  @ApiProperty({
    type: [HoldAllocationView],
    description:
      "what it holds in each bucket, in the order of consumption; `periodStart` the bucket's at `createdAt`",
  })
  allocations: HoldAllocationView[];
  @ApiProperty({
    enum: HOLD_STATUSES,
    example: 'held',
    description:
      'derived when read: `committed` and `released` are final; otherwise `expired` once `expiresAt` has passed, else `held`',
  })
  status: HoldStatus;
  @ApiProperty({ example: '2026-02-01T10:05:00.000Z', description: '`createdAt` + `ttl`' }) expiresAt: string;
  @ApiProperty({ example: '2026-02-01T10:00:00.000Z' }) createdAt: string;
  @ApiProperty({
    example: null,
    nullable: true,
    type: String,
    description:
      "the commit's `recordedAt`, the release's instant, or `expiresAt` for an expired hold; null while held",
  })
  endedAt: string | null;
  @ApiProperty({
    ...idDoc(101, "the commit's usage record; null otherwise"),
    nullable: true,
  })
  usageId: number | null;
}

export class HoldResultView {
  @ApiProperty({ type: HoldView, description: 'the hold as it is after the call' }) hold: HoldView;
  @ApiProperty({
    type: BalanceView,
    description: "the feature's balance right after the call (now, for a replay)",
  })
  balance: BalanceView;
  @ApiPropertyOptional({ example: true, description: 'present (true) when the holdId was already held' })
  replayed?: true;
}

export class HoldCommitView {
  @ApiProperty({ type: HoldView, description: 'the hold, committed' }) hold: HoldView;
  @ApiProperty({ type: UsageView, description: "the commit's usage record" }) usage: UsageView;
  @ApiProperty({
    type: BalanceView,
    description: "the feature's balance right after the commit (now, for a replay)",
  })
  balance: BalanceView;
  @ApiPropertyOptional({ example: true, description: 'present (true) when the hold was already committed' })
  replayed?: true;
}
