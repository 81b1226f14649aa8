import { Controller, Delete, Get, Patch, Post } from '@nestjs/common';
import type { DiscoveryService } from '@nestjs/core';
import { handlersWithoutIdempotency, Idempotent } from './idempotency.decorator';

@Controller('api/private/v1/things')
class PrivateThings {
  @Get()
  list() {}
  @Post()
  @Idempotent()
  create() {}
  @Patch(':id')
  update() {}
  @Delete(':id')
  remove() {}
}

@Controller('api/public/v1/things')
class PublicThings {
  @Post()
  create() {}
}

const discoveryOf = (...controllers: Array<new () => unknown>) =>
  ({ getControllers: () => controllers.map((metatype) => ({ metatype })) }) as unknown as DiscoveryService;

describe('handlersWithoutIdempotency', () => {
  it('names each private POST, PATCH and DELETE handler without @Idempotent(), and nothing else', () => {
    expect(handlersWithoutIdempotency(discoveryOf(PrivateThings, PublicThings))).toEqual([
      'PrivateThings.update',
      'PrivateThings.remove',
    ]);
  });

  it('finds nothing when every one of them has it', () => {
    expect(handlersWithoutIdempotency(discoveryOf(PublicThings))).toEqual([]);
  });
});
