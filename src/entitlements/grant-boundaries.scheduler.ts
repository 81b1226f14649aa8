import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { DomainError } from '../common/errors/domain-error';
import { PeriodicWorker } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { CustomersService } from '../customers/customers.service';
import { Transactional, Transactions } from '../database/transactional';
import type { EventCustomer, NewEvent } from '../events/event-types';
import { EventsService } from '../events/events.service';
import { BoundariesRepository } from './boundaries.repository';
import { CustomerOverride } from './entities/customer-override.entity';
import { Grant } from './entities/grant.entity';
import { grantRowOf, overrideRemovedKey, overrideRowOf, toGrantView, toOverrideView } from './grant-views';

/** Ends passed while no instance ran are announced for this long back (as windows' are). */
export const GRANT_CATCH_UP_MS = 30 * 86_400_000;
/** Each scan looks this far behind the cursor again, for rows whose transaction committed late. */
export const GRANT_RESCAN_MS = 60_000;
/** Rows read per statement. */
const PAGE = 200;
/** New events per run and kind; a run that reaches it asks for the next one at once. */
const BATCH = 200;

export const grantExpiredKey = (grantId: number) => `grant.expired:${grantId}`;

/** The same key `DELETE` uses for the row, so that an override's end is announced once. */
/** How far one kind's scan went: `reached` is an instant before which every end is announced. */
interface Scanned {
  more: boolean;
  reached: Date;
}

/**
 * The time-boundary events of grants and overrides: `grant.expired` when a grant not voided
 * reaches its `expiresAt`, `override.removed` with `reason: expired` when an override reaches
 * its own. Every replica runs it; the replica that locks the `grants` cursor of the events module
 * (`FOR UPDATE SKIP LOCKED`) scans the time since the previous scan (and a minute before, for
 * late commits), at most 30 days back after a stop, and records through `EventsService` in one
 * transaction. It locks no customer: the unique keys make each end one event, and the keys
 * already recorded are skipped so that a rescan takes no `customerSeq` number. An expired
 * override's row is left in place (the next `PUT` replaces it; reads treat it as absent).
 */
@Injectable()
export class GrantBoundariesScheduler extends PeriodicWorker {
  constructor(
    private readonly repository: BoundariesRepository,
    private readonly events: EventsService,
    private readonly customers: CustomersService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly transactions: Transactions,
  ) {
    super(
      'GrantBoundariesScheduler',
      config.get('EVENTS_SCHEDULER_INTERVAL_MS'),
      config.get('EVENTS_SCHEDULER_ENABLED'),
    );
  }

  /** One scan, in one transaction with the cursor's lock; true when more is due at once. */
  @Transactional()
  async runOnce(now: Date = this.clock.now()): Promise<boolean> {
    const scannedTo = await this.events.lockScheduleCursor('grants');
    if (!scannedTo) return false; // another replica is scanning
    const from = new Date(Math.max(scannedTo.getTime() - GRANT_RESCAN_MS, now.getTime() - GRANT_CATCH_UP_MS));
    const customers = new Map<number, EventCustomer | null>();
    const grants = await this.scan<Grant>(
      now,
      (after) =>
        this.repository.grantsExpiring(
          from,
          now,
          after && { expiresAt: after.expiresAt!, id: after.id },
          PAGE,
        ),
      (g) => grantExpiredKey(g.id),
      async (g, key) => {
        const customer = await this.customerOf(customers, g.projectId, g.customerId);
        if (!customer) return false;
        await this.record(g.projectId, {
          type: 'grant.expired',
          customer,
          data: { customer, grant: { ...toGrantView(grantRowOf(g), now) } },
          uniqueKey: key,
        });
        return true;
      },
    );
    const overrides = await this.scan<CustomerOverride>(
      now,
      (after) =>
        this.repository.overridesExpiring(
          from,
          now,
          after && { expiresAt: after.expiresAt!, customerId: after.customerId, featureId: after.featureId },
          PAGE,
        ),
      overrideRemovedKey,
      async (o, key) => {
        const customer = await this.customerOf(customers, o.projectId, o.customerId);
        if (!customer) return false;
        await this.record(o.projectId, {
          type: 'override.removed',
          customer,
          data: { customer, override: { ...toOverrideView(overrideRowOf(o)) }, reason: 'expired' },
          uniqueKey: key,
        });
        return true;
      },
    );
    const reached = Math.min(grants.reached.getTime(), overrides.reached.getTime());
    await this.events.advanceScheduleCursor('grants', new Date(reached));
    return grants.more || overrides.more;
  }

  /**
   * Pages through one kind's ends in order, announcing those not yet recorded, until none is
   * left or `BATCH` were announced; then every end before the last one read is announced, so
   * the cursor may move to just before it (the next run starts there, whatever the ties).
   */
  private async scan<T extends { expiresAt: Date | null }>(
    now: Date,
    page: (after: T | null) => Promise<T[]>,
    keyOf: (row: T) => string,
    announce: (row: T, key: string) => Promise<boolean>,
  ): Promise<Scanned> {
    let after: T | null = null;
    let announced = 0;
    for (;;) {
      const rows = await page(after);
      const recorded = await this.events.recordedKeys(rows.map(keyOf));
      for (const row of rows) {
        const key = keyOf(row);
        if (!recorded.has(key) && (await announce(row, key))) announced++;
      }
      if (rows.length < PAGE) return { more: false, reached: now };
      after = rows[rows.length - 1];
      if (announced >= BATCH) return { more: true, reached: new Date(after.expiresAt!.getTime() - 1) };
    }
  }

  /** The customer an event names; null when it was deleted meanwhile (its rows go with it). */
  private async customerOf(
    cache: Map<number, EventCustomer | null>,
    projectId: string,
    customerId: number,
  ): Promise<EventCustomer | null> {
    if (!cache.has(customerId)) {
      try {
        const c = await this.customers.get(projectId, customerId);
        cache.set(customerId, { id: c.id, username: c.username });
      } catch (error) {
        if (!(error instanceof DomainError && error.code === 'CUSTOMER_NOT_FOUND')) throw error;
        cache.set(customerId, null);
      }
    }
    return cache.get(customerId)!;
  }

  private record(projectId: string, event: NewEvent): Promise<void> {
    return this.events.record(projectId, [event]);
  }
}
