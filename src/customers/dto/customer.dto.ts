import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsTimeZone, OptionalNotNull } from '../../common/http/validators';
import { MAX_TIME_ZONE_LENGTH } from '../../common/time/time-zone';
import { CREDENTIAL_PASSWORD } from '../entities/customer-credential.entity';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsDefined,
  IsObject,
  IsArray,
  IsBoolean,
  IsNotIn,
  IsOptional,
  IsString,
  Length,
  Matches,
  ValidateNested,
} from 'class-validator';

export const USERNAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
export const IDENTIFIER_TYPE_PATTERN = /^[a-z][a-z0-9_]*$/;

/** An identifier kind and value, as sent by a caller (customer lookups, redemption). */
export class CustomerRefDto {
  @ApiProperty({ example: 'email', maxLength: 16, description: 'Identifier type, `username` included.' })
  @IsString()
  @Length(1, 16)
  @Matches(IDENTIFIER_TYPE_PATTERN, { message: 'type must match ^[a-z][a-z0-9_]*$' })
  type: string;

  @ApiProperty({ example: 'ada@example.com', maxLength: 128 })
  @IsString()
  @Length(1, 128)
  value: string;
}

/** An extra identifier of a customer; `username` is reserved for the mirrored one. */
export class IdentifierInputDto {
  @ApiProperty({
    example: 'email',
    maxLength: 16,
    description: 'e.g. `email`, `external_user_id`; not `username`.',
  })
  @IsString()
  @Length(1, 16)
  @Matches(IDENTIFIER_TYPE_PATTERN, { message: 'type must match ^[a-z][a-z0-9_]*$' })
  @IsNotIn(['username'], { message: 'type username is maintained by the service and cannot be supplied' })
  type: string;

  @ApiProperty({ example: 'ada@example.com', maxLength: 128 })
  @IsString()
  @Length(1, 128)
  value: string;
}

export class ResolveCustomerDto {
  @ApiProperty({ type: CustomerRefDto })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => CustomerRefDto)
  customer: CustomerRefDto;
}

const TIME_ZONE_DESCRIPTION =
  "The zone of the customer's calendar periods when its quota names none: an IANA zone name in any letter case, stored as sent; `null`: the project's `timeZone`.";
const TIME_ZONE_VIEW = {
  example: null,
  nullable: true,
  type: String,
  description: "As sent; null: the project's `timeZone`.",
};

export class CreateCustomerDto {
  @ApiProperty({
    example: 'ada_lovelace',
    minLength: 8,
    maxLength: 16,
    description:
      'Letters, digits, `_ . -`; starts with a letter or digit; unique per project, case-insensitively.',
  })
  @IsString()
  @Length(8, 16)
  @Matches(USERNAME_PATTERN, {
    message: 'username may hold letters, digits, _ . - and must start with a letter or digit',
  })
  username: string;

  @ApiPropertyOptional({ default: true })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    default: null,
    example: 'America/New_York',
    maxLength: MAX_TIME_ZONE_LENGTH,
    description: TIME_ZONE_DESCRIPTION,
  })
  @IsOptional()
  @IsTimeZone()
  timeZone?: string | null;

  @ApiPropertyOptional({
    example: 'correct horse battery',
    minLength: 8,
    maxLength: 128,
    description: 'Creates a password credential (type 1).',
  })
  @IsOptional()
  @IsString()
  @Length(8, 128)
  password?: string;

  @ApiPropertyOptional({
    type: [IdentifierInputDto],
    description: 'Extra identifiers; the `username` one is mirrored automatically.',
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(50)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => IdentifierInputDto)
  identifiers?: IdentifierInputDto[];
}

export class UpdateCustomerDto {
  @ApiPropertyOptional({ example: 'ada_byron', minLength: 8, maxLength: 16 })
  @OptionalNotNull()
  @IsString()
  @Length(8, 16)
  @Matches(USERNAME_PATTERN, {
    message: 'username may hold letters, digits, _ . - and must start with a letter or digit',
  })
  username?: string;

  @ApiPropertyOptional({ example: false })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;

  @ApiPropertyOptional({
    type: String,
    nullable: true,
    example: 'America/New_York',
    maxLength: MAX_TIME_ZONE_LENGTH,
    description: `${TIME_ZONE_DESCRIPTION} A change applies from each period's next boundary.`,
  })
  @IsOptional()
  @IsTimeZone()
  timeZone?: string | null;

  @ApiPropertyOptional({
    minLength: 8,
    maxLength: 128,
    description: 'Updates the password credential, or creates it.',
  })
  @OptionalNotNull()
  @IsString()
  @Length(8, 128)
  password?: string;

  @ApiPropertyOptional({
    type: [IdentifierInputDto],
    description: 'The complete list of extra identifiers; pairs that stay keep their id.',
  })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(50)
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => IdentifierInputDto)
  identifiers?: IdentifierInputDto[];
}

export class IdentifierShortView {
  @ApiProperty({ example: 7 }) id: number;
  @ApiProperty({ example: 'email' }) type: string;
  @ApiProperty({ example: 'ada@example.com' }) value: string;
}

export class IdentifierFullView extends IdentifierShortView {
  @ApiProperty({ example: false, description: 'true for the system-maintained username identifier' })
  readonly: boolean;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
}

export class CredentialView {
  @ApiProperty({ example: 3 }) id: number;
  @ApiProperty({
    type: 'integer',
    enum: [CREDENTIAL_PASSWORD],
    example: CREDENTIAL_PASSWORD,
    description:
      'Kind of credential, a number: `1` is a password (kept as a bcrypt hash, never returned). No other kind exists yet.',
  })
  type: number;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
}

/** List items and the create response. */
export class CustomerListItem {
  @ApiProperty({ example: 12 }) id: number;
  @ApiProperty({ example: 'ada_lovelace' }) username: string;
  @ApiProperty({ example: 'prj_k3v7q2m9x4t6b8n5c1zd' }) projectId: string;
  @ApiProperty({ example: true }) enabled: boolean;
  @ApiProperty({ example: false }) temporary: boolean;
  @ApiProperty(TIME_ZONE_VIEW) timeZone: string | null;
  @ApiProperty({ type: [IdentifierShortView] }) identifiers: IdentifierShortView[];
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
}

/** The full record: read, resolve and update. */
export class CustomerRecord {
  @ApiProperty({ example: 12 }) id: number;
  @ApiProperty({ example: 'ada_lovelace' }) username: string;
  @ApiProperty({ example: 'prj_k3v7q2m9x4t6b8n5c1zd' }) projectId: string;
  @ApiProperty({ example: true }) enabled: boolean;
  @ApiProperty({ example: false }) temporary: boolean;
  @ApiProperty(TIME_ZONE_VIEW) timeZone: string | null;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
  @ApiProperty({ type: [CredentialView] }) credentials: CredentialView[];
  @ApiProperty({ type: [IdentifierFullView] }) identifiers: IdentifierFullView[];
}
