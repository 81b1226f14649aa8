import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

export const MAX_PAGE_SIZE = 100;

/** A query string number stays a number only when it is one: '1.5' and 'x' fail validation. */
export const toNumber = ({ value }: { value: unknown }) =>
  typeof value === 'string' && value.trim() !== '' ? Number(value) : value;

/** `page` from 1, `pageSize` 1 to 100 (default 10), optional `search`; out of range is 400. */
export class PageQueryDto {
  @ApiPropertyOptional({ default: 1, minimum: 1, description: 'Page number, from 1.' })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  page: number = 1;

  @ApiPropertyOptional({ default: 10, minimum: 1, maximum: MAX_PAGE_SIZE, description: 'Items per page.' })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  pageSize: number = 10;

  @ApiPropertyOptional({ description: 'Case-insensitive substring match.', maxLength: 128 })
  @IsOptional()
  @IsString()
  @MaxLength(128)
  search?: string;
}

/** Page object (interface.md 2.7). */
export class Page<T> {
  @ApiProperty({ isArray: true })
  data: T[];
  @ApiProperty({ example: 42 })
  total: number;
  @ApiProperty({ example: 1 })
  page: number;
  @ApiProperty({ example: 10 })
  pageSize: number;
  @ApiProperty({ example: 5 })
  totalPages: number;
}

export function toPage<T>(data: T[], total: number, query: Pick<PageQueryDto, 'page' | 'pageSize'>): Page<T> {
  return {
    data,
    total,
    page: query.page,
    pageSize: query.pageSize,
    totalPages: Math.ceil(total / query.pageSize),
  };
}

/** LIKE pattern for a case-insensitive substring search, with the user's wildcards escaped. */
export const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (c) => '\\' + c)}%`;

/** Path ids: positive int4 values only; anything else is a 400 rather than a database error. */
export const MAX_INT4 = 2147483647;
