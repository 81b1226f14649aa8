/**
 * JSON as people read it: two-space indentation, but an object or array that fits on one line
 * within `width` characters (its indentation and key included) stays on that line, as Prettier
 * prints JSON. The OpenAPI document is written this way: its many small objects (`$ref`s, enums,
 * one-line schemas) take one line each instead of three or more, and a diff stays line by line.
 */
export function formatJson(value: unknown, width = 110): string {
  return `${format(value, '', 0, width)}\n`;
}

function inline(value: unknown): string {
  if (Array.isArray(value)) return value.length ? `[${value.map(inline).join(', ')}]` : '[]';
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return entries.length
      ? `{ ${entries.map(([k, v]) => `${JSON.stringify(k)}: ${inline(v)}`).join(', ')} }`
      : '{}';
  }
  return JSON.stringify(value) ?? 'null';
}

function format(value: unknown, indent: string, prefix: number, width: number): string {
  const flat = inline(value);
  if (!value || typeof value !== 'object' || indent.length + prefix + flat.length <= width) return flat;
  const inner = `${indent}  `;
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
