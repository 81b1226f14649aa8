import { Injectable } from '@nestjs/common';
import { Propagation } from '@nestjs-cls/transactional';
import { DomainError } from '../common/errors/domain-error';
import { cursorWindow, toCursorPage } from '../common/http/pagination';
import { Transactions } from '../database/transactional';
import { ProjectsRepository } from '../projects/repository/projects.repository';
import { auditHashOf } from './audit-hash';
import { toAuditEventView } from './audit.mapper';
import { AuditFilters, AuditPlace, AuditRepository, SealedRow } from './audit.repository';
import {
  AuditBreakView,
  AuditEventFiltersDto,
  AuditEventPageView,
  AuditEventView,
  AuditVerifyView,
  ListAuditEventsQueryDto,
} from './dto/audit-event.dto';

/** Records the export reads per statement: its memory stays bounded whatever the log's size. */
export const EXPORT_PAGE = 1000;
/** Records verify reads per statement. */
export const VERIFY_PAGE = 2000;

/** The largest `bigint`: a cursor past it is no position. */
const MAX_POSITION = 9223372036854775807n;

/** The list's cursor holds a record's position only (a decimal string); anything else is refused. */
const positionOf = ([position, ...rest]: unknown[]): string | undefined =>
  rest.length === 0 &&
  typeof position === 'string' &&
  /^[1-9][0-9]{0,18}$/.test(position) &&
  BigInt(position) <= MAX_POSITION
    ? position
    : undefined;

/** An instant of the query; one the validator let through but no date can hold is refused as it would be. */
function instantOf(field: 'from' | 'to', value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const instant = new Date(value);
  if (Number.isNaN(instant.getTime()))
    throw new DomainError('VALIDATION_FAILED', `${field} must be a valid ISO 8601 date string`, [
      { field, message: `${field} must be a valid ISO 8601 date string` },
    ]);
  return instant;
}

const filtersOf = (query: AuditEventFiltersDto): AuditFilters => ({
  resourceType: query.resourceType,
  resourceId: query.resourceId,
  action: query.action,
  actorType: query.actorType,
  actorKeyId: query.actorKeyId,
  requestId: query.requestId,
  from: instantOf('from', query.from),
  to: instantOf('to', query.to),
});

/**
 * Reading the audit log (docs/operations.md#audit-log): a key reads its own project's records,
 * the admin interface any project's, a deleted one's included; and `verify`, which walks a
 * project's chain and recomputes every hash from the record as the API answers it now.
 */
@Injectable()
export class AuditService {
  constructor(
    private readonly repository: AuditRepository,
    private readonly projects: ProjectsRepository,
    private readonly transactions: Transactions,
  ) {}

  async list(projectId: string, query: ListAuditEventsQueryDto): Promise<AuditEventPageView> {
    const window = cursorWindow(query.limit, query.cursor, positionOf);
    const rows = await this.repository.list(projectId, filtersOf(query), window);
    return toCursorPage(rows, query.limit, toAuditEventView, (row) => [row.position]);
  }

  async get(projectId: string, id: string): Promise<AuditEventView> {
    const row = await this.repository.get(projectId, id);
    if (!row) throw new DomainError('AUDIT_EVENT_NOT_FOUND');
    return toAuditEventView(row);
  }

  /**
   * The records the filters take, oldest first, a page at a time: the caller writes each page out
   * before the next is read. Each page is its own statement, keyed on the last record written.
   */
  async *export(projectId: string, query: AuditEventFiltersDto): AsyncGenerator<AuditEventView[]> {
    const filters = filtersOf(query);
    let after: AuditPlace | undefined;
    for (;;) {
      const rows = await this.repository.exportPage(projectId, filters, after, EXPORT_PAGE);
      if (rows.length > 0) yield rows.map(toAuditEventView);
      if (rows.length < EXPORT_PAGE) return;
      const last = rows[rows.length - 1];
      after = { at: last.at, position: last.position };
    }
  }

  /** The export of any project, deleted or not; checked before the first page. */
  async *exportOf(projectId: string, query: AuditEventFiltersDto): AsyncGenerator<AuditEventView[]> {
    await this.assertProject(projectId);
    yield* this.export(projectId, query);
  }

  /**
   * Walks the project's sealed records by seq in one snapshot (so that the sealer and retention
   * working meanwhile cannot look like a break), a page at a time, and reports the first break:
   * for each record, a seq missing before it (`MISSING`), then its hash recomputed from the record
   * as answered now (`HASH_MISMATCH`), then its link to the record before (`LINK_BROKEN`); at the
   * end, records missing up to the chain head (`MISSING`). The chain starts after the last record
   * retention deleted, whose hash the first one must link to. A break does not stop the count.
   */
  verify(projectId: string): Promise<AuditVerifyView> {
    return this.transactions.withTransaction(
      Propagation.RequiresNew,
      { isolationLevel: 'REPEATABLE READ' },
      async () => {
        const { head, unsealed } = await this.repository.chainState(projectId);
        let expected = head?.pruned_seq ? Number(head.pruned_seq) + 1 : 1;
        let previousHash: string | null = head?.pruned_hash ?? null;
        let brokenAt: AuditBreakView | null = null;
        let checked = 0;
        for (let afterSeq = 0; ;) {
          const rows: SealedRow[] = await this.repository.sealedPage(projectId, afterSeq, VERIFY_PAGE);
          checked += rows.length;
          if (!brokenAt)
            for (const row of rows) {
              const seq = Number(row.seq);
              brokenAt = breakAt(row, seq, expected, previousHash);
              if (brokenAt) break;
              expected = seq + 1;
              previousHash = row.hash;
            }
          if (rows.length < VERIFY_PAGE) break;
          afterSeq = Number(rows[rows.length - 1].seq);
        }
        if (!brokenAt && head && expected <= Number(head.seq))
          brokenAt = { id: null, seq: expected, reason: 'MISSING' };
        return { valid: brokenAt === null, checked, unsealed, brokenAt };
      },
    );
  }

  /** The admin interface's reads name a project, deleted or not; an unknown one is PROJECT_NOT_FOUND. */
  async ofProject<T>(projectId: string, read: () => Promise<T>): Promise<T> {
    await this.assertProject(projectId);
    return read();
  }

  async assertProject(projectId: string): Promise<void> {
    if (!(await this.projects.findWithDeleted(projectId))) throw new DomainError('PROJECT_NOT_FOUND');
  }
}

/** The first check a record fails, in the order verify reports them; null when it passes. */
function breakAt(
  row: SealedRow,
  seq: number,
  expected: number,
  previousHash: string | null,
): AuditBreakView | null {
  if (seq > expected) return { id: null, seq: expected, reason: 'MISSING' };
  if (auditHashOf(toAuditEventView(row)) !== row.hash) return { id: row.id, seq, reason: 'HASH_MISMATCH' };
  if (row.prev_hash !== previousHash) return { id: row.id, seq, reason: 'LINK_BROKEN' };
  return null;
}
