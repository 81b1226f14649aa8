import { IsInt, IsOptional, IsString } from 'class-validator';
import { createValidationPipe, validationSummary } from './validation';

describe('validationSummary', () => {
  it('counts fields, not problems', () => {
    const details = ['a', 'b', 'c', 'd'].flatMap((field) => [
      { field, message: `${field} must be a string` },
      { field, message: `${field} must be at most 16 characters` },
    ]);
    expect(validationSummary(details)).toBe('4 fields are not valid');
  });
  it('names the field when one field has several problems, and gives a single problem as it is', () => {
    expect(
      validationSummary([
        { field: 'username', message: 'username must be a string' },
        { field: 'username', message: 'username must be 8 to 16 characters' },
      ]),
    ).toBe('username is not valid');
    expect(validationSummary([{ field: 'x', message: 'x must be a string' }])).toBe('x must be a string');
  });
});

describe('createValidationPipe', () => {
  class PageQuery {
    @IsOptional()
    @IsInt()
    limit: number = 20;
  }
  class NeedsTerm {
    @IsString()
    term!: string;
  }
  const pipe = createValidationPipe();
  const query = (metatype: new () => object) => ({ type: 'query' as const, metatype, data: undefined });

  it('answers an empty query with the DTO and its defaults, the first time and every time after', async () => {
    for (let i = 0; i < 2; i++) {
      const result = await pipe.transform({}, query(PageQuery));
      expect(result).toBeInstanceOf(PageQuery);
      expect(result).toEqual({ limit: 20 });
    }
  });

  it('still refuses an empty query that breaks a rule, every time', async () => {
    for (let i = 0; i < 2; i++)
      await expect(pipe.transform({}, query(NeedsTerm))).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
  });

  it('still validates a query that is not empty', async () => {
    await pipe.transform({}, query(PageQuery));
    await expect(pipe.transform({ limit: 'x' }, query(PageQuery))).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
    });
  });
});
