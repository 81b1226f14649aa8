import { Injectable } from '@nestjs/common';
import { GenerateSql } from '../database/generate-sql';
import { Transactions } from '../database/transactional';
import { CustomerOverride } from './entities/customer-override.entity';
import { Grant } from './entities/grant.entity';

/** A place in the scan's order: the last row of the previous page. */
export interface GrantAfter {
  expiresAt: Date;
  id: number;
}

export interface OverrideAfter {
  expiresAt: Date;
  customerId: number;
  featureId: number;
}

/**
 * The statements of the scheduler that announces grants and overrides reaching their
 * `expiresAt` (`GrantBoundariesScheduler`): pages of the rows whose end is in a span of time,
 * oldest end first. They lock nothing: the events' unique keys make each end one event.
 */
@Injectable()
export class BoundariesRepository {
  constructor(private readonly transactions: Transactions) {}

  /**
   * Grants not voided whose `expiresAt` is in `(from, to]`, after `after` in (`expiresAt`, id)
   * order, at most `limit` (the partial index `grants_expires_idx`).
   */
  @GenerateSql(
    {
      name: 'first page',
      params: [new Date('2026-03-01T00:00:00Z'), new Date('2026-03-15T12:00:00Z'), null, 100],
    },
    {
      name: 'after a grant',
      params: [
        new Date('2026-03-01T00:00:00Z'),
        new Date('2026-03-15T12:00:00Z'),
        { expiresAt: new Date('2026-03-10T00:00:00Z'), id: 1 },
        100,
      ],
    },
  )
  grantsExpiring(from: Date, to: Date, after: GrantAfter | null, limit: number): Promise<Grant[]> {
    const qb = this.transactions.tx
      .createQueryBuilder(Grant, 'g')
      .where('g.voided_at IS NULL AND g.expires_at IS NOT NULL')
      .andWhere('g.expires_at > :from AND g.expires_at <= :to', { from, to });
    if (after)
      qb.andWhere('(g.expires_at, g.id) > (:afterAt, :afterId)', {
        afterAt: after.expiresAt,
        afterId: after.id,
      });
    return qb.orderBy('g.expires_at', 'ASC').addOrderBy('g.id', 'ASC').limit(limit).getMany();
  }

  /**
   * Overrides whose `expiresAt` is in `(from, to]` (an expired row stays until the customer's next
   * `PUT`), after `after` in (`expiresAt`, customer, feature) order, at most `limit`.
   */
  @GenerateSql(
    {
      name: 'first page',
      params: [new Date('2026-03-01T00:00:00Z'), new Date('2026-03-15T12:00:00Z'), null, 100],
    },
    {
      name: 'after an override',
      params: [
        new Date('2026-03-01T00:00:00Z'),
        new Date('2026-03-15T12:00:00Z'),
        { expiresAt: new Date('2026-03-10T00:00:00Z'), customerId: 1, featureId: 1 },
        100,
      ],
    },
  )
  overridesExpiring(
    from: Date,
    to: Date,
    after: OverrideAfter | null,
    limit: number,
  ): Promise<CustomerOverride[]> {
    const qb = this.transactions.tx
      .createQueryBuilder(CustomerOverride, 'o')
      .where('o.expires_at IS NOT NULL')
      .andWhere('o.expires_at > :from AND o.expires_at <= :to', { from, to });
    if (after)
      qb.andWhere('(o.expires_at, o.customer_id, o.feature_id) > (:afterAt, :afterCustomer, :afterFeature)', {
        afterAt: after.expiresAt,
        afterCustomer: after.customerId,
        afterFeature: after.featureId,
      });
    return qb
      .orderBy('o.expires_at', 'ASC')
      .addOrderBy('o.customer_id', 'ASC')
      .addOrderBy('o.feature_id', 'ASC')
      .limit(limit)
      .getMany();
  }
}
