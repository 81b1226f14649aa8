import { ERROR_HELP, ERROR_STATUS, ErrorCode } from './error-codes';

/** `docs/errors.md`: every error code from the one table, its status, when it happens, what to do. */
export function errorReference(): string {
  const codes = (Object.keys(ERROR_STATUS) as ErrorCode[]).sort(
    (a, b) => ERROR_STATUS[a] - ERROR_STATUS[b] || a.localeCompare(b),
  );
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  return [
    '# Error codes',
    '',
    '<!-- Written by `npm run openapi` from src/common/errors/error-codes.ts; do not edit by hand. -->',
    '',
    'Every error answer is `{ "ok": false, "requestId": "...", "error": { "code": "...", "message": "...", "details": [...] } }`',
    'with the HTTP status of its code. Branch on `code`, never on `message` (a sentence for people that may',
    'change). `details` comes with `VALIDATION_FAILED`: one `{ field, message }` per problem. Quote the',
    '`requestId` (also the `X-Request-Id` header) when reporting a problem: the log lines of the request carry it.',
    'The OpenAPI document lists, for each operation, the codes it can answer, with an example of each.',
    '',
    '| status | code | when | what to do |',
    '|---|---|---|---|',
    ...codes.map(
      (code) =>
        `| ${ERROR_STATUS[code]} | \`${code}\` | ${cell(ERROR_HELP[code].when)} | ${cell(ERROR_HELP[code].action)} |`,
    ),
    '',
  ].join('\n');
}
