import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsISO8601, IsOptional, IsString, Matches, Max, MaxLength, Min } from 'class-validator';
import { MAX_INT4, toNumber } from '../../common/http/pagination';
import { AUDIT_ACTION_NAMES, AUDIT_ACTOR_TYPES, AUDIT_RESOURCE_TYPES } from '../audit-actions';

/** The filters of the list and the export (docs/operations.md#audit-log). */
export class AuditEventFiltersDto {
  @ApiPropertyOptional({ enum: AUDIT_RESOURCE_TYPES, description: 'Only the records of this resource type.' })
  @IsOptional()
  @IsIn(AUDIT_RESOURCE_TYPES)
  resourceType?: string;

  @ApiPropertyOptional({
    maxLength: 128,
    description: 'Only the records of this resource id (integer ids in decimal), exactly.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  resourceId?: string;

  @ApiPropertyOptional({ enum: AUDIT_ACTION_NAMES, description: 'Only the records of this action.' })
  @IsOptional()
  @IsIn(AUDIT_ACTION_NAMES)
  action?: string;

  @ApiPropertyOptional({ enum: AUDIT_ACTOR_TYPES, description: 'Only the records of this kind of actor.' })
  @IsOptional()
  @IsIn(AUDIT_ACTOR_TYPES)
  actorType?: string;

  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    minimum: 1,
    maximum: MAX_INT4,
    description: 'Only the records made through this API key (its id).',
  })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_INT4)
  actorKeyId?: number;

  @ApiPropertyOptional({
    maxLength: 128,
    description: 'Only the records of the request with this `X-Request-Id` (as answered).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  requestId?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    maxLength: 64,
    description: 'Only the records at or after this instant (ISO 8601 with an offset).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsISO8601({ strict: true })
  from?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    maxLength: 64,
    description: 'Only the records before this instant (ISO 8601 with an offset).',
  })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  @IsISO8601({ strict: true })
  to?: string;
}

/** The list: the filters, `limit` and the `cursor` of the previous page. */
export class ListAuditEventsQueryDto extends AuditEventFiltersDto {
  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    default: 20,
    minimum: 1,
    maximum: 100,
    description: 'Records per page, 1 to 100.',
  })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(100)
  limit: number = 20;

  @ApiPropertyOptional({
    maxLength: 200,
    description: '`nextCursor` of the previous page; send the same filters again.',
  })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  @Matches(/^[A-Za-z0-9_-]+$/, { message: 'cursor must be a nextCursor of a previous page' })
  cursor?: string;
}

export class AuditActorView {
  @ApiProperty({ enum: AUDIT_ACTOR_TYPES, description: 'Who made the change.' })
  type: string;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'The API key used (its id); null for `admin`, `cli` and `system`.',
  })
  keyId: number | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: 'sk_3f9aX',
    description: "The key's display prefix; null for `admin`, `cli` and `system`.",
  })
  keyPrefix: string | null;

  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'For `public_key`: the customer logged in (for a login, who logged in); otherwise null.',
  })
  customerId: number | null;
}

export class AuditChangeView {
  @ApiProperty({ nullable: true, description: 'The value before, as the API showed it; null when none.' })
  from: unknown;

  @ApiProperty({ nullable: true, description: 'The value after, as the API shows it; null when none.' })
  to: unknown;
}

export class AuditEventView {
  @ApiProperty({
    example: 'aud_abcdefghijklmnopqrstuvwx',
    pattern: '^aud_[a-z2-7]{24}$',
    description: 'Identifier of the record (`aud_` + 24 characters).',
  })
  id: string;

  @ApiProperty({
    format: 'date-time',
    description: 'When the change was written; one instant for a whole call.',
  })
  at: string;

  @ApiProperty({ description: 'The project the changed resource belongs to.' })
  projectId: string;

  @ApiProperty({ type: AuditActorView, description: 'Who made the change, and through which key.' })
  actor: AuditActorView;

  @ApiProperty({ enum: AUDIT_ACTION_NAMES, description: 'What was done, such as `customer.updated`.' })
  action: string;

  @ApiProperty({ enum: AUDIT_RESOURCE_TYPES, description: 'The kind of resource changed.' })
  resourceType: string;

  @ApiProperty({ description: 'The id of the resource changed, as a string (integer ids in decimal).' })
  resourceId: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: { $ref: '#/components/schemas/AuditChangeView' },
    nullable: true,
    description:
      'The audited fields changed, each `{ from, to }`; secrets as `"[redacted]"`. Null for logins, logouts and redeliveries.',
  })
  changes: Record<string, AuditChangeView> | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: "The write's `X-Request-Id` (as answered); null for `cli` and `system`.",
  })
  requestId: string | null;

  @ApiProperty({ type: String, nullable: true, description: "The write's `Idempotency-Key`, or null." })
  idempotencyKey: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: "The client's address; null for `cli` and `system`.",
  })
  ip: string | null;

  @ApiProperty({
    type: 'integer',
    format: 'int64',
    maximum: Number.MAX_SAFE_INTEGER,
    nullable: true,
    minimum: 1,
    description: "The record's place in its project's chain (1, 2, 3...); null until sealed.",
  })
  seq: number | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The `hash` of record `seq - 1`; null for seq 1 and until sealed.',
  })
  prevHash: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'Lowercase hex SHA-256 of the RFC 8785 canonical JSON of this record without `hash`; null until sealed.',
  })
  hash: string | null;
}

export class AuditEventPageView {
  @ApiProperty({ type: [AuditEventView], description: 'The records of this page, newest first.' })
  data: AuditEventView[];

  @ApiProperty({
    nullable: true,
    type: String,
    description: 'The cursor of the next page; null on the last page.',
  })
  nextCursor: string | null;
}

export const VERIFY_BREAK_REASONS = ['MISSING', 'HASH_MISMATCH', 'LINK_BROKEN'] as const;
export type VerifyBreakReason = (typeof VERIFY_BREAK_REASONS)[number];

export class AuditBreakView {
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The record where the chain breaks; null when it is missing.',
  })
  id: string | null;

  @ApiProperty({
    type: 'integer',
    format: 'int64',
    maximum: Number.MAX_SAFE_INTEGER,
    minimum: 1,
    description: 'Its seq (the first missing one).',
  })
  seq: number;

  @ApiProperty({ enum: VERIFY_BREAK_REASONS, description: 'What is wrong there.' })
  reason: VerifyBreakReason;
}

export class AuditVerifyView {
  @ApiProperty({ description: 'True when the sealed records form one unbroken chain.' })
  valid: boolean;

  @ApiProperty({
    type: 'integer',
    format: 'int64',
    maximum: Number.MAX_SAFE_INTEGER,
    minimum: 0,
    description: 'The sealed records found.',
  })
  checked: number;

  @ApiProperty({
    type: 'integer',
    format: 'int64',
    maximum: Number.MAX_SAFE_INTEGER,
    minimum: 0,
    description: 'The records not sealed yet.',
  })
  unsealed: number;

  @ApiProperty({
    type: AuditBreakView,
    nullable: true,
    description: 'The first break of the chain; null when valid.',
  })
  brokenAt: AuditBreakView | null;
}
