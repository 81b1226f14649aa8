import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { ReadReplicas } from '../database/read-replicas';
import { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { allowLongStatements } from '../database/timeouts';
import { inTransaction } from '../database/transaction';
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
 * Redeemable codes (product.md 5): batches, list and read, revoke, CSV export, and the two
 * steps the redemption engine runs inside its own transaction (`lockCodeAndCustomer`,
 * `markRedeemed`). Every query (`CodesRepository`) is filtered by the caller's project.
 */
@Injectable()
export class CodesService {
  private readonly logger = new Logger(CodesService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly plans: PlansService,
    private readonly repository: CodesRepository,
    private readonly config: AppConfig,
    private readonly reads: ReadReplicas,
    private readonly events: EventsService,
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
    return inTransaction(
      this.dataSource,
      async (em) => {
        // up to 10,000 codes: the one known long operation
        await allowLongStatements(em, this.config.get('DB_LONG_STATEMENT_TIMEOUT_MS'));
        const plan = await this.plans.getPlanEntity(projectId, dto.planId, em);
        await this.checkBatchLimits(em, projectId, count);
        const batch = await this.repository.insertBatch(em, {
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
          const accepted = await this.repository.insertCodes(em, batch, [...candidates]);
          for (const code of candidates) if (accepted.has(code)) inserted.push(code);
        }
        return toCodeBatchView(batch, plan.name, inserted);
      },
      { participant: idem },
    );
  }

  /**
   * The project's limits on codes (product.md leaves them open; README, Decisions): at most
   * PROJECT_MAX_CODE_BATCHES_PER_HOUR batches in the last hour (429 CODE_BATCH_RATE_LIMITED with
   * Retry-After) and PROJECT_MAX_CODES codes in all (409 CODE_LIMIT_REACHED). Batches of one
   * project are serialised by a transaction-scoped advisory lock, so that concurrent batches
   * cannot pass the limits together; they are counted on `code_batches` (a few rows per hour),
   * never on `codes`.
   */
  private async checkBatchLimits(em: EntityManager, projectId: string, count: number): Promise<void> {
    const perHour = this.config.get('PROJECT_MAX_CODE_BATCHES_PER_HOUR');
    const maxCodes = this.config.get('PROJECT_MAX_CODES');
    if (perHour === 0 && maxCodes === 0) return;
    const row = await this.repository.lockBatchStats(em, projectId);
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
    const [rows, total] = await this.reads.run(projectId, (em) =>
      this.repository.page(
        projectId,
        { status: query.status, planId: query.planId, batchId: query.batchId, search },
        now,
        pageWindow(query),
        em,
      ),
    );
    return toPage(
      rows.map((c) => toCodeView(c, c.plan!.name, now)),
      total,
      query,
    );
  }

  async get(projectId: string, codeId: number): Promise<CodeView> {
    const code = await this.repository.getWithPlanName(projectId, codeId);
    if (!code) throw new DomainError('CODE_NOT_FOUND');
    return toCodeView(code, code.plan!.name);
  }

  /**
   * Available or expired → revoked. Revoking a revoked code answers the same; a redeemed code
   * is `409 CODE_ALREADY_REDEEMED`. The row is locked so a concurrent redemption waits.
   */
  async revoke(projectId: string, codeId: number, idem?: IdempotencyContext): Promise<CodeView> {
    return inTransaction(
      this.dataSource,
      async (em) => {
        const code = await this.repository.lock(em, projectId, codeId);
        if (!code) throw new DomainError('CODE_NOT_FOUND');
        if (code.status === 'redeemed') throw new DomainError('CODE_ALREADY_REDEEMED');
        // the note is the batch's (migration CodeBatchNotes)
        code.batch = (await this.repository.findBatch(projectId, code.batchId, em)) ?? undefined;
        if (code.status === 'available') {
          const now = new Date();
          await this.repository.markRevoked(em, projectId, code.id, now);
          code.status = 'revoked';
          code.updatedAt = now;
          const view = toCodeView(code, (await this.plans.findPlanName(projectId, code.planId, em)) ?? '');
          await this.events.record(em, projectId, [{ type: 'code.revoked', data: { code: view as never } }]);
          return view;
        }
        return toCodeView(code, (await this.plans.findPlanName(projectId, code.planId, em)) ?? '');
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
    const lines = [CSV_HEADER.join(','), ...codes.map((c) => toCsvRow(c, c.plan!.name, now))];
    return { filename: `codes-batch-${batchId}.csv`, body: lines.join('\r\n') + '\r\n' };
  }

  /**
   * For the redemption engine, inside its transaction: finds the code a person typed in this
   * project and locks its row (`SELECT ... FOR UPDATE`), so that of two concurrent redemptions
   * the second waits and then sees the code redeemed; in the same statement, locks the customer
   * `customer` selects (`null` when there is none). When both are there the code is already
   * marked redeemed by that customer (`marked`), so `markRedeemed` is only needed for a customer
   * created afterwards. Checks, in order (product.md 6): format and existence
   * (`CODE_NOT_FOUND`), `CODE_REVOKED`, `CODE_EXPIRED`, `CODE_ALREADY_REDEEMED`.
   */
  async lockCodeAndCustomer(
    manager: EntityManager,
    projectId: string,
    rawCode: string,
    customer: RedeemerLookup,
    now: Date,
  ): Promise<{ code: Code; customer: { id: number; username: string } | null; marked: boolean }> {
    const normalised = normaliseCode(rawCode);
    if (normalised === null) throw new DomainError('CODE_NOT_FOUND');
    const row = await this.repository.lockForRedemption(manager, projectId, normalised, customer, now);
    const code = redeemableCode(row.id === null ? undefined : row, now); // no code: one row of nulls
    return {
      code,
      customer: row.customer_id === null ? null : { id: row.customer_id, username: row.customer_username! },
      marked: row.marked,
    };
  }

  /**
   * For the redemption engine, inside the same transaction, after `lockCodeAndCustomer`:
   * records the redemption on the locked code and returns it updated.
   */
  async markRedeemed(
    manager: EntityManager,
    code: Code,
    customerId: number,
    now: Date = new Date(),
  ): Promise<Code> {
    // The row is locked by lockCodeAndCustomer; this only fires if that step was skipped.
    if (!(await this.repository.markRedeemed(manager, code, customerId, now)))
      throw new DomainError('CODE_ALREADY_REDEEMED');
    code.status = 'redeemed';
    code.redeemedAt = now;
    code.redeemedByCustomerId = customerId;
    code.updatedAt = now;
    return code;
  }
}

/**
 * The locked code, or the first check it fails, in the order of product.md 6: `CODE_NOT_FOUND`,
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
