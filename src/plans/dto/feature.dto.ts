import { ApiProperty, ApiPropertyOptional, PartialType } from '@nestjs/swagger';
import { IsBoolean, IsString, Length, Matches, MaxLength } from 'class-validator';
import { OptionalNotNull } from '../../common/http/validators';
import { SLUG_MESSAGE, SLUG_PATTERN } from './slug';

export class CreateFeatureDto {
  @ApiProperty({
    example: 'api-calls',
    pattern: SLUG_PATTERN.source,
    description: 'Unique within the project.',
  })
  @IsString()
  @Matches(SLUG_PATTERN, { message: SLUG_MESSAGE })
  slug: string;

  @ApiProperty({ example: 'API calls', minLength: 1, maxLength: 200 })
  @IsString()
  @Length(1, 200)
  name: string;

  @ApiPropertyOptional({ example: 'Calls to the public API per period.', default: '', maxLength: 2000 })
  @OptionalNotNull()
  @IsString()
  @MaxLength(2000)
  description?: string;

  @ApiPropertyOptional({
    example: true,
    default: false,
    description: 'Whether usage of the feature is counted.',
  })
  @OptionalNotNull()
  @IsBoolean()
  metered?: boolean;

  @ApiPropertyOptional({ example: 'calls', default: '', maxLength: 32 })
  @OptionalNotNull()
  @IsString()
  @MaxLength(32)
  unit?: string;
}

/** Any of the fields of a feature; `null` is refused for every one of them. */
export class UpdateFeatureDto extends PartialType(CreateFeatureDto, { skipNullProperties: false }) {}

/** A feature as the API answers it. */
export class FeatureView {
  @ApiProperty({ example: 1 }) id: number;
  @ApiProperty({ example: 'api-calls' }) slug: string;
  @ApiProperty({ example: 'API calls' }) name: string;
  @ApiProperty({ example: 'Calls to the public API per period.' }) description: string;
  @ApiProperty({ example: 'prj_k3v7q2m9x4t6b8n5c1zd' }) projectId: string;
  @ApiProperty({ example: true }) metered: boolean;
  @ApiProperty({ example: 'calls' }) unit: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-01-01T00:00:00.000Z' }) updatedAt: string;
}
