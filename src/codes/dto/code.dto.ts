import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  buildMessage,
  IsIn,
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

export const CODE_STATUSES = ['available', 'redeemed', 'revoked', 'expired'] as const;
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

export class CreateCodeBatchDto {
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
  @IsOptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(MAX_BATCH_SIZE)
  count?: number;

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
  @ApiProperty({ example: '7KQ2-M9XD-4TRB-C1ZP' }) code: string;
  @ApiProperty({ example: 12 }) planId: number;
  @ApiProperty({ example: 'Pro' }) planName: string;
  @ApiProperty({ example: 'P30D', nullable: true, type: String, description: 'null: permanent' }) duration:
    string | null;
  @ApiProperty({ example: false }) permanent: boolean;
  @ApiProperty({ enum: CODE_STATUSES, example: 'available' }) status: CodeStatus;
  @ApiProperty({ example: 3 }) batchId: number;
  @ApiProperty({ example: 'Spring campaign', nullable: true, type: String }) note: string | null;
  @ApiProperty({ example: '2030-01-01T00:00:00.000Z', nullable: true, type: String }) expiresAt:
    string | null;
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
