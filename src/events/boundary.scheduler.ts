import { Injectable, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Transactional, Transactions } from '../database/transactional';
import { PeriodicTask } from '../common/periodic-task';
import { parseIsoDuration } from '../common/time/duration';
import { boundaryKey, NewEvent } from './event-types';
import { BoundaryRow, EventsRepository } from './events.repository';
import { EventsService, toEventWindow } from './events.service';

/** Boundaries passed while no instance ran are announced for this long back. */
export const CATCH_UP_MS = 30 * 86_400_000;
/** Each scan looks this far behind the cursor again, for windows whose transaction committed late. */
export const RESCAN_MS = 60_000;
/** Events retention. */
export const RETENTION_MS = 30 * 86_400_000;
const BATCH = 200;
/** How often the days' partitions are seen to (by every replica, one at a time). */
const RETENTION_EVERY_MS = 3_600_000;
/** Days of partitions made ahead of the current one. */
const DAYS_AHEAD = 7;

const windowOf = (r: BoundaryRow) =>
  toEventWindow(
    {
      id: r.id,
      planId: r.plan_id,
      group: r.plan_group,
      validFrom: r.valid_from,
      validTo: r.valid_to,
      status: r.status,
      source: r.source,
      codeId: r.code_id,
      trial: r.trial,
    },
    r.plan_name,
  );

/**
 * An ISO 8601 duration (validated by the configuration) as a PostgreSQL interval, component by
 * component, so that calendar units stay calendar units (`P1M` is a month, not 30 days).
 */
export function toPgInterval(iso: string): string {
  const d = parseIsoDuration(iso);
  if (d === null) throw new RangeError(`not an ISO 8601 duration: ${iso}`);
  const o = d.toObject();
  const days = (o.weeks ?? 0) * 7 + (o.days ?? 0);
  const seconds = (o.seconds ?? 0) + (o.milliseconds ?? 0) / 1000;
  return `${o.years ?? 0} years ${(o.quarters ?? 0) * 3 + (o.months ?? 0)} mons ${days} days ${o.hours ?? 0} hours ${o.minutes ?? 0} mins ${seconds} secs`;
}

/**
 * The time-boundary events: `subscription.started` for a window created to start
 * later, `subscription.ended` with `reason: expired` when a window reaches its end, and for a
 * trial window `trial.ending` (`TRIAL_ENDING_LEAD` before its end, only while it is in effect)
 * and `trial.ended` (`expired`, unless a grant told it as `replaced`). Every
 * replica runs it; the replica that locks the cursor row (`FOR UPDATE SKIP LOCKED`) scans the
 * time since the previous scan (and a minute before, for late commits), and the unique key per
 * (window, type) makes each boundary one event whatever happens. After a stop, the next start
 * catches up on the boundaries passed meanwhile, at most 30 days back. Once an hour, at start
 * and whether or not it scans, it also makes the days' partitions of events and deliveries a
 * week ahead and drops the days past the 30 days' retention (docs/events.md#retention).
 */
@Injectable()
export class BoundaryScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly loop: PeriodicTask;
  private readonly retention: PeriodicTask;
  private readonly trialLead: string;

  constructor(
    private readonly repository: EventsRepository,
    private readonly events: EventsService,
    private readonly config: AppConfig,
    private readonly transactions: Transactions,
  ) {
    this.trialLead = toPgInterval(config.get('TRIAL_ENDING_LEAD'));
    this.loop = new PeriodicTask(
      'EventsBoundaryScheduler',
      config.get('EVENTS_SCHEDULER_INTERVAL_MS'),
      () => this.runOnce(),
      { firstRunMs: 0 },
    );
    this.retention = new PeriodicTask('Pruning events', RETENTION_EVERY_MS, () => this.maintainPartitions(), {
      firstRunMs: 0,
    });
  }

  onApplicationBootstrap(): void {
    // partitions are made ahead on every replica: a write must find its day's partition
    this.retention.start();
    if (!this.config.get('EVENTS_SCHEDULER_ENABLED')) return;
    this.loop.start();
  }

  /** The days' partitions at `now`: a week ahead made, those past the retention dropped (null: another replica's turn). */
  @Transactional()
  maintainPartitions(now = new Date()) {
    return this.repository.maintainPartitions(
      now,
      new Date(now.getTime() + DAYS_AHEAD * 86_400_000),
      new Date(now.getTime() - RETENTION_MS),
    );
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([this.loop.stop(), this.retention.stop()]);
  }

  /** One scan, in one transaction with the cursor's lock; true when a batch was full (more is due at once). */
  @Transactional()
  async runOnce(now = new Date()): Promise<boolean> {
    const scannedTo = await this.repository.lockCursor('windows');
    if (!scannedTo) return false; // another replica is scanning
    const from = new Date(Math.max(scannedTo.getTime() - RESCAN_MS, now.getTime() - CATCH_UP_MS));
    const started = await this.repository.startsBetween(from, now, BATCH);
    for (const r of started) {
      const customer = { id: r.customer_id, username: r.username };
      await this.record(r.project_id, {
        type: 'subscription.started',
        customer,
        data: { customer, window: windowOf(r) },
        uniqueKey: boundaryKey('subscription.started', r.id),
      });
    }
    const ended = await this.repository.endsBetween(from, now, BATCH);
    for (const r of ended) {
      const customer = { id: r.customer_id, username: r.username };
      await this.record(r.project_id, {
        type: 'subscription.ended',
        customer,
        data: { customer, window: windowOf(r), reason: 'expired' },
        uniqueKey: boundaryKey('subscription.ended', r.id),
      });
    }
    const ending = await this.repository.trialEndingBetween(from, now, BATCH, this.trialLead);
    for (const r of ending) {
      const customer = { id: r.customer_id, username: r.username };
      await this.record(r.project_id, {
        type: 'trial.ending',
        customer,
        data: { customer, window: windowOf(r) },
        uniqueKey: boundaryKey('trial.ending', r.id),
      });
    }
    const trialsEnded = await this.repository.trialEndsBetween(from, now, BATCH);
    for (const r of trialsEnded) {
      const customer = { id: r.customer_id, username: r.username };
      await this.record(r.project_id, {
        type: 'trial.ended',
        customer,
        data: { customer, window: windowOf(r), reason: 'expired', converted: false },
        uniqueKey: boundaryKey('trial.ended', r.id),
      });
    }
    const more = [started, ended, ending, trialsEnded].some((rows) => rows.length === BATCH);
    if (!more) await this.repository.advanceCursor('windows', now);
    return more;
  }

  private record(projectId: string, event: NewEvent): Promise<void> {
    return this.events.record(projectId, [event]);
  }
}
