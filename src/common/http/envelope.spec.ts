import { IncomingMessage, ServerResponse, type Server } from 'node:http';
import { Socket } from 'node:net';
import request from 'supertest';
import type { Express, Request, Response } from 'express';
import { createHttpAdapter } from '../../configure-app';
import { deferHeadHeaders, headHeadersOf } from './envelope';

describe('EnvelopeExpressAdapter: requests and responses born as Express objects', () => {
  let server: Server;
  let instance: Express;

  beforeAll(() => {
    const adapter = createHttpAdapter();
    adapter.initHttpServer({});
    instance = adapter.getInstance<Express>();
    instance.get('/echo', (req: Request, res: Response) => {
      res
        .status(201)
        .json({ host: req.get('host'), path: req.path, query: req.query, app: req.app === instance });
    });
    server = adapter.getHttpServer() as Server;
  });

  it('serves Express handlers as before: req.get, req.path, req.query, req.app, res.status, res.json', async () => {
    const res = await request(server).get('/echo?a=1').set('Host', 'example.test').expect(201);
    expect(res.body).toEqual({ host: 'example.test', path: '/echo', query: { a: '1' }, app: true });
  });

  it('Express changes the prototype of no request or response (its per-request setPrototypeOf changes nothing)', async () => {
    const changed: string[] = [];
    const original = Object.setPrototypeOf;
    const spy = jest
      .spyOn(Object, 'setPrototypeOf')
      .mockImplementation((target: object, proto: object | null) => {
        if (Object.getPrototypeOf(target) !== proto) changed.push(String(target?.constructor?.name));
        return original(target, proto);
      });
    try {
      await request(server).get('/echo').expect(201);
    } finally {
      spy.mockRestore();
    }
    expect(changed).toEqual([]);
  });
});

describe('deferHeadHeaders: headers given to an answer when its head is written, unless it set them', () => {
  let server: Server;
  const headers = headHeadersOf([
    ['Cache-Control', 'no-store'],
    ['X-Frame-Options', 'SAMEORIGIN'],
  ]);

  beforeAll(() => {
    const adapter = createHttpAdapter();
    adapter.initHttpServer({});
    const instance = adapter.getInstance<Express>();
    instance.use((req: Request, res: Response, next: () => void) => {
      expect(deferHeadHeaders(res, headers, `rid-${req.path.slice(1)}`)).toBe(true);
      // a second call is refused: the first one's headers stay
      expect(deferHeadHeaders(res, headers, 'other')).toBe(false);
      next();
    });
    instance.get('/list', (_req: Request, res: Response) => {
      res.writeHead(200, ['content-type', 'text/plain']);
      res.end('list');
    });
    instance.get('/own-list', (_req: Request, res: Response) => {
      res.writeHead(200, ['Cache-Control', 'max-age=5', 'x-request-id', 'mine']);
      res.end('own');
    });
    instance.get('/set', (_req: Request, res: Response) => {
      res.setHeader('Cache-Control', 'private');
      res.end('set');
    });
    instance.get('/json', (_req: Request, res: Response) => void res.status(202).json({ a: 1 }));
    instance.get('/nothing', (_req: Request, res: Response) => void res.end());
    server = adapter.getHttpServer() as Server;
  });

  it('adds them all, and X-Request-Id, to an answer that set none', async () => {
    for (const path of ['/list', '/nothing']) {
      const res = await request(server).get(path).expect(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(res.headers['x-request-id']).toBe(`rid-${path.slice(1)}`);
    }
    const res = await request(server).get('/list');
    expect(res.headers['content-type']).toBe('text/plain');
    expect(res.text).toBe('list');
  });

  it("keeps an answer's own value of any of them, set before or given to writeHead, once", async () => {
    const own = await request(server).get('/own-list').expect(200);
    // one value: a second Cache-Control line would have been joined to it (`no-store, max-age=5`)
    expect(own.headers['cache-control']).toBe('max-age=5');
    expect(own.headers['x-request-id']).toBe('mine');
    expect(own.headers['x-frame-options']).toBe('SAMEORIGIN');
    const set = await request(server).get('/set').expect(200);
    expect(set.headers['cache-control']).toBe('private');
    expect(set.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(set.headers['x-request-id']).toBe('rid-set');
  });

  it('reaches answers written by Express (res.json), with their own headers', async () => {
    const res = await request(server).get('/json').expect(202);
    expect(res.body).toEqual({ a: 1 });
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-request-id']).toBe('rid-json');
  });

  it('is refused for a response that is not born of expressClassesOf', () => {
    const plain = new ServerResponse(new IncomingMessage(new Socket()));
    expect(deferHeadHeaders(plain, headers, 'x')).toBe(false);
  });
});
