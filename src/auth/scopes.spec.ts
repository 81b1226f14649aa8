import { Controller, Get, Post } from '@nestjs/common';
import { Access } from '../common/routes/access';
import { apiPath } from '../common/routes/api-prefixes';
import type { RouteCatalog } from '../common/routes/route-catalog.service';
import { walkRoutes } from '../common/routes/route-walker';
import {
  NoScope,
  normalizeScopes,
  RouteScopeCheck,
  routesWithWrongScope,
  Scope,
  scopeAllows,
} from './scopes';

@Access('private')
@Controller(apiPath('private', 'customers'))
class Customers {
  @Get()
  @Scope('customers:read')
  list() {}
  @Post()
  @Scope('customers:write')
  create() {}
}

@Access('private')
@Controller(apiPath('private', 'features'))
class Wrong {
  @Get()
  forgotten() {}
  @Post()
  @Scope('catalog:read')
  mismatched() {}
  @Get(':id')
  @Scope('catalog:read')
  @Scope('catalog:write')
  twice() {}
}

@Access('private')
@Controller(apiPath('private', 'unknown'))
class Unlisted {
  @Get()
  @Scope('customers:read')
  list() {}
}

@Access('private')
@Controller(apiPath('private', 'info'))
class Info {
  @Get()
  @NoScope()
  get() {}
}

@Access('admin')
@Controller(apiPath('admin', 'things'))
class Admin {
  @Get()
  @Scope('customers:read')
  list() {}
}

const catalogOf = (...controllers: Array<new () => unknown>) =>
  ({ all: () => walkRoutes(controllers) }) as unknown as RouteCatalog;

describe('scopes', () => {
  it('a :write scope includes its :read, * includes all, nothing else does', () => {
    expect(scopeAllows(['customers:write'], 'customers:read')).toBe(true);
    expect(scopeAllows(['customers:read'], 'customers:write')).toBe(false);
    expect(scopeAllows(['*'], 'audit:read')).toBe(true);
    expect(scopeAllows(['catalog:write'], 'customers:read')).toBe(false);
    expect(scopeAllows(['usage:read', 'codes:read'], 'codes:read')).toBe(true);
    expect(scopeAllows([], 'codes:read')).toBe(false);
  });

  it('stores scopes sorted by code point, without duplicates', () => {
    expect(normalizeScopes(['usage:write', 'catalog:read', 'usage:write', 'audit:read'])).toEqual([
      'audit:read',
      'catalog:read',
      'usage:write',
    ]);
  });

  it('names every private route without one scope, or with another than the table gives it', () => {
    expect(routesWithWrongScope(walkRoutes([Customers, Info]))).toEqual([]);
    expect(routesWithWrongScope(walkRoutes([Wrong, Unlisted, Admin]))).toEqual([
      'Admin.list (GET /api/admin/v1/things): a scope on a route outside the private interface',
      'Wrong.forgotten (GET /api/private/v1/features): no scope',
      "Wrong.mismatched (POST /api/private/v1/features): @Scope('catalog:read'), the table says @Scope('catalog:write')",
      'Wrong.twice (GET /api/private/v1/features/:id): 2 scopes',
      'Unlisted.list (GET /api/private/v1/unknown): not in the scope table (SCOPES)',
    ]);
  });

  it('an application with a private route without its scope refuses to start, naming it', () => {
    expect(() => new RouteScopeCheck(catalogOf(Customers, Info))).not.toThrow();
    expect(() => new RouteScopeCheck(catalogOf(Customers, Wrong))).toThrow(
      /exactly one @Scope.*Wrong\.forgotten \(GET \/api\/private\/v1\/features\): no scope/,
    );
  });
});
