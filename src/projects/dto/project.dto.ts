import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { IsBoolean, IsIn, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { IsTimeZone, OptionalNotNull } from '../../common/http/validators';
import { MAX_TIME_ZONE_LENGTH } from '../../common/time/time-zone';
import type { ApiKeyKind } from '../entities/api-key.entity';
import { SCOPE_NAMES } from '../../auth/scopes';
import { IsKeyExpiry, IsScopeList, MAX_EXPIRY_LENGTH, MAX_SCOPE_ITEMS, SCOPE_INPUTS } from './key-input';

const SCOPES_PROPERTY = {
  type: 'array',
  items: { type: 'string', enum: SCOPE_INPUTS as string[] },
  minItems: 1,
  maxItems: MAX_SCOPE_ITEMS,
  example: ['customers:read', 'entitlements:read'],
  description:
    `Private keys only: the scopes the key holds, a non-empty list of ${SCOPE_NAMES.map((n) => '`' + n + '`').join(', ')}, ` +
    'or `["*"]` alone for all (a `:write` scope includes the `:read` of its name); stored sorted, without duplicates.',
} as const;

const EXPIRES_AT_PROPERTY = {
  type: String,
  nullable: true,
  maxLength: MAX_EXPIRY_LENGTH,
  pattern: '^\\d{4}-\\d{2}-\\d{2}([Tt]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?([Zz]|[+-]\\d{2}:?\\d{2}))?$',
  example: '2030-01-01T00:00:00.000Z',
} as const;

export class CreateProjectDto {
  @ApiProperty({ example: 'Acme Notes', minLength: 1, maxLength: 200 })
  @IsString()
  @MinLength(1)
  @MaxLength(200)
  name: string;

  @ApiPropertyOptional({ default: false, description: 'Whether redemption may create a missing customer.' })
  @OptionalNotNull()
  @IsBoolean()
  autoCreateCustomerAtRedemption?: boolean;

  @ApiPropertyOptional({ default: false, description: 'Whether public requests must be signed.' })
  @OptionalNotNull()
  @IsBoolean()
  requireSignature?: boolean;

  @ApiPropertyOptional({
    default: 'UTC',
    example: 'Europe/Berlin',
    maxLength: MAX_TIME_ZONE_LENGTH,
    description:
      "The zone of calendar periods whose quota and customer name none: an IANA zone name in any letter case, stored as sent. A change applies from each period's next boundary.",
  })
  @OptionalNotNull()
  @IsTimeZone()
  timeZone?: string;
}

export class UpdateProjectDto extends PartialType(CreateProjectDto, { skipNullProperties: false }) {}

export class ProjectView {
  @ApiProperty({ example: 'prj_k3v7q2m9x4t6b8n5c1zd' }) id: string;
  @ApiProperty({ example: 'Acme Notes' }) name: string;
  @ApiProperty({ example: false }) autoCreateCustomerAtRedemption: boolean;
  @ApiProperty({ example: false }) requireSignature: boolean;
  @ApiProperty({
    example: 'UTC',
    description: 'The zone of calendar periods when neither the quota nor the customer names one; as sent.',
  })
  timeZone: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
}

export class CreateApiKeyDto {
  @ApiProperty({ enum: ['private', 'public'], example: 'private' })
  @IsIn(['private', 'public'])
  kind: ApiKeyKind;

  @ApiPropertyOptional({ example: 'backend', maxLength: 100 })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  name?: string;

  @ApiPropertyOptional({ ...SCOPES_PROPERTY, default: ['*'] })
  @OptionalNotNull()
  @IsScopeList('kind')
  scopes?: string[];

  @ApiPropertyOptional({
    ...EXPIRES_AT_PROPERTY,
    description:
      'When the key stops working (`401 API_KEY_EXPIRED`): a date-time with `Z` or an offset, or a date (UTC midnight), later than now and before the year 10000. Absent or null: never.',
  })
  @IsOptional()
  @IsKeyExpiry()
  expiresAt?: string | null;
}

export class UpdateApiKeyDto {
  @ApiPropertyOptional({ example: false })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({ example: 'backend (old)', maxLength: 100 })
  @OptionalNotNull()
  @IsString()
  @MaxLength(100)
  name?: string;

  @ApiPropertyOptional({
    ...SCOPES_PROPERTY,
    description: `${SCOPES_PROPERTY.description} Replaces the list.`,
  })
  @OptionalNotNull()
  @IsScopeList()
  scopes?: string[];

  @ApiPropertyOptional({
    ...EXPIRES_AT_PROPERTY,
    description:
      'A new expiry: a date-time with `Z` or an offset, or a date (UTC midnight), later than now and before the year 10000; null: never (clears it).',
  })
  @IsOptional()
  @IsKeyExpiry()
  expiresAt?: string | null;
}

export class ApiKeyView {
  @ApiProperty({ example: 1 }) id: number;
  @ApiProperty({ enum: ['private', 'public'] }) kind: ApiKeyKind;
  @ApiProperty({ example: 'backend', nullable: true, type: String }) name: string | null;
  @ApiProperty({ example: 'sk_Xy12ab', description: 'First characters of the key.' }) prefix: string;
  @ApiProperty({ example: true }) enabled: boolean;
  @ApiProperty({
    type: [String],
    nullable: true,
    example: ['*'],
    description: 'A private key\'s scopes, sorted by code point (`["*"]`: all); null for a public key.',
  })
  scopes: string[] | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'When the key stops working; null: never.',
  })
  expiresAt: string | null;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
}

export class CreatedApiKeyView extends ApiKeyView {
  @ApiProperty({ example: 'sk_' + 'x'.repeat(40), description: 'The key itself, shown this once.' })
  key: string;

  @ApiPropertyOptional({
    example: 'ss_' + 'x'.repeat(40),
    description: 'Public keys only: the signing secret, shown this once.',
  })
  signingSecret?: string;
}
