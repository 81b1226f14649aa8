import type { Server } from 'node:http';
import request from 'supertest';
import type { Express, Request, Response } from 'express';
import { createHttpAdapter } from '../../configure-app';

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
