import type { Server } from 'node:http';
import express from 'express';
import type { Request, Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import request from 'supertest';
import { FinishedRequest, requestPipeline } from './request-pipeline';

/** An Express application behind the pipeline, with a few answers, and what the pipeline reported. */
function pipelineApp() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; msg: string }> = [];
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) =>
    lines.push({ level, fields, msg });
  const logger = {
    isLevelEnabled: (level: string) => level !== 'debug',
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  } as unknown as Logger;
  const finished: FinishedRequest[] = [];
  const app = express();
  app.use(
    requestPipeline({
      logger,
      routeOf: (req) => `route:${req.path}`,
      apiHeaders: helmet({
        contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"] } },
      }),
      isDocs: (path) => path === '/docs' || path.startsWith('/docs/'),
      docsHeaders: helmet(),
      onFinished: (f) => finished.push(f),
    }),
  );
  app.get('/json', (_req: Request, res: Response) => void res.status(202).json({ a: 1 }));
  app.get('/own', (_req: Request, res: Response) => {
    res.setHeader('Cache-Control', 'max-age=5');
    res.setHeader('X-Request-Id', 'mine');
    res.end('own');
  });
  app.get('/fails', (_req: Request, res: Response) => void res.status(503).end());
  app.get('/docs/index.html', (_req: Request, res: Response) => void res.end('<html>'));
  return { server: app as unknown as Server, lines, finished };
}

describe('requestPipeline', () => {
  it('gives every answer a request id (the acceptable one sent, else a new one) and the security headers', async () => {
    const { server } = pipelineApp();
    const sent = await request(server).get('/json').set('X-Request-Id', 'trace-1').expect(202);
    expect(sent.body).toEqual({ a: 1 });
    expect(sent.headers['x-request-id']).toBe('trace-1');
    expect(sent.headers['cache-control']).toBe('no-store');
    expect(sent.headers['content-security-policy']).toBe("default-src 'none'");
    expect(sent.headers['x-content-type-options']).toBe('nosniff');
    const made = await request(server).get('/json').set('X-Request-Id', 'not acceptable!');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("keeps an answer's own value of any of them, and gives Swagger UI its own headers, without no-store", async () => {
    const { server } = pipelineApp();
    const own = await request(server).get('/own').expect(200);
    expect(own.headers['cache-control']).toBe('max-age=5');
    expect(own.headers['x-request-id']).toBe('mine');
    expect(own.headers['x-content-type-options']).toBe('nosniff');
    const docs = await request(server).get('/docs/index.html').set('X-Request-Id', 'trace-d').expect(200);
    expect(docs.headers['cache-control']).toBeUndefined();
    expect(docs.headers['x-request-id']).toBe('trace-d');
    expect(docs.headers['content-security-policy']).toContain("default-src 'self'");
  });

  it('writes one request line per answer (5xx at error) with the route and query keys, and reports it finished', async () => {
    const { server, lines, finished } = pipelineApp();
    await request(server).get('/json?secret=1&page=2').set('X-Request-Id', 'trace-l').expect(202);
    await request(server).get('/fails').expect(503);
    expect(lines).toEqual([
      {
        level: 'info',
        msg: 'request completed',
        fields: expect.objectContaining({
          reqId: 'trace-l',
          req: { method: 'GET', route: 'route:/json', query: ['secret', 'page'] },
          res: { statusCode: 202 },
        }),
      },
      expect.objectContaining({ level: 'error', msg: 'request completed' }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret=1');
    expect(finished.map((f) => [f.route, f.res.statusCode])).toEqual([
      ['route:/json', 202],
      ['route:/fails', 503],
    ]);
  });
});
