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
