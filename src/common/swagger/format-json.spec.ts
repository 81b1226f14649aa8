import { formatJson } from './format-json';

describe('formatJson', () => {
  it('keeps a small object on one line and breaks a long one, and reads back the same value', () => {
    const value = {
      ref: { $ref: '#/components/responses/NotFound' },
      long: { description: 'x'.repeat(120), list: [1, 2, 3], empty: {}, none: [], nested: { a: 1 } },
    };
    const text = formatJson(value, 80);
    expect(text).toContain('\n "ref": {"$ref": "#/components/responses/NotFound"},\n');
    expect(text).toContain(' "long": {\n  "description": "');
    expect(text).toContain('"list": [1, 2, 3]');
    expect(text.endsWith('}\n')).toBe(true);
    expect(JSON.parse(text)).toEqual(value);
  });

  it('counts the indentation and the key in the width', () => {
    const text = formatJson({ key: { a: 'abcdef', b: { c: 1 } } }, 20);
    expect(text).toBe('{\n "key": {\n  "a": "abcdef",\n  "b": {"c": 1}\n }\n}\n');
    expect(formatJson({ key: { a: 'abcdef' } }, 30)).toBe('{"key": {"a": "abcdef"}}\n');
  });

  it('keeps an object of plain values and references on one line, however long', () => {
    const schema = { type: 'string', description: 'y'.repeat(200), enum: ['a', 'b'] };
    const responses = {
      '200': { $ref: '#/components/responses/A' },
      '404': { $ref: '#/components/responses/B' },
    };
    const text = formatJson(
      { properties: { name: schema }, responses, list: [{ $ref: '#/x' }, { $ref: '#/y' }] },
      40,
    );
    expect(text).toContain(
      `\n  "name": ${JSON.stringify(schema).replace(/":/g, '": ').replace(/,"/g, ', "')}\n`,
    );
    expect(text).toContain(
      '\n "responses": {"200": {"$ref": "#/components/responses/A"}, "404": {"$ref": "#/components/responses/B"}},\n',
    );
    expect(text).toContain('\n "list": [{"$ref": "#/x"}, {"$ref": "#/y"}]\n');
    expect(JSON.parse(text)).toEqual({
      properties: { name: schema },
      responses,
      list: [{ $ref: '#/x' }, { $ref: '#/y' }],
    });
  });
});
