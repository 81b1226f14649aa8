import type { IncomingMessage } from 'node:http';
import type { Params } from 'nestjs-pino';

/**
 * Structured JSON logs (pino): one line per request with its id, method, route and status;
 * every line logged while handling a request carries the same `reqId`. Keys, tokens,
 * signatures and passwords never reach a log.
 */
export function loggerOptions(level: string): Params {
  return {
    pinoHttp: {
      level,
      genReqId: (req: IncomingMessage) => (req as IncomingMessage & { id?: string }).id ?? 'unknown',
      customProps: () => ({ service: 'subscription-service' }),
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      redact: {
        paths: ['req.headers.authorization', 'req.headers["x-service-key"]', 'req.headers["x-service-signature"]', '*.password'],
        censor: '[redacted]',
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
      quietReqLogger: false,
    },
  };
}
