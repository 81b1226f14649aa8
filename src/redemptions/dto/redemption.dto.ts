import { ApiProperty, ApiPropertyOptional, OmitType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsDefined,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Max,
  MaxLength,
  Min,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { CustomerRefDto } from '../../customers/dto/customer.dto';
import { MAX_INT4 } from '../../common/http/pagination';
import { IsIsoDuration, QueryBoolean } from '../../common/http/validators';
import { BucketView, EntitlementView } from '../../entitlements/dto/entitlement.dto';
import { SubscriptionView } from '../../subscriptions/dto/subscription.dto';

export class RedeemCodeDto {
  @ApiProperty({
    example: '7KQ2-M9XD-4TRB-C1ZP',
    description: 'Case, spaces and dashes are ignored; O reads as 0, I and L as 1.',
  })
  @IsString()
  @Length(1, 64)
  code: string;

  @ApiProperty({
    type: CustomerRefDto,
    description: 'The target customer, by any identifier (type `username` included).',
  })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomerRefDto)
  customer: CustomerRefDto;

  @ApiPropertyOptional({
    default: false,
    description:
      'Create the customer if missing (also needs the project setting autoCreateCustomerAtRedemption).',
  })
  @IsOptional()
  @IsBoolean()
  autoCreate?: boolean;
}

export class ActivateDto {
  @ApiProperty({ type: CustomerRefDto })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomerRefDto)
  customer: CustomerRefDto;

  @ApiProperty({ example: 3, minimum: 1, maximum: MAX_INT4 })
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  planId: number;

  @ApiPropertyOptional({
    example: 'P30D',
    nullable: true,
    type: String,
    maxLength: 32,
    description: 'ISO 8601 duration; null or absent: permanent.',
  })
  @IsOptional()
  @ValidateIf((_, v) => v !== null)
  @MaxLength(32)
  @IsIsoDuration()
  duration?: string | null;

  @ApiPropertyOptional({ default: false })
  @IsOptional()
  @IsBoolean()
  autoCreate?: boolean;
}

export class DryRunQueryDto {
  @ApiPropertyOptional({ default: false, description: 'Answer what the call would do, change nothing.' })
  @IsOptional()
  @QueryBoolean()
  @IsBoolean()
  dryRun: boolean = false;
}

export class RedemptionCustomerView {
  @ApiProperty({
    example: 12,
    nullable: true,
    type: Number,
    description: 'null only in a dry run that would create the customer',
  })
  id: number | null;
  @ApiProperty({ example: 'ada_lovelace' }) username: string;
  @ApiProperty({ example: false, description: 'whether the customer was created by this call' })
  created: boolean;
}

export class WindowChangeView {
  @ApiProperty({
    example: 40,
    nullable: true,
    type: 'integer',
    description:
      'Identifier of the window; `null` in a dry run for a window that does not exist yet (one it would create, or any window of a customer it would create).',
  })
  id: number | null;
  @ApiProperty({ example: 2 }) planId: number;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) validFrom: string;
  @ApiProperty({ example: null, nullable: true, type: String }) validTo: string | null;
  @ApiProperty({ example: false, description: 'A trial window (worth 0 in every later grant).' })
  trial: boolean;
}

export class ChainChangesView {
  @ApiProperty({ type: [WindowChangeView], description: 'windows in effect that end now' })
  ended: WindowChangeView[];
  @ApiProperty({ type: [WindowChangeView], description: 'windows not yet started that are cancelled' })
  cancelled: WindowChangeView[];
  @ApiProperty({ type: [WindowChangeView], description: 'a permanent tail moved to start later' })
  moved: WindowChangeView[];
  @ApiProperty({ type: [WindowChangeView], description: 'new windows' }) created: WindowChangeView[];
}

/** A window of a redemption's answer: as `SubscriptionView`, with no id in a dry run. */
export class GrantedSubscriptionView extends OmitType(SubscriptionView, ['id'] as const) {
  @ApiProperty({
    example: 41,
    nullable: true,
    type: 'integer',
    description: 'Identifier of the window; `null` in a dry run, where no window is created.',
  })
  id: number | null;
}

/** A bucket of a dry run's `entitlementsAfter`: as `BucketView`, with no id for a window it would create. */
export class DryRunBucketView extends OmitType(BucketView, ['windowId'] as const) {
  @ApiProperty({
    example: 40,
    nullable: true,
    type: 'integer',
    description:
      "Identifier of the bucket's window; `null` for a window that does not exist yet (one the dry run would create, or any window of a customer it would create).",
  })
  windowId: number | null;
}

/** An entry of a dry run's `entitlementsAfter`: as `EntitlementView`, its buckets as `DryRunBucketView`. */
export class DryRunEntitlementView extends OmitType(EntitlementView, ['buckets'] as const) {
  @ApiProperty({ type: [DryRunBucketView] }) buckets: DryRunBucketView[];
}

/** A campaign code's counts, with this redemption (in a dry run: as they would be). */
export class CampaignRedemptionView {
  @ApiProperty({ example: 41 }) codeId: number;
  @ApiProperty({ example: 'LAUNCH-50', description: 'the code as shown' }) code: string;
  @ApiProperty({ example: false, description: 'whether it is a trial code' }) trial: boolean;
  @ApiProperty({ example: 17, description: "the code's successful redemptions, this one included" })
  redemptionCount: number;
  @ApiProperty({ example: 100, nullable: true, type: Number, description: 'the cap; null: none' })
  maxRedemptions: number | null;
  @ApiProperty({
    example: 83,
    nullable: true,
    type: Number,
    description: 'redemptions left under the cap; null: no cap',
  })
  remainingRedemptions: number | null;
  @ApiProperty({ example: 1, description: "the customer's redemptions of the code" })
  customerRedemptions: number;
  @ApiProperty({ example: 1, description: 'the most redemptions by one customer' }) perCustomerLimit: number;
}

export class RedemptionResult {
  @ApiProperty({ type: RedemptionCustomerView }) customer: RedemptionCustomerView;
  @ApiProperty({ type: [GrantedSubscriptionView], description: 'the windows created by the call' })
  subscriptions: GrantedSubscriptionView[];
  @ApiPropertyOptional({ example: true, description: 'present (true) on a dry run' }) dryRun?: true;
  @ApiPropertyOptional({
    type: ChainChangesView,
    description: 'dry run only: every change the call would make',
  })
  changes?: ChainChangesView;
  @ApiPropertyOptional({
    type: [DryRunEntitlementView],
    description:
      "dry run only: the customer's entitlements (every feature of the project) as they would be right after the grant",
  })
  entitlementsAfter?: DryRunEntitlementView[];
  @ApiPropertyOptional({ type: CampaignRedemptionView, description: 'a campaign code only: its counts' })
  campaign?: CampaignRedemptionView;
}
