import { Injectable } from '@nestjs/common';
import { PeriodicWorker } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { Transactional, Transactions } from '../database/transactional';
import { auditHashOf } from './audit-hash';
import { toAuditEventView } from './audit.mapper';
import { AuditRepository, SealedRecord } from './audit.repository';

/** Records sealed per statement (and per transaction) for one project. */
export const SEAL_BATCH = 1000;
/** Projects one pass looks at; a pass that finds as many runs again at once. */
const PROJECTS_PER_PASS = 100;

/**
 * The sealer (docs/operations.md#audit-log): on every replica, every `AUDIT_SEAL_INTERVAL_MS`,
 * each project with committed records not sealed yet (queued in `audit_unsealed`) gets them
 * appended to its hash chain in the order written: `seq` from the chain head on, `prevHash` the
 * hash before, `hash` over the record as the API answers it, written to `audit_seals`. One
 * replica at a time per project (an advisory lock, tried: the others skip it), so the write path
 * takes no lock of the chain. A full batch asks for the next pass at once, which is how it keeps
 * up with a busy project.
 */
@Injectable()
export class AuditSealer extends PeriodicWorker {
  constructor(
    private readonly repository: AuditRepository,
    config: AppConfig,
    private readonly transactions: Transactions,
  ) {
    super('AuditSealer', config.get('AUDIT_SEAL_INTERVAL_MS'));
  }

  /** One pass over the projects with unsealed records; true when there is more to seal at once. */
  async runOnce(): Promise<boolean> {
    const projects = await this.repository.projectsWithUnsealed(PROJECTS_PER_PASS);
    let more = projects.length === PROJECTS_PER_PASS;
    for (const projectId of projects) if ((await this.sealBatch(projectId)) === SEAL_BATCH) more = true;
    return more;
  }

  /**
   * Seals up to `SEAL_BATCH` of the project's records and moves its chain head, in one
   * transaction under the chain's lock; answers how many (0 when another replica holds it).
   */
  @Transactional()
  async sealBatch(projectId: string): Promise<number> {
    if (!(await this.repository.tryLockChain(projectId))) return 0;
    const head = await this.repository.chainHead(projectId);
    const queued = await this.repository.queued(projectId, SEAL_BATCH);
    if (queued.length === 0) return 0;
    // a queued record deleted meanwhile (by hand) is not among them: it only leaves the queue
    const rows = await this.repository.unsealedRecords(projectId, queued);
    let seq = head ? Number(head.seq) : 0;
    let prevHash = head?.hash ?? null;
    const sealed: SealedRecord[] = rows.map((row) => {
      seq += 1;
      const hash = auditHashOf({ ...toAuditEventView(row), seq, prevHash });
      const record = { position: row.position, seq, prevHash, hash };
      prevHash = hash;
      return record;
    });
    await this.repository.seal(projectId, queued, sealed);
    return queued.length;
  }
}
