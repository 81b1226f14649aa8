import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { QueryBoolean } from '../../common/http/validators';
import { IsBoolean, IsOptional } from 'class-validator';

/** A window as returned by redemption and activation. */
export class SubscriptionView {
  @ApiProperty({ example: 41 }) id: number;
  @ApiProperty({ example: 3 }) planId: number;
  @ApiProperty({ example: 'Pro' }) planName: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) validFrom: string;
  @ApiProperty({
    example: '2026-01-31T00:00:00.000Z',
    nullable: true,
    type: String,
    description: 'null: permanent',
  })
  validTo: string | null;
  @ApiProperty({
    example: false,
    description: 'A trial window: at most one per customer and plan group, worth 0 in every later grant.',
  })
  trial: boolean;
}

/** A window as listed for a customer, with its group and where it came from. */
export class CustomerSubscriptionView extends SubscriptionView {
  @ApiProperty({ example: 'tier' }) group: string;
  @ApiProperty({ enum: ['active', 'cancelled'] }) status: 'active' | 'cancelled';
  @ApiProperty({ enum: ['signup', 'code', 'activation'] }) source: 'signup' | 'code' | 'activation';
  @ApiProperty({ example: null, nullable: true, type: Number }) codeId: number | null;
}

export class SubscriptionListQueryDto {
  @ApiPropertyOptional({
    default: false,
    description: 'Also list ended and cancelled windows, after the live ones.',
  })
  @IsOptional()
  @QueryBoolean()
  @IsBoolean()
  history: boolean = false;
}
