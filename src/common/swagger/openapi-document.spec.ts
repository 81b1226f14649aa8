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
 * (docs/architecture.md#conventions-of-the-openapi-document): 250 KB held the 63 operations of the
 * API when that budget was set, and a new operation may bring its share.
 */
describe('the size of the OpenAPI document', () => {
  const document = readFileSync(join(__dirname, '..', '..', '..', 'openapi.json'));

  it('is at most 250 KB for 63 operations, in proportion beyond', () => {
    const paths = (JSON.parse(document.toString('utf8')) as { paths: Record<string, object> }).paths;
    const operations = Object.values(paths).flatMap((item) =>
      Object.keys(item).filter((key) => ['get', 'put', 'post', 'patch', 'delete'].includes(key)),
    ).length;
    const budget = Math.floor((250_000 * Math.max(operations, 63)) / 63);
    expect(document.length).toBeLessThanOrEqual(budget);
  });
});
