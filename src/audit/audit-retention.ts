import { Injectable } from '@nestjs/common';
import { Clock } from '../common/clock';
import { PeriodicWorker } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { PRUNE_BATCH } from '../database/prune';
import { AuditRepository } from './audit.repository';

const DAY_MS = 86_400_000;

/**
 * Audit retention (docs/operations.md#audit-log): every `AUDIT_PRUNE_INTERVAL_MS` (the first run
 * at start), on every replica, deletes sealed records older than `AUDIT_RETENTION_DAYS`, at most
 * `PRUNE_BATCH` a statement. It deletes the start of each project's chain, in seq order, up to
 * the first record still kept, so the chain stays whole: the head keeps the seq and hash of the
 * last record deleted, which verify checks the first remaining one against. Records not sealed
 * yet always stay.
 */
@Injectable()
export class AuditRetention extends PeriodicWorker {
  private readonly retentionMs: number;

  constructor(
    private readonly repository: AuditRepository,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    super('Pruning audit records', config.get('AUDIT_PRUNE_INTERVAL_MS'));
    this.retentionMs = config.get('AUDIT_RETENTION_DAYS') * DAY_MS;
  }

  /** Deletes what is past the retention at `now`; answers how many records went. */
  async runOnce(now: Date = this.clock.now(), batch = PRUNE_BATCH): Promise<number> {
    const before = new Date(now.getTime() - this.retentionMs);
    let total = 0;
    for (const projectId of await this.repository.projectsToPrune(before)) {
      for (;;) {
        const n = await this.repository.pruneChainStart(projectId, before, batch);
        total += n;
        if (n < batch) break;
      }
    }
    return total;
  }
}
