import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  buildMessage,
  IsArray,
  IsBoolean,
  IsIn,
  IsObject,
  Length,
  Matches,
  ValidateNested,
  IsInt,
  IsISO8601,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  ValidateIf,
} from 'class-validator';
import { MAX_INT4, PageQueryDto, toNumber } from '../../common/http/pagination';
import { IsIsoDuration } from '../../common/http/validators';

export const MAX_BATCH_SIZE = 10_000;

export const CODE_STATUSES = [
  'available',
  'redeemed',
  'revoked',
  'expired',
  'exhausted',
  'scheduled',
] as const;
export const CODE_KINDS = ['batch', 'campaign'] as const;
export const MAX_PER_CUSTOMER_LIMIT = 1_000;
const CAMPAIGN_CODE_PATTERN = /^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$/;
export type CodeStatus = (typeof CODE_STATUSES)[number];

/** An ISO 8601 date or timestamp; a timestamp must name its offset (`Z` or `+02:00`). */
const DATE_OR_ZONED_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/i;

/** A point in time later than now (checked when the request is validated). */
const IsFutureTimestamp = () =>
  ValidateBy({
    name: 'isFutureTimestamp',
    validator: {
      validate: (value: unknown) => {
        if (typeof value !== 'string' || !DATE_OR_ZONED_TIMESTAMP.test(value)) return false;
        const time = new Date(value).getTime();
        return Number.isFinite(time) && time > Date.now();
      },
      defaultMessage: buildMessage(
        () =>
          '$property must be a future ISO 8601 date or timestamp with an offset, such as 2030-01-01T00:00:00Z',
      ),
    },
  });

/** Optional, but when it is sent it must be a value (`null` is refused, not read as absent). */
const IsOptionalNotNull = () => ValidateIf((_object: object, value: unknown) => value !== undefined);

/** An ISO 8601 date or timestamp with an offset (not necessarily in the future). */
const IsDateOrZonedTimestamp = () =>
  ValidateBy({
    name: 'isDateOrZonedTimestamp',
    validator: {
      validate: (value: unknown) =>
        typeof value === 'string' &&
        DATE_OR_ZONED_TIMESTAMP.test(value) &&
        Number.isFinite(new Date(value).getTime()),
      defaultMessage: buildMessage(
        () => '$property must be an ISO 8601 date or timestamp with an offset, such as 2030-01-01T00:00:00Z',
      ),
    },
  });

/**
 * A field of one kind of code only: sent with the other kind, it is an unknown field (a batch
 * takes no campaign fields, a campaign no `count`).
 */
const OnlyFor = (kind: 'batch' | 'campaign') =>
  ValidateBy({
    name: 'onlyForKind',
    validator: {
      validate: (value: unknown, args) =>
        value === undefined || ((args?.object as { kind?: string }).kind ?? 'batch') === kind,
      defaultMessage: buildMessage(() => '$property is not a known field'),
    },
  });

/**
 * A campaign field that may be `null` (read as absent) in a campaign; in a batch even `null`
 * runs the validators, so that `OnlyFor` names it as an unknown field.
 */
const OptionalInCampaign = () =>
  ValidateIf(
    (object: { kind?: string }, value: unknown) =>
      value !== undefined && (value !== null || (object.kind ?? 'batch') !== 'campaign'),
  );

/** Who may redeem a campaign code. */
export class CodeEligibilityDto {
  @ApiPropertyOptional({
    default: false,
    description: "Only customers that have never held the group of the code's plan.",
  })
  @IsOptionalNotNull()
  @IsBoolean()
  newCustomersOnly?: boolean;

  @ApiPropertyOptional({
    type: [String],
    maxItems: 20,
    default: [],
    example: ['pro'],
    description:
      'Customers that have held any of these plan groups may not redeem (kept in order, duplicates dropped).',
  })
  @IsOptionalNotNull()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  @Length(1, 64, { each: true })
  notIfHeldPlanGroups?: string[];
}

export class CreateCodeBatchDto {
  @ApiPropertyOptional({
    enum: CODE_KINDS,
    default: 'batch',
    description: '`batch`: single-use codes; `campaign`: one code that many customers redeem.',
  })
  @IsOptionalNotNull()
  @IsIn(CODE_KINDS)
  kind?: 'batch' | 'campaign';

  @ApiPropertyOptional({
    example: 'LAUNCH-50',
    nullable: true,
    type: String,
    minLength: 3,
    maxLength: 32,
    description:
      'Campaign only: the code (letters, digits and single dashes, shown in upper case); absent or null: generated, `XXXX-XXXX-XXXX`.',
  })
  @OnlyFor('campaign')
  @OptionalInCampaign()
  @IsString()
  @Length(3, 32)
  @Matches(CAMPAIGN_CODE_PATTERN, { message: 'code may hold only letters, digits and single dashes' })
  code?: string | null;

  @ApiProperty({ example: 12, description: 'A plan of the project.' })
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  planId: number;

  @ApiPropertyOptional({
    example: 'P30D',
    nullable: true,
    type: String,
    maxLength: 32,
    description: 'ISO 8601 duration granted by each code; absent or null: permanent.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  @IsIsoDuration()
  duration?: string | null;

  @ApiPropertyOptional({
    example: 100,
    default: 1,
    minimum: 1,
    maximum: MAX_BATCH_SIZE,
    description: 'How many codes to make.',
  })
  @OnlyFor('batch')
  @IsOptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(MAX_BATCH_SIZE)
  count?: number;

  @ApiPropertyOptional({ default: false, description: 'Campaign only: a trial code (not available yet).' })
  @OnlyFor('campaign')
  @IsOptionalNotNull()
  @IsBoolean()
  trial?: boolean;

  @ApiPropertyOptional({
    example: 1000,
    nullable: true,
    type: Number,
    minimum: 1,
    maximum: MAX_INT4,
    description: 'Campaign only: the most successful redemptions; absent or null: no cap.',
  })
  @OnlyFor('campaign')
  @OptionalInCampaign()
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  maxRedemptions?: number | null;

  @ApiPropertyOptional({
    default: 1,
    minimum: 1,
    maximum: MAX_PER_CUSTOMER_LIMIT,
    description: 'Campaign only: the most redemptions by one customer.',
  })
  @OnlyFor('campaign')
  @IsOptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(MAX_PER_CUSTOMER_LIMIT)
  perCustomerLimit?: number;

  @ApiPropertyOptional({
    example: '2030-01-01T00:00:00.000Z',
    nullable: true,
    type: String,
    maxLength: 64,
    description: 'Campaign only: before this instant the code cannot be redeemed. Absent or null: at once.',
  })
  @OnlyFor('campaign')
  @OptionalInCampaign()
  @IsString()
  @MaxLength(64)
  @IsISO8601({ strict: true })
  @IsDateOrZonedTimestamp()
  startsAt?: string | null;

  @ApiPropertyOptional({ type: CodeEligibilityDto, description: 'Campaign only: who may redeem.' })
  @OnlyFor('campaign')
  @IsOptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => CodeEligibilityDto)
  eligibility?: CodeEligibilityDto;

  @ApiPropertyOptional({
    example: '2030-01-01T00:00:00.000Z',
    nullable: true,
    type: String,
    maxLength: 64,
    description:
      'After this instant the codes can no longer be redeemed; must be in the future. Absent or null: never.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsISO8601({ strict: true })
  @IsFutureTimestamp()
  expiresAt?: string | null;

  @ApiPropertyOptional({ example: 'Spring campaign', nullable: true, type: String, maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  note?: string | null;
}

/** `GET /codes`: page, pageSize, search (a code fragment or the note) and filters. */
export class ListCodesQueryDto extends PageQueryDto {
  @ApiPropertyOptional({
    enum: CODE_STATUSES,
    description: '`expired` means available with `expiresAt` passed.',
  })
  @IsOptional()
  @IsIn(CODE_STATUSES)
  status?: CodeStatus;

  @ApiPropertyOptional({ example: 12 })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  planId?: number;

  @ApiPropertyOptional({ example: 3 })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  batchId?: number;

  @ApiPropertyOptional({ enum: CODE_KINDS, description: 'Only codes of this kind.' })
  @IsOptional()
  @IsIn(CODE_KINDS)
  kind?: 'batch' | 'campaign';
}

/** `PATCH /codes/:codeId`: the fields of a campaign code that may change (docs/api-guide.md#campaign-codes). */
export class UpdateCodeDto {
  @ApiPropertyOptional({ example: 12, description: 'Until the first redemption only.' })
  @IsOptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  planId?: number;

  @ApiPropertyOptional({
    example: 'P30D',
    nullable: true,
    type: String,
    maxLength: 32,
    description: 'Until the first redemption only; null: permanent.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  @IsIsoDuration()
  duration?: string | null;

  @ApiPropertyOptional({ description: 'Until the first redemption only.' })
  @IsOptionalNotNull()
  @IsBoolean()
  trial?: boolean;

  @ApiPropertyOptional({
    example: '2030-01-01T00:00:00.000Z',
    nullable: true,
    type: String,
    maxLength: 64,
    description: 'Until the first redemption only; null: at once.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsISO8601({ strict: true })
  @IsDateOrZonedTimestamp()
  startsAt?: string | null;

  @ApiPropertyOptional({
    example: '2030-01-01T00:00:00.000Z',
    nullable: true,
    type: String,
    maxLength: 64,
    description: 'Must be in the future and after `startsAt`; null: never.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsISO8601({ strict: true })
  @IsFutureTimestamp()
  expiresAt?: string | null;

  @ApiPropertyOptional({
    example: 1000,
    nullable: true,
    type: Number,
    minimum: 1,
    maximum: MAX_INT4,
    description: 'null, or not below `redemptionCount`.',
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  maxRedemptions?: number | null;

  @ApiPropertyOptional({
    minimum: 1,
    maximum: MAX_PER_CUSTOMER_LIMIT,
    description: 'The most redemptions by one customer.',
  })
  @IsOptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(MAX_PER_CUSTOMER_LIMIT)
  perCustomerLimit?: number;

  @ApiPropertyOptional({ type: CodeEligibilityDto, description: 'Replaced whole.' })
  @IsOptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => CodeEligibilityDto)
  eligibility?: CodeEligibilityDto;

  @ApiPropertyOptional({ example: 'Launch week', nullable: true, type: String, maxLength: 500 })
  @IsOptional()
  @IsString()
  @MaxLength(500)
  note?: string | null;
}

/** `GET /codes/:codeId/redemptions`: the page and a customer filter. */
export class ListCodeRedemptionsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ example: 7, description: 'Only the redemptions of this customer.' })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  customerId?: number;
}

export class CodeEligibilityView {
  @ApiProperty({ example: false, description: 'only customers that have never held the group of the plan' })
  newCustomersOnly: boolean;
  @ApiProperty({
    example: ['pro'],
    type: [String],
    description: 'customers that have held one of these groups may not redeem',
  })
  notIfHeldPlanGroups: string[];
}

export class ExportCodesQueryDto {
  @ApiProperty({ example: 3, description: 'The batch to export.' })
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  batchId: number;
}

export class CodeView {
  @ApiProperty({ example: 1 }) id: number;
  @ApiProperty({ enum: CODE_KINDS, example: 'batch' }) kind: 'batch' | 'campaign';
  @ApiProperty({ example: '7KQ2-M9XD-4TRB-C1ZP' }) code: string;
  @ApiProperty({ example: 12 }) planId: number;
  @ApiProperty({ example: 'Pro' }) planName: string;
  @ApiProperty({ example: 'P30D', nullable: true, type: String, description: 'null: permanent' }) duration:
    string | null;
  @ApiProperty({ example: false }) permanent: boolean;
  @ApiProperty({ enum: CODE_STATUSES, example: 'available' }) status: CodeStatus;
  @ApiPropertyOptional({ example: false, description: 'Campaign codes only.' }) trial?: boolean;
  @ApiProperty({ example: 3, nullable: true, type: Number, description: 'null for a campaign code' })
  batchId: number | null;
  @ApiProperty({ example: 'Spring campaign', nullable: true, type: String }) note: string | null;
  @ApiPropertyOptional({ example: null, nullable: true, type: String, description: 'Campaign codes only.' })
  startsAt?: string | null;
  @ApiProperty({ example: '2030-01-01T00:00:00.000Z', nullable: true, type: String }) expiresAt:
    string | null;
  @ApiPropertyOptional({
    example: 1000,
    nullable: true,
    type: Number,
    description: 'Campaign codes only; null: no cap.',
  })
  maxRedemptions?: number | null;
  @ApiPropertyOptional({ example: 1, description: 'Campaign codes only.' }) perCustomerLimit?: number;
  @ApiPropertyOptional({ type: CodeEligibilityView, description: 'Campaign codes only.' })
  eligibility?: CodeEligibilityView;
  @ApiPropertyOptional({ example: 0, description: 'Campaign codes only: successful redemptions.' })
  redemptionCount?: number;
  @ApiPropertyOptional({
    example: 1000,
    nullable: true,
    type: Number,
    description: 'Campaign codes only: `maxRedemptions - redemptionCount`; null without a cap.',
  })
  remainingRedemptions?: number | null;
  @ApiProperty({ example: null, nullable: true, type: String }) redeemedAt: string | null;
  @ApiProperty({ example: null, nullable: true, type: Number }) redeemedByCustomerId: number | null;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
}

export class CodeBatchView {
  @ApiProperty({ example: 3 }) batchId: number;
  @ApiProperty({ example: 12 }) planId: number;
  @ApiProperty({ example: 'Pro' }) planName: string;
  @ApiProperty({ example: 'P30D', nullable: true, type: String, description: 'null: permanent' }) duration:
    string | null;
  @ApiProperty({ example: false }) permanent: boolean;
  @ApiProperty({ example: 100 }) count: number;
  @ApiProperty({ example: null, nullable: true, type: String }) expiresAt: string | null;
  @ApiProperty({ example: 'Spring campaign', nullable: true, type: String }) note: string | null;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({
    example: ['7KQ2-M9XD-4TRB-C1ZP'],
    type: [String],
    description: 'Every code of the batch, in plaintext.',
  })
  codes: string[];
}

export class CodeRedemptionCustomerView {
  @ApiProperty({ example: 7 }) id: number;
  @ApiProperty({ example: 'ada_lovelace' }) username: string;
}

export class CodeRedemptionWindowView {
  @ApiProperty({ example: 31 }) id: number;
  @ApiProperty({ example: 12 }) planId: number;
  @ApiProperty({ example: 'Pro' }) planName: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) validFrom: string;
  @ApiProperty({ example: '2026-01-31T00:00:00.000Z', nullable: true, type: String }) validTo: string | null;
}

/** Who redeemed a code, when, and the windows it granted (as they are now). */
export class CodeRedemptionView {
  @ApiProperty({ example: 5, description: "A batch code's one redemption has the code's id." }) id: number;
  @ApiProperty({ example: 1 }) codeId: number;
  @ApiProperty({
    type: CodeRedemptionCustomerView,
    nullable: true,
    description: 'null once the customer is deleted',
  })
  customer: CodeRedemptionCustomerView | null;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z', description: "the grant's instant" })
  redeemedAt: string;
  @ApiProperty({
    type: [CodeRedemptionWindowView],
    description: 'the windows it granted, as they are now; none once the customer is deleted',
  })
  windows: CodeRedemptionWindowView[];
}
