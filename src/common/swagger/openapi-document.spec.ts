import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Swagger UI's page inlines the OpenAPI document into a script, and code that does that with
 * `String.prototype.replace` and a string replacement expands `$&`, `` $` ``, `$'`, `$<name>` and
 * `$1` in the document into other text, which breaks the script and leaves `/docs` blank. No text
 * of the document may hold such a pattern, whatever the inlining code does today.
 */
describe('the OpenAPI document', () => {
  const document = readFileSync(join(__dirname, '..', '..', '..', 'openapi.json'), 'utf8');

  it('holds no replacement pattern that String.replace would expand', () => {
    const patterns = [...document.matchAll(/\$(?:[$&`']|\d|<)/g)].map((m) =>
      document.slice(Math.max(0, m.index - 40), m.index + 10),
    );
    expect(patterns).toEqual([]);
  });

  it('is found by the check when a text holds one', () => {
    expect(/\$(?:[$&`']|\d|<)/.test(JSON.stringify({ description: 'a pattern `^[a-z]+$`' }))).toBe(true);
  });
});

/**
 * What repeats in the document is declared once and referenced, and the file is written compactly
 * (docs/architecture.md#conventions-of-the-openapi-document). The budget was set when the API had
 * 63 operations and 394 properties in its schemas: 250 KB. The document grows with what it
 * describes, so each operation or property added since brings its share of that budget; a
 * document that repeats itself again does not fit.
 */
describe('the size of the OpenAPI document', () => {
  const document = readFileSync(join(__dirname, '..', '..', '..', 'openapi.json'));

  it('is at most 250 KB for 63 operations and 394 properties, in proportion beyond', () => {
    const doc = JSON.parse(document.toString('utf8')) as {
      paths: Record<string, object>;
      components: { schemas: Record<string, { properties?: object }> };
    };
    const operations = Object.values(doc.paths).flatMap((item) =>
      Object.keys(item).filter((key) => ['get', 'put', 'post', 'patch', 'delete'].includes(key)),
    ).length;
    const properties = Object.values(doc.components.schemas)
      .map((schema) => Object.keys(schema.properties ?? {}).length)
      .reduce((a, b) => a + b, 0);
    const budget = Math.floor((250_000 * Math.max(operations + properties, 63 + 394)) / (63 + 394));
    expect(document.length).toBeLessThanOrEqual(budget);
  });
});
