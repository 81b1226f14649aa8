import { Controller, Get, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AdminApi, PrivateApi, PublicApi } from '../../auth/decorators';
import { Access, Unauthenticated } from './access';
import { apiPath } from './api-prefixes';
import { RoutesModule } from './route-catalog.service';
import { routesWithoutOneAccess, walkRoutes } from './route-walker';

@PrivateApi()
@Controller(apiPath('private', 'things'))
class GuardedThings {
  @Get()
  list() {}
  @Post()
  create() {}
}

@Controller(apiPath('public', 'things'))
class PerHandler {
  @Get()
  @PublicApi()
  list() {}
  @Get('open')
  forgotten() {}
}

@AdminApi()
@Controller(apiPath('admin', 'things'))
class Doubled {
  @Get()
  @PrivateApi()
  list() {}
}

@Unauthenticated()
@Controller('probe')
class Probe {
  @Get()
  ping() {}
}

describe('default deny: one access decorator per route', () => {
  it('reads the access of each route from its class and its handler', () => {
    const routes = walkRoutes([GuardedThings, PerHandler, Probe]);
    expect(routes.map((r) => `${r.method} ${r.path} ${r.access.join('+')}`)).toEqual([
      'GET /api/private/v1/things private',
      'POST /api/private/v1/things private',
      'GET /api/public/v1/things public',
      'GET /api/public/v1/things/open ',
      'GET /probe unauthenticated',
    ]);
  });

  it('names the routes with none and with two', () => {
    expect(routesWithoutOneAccess(walkRoutes([GuardedThings, PerHandler, Doubled, Probe]))).toEqual([
      'Doubled.list (GET /api/admin/v1/things): 2 (admin, private)',
      'PerHandler.forgotten (GET /api/public/v1/things/open): no access decorator',
    ]);
  });

  // The same shapes with the bare metadata decorator: booting needs no key guard's dependencies.
  @Access('private')
  @Controller('a')
  class Guarded {
    @Get()
    list() {}
  }

  @Controller('b')
  class Forgotten {
    @Get()
    @Access('public')
    list() {}
    @Get('open')
    forgotten() {}
  }

  @Access('admin')
  @Controller('c')
  class Twice {
    @Get()
    @Access('private')
    list() {}
  }

  const boot = async (...controllers: Array<new () => unknown>) => {
    const moduleRef = await Test.createTestingModule({ imports: [RoutesModule], controllers }).compile();
    await moduleRef.close();
  };

  it('an application with a route without an access decorator refuses to start, naming it', async () => {
    await expect(boot(Guarded, Forgotten)).rejects.toThrow(
      /exactly one of @PrivateApi\(\), @PublicApi\(\), @AdminApi\(\), @Unauthenticated\(\): Forgotten\.forgotten \(GET \/b\/open\): no access decorator/,
    );
  });

  it('an application with two access decorators on a route refuses to start', async () => {
    await expect(boot(Twice)).rejects.toThrow(/Twice\.list \(GET \/c\): 2 \(admin, private\)/);
  });

  it('an application where every route has one starts', async () => {
    await expect(boot(Guarded, Probe)).resolves.toBeUndefined();
  });
});
