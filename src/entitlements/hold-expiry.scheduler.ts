import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { DomainError } from '../common/errors/domain-error';
import { PeriodicWorker } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { CustomersService } from '../customers/customers.service';
import { Transactional, Transactions } from '../database/transactional';
import type { EventCustomer, NewEvent } from '../events/event-types';
import { EventsService } from '../events/events.service';
import { FeaturesService } from '../plans/features.service';
import { toHoldView } from './hold-views';
import { HoldRow, HoldsRepository } from './holds.repository';

/** Holds that expired while no instance ran are announced for this long back (as grants' ends are). */
export const HOLD_CATCH_UP_MS = 30 * 86_400_000;
/** Holds marked per run; a run that reaches it asks for the next one at once. */
const BATCH = 200;

export const holdExpiredKey = (id: string | number) => `usage.hold_expired:${id}`;

/**
 * Marks expired the holds that reached their `expiresAt` without being committed or released, and
 * records `usage.hold_expired` for each (docs/entitlements.md#holds). Balances need none of it: an
 * expired hold stops counting when read. Every replica runs it: a run marks the due holds no
 * other transaction holds (`FOR UPDATE SKIP LOCKED`), so each hold is marked by one run, once,
 * and its event has a unique key besides. A commit or a release locks the hold's row too, so a
 * hold is either ended by them or marked here, never both. Holds that expired more than 30 days
 * before the run (the service stopped that long) are marked without an event.
 */
@Injectable()
export class HoldExpiryScheduler extends PeriodicWorker {
  constructor(
    private readonly repository: HoldsRepository,
    private readonly events: EventsService,
    private readonly customers: CustomersService,
    private readonly features: FeaturesService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly transactions: Transactions,
  ) {
    super(
      'HoldExpiryScheduler',
      config.get('EVENTS_SCHEDULER_INTERVAL_MS'),
      config.get('EVENTS_SCHEDULER_ENABLED'),
    );
  }

  /** One run, in one transaction: marks the due holds and records their events; true when more are due. */
  @Transactional()
  async runOnce(now: Date = this.clock.now()): Promise<boolean> {
    const expired = await this.repository.expireDue(now, BATCH);
    const since = now.getTime() - HOLD_CATCH_UP_MS;
    // each customer's events in one statement, the customers in id order: two runs never wait
    // for each other's event sequences in a cycle
    const byCustomer = new Map<string, HoldRow[]>();
    for (const hold of [...expired].sort((x, y) => x.customerId - y.customerId)) {
      if (hold.expiresAt.getTime() <= since) continue;
      const key = `${hold.projectId}\u0000${hold.customerId}`;
      byCustomer.set(key, [...(byCustomer.get(key) ?? []), hold]);
    }
    const slugs = new Map<string, string | null>();
    for (const holds of byCustomer.values()) {
      const { projectId, customerId } = holds[0];
      const customer = await this.customerOf(projectId, customerId);
      if (!customer) continue;
      const events: NewEvent[] = [];
      for (const hold of holds) {
        const slug = await this.slugOf(slugs, projectId, hold.featureId);
        if (slug === null) continue;
        events.push({
          type: 'usage.hold_expired',
          customer,
          data: { customer, feature: { id: hold.featureId, slug }, hold: { ...toHoldView(hold, now) } },
          uniqueKey: holdExpiredKey(hold.id),
        });
      }
      if (events.length > 0) await this.events.record(projectId, events);
    }
    return expired.length === BATCH;
  }

  /** The customer an event names; null when it was deleted meanwhile (its holds go with it). */
  private async customerOf(projectId: string, customerId: number): Promise<EventCustomer | null> {
    try {
      const c = await this.customers.get(projectId, customerId);
      return { id: c.id, username: c.username };
    } catch (error) {
      if (error instanceof DomainError && error.code === 'CUSTOMER_NOT_FOUND') return null;
      throw error;
    }
  }

  /** A feature's slug, read once per run; null when it was deleted meanwhile. */
  private async slugOf(cache: Map<string, string | null>, projectId: string, featureId: number) {
    const key = `${projectId}\u0000${featureId}`;
    if (!cache.has(key)) {
      try {
        cache.set(key, (await this.features.get(projectId, featureId)).slug);
      } catch (error) {
        if (!(error instanceof DomainError && error.code === 'FEATURE_NOT_FOUND')) throw error;
        cache.set(key, null);
      }
    }
    return cache.get(key)!;
  }
}
