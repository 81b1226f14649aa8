import { validationSummary } from './validation';

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
