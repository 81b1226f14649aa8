import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { PeriodicWorker } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { nextPartitionStart, partitionStart } from '../database/partitions';
import { Transactional, Transactions } from '../database/transactional';
import { MetricsService } from '../metrics/metrics.service';
import { UsageRepository } from './usage.repository';

/** How often each replica sees to the ledger's partitions (the first time at start). */
const INTERVAL_MS = 3_600_000;
/** Months made ahead of the current one. */
const MONTHS_AHEAD = 2;

/**
 * The ledger's partitions (docs/operations.md#partitioned-tables): at start and then hourly, on
 * every replica but by one at a time, makes the current month's partitions of `usage_records` and
 * `usage_allocations` and the next two's, and with `USAGE_RETENTION_MONTHS` drops the months
 * before that many whole months (allocations first). A write that finds no month's partition
 * still succeeds, in the DEFAULT partition, whose rows `db_partition_default_rows` shows.
 */
@Injectable()
export class LedgerPartitionsScheduler extends PeriodicWorker {
  private readonly retentionMonths?: number;

  constructor(
    private readonly usage: UsageRepository,
    private readonly clock: Clock,
    config: AppConfig,
    metrics: MetricsService,
    private readonly transactions: Transactions,
  ) {
    super('Ledger partitions', INTERVAL_MS);
    this.retentionMonths = config.get('USAGE_RETENTION_MONTHS');
    metrics.watchDefaultPartitions(() => this.usage.defaultPartitionRows());
  }

  /** One run at `now`: what was created and dropped (null: another replica was at it). */
  @Transactional()
  async runOnce(now: Date = this.clock.now()) {
    let to = partitionStart('month', now);
    for (let k = 0; k < MONTHS_AHEAD; k++) to = nextPartitionStart('month', to);
    const month = partitionStart('month', now);
    const dropBefore =
      this.retentionMonths === undefined
        ? null
        : new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() - this.retentionMonths, 1));
    return this.usage.maintainPartitions(now, to, dropBefore);
  }
}
