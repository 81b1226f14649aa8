import {
  Controller,
  Delete,
  Get,
  HttpCode,
  INestApplication,
  Module,
  Post,
  StreamableFile,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import express from 'express';
import { of } from 'rxjs';
import request from 'supertest';
import { ApiExpressAdapter } from './api-express-adapter';

@Controller('t')
class ResultsController {
  @Get('object')
  object() {
    return { a: 1 };
  }

  @Get('later')
  async later() {
    return Promise.resolve([1, 2]);
  }

  @Get('observable')
  observable() {
    return of({ x: 1 });
  }

  @Get('nothing')
  nothing() {
    return undefined;
  }

  @Post('created')
  created() {
    return { id: 7 };
  }

  @Delete('gone')
  @HttpCode(204)
  gone() {
    return undefined;
  }

  @Get('file')
  file() {
    return new StreamableFile(Buffer.from('a,b\n'), { type: 'text/csv' });
  }
}

@Module({ controllers: [ResultsController] })
class ResultsModule {}

/**
 * The adapter's `reply` is where Nest writes every handler's result (see the class): if an
 * upgrade of Nest writes results some other way, these answers lose their envelope and this fails.
 */
describe('ApiExpressAdapter: a handler result is written as the success envelope', () => {
  let app: INestApplication;

  beforeAll(async () => {
    app = await NestFactory.create(ResultsModule, new ApiExpressAdapter(express()), { logger: false });
    app.use((req: express.Request & { id?: string }, _res: express.Response, next: express.NextFunction) => {
      req.id = 'rid-9';
      next();
    });
    await app.init();
  });

  afterAll(() => app.close());

  it('wraps plain, awaited and observable results, and nothing, with the status of the route', async () => {
    const server = app.getHttpServer();
    const envelope = (data: unknown) => ({ ok: true, requestId: 'rid-9', data });
    await request(server)
      .get('/t/object')
      .expect(200, envelope({ a: 1 }));
    await request(server)
      .get('/t/later')
      .expect(200, envelope([1, 2]));
    await request(server)
      .get('/t/observable')
      .expect(200, envelope({ x: 1 }));
    const nothing = await request(server).get('/t/nothing').expect(200);
    expect(nothing.text).toBe('{"ok":true,"requestId":"rid-9"}');
    await request(server)
      .post('/t/created')
      .expect(201, envelope({ id: 7 }));
  });

  it('leaves a 204 empty and a file as it is', async () => {
    const server = app.getHttpServer();
    const gone = await request(server).delete('/t/gone').expect(204);
    expect(gone.text).toBe('');
    const file = await request(server).get('/t/file').expect(200);
    expect(file.headers['content-type']).toMatch(/^text\/csv/);
    expect(file.text).toBe('a,b\n');
  });
});
