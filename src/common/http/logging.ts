import type { LoggerService } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import pino, { Logger } from 'pino';

/** Injection token of the process's pino logger, for Nest's logger and the request lines. */
export const ROOT_LOGGER = Symbol('ROOT_LOGGER');

/** The values of LOG_FORMAT. */
export const LOG_FORMATS = ['json', 'pretty'];

/**
 * `LOG_FORMAT` as set, or by default: lines for people (`pretty`) when stdout is a terminal
 * outside production, JSON lines otherwise (a file, a pipe, a log collector).
 */
export function resolveLogFormat(
  value: string | undefined,
  stdoutIsTty = Boolean(process.stdout.isTTY),
  nodeEnv = process.env.NODE_ENV,
): 'json' | 'pretty' {
  if (value === 'json' || value === 'pretty') return value;
  return stdoutIsTty && nodeEnv !== 'production' ? 'pretty' : 'json';
}

/**
 * The process's one pino logger: JSON lines on stdout with `service` on every line, or, with
 * `format: 'pretty'`, coloured one-line messages for a person at a terminal (pino-pretty, loaded
 * only then, in the process: no worker thread). Keys, tokens, signatures and passwords never
 * reach a log: nothing logs headers or bodies, and the redaction below is a second line of
 * defence for objects passed to a logger by mistake.
 */
export function createRootLogger(level: string, format: 'json' | 'pretty' = 'json'): Logger {
  const stream =
    format === 'pretty'
      ? // loaded only for a terminal: production never loads it
        (require('pino-pretty') as typeof import('pino-pretty'))({
          colorize: true,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname,service',
          singleLine: true,
        })
      : undefined;
  return pino(
    {
      level,
      base: { service: 'subscription-service' },
      redact: {
        paths: [
          '*.headers.authorization',
          '*.headers["x-service-key"]',
          '*.headers["x-service-signature"]',
          'password',
          '*.password',
        ],
        censor: '[redacted]',
      },
    },
    stream as pino.DestinationStream,
  );
}

/**
 * nestjs-pino serves as Nest's logger (`app.useLogger`) on top of `root`. Its per-request
 * middleware (pino-http plus an AsyncLocalStorage context) is not mounted: `requestPipeline`
 * (request-pipeline.ts) writes the request lines instead, one per answer, and code that logs
 * while handling a request names its `reqId` itself, as the request lines do.
 */
export function loggerOptions(root: Logger): Params {
  return { pinoHttp: { logger: root }, forRoutes: [] };
}

/** At most this many query keys are logged, each cut to 64 characters. */
const MAX_LOGGED_QUERY_KEYS = 20;

/** The distinct names of the query parameters of `url`, never their values. */
export function queryKeys(url: string): string[] {
  const at = url.indexOf('?');
  if (at < 0) return [];
  const keys = new Set<string>();
  for (const key of new URLSearchParams(url.slice(at + 1)).keys()) {
    keys.add(key.slice(0, 64));
    if (keys.size === MAX_LOGGED_QUERY_KEYS) break;
  }
  return [...keys];
}

/** Nest's start-up contexts that log one line per module and per route. */
const START_UP_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

/**
 * Nest's logger with its start-up chatter (a line per module, per controller and per route)
 * moved to `debug`, so that at the default `info` the start-up banner and the demo's keys are not
 * buried under some 60 "Mapped {...} route" lines; `LOG_LEVEL=debug` shows them again.
 */
export function withQuietStartup(logger: LoggerService): LoggerService {
  const quiet = (params: unknown[]) => START_UP_CONTEXTS.has(String(params[params.length - 1]));
  return {
    log: (message: unknown, ...params: unknown[]) =>
      quiet(params) ? logger.debug?.(message, ...params) : logger.log(message, ...params),
    error: (message: unknown, ...params: unknown[]) => logger.error(message, ...params),
    warn: (message: unknown, ...params: unknown[]) => logger.warn(message, ...params),
    debug: (message: unknown, ...params: unknown[]) => logger.debug?.(message, ...params),
    verbose: (message: unknown, ...params: unknown[]) => logger.verbose?.(message, ...params),
    fatal: (message: unknown, ...params: unknown[]) => logger.fatal?.(message, ...params),
  };
}
