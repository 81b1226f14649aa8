import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { likePattern, PageWindow } from '../common/http/pagination';
import { Feature } from './entities/feature.entity';
import { Quota } from './entities/quota.entity';

/**
 * Every statement on `features` (and the quota check of a feature's delete). `FeaturesService`
 * keeps the rules. A method that takes an `EntityManager` runs in the caller's transaction.
 */
@Injectable()
export class FeaturesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  insert(em: EntityManager, feature: Omit<Feature, 'id' | 'createdAt' | 'updatedAt'>): Promise<Feature> {
    return em.save(em.create(Feature, feature));
  }

  /** One page, newest first; `search` a case-insensitive substring of the name or slug. */
  page(
    projectId: string,
    search: string | undefined,
    window: PageWindow,
    em: EntityManager = this.dataSource.manager, // a read replica's, see ReadReplicas
  ): Promise<[Feature[], number]> {
    const qb = em
      .createQueryBuilder(Feature, 'f')
      .where('f.project_id = :projectId', { projectId })
      .orderBy('f.id', 'DESC');
    if (search)
      qb.andWhere('(f.name ILIKE :pattern OR f.slug ILIKE :pattern)', { pattern: likePattern(search) });
    return qb.skip(window.offset).take(window.limit).getManyAndCount();
  }

  find(
    em: EntityManager,
    projectId: string,
    featureId: number,
    lock?: 'pessimistic_write' | 'for_no_key_update',
  ): Promise<Feature | null> {
    return em.findOne(Feature, {
      where: { id: featureId, projectId },
      ...(lock ? { lock: { mode: lock } } : {}),
    });
  }

  async update(
    em: EntityManager,
    projectId: string,
    featureId: number,
    changes: Partial<Feature>,
  ): Promise<void> {
    await em.update(Feature, { id: featureId, projectId }, changes);
  }

  inUse(em: EntityManager, projectId: string, featureId: number): Promise<boolean> {
    return em.exists(Quota, { where: { featureId, projectId } });
  }

  async delete(em: EntityManager, projectId: string, featureId: number): Promise<void> {
    await em.delete(Feature, { id: featureId, projectId });
  }
}
