import { json } from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError } from '../errors/domain-error';
import type { ErrorDetail } from '../errors/error-codes';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Deepest nesting of arrays and objects a body may have; no request of the API needs more than 4. */
export const BODY_MAX_DEPTH = 32;
/** Most keys one object of a body may have; the widest request object has fewer than 10 fields. */
export const BODY_MAX_KEYS = 100;
/** Most items one array of a body may have; the longest list a request takes is 50 identifiers. */
export const BODY_MAX_ITEMS = 1000;
/** Most values (objects, arrays, strings, numbers, booleans, nulls) in one body. */
export const BODY_MAX_NODES = 10_000;
const NUL = '\u0000';
const NUL_MESSAGE = 'must not contain the NUL character (U+0000), which PostgreSQL text cannot hold';

/** A body whose shape breaks one of the limits above, found before it is parsed. */
class BodyShapeError extends Error {
  constructor(readonly detail: ErrorDetail) {
    super(detail.message);
  }
}

interface Container {
  object: boolean;
  /** Commas seen so far: the container holds `commas + 1` entries once it has any. */
  commas: number;
  /** The key being read (objects). */
  key?: string;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The shape of a JSON text, checked on its bytes in one pass and before `JSON.parse`: nesting
 * deeper than `BODY_MAX_DEPTH`, an object with more than `BODY_MAX_KEYS` keys, an array with
 * more than `BODY_MAX_ITEMS` items, or more than `BODY_MAX_NODES` values in all. A body of 1 MiB
 * can hold 80,000 keys in one object; building that object alone takes `JSON.parse` some 40 ms
 * of CPU, and validating it took seconds (one error per unknown key). This scan costs about a
 * millisecond per MiB, so the work spent on any body is bounded before it is parsed. Structural
 * characters are ASCII and never appear inside a UTF-8 multi-byte sequence, so bytes will do.
 * The text is not validated here (`JSON.parse` does that); malformed text can only be miscounted
 * into a refusal that `JSON.parse` would have made anyway, or let through to it.
 */
export function checkJsonShape(buf: Buffer): ErrorDetail | undefined {
  const stack: Container[] = [];
  let nodes = 1;
  let stringStart = -1;
  let lastString: [number, number] | undefined;
  const path = (upTo: number) => {
    let out = '';
    for (let i = 0; i < upTo; i++) {
      const c = stack[i];
      if (c.object) out += out ? `.${c.key ?? ''}` : (c.key ?? '');
      else out += `[${c.commas}]`;
    }
    return out || 'body';
  };
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i];
    if (stringStart >= 0) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) {
        lastString = [stringStart, i];
        stringStart = -1;
      }
      continue;
    }
    switch (b) {
      case QUOTE:
        stringStart = i + 1;
        break;
      case 0x7b: // {
      case 0x5b: // [
        if (stack.length >= BODY_MAX_DEPTH)
          return {
            field: path(stack.length),
            message: `nests deeper than ${BODY_MAX_DEPTH} levels of arrays and objects`,
          };
        if (++nodes > BODY_MAX_NODES)
          return { field: 'body', message: `holds more than ${BODY_MAX_NODES} values in all` };
        stack.push({ object: b === 0x7b, commas: 0 });
        break;
      case 0x7d: // }
      case 0x5d: // ]
        stack.pop();
        break;
      case 0x3a: {
        // `:` ends a key: remember it (shortened) to name the field of a refusal
        const top = stack[stack.length - 1];
        if (top && lastString)
          top.key = buf.toString('utf8', lastString[0], Math.min(lastString[1], lastString[0] + 64));
        break;
      }
      case 0x2c: {
        // `,`: one more value in the innermost container
        const top = stack[stack.length - 1];
        if (!top) break;
        top.commas++;
        if (++nodes > BODY_MAX_NODES)
          return { field: 'body', message: `holds more than ${BODY_MAX_NODES} values in all` };
        if (top.object && top.commas >= BODY_MAX_KEYS)
          return { field: path(stack.length - 1), message: `has more than ${BODY_MAX_KEYS} keys` };
        if (!top.object && top.commas >= BODY_MAX_ITEMS)
          return { field: path(stack.length - 1), message: `has more than ${BODY_MAX_ITEMS} items` };
        break;
      }
    }
  }
  return undefined;
}

/**
 * The exact bytes are kept on `req.rawBody`: request signatures are computed over them. Their
 * shape is checked before they are parsed (`checkJsonShape`).
 */
const parseJson = json({
  limit: BODY_LIMIT_BYTES,
  type: () => true,
  strict: false,
  verify: (req, _res, buf) => {
    (req as typeof req & { rawBody?: Buffer }).rawBody = buf;
    const refused = checkJsonShape(buf);
    if (refused) throw new BodyShapeError(refused);
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
function parseJsonBody(req: Request, res: Response, next: NextFunction): void {
  if (!isJsonContentType(req.headers['content-type'] ?? ''))
    return next(new DomainError('UNSUPPORTED_MEDIA_TYPE'));
  parseJson(req, res, (err?: unknown) => {
    if (err instanceof BodyShapeError)
      return next(
        new DomainError('VALIDATION_FAILED', `${err.detail.field} ${err.detail.message}`, [err.detail]),
      );
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
}

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
function urlNulError(url: string): DomainError | undefined {
  if (!/%00/i.test(url)) return undefined;
  const query = url.indexOf('?');
  let field = 'path';
  if (query >= 0 && /%00/i.test(url.slice(query))) {
    const params = new URLSearchParams(url.slice(query + 1));
    field =
      [...params]
        .find(([name, value]) => name.includes(NUL) || value.includes(NUL))?.[0]
        .replaceAll(NUL, '') || 'query';
  }
  return new DomainError('VALIDATION_FAILED', undefined, [{ field, message: NUL_MESSAGE }]);
}

/** Most query parameters a request may carry; no operation takes more than 8. */
export const QUERY_MAX_PARAMS = 50;

/**
 * A query of more than QUERY_MAX_PARAMS parameters is refused before it is parsed and validated
 * (every unknown parameter is a broken rule, and a query of 1,000 of them cost some 50 ms of CPU
 * to check): 400 VALIDATION_FAILED naming `query`.
 */
function queryLimitError(url: string, at: number): DomainError | undefined {
  let params = 1;
  for (let i = url.indexOf('&', at); i >= 0; i = url.indexOf('&', i + 1)) {
    if (++params > QUERY_MAX_PARAMS) {
      const message = `has more than ${QUERY_MAX_PARAMS} parameters`;
      return new DomainError('VALIDATION_FAILED', `query ${message}`, [{ field: 'query', message }]);
    }
  }
  return undefined;
}

/**
 * What every request's URL and body go through before routing, in this order: U+0000 in the URL
 * (`urlNulError`), too many query parameters (`queryLimitError`), then the JSON body
 * (`parseJsonBody`). A refusal is passed to `next` as a domain error, which the exception filter
 * answers. A request without `%`, `?` or a body costs three tests.
 */
export const requestBodyMiddleware: RequestHandler = (req: Request, res: Response, next: NextFunction) => {
  const url = req.originalUrl;
  const refused =
    (url.includes('%') ? urlNulError(url) : undefined) ??
    (url.includes('?') ? queryLimitError(url, url.indexOf('?')) : undefined);
  if (refused) return next(refused);
  if (!hasBody(req)) return next();
  parseJsonBody(req, res, next);
};
