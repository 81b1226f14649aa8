import { formatJson } from './format-json';

describe('formatJson', () => {
  it('keeps a small object on one line and breaks a long one, and reads back the same value', () => {
    const value = {
      ref: { $ref: '#/components/responses/CUSTOMER_NOT_FOUND' },
      long: { description: 'x'.repeat(120), list: [1, 2, 3], empty: {}, none: [] },
    };
    const text = formatJson(value, 80);
    expect(text).toContain('"ref": { "$ref": "#/components/responses/CUSTOMER_NOT_FOUND" },\n');
    expect(text).toContain('  "long": {\n    "description": "');
    expect(text).toContain('"list": [1, 2, 3]');
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('counts the indentation and the key in the width', () => {
    const text = formatJson({ key: { a: 'abcdef' } }, 20);
    expect(text).toBe('{\n  "key": {\n    "a": "abcdef"\n  }\n}\n');
    expect(formatJson({ key: { a: 'abcdef' } }, 30)).toBe('{ "key": { "a": "abcdef" } }\n');
  });
});
