import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { inTransaction } from '../database/transaction';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { DomainError } from '../common/errors/domain-error';
import { Page, PageQueryDto, likePattern, toPage } from '../common/http/pagination';
import { violatedConstraint } from '../database/pg-errors';
import { CreateFeatureDto, FeatureView, UpdateFeatureDto } from './dto/feature.dto';
import { Feature } from './entities/feature.entity';
import { Quota } from './entities/quota.entity';
import { toFeatureView } from './plans.mapper';
import { changedFields, FEATURE_SLUG_INDEX, guardSlug } from './write-helpers';

const UPDATABLE = ['slug', 'name', 'description', 'metered', 'unit'] as const;

/** The project's features (product.md 4); every query is limited to the caller's project. */
@Injectable()
export class FeaturesService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async create(projectId: string, dto: CreateFeatureDto, idem?: IdempotencyContext): Promise<FeatureView> {
    return guardSlug(FEATURE_SLUG_INDEX, () =>
      inTransaction(
        this.dataSource,
        async (em) =>
          toFeatureView(
            await em.save(
              em.create(Feature, {
                projectId,
                slug: dto.slug,
                name: dto.name,
                description: dto.description ?? '',
                metered: dto.metered ?? false,
                unit: dto.unit ?? '',
              }),
            ),
          ),
        { participant: idem },
      ),
    );
  }

  /** Newest first; `search` is a case-insensitive substring of the name or slug. */
  async list(projectId: string, query: PageQueryDto): Promise<Page<FeatureView>> {
    const qb = this.dataSource.manager
      .createQueryBuilder(Feature, 'f')
      .where('f.project_id = :projectId', { projectId })
      .orderBy('f.id', 'DESC');
    if (query.search)
      qb.andWhere('(f.name ILIKE :pattern OR f.slug ILIKE :pattern)', { pattern: likePattern(query.search) });
    const [rows, total] = await qb
      .skip((query.page - 1) * query.pageSize)
      .take(query.pageSize)
      .getManyAndCount();
    return toPage(rows.map(toFeatureView), total, query);
  }

  async get(projectId: string, featureId: number): Promise<FeatureView> {
    return toFeatureView(await this.find(this.dataSource.manager, projectId, featureId));
  }

  async update(
    projectId: string,
    featureId: number,
    dto: UpdateFeatureDto,
    idem?: IdempotencyContext,
  ): Promise<FeatureView> {
    return guardSlug(FEATURE_SLUG_INDEX, () =>
      inTransaction(
        this.dataSource,
        async (em) => {
          // No-key-update: plan writes that only reference the feature (key-share) are not held up.
          const feature = await this.find(em, projectId, featureId, 'for_no_key_update');
          const changes = changedFields(feature, dto, UPDATABLE);
          if (Object.keys(changes).length === 0) return toFeatureView(feature);
          await em.update(Feature, { id: feature.id, projectId }, changes);
          return toFeatureView(await this.find(em, projectId, featureId));
        },
        { participant: idem },
      ),
    );
  }

  /** FEATURE_IN_USE while any quota uses the feature. */
  async remove(projectId: string, featureId: number, idem?: IdempotencyContext): Promise<{ success: true }> {
    try {
      return await inTransaction(
        this.dataSource,
        async (em) => {
          // The row lock waits for plan writes that are adding a quota for this feature (they hold a key-share lock).
          const feature = await this.find(em, projectId, featureId, 'pessimistic_write');
          if (await em.exists(Quota, { where: { featureId: feature.id, projectId } }))
            throw new DomainError('FEATURE_IN_USE');
          await em.delete(Feature, { id: feature.id, projectId });
          return { success: true as const };
        },
        { participant: idem },
      );
    } catch (error) {
      if (violatedConstraint(error) === 'quotas_feature_fk') throw new DomainError('FEATURE_IN_USE');
      throw error;
    }
  }

  private async find(
    em: EntityManager,
    projectId: string,
    featureId: number,
    lock?: 'pessimistic_write' | 'for_no_key_update',
  ): Promise<Feature> {
    const feature = await em.findOne(Feature, {
      where: { id: featureId, projectId },
      ...(lock ? { lock: { mode: lock } } : {}),
    });
    if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
    return feature;
  }
}
