import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayUnique,
  IsArray,
  IsIn,
  IsInt,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { MAX_INT4, PageQueryDto } from '../../common/http/pagination';
import { FeatureView } from './feature.dto';
import { IsIsoDuration, IsTimeZone, MaxDecimalPlaces, OptionalNotNull } from '../../common/http/validators';
import { MAX_TIME_ZONE_LENGTH } from '../../common/time/time-zone';
import { RESET_ANCHORS, ResetAnchor, ThresholdsNeedLimit } from '../reset-rules';
import { SLUG_MESSAGE, SLUG_PATTERN } from './slug';

/** `numeric(14,2)`: twelve digits before the point. */
export const MAX_PLAN_VALUE = 999_999_999_999.99;
/** `numeric(20,4)` holds more, but a JSON number is exact only up to 2^53 - 1. */
export const MAX_QUOTA_LIMIT = Number.MAX_SAFE_INTEGER;

export class QuotaInputDto {
  @ApiProperty({ example: 1, description: 'A feature of the same project.' })
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  featureId: number;

  @ApiProperty({
    example: 1000,
    minimum: 0,
    nullable: true,
    type: Number,
    description: 'At least 0, at most 4 decimal places; `null`: unlimited.',
  })
  @ValidateIf((_: object, v: unknown) => v !== null)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(MAX_QUOTA_LIMIT)
  @MaxDecimalPlaces(4)
  limit: number | null;

  @ApiPropertyOptional({ example: 0, default: 0, description: 'Integer; higher is consumed first.' })
  @OptionalNotNull()
  @IsInt()
  @Min(-MAX_INT4 - 1)
  @Max(MAX_INT4)
  priority?: number;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'P1M',
    default: null,
    maxLength: 32,
    description:
      'ISO 8601 duration (`P1D`, `P1M`, `PT1H`, ...) without fractional components; `null` or absent: the quota never resets.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(32)
  @IsIsoDuration()
  @Matches(/^[^.,]*$/, { message: 'resetInterval must not have a fractional component' })
  resetInterval?: string | null;

  @ApiPropertyOptional({
    enum: RESET_ANCHORS,
    default: 'run',
    description:
      "`run`: periods of `resetInterval` from the start of the customer's run; `calendar`: periods start at the start of local calendar units (`resetInterval` one of `PT1M`, `PT1H`, `P1D`, `P1W`, `P1M`, `P3M`, `P6M`, `P1Y`).",
  })
  @OptionalNotNull()
  @IsIn(RESET_ANCHORS)
  resetAnchor?: ResetAnchor;

  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    nullable: true,
    minimum: 1,
    maximum: 31,
    default: null,
    example: null,
    description:
      "Only with `calendar` and `P1M`, `P3M` or `P6M`: the day of the month periods start on, the month's last day when it is shorter; `null`: the 1st.",
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(31)
  resetDayOfMonth?: number | null;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    maxLength: MAX_TIME_ZONE_LENGTH,
    default: null,
    example: null,
    description:
      "Only with `calendar`: the zone of the quota's periods, an IANA zone name in any letter case (`America/New_York`); `null`: the customer's `timeZone`, else the project's.",
  })
  @IsOptional()
  @IsTimeZone()
  resetTimeZone?: string | null;

  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'integer', format: 'int32', minimum: 1, maximum: 100 },
    default: [],
    maxItems: 10,
    example: [80, 100],
    description:
      'At most 10 distinct integers from 1 to 100: percents of `limit` whose crossing records `usage.threshold_crossed`; answered in ascending order. Must be empty when `limit` is `null`.',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(10)
  @IsInt({ each: true })
  @Min(1, { each: true })
  @Max(100, { each: true })
  @ArrayUnique()
  @ThresholdsNeedLimit()
  thresholds?: number[];
}

export class CreatePlanDto {
  @ApiProperty({
    example: 'pro-monthly',
    pattern: SLUG_PATTERN.source,
    description: 'Unique within the project.',
  })
  @IsString()
  @Matches(SLUG_PATTERN, { message: SLUG_MESSAGE })
  slug: string;

  @ApiProperty({ example: 'Pro (monthly)', minLength: 1, maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiProperty({
    example: 9.99,
    minimum: 0,
    maximum: MAX_PLAN_VALUE,
    description: 'Face value, at most 2 decimal places; 0 makes a free plan. Cannot be changed later.',
  })
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  @Max(MAX_PLAN_VALUE)
  @MaxDecimalPlaces(2)
  value: number;

  @ApiProperty({
    example: 'pro',
    minLength: 1,
    maxLength: 64,
    description: 'Plans of one group form one renewal chain. Cannot be changed later.',
  })
  @IsString()
  @Length(1, 64)
  group: string;

  @ApiPropertyOptional({
    type: [QuotaInputDto],
    default: [],
    maxItems: 100,
    description: 'At most one quota per feature, and at most 100.',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(100)
  @IsObject({ each: true, message: 'each of quotas must be an object' })
  @ArrayUnique((q: QuotaInputDto) => q.featureId, {
    message: 'quotas must not hold two quotas for one featureId',
  })
  @ValidateNested({ each: true })
  @Type(() => QuotaInputDto)
  quotas?: QuotaInputDto[];
}

/**
 * `name`, `slug` and `quotas` (the complete list: a quota whose feature stays keeps its id and
 * createdAt) may change. `group` and `value` are accepted only when equal to the stored ones;
 * a different one is 409 PLAN_FIELD_IMMUTABLE. `null` is refused for every field.
 */
export class UpdatePlanDto extends PartialType(CreatePlanDto, { skipNullProperties: false }) {}

/** The plan list: `page`, `pageSize` and `search` on the plan's name or slug; plans come in id order (ascending). */
export class PlanListQueryDto extends PageQueryDto {
  @ApiPropertyOptional({
    maxLength: 128,
    description:
      'Case-insensitive substring of the plan name or slug. The list is ordered by plan id, ascending.',
  })
  declare search?: string;
}

/** A quota as the API answers it, with its feature embedded. */
export class QuotaView {
  @ApiProperty({ example: 1 }) id: number;
  @ApiProperty({ example: 1 }) planId: number;
  @ApiProperty({ example: 1 }) featureId: number;
  @ApiProperty({ example: 1000, nullable: true, type: Number, description: 'null: unlimited' })
  limit: number | null;
  @ApiProperty({ example: 0 }) priority: number;
  @ApiProperty({
    example: 'P1M',
    nullable: true,
    type: String,
    description: 'ISO 8601 duration; null: never resets.',
  })
  resetInterval: string | null;
  @ApiProperty({
    enum: RESET_ANCHORS,
    example: 'run',
    description:
      "`run`: periods from the start of the customer's run; `calendar`: at the start of local calendar units.",
  })
  resetAnchor: ResetAnchor;
  @ApiProperty({
    example: null,
    nullable: true,
    type: 'integer',
    format: 'int32',
    minimum: 1,
    maximum: 31,
    description: 'null: the 1st (calendar) or none (run).',
  })
  resetDayOfMonth: number | null;
  @ApiProperty({
    example: null,
    nullable: true,
    type: String,
    description: "As sent; null: the customer's zone, else the project's.",
  })
  resetTimeZone: string | null;
  @ApiProperty({
    type: 'array',
    items: { type: 'integer', format: 'int32', minimum: 1, maximum: 100 },
    maxItems: 10,
    example: [80, 100],
    description: 'Percents of `limit`, ascending.',
  })
  thresholds: number[];
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
  @ApiProperty({ type: () => FeatureView }) feature: FeatureView;
}

/** A plan as the API answers it. */
export class PlanView {
  @ApiProperty({ example: 1 }) id: number;
  @ApiProperty({ example: 'pro-monthly' }) slug: string;
  @ApiProperty({ example: 'Pro (monthly)' }) name: string;
  @ApiProperty({ example: 'prj_k3v7q2m9x4t6b8n5c1zd' }) projectId: string;
  @ApiProperty({ example: 9.99 }) value: number;
  @ApiProperty({ example: 'pro' }) group: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
  @ApiProperty({ type: () => [QuotaView], description: 'In order of quota id.' }) quotas: QuotaView[];
}
