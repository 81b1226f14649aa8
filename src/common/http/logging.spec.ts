import type { LoggerService } from '@nestjs/common';
import { resolveLogFormat, withQuietStartup } from './logging';

describe('resolveLogFormat', () => {
  it('is pretty at a terminal outside production and JSON otherwise, unless LOG_FORMAT says', () => {
    expect(resolveLogFormat(undefined, true, 'development')).toBe('pretty');
    expect(resolveLogFormat(undefined, true, undefined)).toBe('pretty');
    expect(resolveLogFormat(undefined, false, undefined)).toBe('json');
    expect(resolveLogFormat(undefined, true, 'production')).toBe('json');
    expect(resolveLogFormat('json', true, undefined)).toBe('json');
    expect(resolveLogFormat('pretty', false, 'production')).toBe('pretty');
  });
});

describe('withQuietStartup', () => {
  it("moves Nest's per-module and per-route start-up lines to debug and keeps the others", () => {
    const calls: string[] = [];
    const record =
      (level: string) =>
      (message: unknown, ...params: unknown[]) =>
        calls.push(`${level}:${String(message)}:${params.join(',')}`);
    const inner: LoggerService = {
      log: record('log'),
      error: record('error'),
      warn: record('warn'),
      debug: record('debug'),
    };
    const logger = withQuietStartup(inner);
    logger.log('Mapped {/api/private/v1/info, GET} route', 'RouterExplorer');
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Nest application successfully started', 'NestApplication');
    logger.error('boom', 'stack', 'ExceptionsHandler');
    expect(calls).toEqual([
      'debug:Mapped {/api/private/v1/info, GET} route:RouterExplorer',
      'debug:AppModule dependencies initialized:InstanceLoader',
      'log:Nest application successfully started:NestApplication',
      'error:boom:stack,ExceptionsHandler',
    ]);
  });
});
