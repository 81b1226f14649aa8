import { Controller, DynamicModule, Get, INestApplication, Module } from '@nestjs/common';
import { ApplicationConfig, NestFactory } from '@nestjs/core';
import express from 'express';
import { ClsModule, ClsService } from 'nestjs-cls';
import request from 'supertest';
import { ApiExpressAdapter } from '../http/api-express-adapter';
import { clsRootWithoutIdleEnhancers } from './cls-root';

@Controller('t')
class ValueController {
  constructor(private readonly cls: ClsService) {}

  @Get('value')
  value() {
    return this.cls.get<string>('value') ?? null;
  }
}

async function appWith(cls: DynamicModule): Promise<INestApplication> {
  @Module({ imports: [cls], controllers: [ValueController] })
  class TestModule {}
  const app = await NestFactory.create(TestModule, new ApiExpressAdapter(express()), { logger: false });
  // the service opens its async context in a middleware of its own, as here
  const store = app.get(ClsService);
  app.use((_req: express.Request, _res: express.Response, next: express.NextFunction) =>
    store.run(() => {
      store.set('value', 'from the middleware');
      next();
    }),
  );
  await app.init();
  return app;
}

/**
 * nestjs-cls adds a global guard and a global interceptor even when it mounts neither; Nest runs
 * every request of a route with an interceptor through an RxJS pipeline. If an upgrade of
 * nestjs-cls stops adding them, the first test fails (and `clsRootWithoutIdleEnhancers` throws at
 * start): the helper can then go.
 */
describe('clsRootWithoutIdleEnhancers', () => {
  const apps: INestApplication[] = [];
  afterAll(() => Promise.all(apps.map((app) => app.close())));

  it('nestjs-cls alone gives every route a global guard and interceptor', async () => {
    const app = await appWith(ClsModule.forRoot({ global: true }));
    apps.push(app);
    const config = app.get(ApplicationConfig);
    expect(config.getGlobalInterceptors()).toHaveLength(1);
    expect(config.getGlobalGuards()).toHaveLength(1);
  });

  it('leaves routes without them, and the async context working', async () => {
    const app = await appWith(clsRootWithoutIdleEnhancers({ global: true }));
    apps.push(app);
    const config = app.get(ApplicationConfig);
    expect(config.getGlobalInterceptors()).toHaveLength(0);
    expect(config.getGlobalGuards()).toHaveLength(0);
    await request(app.getHttpServer())
      .get('/t/value')
      .expect(200)
      .expect((res) => expect(res.body.data).toBe('from the middleware'));
  });

  it('refuses options that mount the guard or the interceptor', () => {
    expect(() => clsRootWithoutIdleEnhancers({ interceptor: { mount: true } })).toThrow(/not idle/);
    expect(() => clsRootWithoutIdleEnhancers({ guard: { mount: true } })).toThrow(/not idle/);
  });
});
