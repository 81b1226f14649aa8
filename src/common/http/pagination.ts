import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { DomainError } from '../errors/domain-error';

export const MAX_PAGE_SIZE = 100;
/**
 * Highest `page`: the offset `(page - 1) * pageSize` stays an exact integer (at most 2^53) and a
 * valid PostgreSQL OFFSET for every page size. Any page past the end is empty anyway.
 */
export const MAX_PAGE = Math.floor(Number.MAX_SAFE_INTEGER / MAX_PAGE_SIZE); // 90,071,992,547,409

/**
 * A query-string integer: decimal digits only (at most 15, so the number is exact). Anything else
 * (`1.5`, `1e2`, `0x10`, ` 100`, `x`, 20 digits) is left as the string for `@IsInt()` to refuse.
 */
export const toNumber = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^[0-9]{1,15}$/.test(value) ? Number(value) : value;

/** `page` from 1, `pageSize` 1 to 100 (default 10), optional `search`; out of range is 400. */
export class PageQueryDto {
  @ApiPropertyOptional({
    default: 1,
    minimum: 1,
    maximum: MAX_PAGE,
    description: 'Page number, from 1; decimal digits only. A page past the end is empty.',
  })
  @IsOptional()
  @Transform(toNumber)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE)
  page: number = 1;

  @ApiPropertyOptional({
    default: 10,
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    description: 'Items per page; decimal digits only.',
  })
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

/** Page object (docs/api-guide.md#envelope-and-errors). */
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

/**
 * The rows a numbered page asks its repository for: `limit` rows after `offset`. Every
 * repository that pages by number takes this one shape (`pageWindow(query)`).
 */
export interface PageWindow {
  limit: number;
  offset: number;
}

export const pageWindow = (query: Pick<PageQueryDto, 'page' | 'pageSize'>): PageWindow => ({
  limit: query.pageSize,
  offset: (query.page - 1) * query.pageSize,
});

/** The page object of a numbered page from its rows and the total. */
export function toPage<T>(data: T[], total: number, query: Pick<PageQueryDto, 'page' | 'pageSize'>): Page<T> {
  return {
    data,
    total,
    page: query.page,
    pageSize: query.pageSize,
    totalPages: Math.ceil(total / query.pageSize),
  };
}

/**
 * The rows a cursor page asks its repository for: `limit` rows after the position `after` (the
 * sort key of the previous page's last row). `limit` is one more than the page holds: the extra
 * row says whether a next page exists (`cursorWindow`, `toCursorPage`).
 */
export interface CursorWindow<C> {
  limit: number;
  after?: C;
}

/**
 * A cursor page (`{ data, nextCursor }`, docs/events.md#pulling-events): `nextCursor` is null on
 * the last page.
 */
export interface CursorPage<T> {
  data: T[];
  nextCursor: string | null;
}

/**
 * The window of a page of `pageSize` rows after `cursor` (a `nextCursor` of a previous page);
 * `decode` turns the cursor's values back into the sort key, or undefined when they are not one
 * (then 400 VALIDATION_FAILED on `cursor`).
 */
export function cursorWindow<C>(
  pageSize: number,
  cursor: string | undefined,
  decode: (values: unknown[]) => C | undefined,
): CursorWindow<C> {
  if (!cursor) return { limit: pageSize + 1 };
  let after: C | undefined;
  try {
    const values: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(values)) after = decode(values);
  } catch {
    // refused below
  }
  if (after === undefined)
    throw new DomainError('VALIDATION_FAILED', 'cursor is not a nextCursor of this list', [
      { field: 'cursor', message: 'must be the nextCursor of a previous page' },
    ]);
  return { limit: pageSize + 1, after };
}

/** The page of rows read through `cursorWindow(pageSize, ...)`; `keyOf` gives a row's sort key for the next cursor. */
export function toCursorPage<R, T>(
  rows: R[],
  pageSize: number,
  view: (row: R) => T,
  keyOf: (row: R) => unknown[],
): CursorPage<T> {
  const page = rows.slice(0, pageSize);
  return {
    data: page.map(view),
    nextCursor:
      rows.length > pageSize
        ? Buffer.from(JSON.stringify(keyOf(page[page.length - 1]))).toString('base64url')
        : null,
  };
}

/** LIKE pattern for a case-insensitive substring search, with the user's wildcards escaped. */
export const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (c) => '\\' + c)}%`;

/** Path ids: positive int4 values only; anything else is a 400 rather than a database error. */
export const MAX_INT4 = 2147483647;
