import { Injectable } from '@nestjs/common';
import { Brackets, SelectQueryBuilder } from 'typeorm';
import { PageWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';
import { Transactions } from '../database/transactional';
import type { GrantStatusName } from './dto/grant.dto';
import { CustomerOverride } from './entities/customer-override.entity';
import { Grant } from './entities/grant.entity';

export type NewGrant = Omit<Grant, 'id' | 'used' | 'voidedAt' | 'voidReason' | 'customer' | 'feature'>;
export type NewOverride = Omit<CustomerOverride, 'customer' | 'feature'>;

/**
 * Every statement on `grants` and `customer_overrides` made for their own interface (create,
 * void, list, set, remove); `GrantsService` keeps the rules. The writes run in the caller's unit
 * of work, under the customer's lock.
 */
@Injectable()
export class GrantsRepository {
  constructor(private readonly transactions: Transactions) {}

  @GenerateSql({
    params: [
      {
        projectId: 'prj_1',
        customerId: 1,
        featureId: 1,
        amount: '500.000000',
        priority: 0,
        effectiveAt: new Date('2026-03-01T00:00:00Z'),
        expiresAt: null,
        reason: 'goodwill',
        metadata: { ticket: 'SUP-1' },
        createdAt: new Date('2026-03-01T00:00:00Z'),
      },
    ],
  })
  async insertGrant(grant: NewGrant): Promise<Grant> {
    const em = this.transactions.tx;
    const { identifiers } = await em.insert(Grant, grant);
    return (await em.findOneBy(Grant, { id: identifiers[0].id as number }))!;
  }

  /** The project's grant; `lock`: its row `FOR UPDATE` (a void, under its customer's lock). */
  @GenerateSql({ name: 'unlocked', params: ['prj_1', 1] }, { name: 'locked', params: ['prj_1', 1, true] })
  findGrant(projectId: string, grantId: number, lock = false): Promise<Grant | null> {
    return this.transactions.tx.findOne(Grant, {
      where: { id: grantId, projectId },
      ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
  }

  @GenerateSql({ params: ['prj_1', 1, new Date('2026-03-15T00:00:00Z'), 'issued by mistake'] })
  async voidGrant(projectId: string, grantId: number, at: Date, reason: string | null): Promise<Grant> {
    const em = this.transactions.tx;
    await em.update(Grant, { id: grantId, projectId }, { voidedAt: at, voidReason: reason });
    return (await em.findOneBy(Grant, { id: grantId, projectId }))!;
  }

  /**
   * A page of the customer's grants, newest first; `status` is derived at `at` with the
   * conditions of `grantFigures` (engine/entitlement-engine.ts), in SQL so that the page and the
   * total agree.
   */
  @GenerateSql(
    {
      name: 'unfiltered',
      params: ['prj_1', 1, {}, new Date('2026-03-15T00:00:00Z'), { limit: 10, offset: 0 }],
    },
    {
      name: 'by feature and status',
      params: [
        'prj_1',
        1,
        { featureId: 1, status: 'active' },
        new Date('2026-03-15T00:00:00Z'),
        { limit: 10, offset: 0 },
      ],
    },
  )
  pageGrants(
    projectId: string,
    customerId: number,
    filter: { featureId?: number; status?: GrantStatusName },
    at: Date,
    window: PageWindow,
  ): Promise<[Grant[], number]> {
    const qb = this.transactions.tx
      .createQueryBuilder(Grant, 'g')
      .where('g.project_id = :projectId AND g.customer_id = :customerId', { projectId, customerId })
      .orderBy('g.id', 'DESC');
    if (filter.featureId !== undefined)
      qb.andWhere('g.feature_id = :featureId', { featureId: filter.featureId });
    if (filter.status) whereStatus(qb, filter.status, at);
    return qb.skip(window.offset).take(window.limit).getManyAndCount();
  }

  /** The customer's override of the feature, in effect or not (an expired row stays until replaced). */
  @GenerateSql({ params: ['prj_1', 1, 1] })
  findOverride(projectId: string, customerId: number, featureId: number): Promise<CustomerOverride | null> {
    return this.transactions.tx.findOneBy(CustomerOverride, { projectId, customerId, featureId });
  }

  /** The customer's overrides in effect at `at`, in feature id order. */
  @GenerateSql({ params: ['prj_1', 1, new Date('2026-03-15T00:00:00Z')] })
  overridesInEffect(projectId: string, customerId: number, at: Date): Promise<CustomerOverride[]> {
    return this.transactions.tx
      .createQueryBuilder(CustomerOverride, 'o')
      .where('o.project_id = :projectId AND o.customer_id = :customerId', { projectId, customerId })
      .andWhere('(o.expires_at IS NULL OR o.expires_at > :at)', { at })
      .orderBy('o.feature_id', 'ASC')
      .getMany();
  }

  /** Writes the customer's one override of the feature, replacing the row there was. */
  @GenerateSql({
    params: [
      {
        projectId: 'prj_1',
        customerId: 1,
        featureId: 1,
        mode: 'set',
        limit: '5000.000000',
        priority: 0,
        resetInterval: 'P1M',
        resetAnchor: 'calendar',
        resetDayOfMonth: 15,
        resetTimeZone: 'America/New_York',
        anchor: new Date('2026-03-01T00:00:00Z'),
        expiresAt: null,
        reason: null,
        createdAt: new Date('2026-03-15T00:00:00Z'),
      },
    ],
  })
  async upsertOverride(row: NewOverride): Promise<CustomerOverride> {
    const em = this.transactions.tx;
    await em.upsert(CustomerOverride, row, { conflictPaths: ['customerId', 'featureId'] });
    return (await this.findOverride(row.projectId, row.customerId, row.featureId))!;
  }

  @GenerateSql({ params: ['prj_1', 1, 1] })
  async deleteOverride(projectId: string, customerId: number, featureId: number): Promise<void> {
    await this.transactions.tx.delete(CustomerOverride, { projectId, customerId, featureId });
  }

  /**
   * Whether an override (in effect or not) or a grant not ended at `at` (neither voided nor
   * expired) names the feature: it is then not deleted (FEATURE_IN_USE). Ended grants go with it.
   */
  @GenerateSql({ params: ['prj_1', 1, new Date('2026-03-15T00:00:00Z')] })
  async featureInUse(projectId: string, featureId: number, at: Date): Promise<boolean> {
    const em = this.transactions.tx;
    if (await em.exists(CustomerOverride, { where: { projectId, featureId } })) return true;
    return em
      .createQueryBuilder(Grant, 'g')
      .where('g.project_id = :projectId AND g.feature_id = :featureId', { projectId, featureId })
      .andWhere('g.voided_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > :at)', { at })
      .getExists();
  }
}

/** The SQL of a derived status at `at`, in the order the rules name them (first that applies). */
function whereStatus(qb: SelectQueryBuilder<Grant>, status: GrantStatusName, at: Date): void {
  qb.setParameter('at', at);
  if (status === 'voided') {
    qb.andWhere('g.voided_at IS NOT NULL');
    return;
  }
  qb.andWhere('g.voided_at IS NULL');
  if (status === 'expired') {
    qb.andWhere('g.expires_at <= :at');
    return;
  }
  qb.andWhere(new Brackets((w) => w.where('g.expires_at IS NULL').orWhere('g.expires_at > :at')));
  if (status === 'scheduled') {
    qb.andWhere('g.effective_at > :at');
    return;
  }
  qb.andWhere('g.effective_at <= :at');
  qb.andWhere(status === 'exhausted' ? 'g.used >= g.amount' : 'g.used < g.amount');
}
