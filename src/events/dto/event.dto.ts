import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { toNumber } from '../../common/http/pagination';
import { EVENT_TYPES } from '../event-types';

export class ListEventsQueryDto {
  @ApiPropertyOptional({ default: 20, minimum: 1, maximum: 100 })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(100)
  limit: number = 20;

  @ApiPropertyOptional({ description: '`nextCursor` of the previous page.' })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Matches(/^[A-Za-z0-9_-]+$/, { message: 'cursor must be a nextCursor of a previous page' })
  cursor?: string;

  @ApiPropertyOptional({ enum: EVENT_TYPES })
  @IsOptional()
  @IsIn(EVENT_TYPES)
  type?: string;

  @ApiPropertyOptional({ description: 'Only the events naming this customer.' })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(2_147_483_647)
  customerId?: number;
}

export class EventView {
  @ApiProperty({ example: 'evt_abcdefghijklmnopqrstuvwx' }) id: string;
  @ApiProperty({ enum: EVENT_TYPES }) type: string;
  @ApiProperty() createdAt: string;
  @ApiProperty() projectId: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) data: Record<string, unknown>;
}

export class EventPageView {
  @ApiProperty({ type: [EventView] }) data: EventView[];
  @ApiProperty({ nullable: true, type: String, description: 'null on the last page' }) nextCursor:
    string | null;
}

export class DeliveryAttemptView {
  @ApiProperty() attemptedAt: string;
  @ApiProperty({ enum: ['delivered', 'failed'] }) outcome: string;
  @ApiProperty({ nullable: true, type: Number }) statusCode: number | null;
  @ApiProperty({ nullable: true, type: String }) error: string | null;
  @ApiProperty() durationMs: number;
}

export class DeliveryView {
  @ApiProperty() id: number;
  @ApiProperty() endpointId: string;
  @ApiProperty({ enum: ['pending', 'delivered', 'failed', 'skipped'] }) status: string;
  @ApiProperty({ nullable: true, type: String, description: 'When pending: the next attempt.' })
  nextAttemptAt: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty({ type: [DeliveryAttemptView] }) attempts: DeliveryAttemptView[];
}

export class RedeliveryView {
  @ApiProperty({ example: 1 }) deliveries: number;
}
