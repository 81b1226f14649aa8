/**
 * JSON for a `jsonb` parameter: `JSON.stringify` writes a lone surrogate (which a customer's
 * identifier or a free-text field may hold) as `\udXXX`, which PostgreSQL's json refuses; text
 * columns store it as U+FFFD (its UTF-8 encoding), so the JSON says the same.
 */
export const wellFormedJson = (value: unknown): string => JSON.stringify(value, wellFormed);

function wellFormed(_key: string, value: unknown): unknown {
  return typeof value === 'string' && /[\ud800-\udfff]/.test(value)
    ? Buffer.from(value, 'utf8').toString('utf8')
    : value;
}
