import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { json } from 'express';
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
/** Most query parameters a request may carry; no operation takes more than 8. */
export const QUERY_MAX_PARAMS = 50;

const NUL = '\u0000';
const NUL_MESSAGE = 'must not contain the NUL character (U+0000), which PostgreSQL text cannot hold';

/**
 * Express's JSON parser for every request body: at most 1 MiB and any JSON value at the top (not
 * only objects and arrays). Every content type is parsed: `requestLimits` has already refused a
 * body that is not JSON. Its `verify` hook keeps the exact bytes on `req.rawBody` (request
 * signatures are computed over them) and refuses what `refuseBeforeParsing` can see in them.
 */
export const jsonBodyParser: RequestHandler = json({
  limit: BODY_LIMIT_BYTES,
  strict: false,
  type: () => true,
  verify: (req, _res, buf) => {
    (req as Request & { rawBody?: Buffer }).rawBody = buf;
    refuseBeforeParsing(buf);
  },
});

const TOO_DEEP_MESSAGE = `nests deeper than ${BODY_MAX_DEPTH} levels of arrays and objects`;
const TOO_MANY_KEYS_MESSAGE = `has more than ${BODY_MAX_KEYS} keys`;
const TOO_MANY_ITEMS_MESSAGE = `has more than ${BODY_MAX_ITEMS} items`;

/**
 * Refuses, before the bytes are parsed, a body nested deeper than `BODY_MAX_DEPTH` and a body
 * whose top-level object or array has more members than `BODY_MAX_KEYS` or `BODY_MAX_ITEMS`: one
 * pass over the raw bytes, counting brackets and the top level's commas outside strings, is far
 * cheaper than parsing a megabyte into half a million nested arrays or an object of 80,000 keys
 * first. The top level is the only container a refusal can name without parsing, and the one the
 * parsed-body check (`bodyShapeError`) looks at first, so the answer is the same. The error
 * carries the parser's error shape (`status`, `type`), so the exception filter answers it like
 * the parser's own errors (see `bodyParserErrorOf`).
 */
export function refuseBeforeParsing(buf: Buffer): void {
  let depth = 0;
  let inString = false;
  // the top level's commas: more than `limit` members once there are `limit` of them
  let commas = 0;
  let limit = Infinity;
  let tooMany = '';
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (depth === 0) {
        [limit, tooMany] =
          c === 0x7b ? [BODY_MAX_KEYS, TOO_MANY_KEYS_MESSAGE] : [BODY_MAX_ITEMS, TOO_MANY_ITEMS_MESSAGE];
      }
      if (++depth > BODY_MAX_DEPTH) throw shapeRefusal(TOO_DEEP_MESSAGE);
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
    else if (c === 0x2c /* , */ && depth === 1 && ++commas >= limit) throw shapeRefusal(tooMany);
  }
}

/** The parser's error for a body refused by its shape: 400, the detail naming `body`. */
const shapeRefusal = (message: string): Error =>
  Object.assign(new Error(`body ${message}`), { status: 400, type: SHAPE_REFUSED, detail: message });

const SHAPE_REFUSED = 'entity.shape.refused';

/** `application/json` or an `application/*+json` type, parameters ignored. */
export function isJsonContentType(contentType: unknown): boolean {
  if (typeof contentType !== 'string') return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return req.headers['transfer-encoding'] !== undefined;
}

/**
 * The domain error for an error of Express's JSON parser (reaching the exception filter as it is,
 * or as the `cause` of the HttpException Nest maps it to): 413, 415, or 400 MALFORMED_JSON.
 * `undefined` for any other error.
 */
export function bodyParserErrorOf(error: unknown): DomainError | undefined {
  const parserError = (error as { cause?: unknown })?.cause ?? error;
  const type = (parserError as { type?: unknown })?.type;
  if (typeof type !== 'string') return undefined;
  switch (type) {
    case 'entity.too.large':
      return new DomainError('PAYLOAD_TOO_LARGE');
    case 'entity.parse.failed':
      return new DomainError('MALFORMED_JSON');
    case SHAPE_REFUSED: {
      const message = String((parserError as { detail?: unknown }).detail);
      return new DomainError('VALIDATION_FAILED', `body ${message}`, [{ field: 'body', message }]);
    }
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be UTF-8 JSON.');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
    case 'stream.not.readable':
      return new DomainError('MALFORMED_JSON', 'The request body could not be read.');
    default:
      return undefined;
  }
}

/**
 * What no handler can take in a parsed body, found in one walk without recursion, in the order
 * of the text: nesting deeper than `BODY_MAX_DEPTH` (validation and transformation recurse, and a
 * few kilobytes of brackets would exhaust their stack), an object with more than `BODY_MAX_KEYS`
 * keys, an array with more than `BODY_MAX_ITEMS` items, more than `BODY_MAX_NODES` values in all
 * (validating such a body would cost far more than parsing it, one error per unknown key), and
 * U+0000 in a string or a key. `undefined` when the body is fine.
 */
export function bodyShapeError(body: unknown): ErrorDetail | undefined {
  const pending: Array<{ value: unknown; path: string; depth: number }> = [
    { value: body, path: '', depth: 0 },
  ];
  const at = (path: string) => path || 'body';
  let nodes = 0;
  while (pending.length > 0) {
    const { value, path, depth } = pending.pop()!;
    if (++nodes > BODY_MAX_NODES)
      return { field: 'body', message: `holds more than ${BODY_MAX_NODES} values in all` };
    if (typeof value === 'string') {
      if (value.includes(NUL)) return { field: at(path), message: NUL_MESSAGE };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= BODY_MAX_DEPTH) return { field: at(path), message: TOO_DEEP_MESSAGE };
    if (Array.isArray(value)) {
      if (value.length > BODY_MAX_ITEMS) return { field: at(path), message: TOO_MANY_ITEMS_MESSAGE };
      // pushed last to first, so that they are taken in the order of the text
      for (let i = value.length - 1; i >= 0; i--)
        pending.push({ value: value[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    let keys = 0;
    for (const _ in value)
      if (++keys > BODY_MAX_KEYS) return { field: at(path), message: TOO_MANY_KEYS_MESSAGE };
    const entries = Object.entries(value);
    for (const [key] of entries)
      if (key.includes(NUL)) return { field: at(path), message: `has a key that ${NUL_MESSAGE}` };
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i];
      pending.push({ value: child, path: path ? `${path}.${key}` : key, depth: depth + 1 });
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

/**
 * A query of more than QUERY_MAX_PARAMS parameters is refused before it is parsed and validated
 * (every unknown parameter is a broken rule): 400 VALIDATION_FAILED naming `query`.
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
 * What every request goes through before its body is parsed, in this order: U+0000 in the URL
 * (`urlNulError`), too many query parameters (`queryLimitError`), then a body that is not JSON
 * (415 UNSUPPORTED_MEDIA_TYPE: the API takes JSON bodies only). A refusal is passed to `next`
 * as a domain error, which the exception filter answers.
 */
export const requestLimits: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  const url = req.originalUrl;
  const refused =
    (url.includes('%') ? urlNulError(url) : undefined) ??
    (url.includes('?') ? queryLimitError(url, url.indexOf('?')) : undefined);
  if (refused) return next(refused);
  if (hasBody(req) && !isJsonContentType(req.headers['content-type']))
    return next(new DomainError('UNSUPPORTED_MEDIA_TYPE'));
  next();
};

/** After the JSON parser: a parsed body that breaks a limit of `bodyShapeError` is 400 VALIDATION_FAILED. */
export const bodyLimits: RequestHandler = (req: Request, _res: Response, next: NextFunction) => {
  const body: unknown = req.body;
  const refused = body === undefined ? undefined : bodyShapeError(body);
  if (!refused) return next();
  // a NUL character is named by its detail alone; a shape limit also in the message
  const message = refused.message.includes('U+0000') ? undefined : `${refused.field} ${refused.message}`;
  next(new DomainError('VALIDATION_FAILED', message, [refused]));
};
