import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import { ReadReplicas } from '../database/read-replicas';
import { Transactions, runInTransaction } from '../database/transactional';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { DomainError } from '../common/errors/domain-error';
import { Page, PageQueryDto, pageWindow, toPage } from '../common/http/pagination';
import { violatedConstraint } from '../database/pg-errors';
import { CreateFeatureDto, FeatureView, UpdateFeatureDto } from './dto/feature.dto';
import { Feature } from './entities/feature.entity';
import { FeatureReferences } from './feature-references';
import { FeaturesRepository } from './features.repository';
import { toFeatureView } from './plans.mapper';
import { changedFields, FEATURE_SLUG_INDEX, guardSlug } from './write-helpers';

const UPDATABLE = ['slug', 'name', 'description', 'metered', 'unit'] as const;

/** The project's features; every query is limited to the caller's project. */
@Injectable()
export class FeaturesService {
  constructor(
    private readonly repository: FeaturesRepository,
    private readonly reads: ReadReplicas,
    private readonly transactions: Transactions,
    private readonly references: FeatureReferences,
    private readonly audit: AuditTrail,
  ) {}

  async create(projectId: string, dto: CreateFeatureDto, idem?: IdempotencyContext): Promise<FeatureView> {
    return guardSlug(FEATURE_SLUG_INDEX, () =>
      runInTransaction(
        this.transactions,
        async () => {
          const view = toFeatureView(
            await this.repository.insert({
              projectId,
              slug: dto.slug,
              name: dto.name,
              description: dto.description ?? '',
              metered: dto.metered ?? false,
              unit: dto.unit ?? '',
            }),
          );
          this.audit.created(projectId, 'feature', view.id, view);
          return view;
        },
        { participant: idem },
      ),
    );
  }

  /** Newest first; `search` is a case-insensitive substring of the name or slug. */
  async list(projectId: string, query: PageQueryDto): Promise<Page<FeatureView>> {
    // a read replica may answer (ReadReplicas): the page may lag the primary a little
    const [rows, total] = await this.reads.run(projectId, () =>
      this.repository.page(projectId, query.search, pageWindow(query)),
    );
    return toPage(rows.map(toFeatureView), total, query);
  }

  async get(projectId: string, featureId: number): Promise<FeatureView> {
    return toFeatureView(await this.find(projectId, featureId));
  }

  async update(
    projectId: string,
    featureId: number,
    dto: UpdateFeatureDto,
    idem?: IdempotencyContext,
  ): Promise<FeatureView> {
    return guardSlug(FEATURE_SLUG_INDEX, () =>
      runInTransaction(
        this.transactions,
        async () => {
          // No-key-update: plan writes that only reference the feature (key-share) are not held up.
          const feature = await this.find(projectId, featureId, 'for_no_key_update');
          const changes = changedFields(feature, dto, UPDATABLE);
          if (Object.keys(changes).length === 0) return toFeatureView(feature);
          await this.repository.update(projectId, feature.id, changes);
          const view = toFeatureView(await this.find(projectId, featureId));
          this.audit.updated(projectId, 'feature', view.id, toFeatureView(feature), view);
          return view;
        },
        { participant: idem },
      ),
    );
  }

  /**
   * A feature of the project by id or slug, for another module's write that names it
   * (FEATURE_NOT_FOUND): share-locked, so that it is not deleted before that write commits.
   * Must run inside the caller's unit of work.
   */
  async reference(projectId: string, ref: { id: number } | { slug: string }): Promise<Feature> {
    const feature = await this.repository.findForReference(projectId, ref);
    if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
    return feature;
  }

  /** FEATURE_IN_USE while any quota uses the feature, or another module's rows keep it (`FeatureReferences`). */
  async remove(projectId: string, featureId: number, idem?: IdempotencyContext): Promise<{ success: true }> {
    try {
      return await runInTransaction(
        this.transactions,
        async () => {
          // The row lock waits for plan writes that are adding a quota for this feature (they hold a key-share lock).
          const feature = await this.find(projectId, featureId, 'pessimistic_write');
          if (
            (await this.repository.inUse(projectId, feature.id)) ||
            (await this.references.inUse(projectId, feature.id))
          )
            throw new DomainError('FEATURE_IN_USE');
          await this.repository.delete(projectId, feature.id);
          this.audit.deleted(projectId, 'feature', feature.id, toFeatureView(feature));
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
    projectId: string,
    featureId: number,
    lock?: 'pessimistic_write' | 'for_no_key_update',
  ): Promise<Feature> {
    const feature = await this.repository.find(projectId, featureId, lock);
    if (!feature) throw new DomainError('FEATURE_NOT_FOUND');
    return feature;
  }
}
