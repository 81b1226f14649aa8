import { json } from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError } from '../errors/domain-error';

export const BODY_LIMIT_BYTES = 1024 * 1024;

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
  if (!isJsonContentType(req.headers['content-type'] ?? '')) return next(new DomainError('UNSUPPORTED_MEDIA_TYPE'));
  parseJson(req, res, (err?: unknown) => {
    if (!err) return next();
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') return next(new DomainError('PAYLOAD_TOO_LARGE'));
    if (type === 'entity.parse.failed') return next(new DomainError('MALFORMED_JSON'));
    if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
      return next(new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be UTF-8 JSON.'));
    }
    return next(new DomainError('MALFORMED_JSON', 'The request body could not be read.'));
  });
};
