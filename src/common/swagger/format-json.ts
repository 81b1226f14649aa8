/**
 * JSON as people read it, in few bytes: one-space indentation; an object or array that fits on one
 * line within `width` characters (its indentation and key included) stays on that line; and so
 * does one that holds only plain values and references (a property's schema, a `required` list, an
 * operation's responses, a response's headers), however long, so that one property or one
 * operation's answers are one line. The OpenAPI document is written this way: it stays small, and a
 * diff stays line by line.
 */
export function formatJson(value: unknown, width = 110): string {
  return `${format(value, '', 0, width)}\n`;
}

function inline(value: unknown): string {
  if (Array.isArray(value)) return value.length ? `[${value.map(inline).join(', ')}]` : '[]';
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return entries.length
      ? `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`).join(', ')}}`
      : '{}';
  }
  return JSON.stringify(value) ?? 'null';
}

/** A reference (`{ "$ref": ... }`) reads as one value. */
const isRef = (value: object): boolean => {
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === '$ref';
};

const isPlain = (value: unknown): boolean =>
  !value ||
  typeof value !== 'object' ||
  isRef(value) ||
  (Array.isArray(value) && value.every((v) => !v || typeof v !== 'object' || isRef(v as object)));

/**
 * An array or object of plain values (a `required` list, a property's schema, a parameter's list of
 * references, the responses of an operation), printed on one line however long.
 */
const isFlat = (value: object): boolean => Object.values(value).every(isPlain);

function format(value: unknown, indent: string, prefix: number, width: number): string {
  const flat = inline(value);
  if (!value || typeof value !== 'object' || indent.length + prefix + flat.length <= width) return flat;
  if (isFlat(value)) return flat;
  const inner = `${indent} `;
  if (Array.isArray(value))
    return `[\n${value.map((v) => inner + format(v, inner, 0, width)).join(',\n')}\n${indent}]`;
  const lines = Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => {
      const key = `${JSON.stringify(k)}: `;
      return inner + key + format(v, inner, key.length, width);
    });
  return `{\n${lines.join(',\n')}\n${indent}}`;
}
