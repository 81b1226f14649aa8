import { Controller, Delete, Get, Patch, Post } from '@nestjs/common';
import { walkRoutes } from '../common/routes/route-walker';
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

describe('handlersWithoutIdempotency', () => {
  it('names each private POST, PATCH and DELETE handler without @Idempotent(), and nothing else', () => {
    expect(handlersWithoutIdempotency(walkRoutes([PrivateThings, PublicThings])).sort()).toEqual([
      'PrivateThings.remove',
      'PrivateThings.update',
    ]);
  });

  it('finds nothing when every one of them has it', () => {
    expect(handlersWithoutIdempotency(walkRoutes([PublicThings]))).toEqual([]);
  });
});
