import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { PageQueryDto } from '../../common/http/pagination';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsString,
  Matches,
  MaxLength,
  MinLength,
} from 'class-validator';
import { OptionalNotNull } from '../../common/http/validators';
import { EVENT_TYPES } from '../event-types';

const URL_DOC =
  'https only, and not a loopback, private, link-local or metadata address (unless the service allows insecure URLs).';

export class CreateWebhookEndpointDto {
  @ApiProperty({ example: 'https://example.com/webhooks', maxLength: 2048, description: URL_DOC })
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  url: string;

  @ApiPropertyOptional({
    enum: EVENT_TYPES,
    isArray: true,
    maxItems: EVENT_TYPES.length,
    description: 'The types this endpoint receives; absent or empty: every type.',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(EVENT_TYPES.length)
  @IsIn(EVENT_TYPES, {
    each: true,
    message: `each value in eventTypes must be one of: ${EVENT_TYPES.join(', ')}`,
  })
  eventTypes?: string[];

  @ApiPropertyOptional({ maxLength: 500, example: 'Billing sync' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(500)
  description?: string;
}

export class UpdateWebhookEndpointDto {
  @ApiPropertyOptional({ example: 'https://example.com/webhooks', maxLength: 2048, description: URL_DOC })
  @OptionalNotNull()
  @IsString()
  @MinLength(1)
  @MaxLength(2048)
  url?: string;

  @ApiPropertyOptional({
    enum: EVENT_TYPES,
    isArray: true,
    maxItems: EVENT_TYPES.length,
    description: 'Empty: every type.',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(EVENT_TYPES.length)
  @IsIn(EVENT_TYPES, {
    each: true,
    message: `each value in eventTypes must be one of: ${EVENT_TYPES.join(', ')}`,
  })
  eventTypes?: string[];

  @ApiPropertyOptional({
    description: 'Enabling clears disabledReason and failingSince; missed deliveries are not resent.',
  })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ maxLength: 500 })
  @OptionalNotNull()
  @IsString()
  @MaxLength(500)
  description?: string;
}

/** `page` and `pageSize` exactly as every other list (PageQueryDto): decimal digits, an exact offset. */
export class ListWebhookEndpointsQueryDto extends PickType(PageQueryDto, ['page', 'pageSize'] as const) {}

export class WebhookEndpointView {
  @ApiProperty({ example: 'we_abcdefghijklmnopqrstuvwx' }) id: string;
  @ApiProperty({ example: 'https://example.com/webhooks' }) url: string;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ enum: EVENT_TYPES, isArray: true }) eventTypes: string[];
  @ApiProperty() enabled: boolean;
  @ApiProperty({ nullable: true, type: String, example: 'The receiver answered 410 Gone.' })
  disabledReason: string | null;
  @ApiProperty({ nullable: true, type: String, description: 'Since when every attempt has failed.' })
  failingSince: string | null;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class WebhookEndpointWithSecretView extends WebhookEndpointView {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'Shown once.' })
  secret: string;
}

export class RotatedWebhookEndpointView extends WebhookEndpointWithSecretView {
  @ApiProperty({ description: 'Until then deliveries carry a signature under the previous secret too.' })
  previousSecretExpiresAt: string;
}

export class WebhookTestResultView {
  @ApiProperty() delivered: boolean;
  @ApiProperty({ nullable: true, type: Number, description: "The receiver's status code." }) status:
    number | null;
  @ApiProperty({ nullable: true, type: String }) error: string | null;
  @ApiProperty() durationMs: number;
}

export const ENDPOINT_ID_PATTERN = /^we_[a-z2-7]{24}$/;
export const EVENT_ID_PATTERN = /^evt_[a-z2-7]{24}$/;

export class RedeliverDto {
  @ApiPropertyOptional({
    example: 'we_abcdefghijklmnopqrstuvwx',
    pattern: ENDPOINT_ID_PATTERN.source,
    maxLength: 27,
    description: 'Only this endpoint.',
  })
  @OptionalNotNull()
  @IsString()
  @Matches(ENDPOINT_ID_PATTERN, { message: 'endpointId must be a webhook endpoint id (we_...)' })
  endpointId?: string;
}
