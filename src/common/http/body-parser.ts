import { json } from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError } from '../errors/domain-error';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Deepest nesting of arrays and objects a body may have; no request of the API needs more than 4. */
export const BODY_MAX_DEPTH = 32;
const NUL = '\u0000';
const NUL_MESSAGE = 'must not contain the NUL character (U+0000), which PostgreSQL text cannot hold';

/** The exact bytes are kept on `req.rawBody`: request signatures are computed over them. */
const parseJson = json({
  limit: BODY_LIMIT_BYTES,
  type: () => true,
  strict: false,
  verify: (req, _res, buf) => {
    (req as typeof req & { rawBody?: Buffer }).rawBody = buf;
  },
});

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return req.headers['transfer-encoding'] !== undefined;
}

/** `application/json` or an `application/*+json` type, parameters ignored. */
export function isJsonContentType(contentType: unknown): boolean {
  if (typeof contentType !== 'string') return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/**
 * JSON bodies only, at most 1 MiB (product.md 2 and 10). Parser failures become domain errors
 * so the one exception filter formats them: 415, 413 or 400 MALFORMED_JSON.
 */
export const jsonBodyMiddleware: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
  if (!hasBody(req)) return next();
  if (!isJsonContentType(req.headers['content-type'] ?? ''))
    return next(new DomainError('UNSUPPORTED_MEDIA_TYPE'));
  parseJson(req, res, (err?: unknown) => {
    if (!err) {
      const refused = unsafeJson(req.body);
      return next(refused && new DomainError('VALIDATION_FAILED', undefined, [refused]));
    }
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') return next(new DomainError('PAYLOAD_TOO_LARGE'));
    if (type === 'entity.parse.failed') return next(new DomainError('MALFORMED_JSON'));
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return next(new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be UTF-8 JSON.'));
    }
    return next(new DomainError('MALFORMED_JSON', 'The request body could not be read.'));
  });
};

/**
 * What no handler can take, found in one pass without recursion: nesting deeper than
 * `BODY_MAX_DEPTH` (validation and transformation recurse, and a few kilobytes of brackets would
 * exhaust their stack) and U+0000 in a string or a key. `undefined` when the body is fine.
 */
export function unsafeJson(body: unknown): { field: string; message: string } | undefined {
  const pending: Array<{ value: unknown; path: string; depth: number }> = [
    { value: body, path: '', depth: 0 },
  ];
  const at = (path: string) => path || 'body';
  while (pending.length > 0) {
    const { value, path, depth } = pending.pop()!;
    if (typeof value === 'string') {
      if (value.includes(NUL)) return { field: at(path), message: NUL_MESSAGE };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= BODY_MAX_DEPTH)
      return { field: at(path), message: `nests deeper than ${BODY_MAX_DEPTH} levels of arrays and objects` };
    for (const [key, child] of Object.entries(value)) {
      const childPath = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      if (key.includes(NUL)) return { field: at(path), message: `has a key that ${NUL_MESSAGE}` };
      pending.push({ value: child, path: childPath, depth: depth + 1 });
    }
  }
  return undefined;
}

/**
 * U+0000 in the path or the query (`%00`): PostgreSQL text cannot hold it, so no lookup or search
 * could use it. 400 VALIDATION_FAILED naming the query parameter (or `path`).
 */
export const urlNulMiddleware: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  const url = req.originalUrl;
  if (!/%00/i.test(url)) return next();
  const query = url.indexOf('?');
  let field = 'path';
  if (query >= 0 && /%00/i.test(url.slice(query))) {
    const params = new URLSearchParams(url.slice(query + 1));
    field =
      [...params]
        .find(([name, value]) => name.includes(NUL) || value.includes(NUL))?.[0]
        .replaceAll(NUL, '') || 'query';
  }
  next(new DomainError('VALIDATION_FAILED', undefined, [{ field, message: NUL_MESSAGE }]));
};
