import { Injectable } from '@nestjs/common';
import type { CursorWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';
import { Transactions } from '../database/transactional';
import {
  AUDIT_EVENT_COLUMNS,
  AUDIT_RECORDS,
  AuditEventRow,
  UNSEALED_AUDIT_EVENT_COLUMNS,
} from './audit.mapper';

/** The filters of the list and the export; `from` inclusive, `to` exclusive, over `at`. */
export interface AuditFilters {
  resourceType?: string;
  resourceId?: string;
  action?: string;
  actorType?: string;
  actorKeyId?: number;
  requestId?: string;
  from?: Date;
  to?: Date;
}

/** A record's place in the written order: the export's keyset. */
export interface AuditPlace {
  at: Date;
  position: string;
}

/** What the sealer gives one record. */
export interface SealedRecord {
  position: string;
  seq: number;
  prevHash: string | null;
  hash: string;
}

/** The end of a project's chain, and the last record retention deleted. */
export interface ChainHeadRow {
  seq: string;
  hash: string;
  pruned_seq: string | null;
  pruned_hash: string | null;
}

/** Seen by verify in one snapshot: the chain head (if any) and the records not sealed yet. */
export interface ChainState {
  head: ChainHeadRow | null;
  unsealed: number;
}

/** A sealed record as verify reads it: the record, and what the sealer gave it. */
export type SealedRow = AuditEventRow & { seq: string };

/** Second key of the sealer's advisory lock on a project (any constant, the same on every replica). */
const SEAL_LOCK = `hashtext('audit-seal')`;

/**
 * The filters' conditions on the records `a` after `a.project_id = $1`; `values` holds `$1` and
 * takes theirs.
 */
function conditions(filters: AuditFilters, values: unknown[]): string[] {
  const where = ['a.project_id = $1'];
  const eq = (column: string, value: unknown) => {
    if (value !== undefined) where.push(`a.${column} = $${values.push(value)}`);
  };
  eq('resource_type', filters.resourceType);
  eq('resource_id', filters.resourceId);
  eq('action', filters.action);
  eq('actor_type', filters.actorType);
  eq('actor_key_id', filters.actorKeyId);
  eq('request_id', filters.requestId);
  if (filters.from !== undefined) where.push(`a.at >= $${values.push(filters.from)}`);
  if (filters.to !== undefined) where.push(`a.at < $${values.push(filters.to)}`);
  return where;
}

/**
 * The projects with unsealed records, `$1` at most: one probe of `audit_unsealed`'s key per
 * project, skipping from one project to the next, so that the question costs the same whatever
 * the backlog (a `DISTINCT` would read every entry).
 */
export const PROJECTS_WITH_UNSEALED = `WITH RECURSIVE p AS (
    (SELECT project_id FROM audit_unsealed ORDER BY project_id, position LIMIT 1)
    UNION ALL
    SELECT (SELECT u.project_id FROM audit_unsealed u
             WHERE u.project_id > p.project_id ORDER BY u.project_id, u.position LIMIT 1)
      FROM p WHERE p.project_id IS NOT NULL
  )
  SELECT project_id FROM p WHERE project_id IS NOT NULL LIMIT $1`;

/**
 * Every statement on `audit_events`, `audit_seals`, `audit_unsealed` and `audit_chain_heads`, but
 * the writer's insert (which rides with the write's own statements): the reads of the API, the
 * sealer's, verify's and retention's.
 */
@Injectable()
export class AuditRepository {
  constructor(private readonly transactions: Transactions) {}

  private get tx() {
    return this.transactions.tx;
  }

  /**
   * A page of the project's records, newest first (by `at`, then later written first); `after`
   * is the position of the previous page's last record, which must be one of the project's
   * (otherwise the page is empty).
   */
  @GenerateSql(
    { name: 'first page', params: ['prj_1', {}, { limit: 21 }] },
    {
      name: 'every filter, after a cursor',
      params: [
        'prj_1',
        {
          resourceType: 'customer',
          resourceId: '1',
          action: 'customer.updated',
          actorType: 'private_key',
          actorKeyId: 1,
          requestId: 'req-1',
          from: new Date('2026-03-01T00:00:00Z'),
          to: new Date('2026-04-01T00:00:00Z'),
        },
        { limit: 21, after: '42' },
      ],
    },
  )
  list(
    projectId: string,
    filters: AuditFilters,
    { limit, after }: CursorWindow<string>,
  ): Promise<AuditEventRow[]> {
    const values: unknown[] = [projectId];
    const where = conditions(filters, values);
    if (after !== undefined)
      where.push(
        `(a.at, a.position) < (SELECT c.at, c.position FROM audit_events c
                                WHERE c.position = $${values.push(after)} AND c.project_id = $1)`,
      );
    return this.tx.query(
      `SELECT ${AUDIT_EVENT_COLUMNS} FROM ${AUDIT_RECORDS} WHERE ${where.join(' AND ')}
        ORDER BY a.at DESC, a.position DESC LIMIT $${values.push(limit)}`,
      values,
    );
  }

  /** Up to `limit` of the project's records after `after`, oldest first (the list's exact reverse). */
  @GenerateSql(
    { name: 'first page', params: ['prj_1', {}, undefined, 1000] },
    {
      name: 'of a resource, after a record',
      params: [
        'prj_1',
        { resourceType: 'customer', resourceId: '1' },
        { at: new Date('2026-03-15T12:00:00Z'), position: '42' },
        1000,
      ],
    },
  )
  exportPage(
    projectId: string,
    filters: AuditFilters,
    after: AuditPlace | undefined,
    limit: number,
  ): Promise<AuditEventRow[]> {
    const values: unknown[] = [projectId];
    const where = conditions(filters, values);
    if (after)
      where.push(`(a.at, a.position) > ($${values.push(after.at)}, $${values.push(after.position)}::bigint)`);
    return this.tx.query(
      `SELECT ${AUDIT_EVENT_COLUMNS} FROM ${AUDIT_RECORDS} WHERE ${where.join(' AND ')}
        ORDER BY a.at, a.position LIMIT $${values.push(limit)}`,
      values,
    );
  }

  @GenerateSql({ params: ['prj_1', 'aud_abcdefghijklmnopqrstuvwx'] })
  async get(projectId: string, id: string): Promise<AuditEventRow | undefined> {
    const [row] = await this.tx.query(
      `SELECT ${AUDIT_EVENT_COLUMNS} FROM ${AUDIT_RECORDS} WHERE a.id = $1 AND a.project_id = $2`,
      [id, projectId],
    );
    return row;
  }

  // ------------------------------------------------------------------------------------- sealing

  /** Projects that have records not sealed yet (at most `limit`). */
  @GenerateSql({ params: [100] })
  async projectsWithUnsealed(limit: number): Promise<string[]> {
    const rows: { project_id: string }[] = await this.tx.query(PROJECTS_WITH_UNSEALED, [limit]);
    return rows.map((r) => r.project_id);
  }

  /**
   * Takes the project's chain for the rest of the current transaction (a transaction-scoped
   * advisory lock); false when another replica is sealing it.
   */
  @GenerateSql({ params: ['prj_1'] })
  async tryLockChain(projectId: string): Promise<boolean> {
    const [row] = await this.tx.query(
      `SELECT pg_try_advisory_xact_lock(${SEAL_LOCK}, hashtext($1)) AS locked`,
      [projectId],
    );
    return row.locked === true;
  }

  @GenerateSql({ params: ['prj_1'] })
  async chainHead(projectId: string): Promise<ChainHeadRow | undefined> {
    const [row] = await this.tx.query(
      `SELECT seq, hash, pruned_seq, pruned_hash FROM audit_chain_heads WHERE project_id = $1`,
      [projectId],
    );
    return row;
  }

  /**
   * The positions of the project's committed records not sealed yet (its queue), in the order
   * written, at most `limit`.
   */
  @GenerateSql({ params: ['prj_1', 1000] })
  async queued(projectId: string, limit: number): Promise<string[]> {
    const rows: { position: string }[] = await this.tx.query(
      `SELECT position FROM audit_unsealed WHERE project_id = $1 ORDER BY position LIMIT $2`,
      [projectId, limit],
    );
    return rows.map((r) => r.position);
  }

  /**
   * The project's records at `positions` (taken from the queue: not sealed), in the order
   * written; a record deleted meanwhile (by hand: retention deletes only sealed records) is not
   * there. One index scan over the array, not a probe per record.
   */
  @GenerateSql({ params: ['prj_1', ['41', '42']] })
  unsealedRecords(projectId: string, positions: string[]): Promise<AuditEventRow[]> {
    return this.tx.query(
      `SELECT ${UNSEALED_AUDIT_EVENT_COLUMNS} FROM audit_events a
        WHERE a.position = ANY ($2::bigint[]) AND a.project_id = $1 ORDER BY a.position`,
      [projectId, positions],
    );
  }

  /**
   * Takes the records at `queued` positions off the project's queue, gives `records` (those of
   * them that still exist, in the order written) their seq, prevHash and hash, and moves the
   * chain head to the last of them, in one statement (in the caller's transaction, under the
   * chain's lock). Only records still queued are sealed.
   */
  @GenerateSql({
    params: [
      'prj_1',
      ['41', '42'],
      [
        { position: '41', seq: 7, prevHash: 'a'.repeat(64), hash: 'b'.repeat(64) },
        { position: '42', seq: 8, prevHash: 'b'.repeat(64), hash: 'c'.repeat(64) },
      ],
    ],
  })
  async seal(projectId: string, queued: string[], records: SealedRecord[]): Promise<void> {
    if (queued.length === 0) return;
    const last = records.at(-1);
    await this.tx.query(
      `WITH done AS (
         DELETE FROM audit_unsealed WHERE project_id = $1 AND position = ANY ($2::bigint[])
         RETURNING position
       ), sealed AS (
         INSERT INTO audit_seals (position, project_id, seq, prev_hash, hash)
         SELECT v.position, $1, v.seq, v.prev_hash, v.hash
           FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::text[]) AS v(position, seq, prev_hash, hash)
           JOIN done ON done.position = v.position
       )
       INSERT INTO audit_chain_heads (project_id, seq, hash) SELECT $1, $7, $8 WHERE $7::bigint IS NOT NULL
       ON CONFLICT (project_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash`,
      [
        projectId,
        queued,
        records.map((r) => r.position),
        records.map((r) => r.seq),
        records.map((r) => r.prevHash),
        records.map((r) => r.hash),
        last?.seq ?? null,
        last?.hash ?? null,
      ],
    );
  }

  // -------------------------------------------------------------------------------------- verify

  /** The chain head and the number of records not sealed, seen at once. */
  @GenerateSql({ params: ['prj_1'] })
  async chainState(projectId: string): Promise<ChainState> {
    const [row] = await this.tx.query(
      `SELECT h.seq, h.hash, h.pruned_seq, h.pruned_hash,
              (SELECT count(*) FROM audit_unsealed u JOIN audit_events a ON a.position = u.position
                WHERE u.project_id = $1)::bigint AS unsealed
         FROM (SELECT 1) one LEFT JOIN audit_chain_heads h ON h.project_id = $1`,
      [projectId],
    );
    return {
      head:
        row.seq === null
          ? null
          : { seq: row.seq, hash: row.hash, pruned_seq: row.pruned_seq, pruned_hash: row.pruned_hash },
      unsealed: Number(row.unsealed),
    };
  }

  /** Up to `limit` of the project's sealed records after seq `afterSeq`, by seq. */
  @GenerateSql({ params: ['prj_1', 0, 2000] })
  sealedPage(projectId: string, afterSeq: number, limit: number): Promise<SealedRow[]> {
    return this.tx.query(
      `SELECT ${AUDIT_EVENT_COLUMNS} FROM audit_seals s JOIN audit_events a ON a.position = s.position
        WHERE s.project_id = $1 AND s.seq > $2 ORDER BY s.seq LIMIT $3`,
      [projectId, afterSeq, limit],
    );
  }

  // ----------------------------------------------------------------------------------- retention

  /** Projects whose chain starts with a record older than `before`: retention has work there. */
  @GenerateSql({ params: [new Date('2025-03-15T00:00:00Z')] })
  async projectsToPrune(before: Date): Promise<string[]> {
    const rows: { project_id: string }[] = await this.tx.query(
      `SELECT h.project_id FROM audit_chain_heads h
        WHERE (SELECT a.at FROM audit_seals s JOIN audit_events a ON a.position = s.position
                WHERE s.project_id = h.project_id ORDER BY s.seq LIMIT 1) < $1`,
      [before],
    );
    return rows.map((r) => r.project_id);
  }

  /**
   * Deletes the start of the project's chain (the seals and their records), by seq, up to its
   * first record not older than `before` and at most `limit` records, and keeps the seq and hash
   * of the last one deleted in the chain head (never moved back by a concurrent prune), in one
   * statement. Returns how many went.
   */
  @GenerateSql({ params: ['prj_1', new Date('2025-03-15T00:00:00Z'), 5000] })
  async pruneChainStart(projectId: string, before: Date, limit: number): Promise<number> {
    const [{ n }]: { n: number }[] = await this.tx.query(
      `WITH page AS (
         SELECT s.position, s.seq, a.at FROM audit_seals s LEFT JOIN audit_events a ON a.position = s.position
          WHERE s.project_id = $1 ORDER BY s.seq LIMIT $3
       ), kept AS (
         SELECT min(seq) AS seq FROM page WHERE at >= $2
       ), gone AS (
         DELETE FROM audit_seals s USING page, kept
          WHERE s.project_id = $1 AND s.position = page.position AND (kept.seq IS NULL OR page.seq < kept.seq)
         RETURNING s.position, s.seq, s.hash
       ), records AS (
         DELETE FROM audit_events a USING gone WHERE a.position = gone.position
       ), last AS (
         SELECT seq, hash FROM gone ORDER BY seq DESC LIMIT 1
       ), head AS (
         UPDATE audit_chain_heads h SET pruned_seq = last.seq, pruned_hash = last.hash
           FROM last WHERE h.project_id = $1 AND (h.pruned_seq IS NULL OR h.pruned_seq < last.seq)
         RETURNING 1
       )
       SELECT count(*)::int AS n FROM gone`,
      [projectId, before, limit],
    );
    return n;
  }
}
