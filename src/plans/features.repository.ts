import { Injectable } from '@nestjs/common';
import { likePattern, PageWindow } from '../common/http/pagination';
import { ReadReplicas } from '../database/read-replicas';
import { Transactions } from '../database/transactional';
import { Feature } from './entities/feature.entity';
import { Quota } from './entities/quota.entity';

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

  insert(feature: Omit<Feature, 'id' | 'createdAt' | 'updatedAt'>): Promise<Feature> {
    const em = this.transactions.tx;
    return em.save(em.create(Feature, feature));
  }

  /** One page, newest first; `search` a case-insensitive substring of the name or slug. */
  page(projectId: string, search: string | undefined, window: PageWindow): Promise<[Feature[], number]> {
    const qb = (this.reads.manager ?? this.transactions.tx)
      .createQueryBuilder(Feature, 'f')
      .where('f.project_id = :projectId', { projectId })
      .orderBy('f.id', 'DESC');
    if (search)
      qb.andWhere('(f.name ILIKE :pattern OR f.slug ILIKE :pattern)', { pattern: likePattern(search) });
    return qb.skip(window.offset).take(window.limit).getManyAndCount();
  }

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

  async update(projectId: string, featureId: number, changes: Partial<Feature>): Promise<void> {
    await this.transactions.tx.update(Feature, { id: featureId, projectId }, changes);
  }

  inUse(projectId: string, featureId: number): Promise<boolean> {
    return this.transactions.tx.exists(Quota, { where: { featureId, projectId } });
  }

  async delete(projectId: string, featureId: number): Promise<void> {
    await this.transactions.tx.delete(Feature, { id: featureId, projectId });
  }
}
