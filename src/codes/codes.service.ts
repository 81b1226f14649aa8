import { Injectable, Logger } from '@nestjs/common';
import { ReadReplicas } from '../database/read-replicas';
import { AppConfig } from '../config/app-config';
import { Transactions, runInTransaction } from '../database/transactional';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { DomainError } from '../common/errors/domain-error';
import { Page, toPage, pageWindow } from '../common/http/pagination';
import { Plan } from '../plans/entities/plan.entity';
import { PlansService } from '../plans/plans.service';
import { EventsService } from '../events/events.service';
import { generateCodes, normaliseCode, normaliseCodeFragment } from './code-format';
import { CodesRepository, LockedCodeRow, RedeemerLookup } from './codes.repository';
import { CSV_HEADER, hasExpired, toCodeBatchView, toCodeView, toCsvRow } from './codes.mapper';
import { CodeBatchView, CodeView, CreateCodeBatchDto, ListCodesQueryDto } from './dto/code.dto';
import { Code } from './entities/code.entity';

/** Rounds of regeneration for codes that collided with existing ones (80 bits: practically never). */
const MAX_INSERT_ROUNDS = 5;

export interface CsvExport {
  filename: string;
  body: string;
}

/**
 * Redeemable codes: batches, list and read, revoke, CSV export, and the two steps the redemption
 * engine runs inside its own unit of work (`lockCodeAndCustomer`, `markRedeemed`). Every query
 * (`CodesRepository`) is filtered by the caller's project.
 */
@Injectable()
export class CodesService {
  private readonly logger = new Logger(CodesService.name);

  constructor(
    private readonly plans: PlansService,
    private readonly repository: CodesRepository,
    private readonly config: AppConfig,
    private readonly reads: ReadReplicas,
    private readonly events: EventsService,
    private readonly transactions: Transactions,
  ) {}

  /**
   * One batch row and `count` codes in one transaction. The codes go in with one
   * `INSERT ... SELECT FROM unnest(...)` per round; a code that collides with an existing one
   * (globally unique index) is skipped by `ON CONFLICT DO NOTHING` and regenerated.
   */
  async createBatch(
    projectId: string,
    dto: CreateCodeBatchDto,
    reqId?: string,
    idem?: IdempotencyContext,
  ): Promise<CodeBatchView> {
    const count = dto.count ?? 1;
    return runInTransaction(
      this.transactions,
      async () => {
        // a batch's codes in one insert: the one known long operation
        await this.repository.allowLongStatements(this.config.get('DB_LONG_STATEMENT_TIMEOUT_MS'));
        const plan = await this.plans.getPlanEntity(projectId, dto.planId);
        await this.checkBatchLimits(projectId, count);
        const batch = await this.repository.insertBatch({
          projectId,
          planId: plan.id,
          duration: dto.duration ?? null,
          count,
          expiresAt: dto.expiresAt ? new Date(dto.expiresAt) : null,
          note: dto.note ?? null,
        });

        const inserted: string[] = [];
        for (let round = 0; inserted.length < count; round++) {
          if (round === MAX_INSERT_ROUNDS)
            throw new Error(`could not generate ${count} unique codes in ${MAX_INSERT_ROUNDS} rounds`);
          if (round > 0)
            this.logger.warn({ reqId, batchId: batch.id, round }, 'Code collision; regenerating');
          const candidates = new Set(generateCodes(count - inserted.length));
          const accepted = await this.repository.insertCodes(batch, [...candidates]);
          for (const code of candidates) if (accepted.has(code)) inserted.push(code);
        }
        return toCodeBatchView(batch, plan.name, inserted);
      },
      { participant: idem },
    );
  }

  /**
   * The project's limits on codes: at most
   * PROJECT_MAX_CODE_BATCHES_PER_HOUR batches in the last hour (429 CODE_BATCH_RATE_LIMITED with
   * Retry-After) and PROJECT_MAX_CODES codes in all (409 CODE_LIMIT_REACHED). Batches of one
   * project are serialised by a transaction-scoped advisory lock, so that concurrent batches
   * cannot pass the limits together; they are counted on `code_batches` (a few rows per hour),
   * never on `codes`.
   */
  private async checkBatchLimits(projectId: string, count: number): Promise<void> {
    const perHour = this.config.get('PROJECT_MAX_CODE_BATCHES_PER_HOUR');
    const maxCodes = this.config.get('PROJECT_MAX_CODES');
    if (perHour === 0 && maxCodes === 0) return;
    const row = await this.repository.lockBatchStats(projectId);
    if (perHour > 0 && row.recent >= perHour) {
      const error = new DomainError(
        'CODE_BATCH_RATE_LIMITED',
        `This project has created ${row.recent} code batches in the last hour, the most it may (PROJECT_MAX_CODE_BATCHES_PER_HOUR).`,
      );
      error.retryAfterSeconds = Math.max(1, Math.ceil(row.retry_after ?? 1));
      throw error;
    }
    if (maxCodes > 0 && Number(row.codes) + count > maxCodes)
      throw new DomainError(
        'CODE_LIMIT_REACHED',
        `This project holds ${row.codes} codes; ${count} more would pass its limit of ${maxCodes} (PROJECT_MAX_CODES).`,
      );
  }

  async list(projectId: string, query: ListCodesQueryDto): Promise<Page<CodeView>> {
    const now = new Date();
    const search = query.search
      ? { term: query.search, codeFragment: normaliseCodeFragment(query.search) }
      : undefined;
    // a read replica may answer (ReadReplicas): the page may lag the primary a little
    const [rows, total, names] = await this.reads.run(projectId, async () => {
      const [rows, total] = await this.repository.page(
        projectId,
        { status: query.status, planId: query.planId, batchId: query.batchId, search },
        now,
        pageWindow(query),
      );
      return [rows, total, await this.planNamesOf(projectId, rows)] as const;
    });
    return toPage(
      rows.map((c) => toCodeView(c, names.get(c.planId)!, now)),
      total,
      query,
    );
  }

  /** The names of the codes' plans, by plan id (one query; none for no codes). */
  private async planNamesOf(projectId: string, codes: Code[]): Promise<Map<number, string>> {
    const ids = [...new Set(codes.map((c) => c.planId))];
    return ids.length ? this.plans.planNames(projectId, ids) : new Map();
  }

  async get(projectId: string, codeId: number): Promise<CodeView> {
    const code = await this.repository.get(projectId, codeId);
    if (!code) throw new DomainError('CODE_NOT_FOUND');
    return toCodeView(code, (await this.plans.findPlanName(projectId, code.planId))!);
  }

  /**
   * Available or expired → revoked. Revoking a revoked code answers the same; a redeemed code
   * is `409 CODE_ALREADY_REDEEMED`. The row is locked so a concurrent redemption waits.
   */
  async revoke(projectId: string, codeId: number, idem?: IdempotencyContext): Promise<CodeView> {
    return runInTransaction(
      this.transactions,
      async () => {
        const code = await this.repository.lock(projectId, codeId);
        if (!code) throw new DomainError('CODE_NOT_FOUND');
        if (code.status === 'redeemed') throw new DomainError('CODE_ALREADY_REDEEMED');
        // the note is the batch's (migration CodeBatchNotes)
        code.batch = (await this.repository.findBatch(projectId, code.batchId)) ?? undefined;
        if (code.status === 'available') {
          const now = new Date();
          await this.repository.markRevoked(projectId, code.id, now);
          code.status = 'revoked';
          code.updatedAt = now;
          const view = toCodeView(code, (await this.plans.findPlanName(projectId, code.planId)) ?? '');
          await this.events.record(projectId, [{ type: 'code.revoked', data: { code: view as never } }]);
          return view;
        }
        return toCodeView(code, (await this.plans.findPlanName(projectId, code.planId)) ?? '');
      },
      { participant: idem },
    );
  }

  /** The codes of one batch as CSV; an unknown batch, or one of another project, is CODE_NOT_FOUND. */
  async exportBatchCsv(projectId: string, batchId: number): Promise<CsvExport> {
    const batch = await this.repository.findBatch(projectId, batchId);
    if (!batch) throw new DomainError('CODE_NOT_FOUND', 'Code batch not found.');
    const now = new Date();
    const codes = await this.repository.codesOfBatch(projectId, batchId);
    const names = await this.planNamesOf(projectId, codes);
    const lines = [CSV_HEADER.join(','), ...codes.map((c) => toCsvRow(c, names.get(c.planId)!, now))];
    return { filename: `codes-batch-${batchId}.csv`, body: lines.join('\r\n') + '\r\n' };
  }

  /**
   * For the redemption engine, inside its unit of work: finds the code a person typed in this
   * project and locks its row (`SELECT ... FOR UPDATE`), so that of two concurrent redemptions
   * the second waits and then sees the code redeemed; in the same statement, locks the customer
   * `customer` selects (`null` when there is none). When both are there the code is already
   * marked redeemed by that customer in the database (`marked`), and `markRedeemed` sends no
   * statement. Checks, in order: format and existence (`CODE_NOT_FOUND`), `CODE_REVOKED`,
   * `CODE_EXPIRED`, `CODE_ALREADY_REDEEMED`.
   */
  async lockCodeAndCustomer(
    projectId: string,
    rawCode: string,
    customer: RedeemerLookup,
    now: Date,
  ): Promise<{ code: Code; customer: { id: number; username: string } | null; marked: boolean }> {
    const normalised = normaliseCode(rawCode);
    if (normalised === null) throw new DomainError('CODE_NOT_FOUND');
    const row = await this.repository.lockForRedemption(projectId, normalised, customer, now);
    const code = redeemableCode(row.id === null ? undefined : row, now); // no code: one row of nulls
    return {
      code,
      customer: row.customer_id === null ? null : { id: row.customer_id, username: row.customer_username! },
      marked: row.marked,
    };
  }

  /**
   * For the redemption engine, inside the same unit of work, after `lockCodeAndCustomer`:
   * records the redemption on the locked code by `customerId` (unless the lock already did,
   * `marked`) and returns the code as it is now.
   */
  async markRedeemed(code: Code, customerId: number, now: Date, marked: boolean): Promise<Code> {
    // The row is locked by lockCodeAndCustomer; this only fires if that step was skipped.
    if (!(await this.repository.markRedeemed(code, customerId, now, marked)))
      throw new DomainError('CODE_ALREADY_REDEEMED');
    return code;
  }
}

/**
 * The locked code, or the first check it fails, in this order: `CODE_NOT_FOUND`,
 * `CODE_REVOKED`, `CODE_EXPIRED` (its `expiresAt` has come, whatever its status; a redeemed code
 * keeps showing `redeemed` in the lists), `CODE_ALREADY_REDEEMED`.
 */
function redeemableCode(row: LockedCodeRow | undefined, now: Date): Code {
  if (!row) throw new DomainError('CODE_NOT_FOUND');
  const code = toLockedCode(row);
  if (code.status === 'revoked') throw new DomainError('CODE_REVOKED');
  if (hasExpired(code, now)) throw new DomainError('CODE_EXPIRED');
  if (code.status === 'redeemed') throw new DomainError('CODE_ALREADY_REDEEMED');
  return code;
}

/** A locked code row as an entity, with its plan attached when the plan exists. */
function toLockedCode(r: LockedCodeRow): Code {
  const code = Object.assign(new Code(), {
    id: r.id,
    projectId: r.project_id,
    batchId: r.batch_id,
    planId: r.plan_id,
    code: r.code,
    duration: r.duration,
    status: r.status,
    note: r.note,
    expiresAt: r.expires_at,
    redeemedAt: r.redeemed_at,
    redeemedByCustomerId: r.redeemed_by_customer_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
  if (r.plan_project_id !== null) {
    code.plan = Object.assign(new Plan(), {
      id: r.plan_id,
      projectId: r.plan_project_id,
      slug: r.plan_slug!,
      name: r.plan_name!,
      value: Number(r.plan_value),
      group: r.plan_group!,
      createdAt: r.plan_created_at!,
      updatedAt: r.plan_updated_at!,
    });
  }
  return code;
}
