import { Injectable } from '@nestjs/common';
import { likePattern, PageWindow } from '../common/http/pagination';
import { ReadReplicas } from '../database/read-replicas';
import { Transactions } from '../database/transactional';
import { Feature } from './entities/feature.entity';
import { Quota } from './entities/quota.entity';
import { GenerateSql } from '../database/generate-sql';

/**
 * Every statement on `features` (and the quota check of a feature's delete). `FeaturesService`
 * keeps the rules. Every statement runs in the current unit of work's transaction, if one is
 * open; the page on a read replica inside `ReadReplicas.run`.
 */
@Injectable()
export class FeaturesRepository {
  constructor(
    private readonly transactions: Transactions,
    private readonly reads: ReadReplicas,
  ) {}

  @GenerateSql({
    params: [
      {
        projectId: 'prj_1',
        slug: 'seats',
        name: 'Seats',
        description: 'Team members',
        metered: true,
        unit: 'seat',
      },
    ],
  })
  insert(feature: Omit<Feature, 'id' | 'createdAt' | 'updatedAt'>): Promise<Feature> {
    const em = this.transactions.tx;
    return em.save(em.create(Feature, feature));
  }

  /** One page, newest first; `search` a case-insensitive substring of the name or slug. */
  @GenerateSql(
    { name: 'unfiltered', params: ['prj_1', undefined, { limit: 20, offset: 20 }] },
    { name: 'searching', params: ['prj_1', 'api', { limit: 20, offset: 20 }] },
  )
  page(projectId: string, search: string | undefined, window: PageWindow): Promise<[Feature[], number]> {
    const qb = (this.reads.manager ?? this.transactions.tx)
      .createQueryBuilder(Feature, 'f')
      .where('f.project_id = :projectId', { projectId })
      .orderBy('f.id', 'DESC');
    if (search)
      qb.andWhere('(f.name ILIKE :pattern OR f.slug ILIKE :pattern)', { pattern: likePattern(search) });
    return qb.skip(window.offset).take(window.limit).getManyAndCount();
  }

  @GenerateSql(
    { name: 'unlocked', params: ['prj_1', 1] },
    { name: 'locked for update', params: ['prj_1', 1, 'pessimistic_write'] },
    { name: 'locked for no key update', params: ['prj_1', 1, 'for_no_key_update'] },
  )
  find(
    projectId: string,
    featureId: number,
    lock?: 'pessimistic_write' | 'for_no_key_update',
  ): Promise<Feature | null> {
    return this.transactions.tx.findOne(Feature, {
      where: { id: featureId, projectId },
      ...(lock ? { lock: { mode: lock } } : {}),
    });
  }

  /**
   * A feature by id or slug, with its row share-locked on its key: a delete of the feature waits
   * for the caller's transaction, and the caller's rows that name it keep their reference.
   */
  @GenerateSql(
    { name: 'by id', params: ['prj_1', { id: 1 }] },
    { name: 'by slug', params: ['prj_1', { slug: 'api-calls' }] },
  )
  findForReference(projectId: string, ref: { id: number } | { slug: string }): Promise<Feature | null> {
    return this.transactions.tx.findOne(Feature, {
      where: 'id' in ref ? { id: ref.id, projectId } : { slug: ref.slug, projectId },
      lock: { mode: 'for_key_share' },
    });
  }

  @GenerateSql({ params: ['prj_1', 1, { name: 'API requests' }] })
  async update(projectId: string, featureId: number, changes: Partial<Feature>): Promise<void> {
    await this.transactions.tx.update(Feature, { id: featureId, projectId }, changes);
  }

  @GenerateSql({ params: ['prj_1', 1] })
  inUse(projectId: string, featureId: number): Promise<boolean> {
    return this.transactions.tx.exists(Quota, { where: { featureId, projectId } });
  }

  @GenerateSql({ params: ['prj_1', 2] })
  async delete(projectId: string, featureId: number): Promise<void> {
    await this.transactions.tx.delete(Feature, { id: featureId, projectId });
  }
}
