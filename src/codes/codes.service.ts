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
import { codeKey, generateCampaignCode, generateCodes, normaliseCodeFragment } from './code-format';
import { AuditTrail } from '../audit/audit-trail';
import { CampaignRow, CodesRepository, LockedCodeRow, RedeemerLookup } from './codes.repository';
import {
  CSV_HEADER,
  effectiveStatus,
  hasExpired,
  toCodeBatchView,
  toCodeView,
  toCsvRow,
} from './codes.mapper';
import {
  CodeBatchView,
  CodeView,
  CreateCodeBatchDto,
  ListCodeRedemptionsQueryDto,
  ListCodesQueryDto,
  UpdateCodeDto,
} from './dto/code.dto';
import { Code } from './entities/code.entity';
import { CodeRedemption } from './entities/code-redemption.entity';

/** Fields of a campaign code that may change only until its first redemption. */
const TERMS = ['planId', 'duration', 'trial', 'startsAt'] as const;

const validationFailed = (field: string, message: string) =>
  new DomainError('VALIDATION_FAILED', message, [{ field, message }]);

/** A date or timestamp of the API as an instant (a date means UTC midnight). */
const instant = (value: string | null | undefined): Date | null =>
  value === null || value === undefined
    ? null
    : new Date(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);

/** `notIfHeldPlanGroups` as stored: in order, duplicates dropped. */
const distinct = (groups: string[] | undefined): string[] => [...new Set(groups ?? [])];

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
    private readonly audit: AuditTrail,
  ) {}

  /**
   * One batch row and `count` codes in one transaction. The codes go in with one
   * `INSERT ... SELECT FROM unnest(...)` per round; a code that collides with an existing one
   * (globally unique index) is skipped by `ON CONFLICT DO NOTHING` and regenerated.
   */
  create(
    projectId: string,
    dto: CreateCodeBatchDto,
    reqId?: string,
    idem?: IdempotencyContext,
  ): Promise<CodeBatchView | CodeView> {
    return dto.kind === 'campaign'
      ? this.createCampaign(projectId, dto, idem)
      : this.createBatch(projectId, dto, reqId, idem);
  }

  /**
   * A campaign code (docs/api-guide.md#campaign-codes): its key is serialised by an advisory lock,
   * then `409 CODE_TAKEN` when a code of the project takes it. A generated code is drawn again
   * in the (unlikely) case its key is taken.
   */
  createCampaign(projectId: string, dto: CreateCodeBatchDto, idem?: IdempotencyContext): Promise<CodeView> {
    return runInTransaction(
      this.transactions,
      async () => {
        const now = new Date();
        const plan = await this.plans.getPlanEntity(projectId, dto.planId);
        const startsAt = instant(dto.startsAt);
        const expiresAt = instant(dto.expiresAt);
        this.checkTerms(plan, dto.trial ?? false, dto.duration ?? null, startsAt, expiresAt);
        let display = dto.code ? dto.code.toUpperCase() : generateCampaignCode();
        for (let round = 0; ; round++) {
          const key = codeKey(display)!;
          await this.repository.lockKey(projectId, key);
          if (!(await this.repository.keyTaken(projectId, key, now))) break;
          if (dto.code) throw new DomainError('CODE_TAKEN');
          if (round === MAX_INSERT_ROUNDS) throw new Error('could not generate a free campaign code');
          display = generateCampaignCode();
        }
        const code = await this.repository.insertCampaign({
          projectId,
          kind: 'campaign',
          planId: plan.id,
          displayCode: display,
          codeKey: codeKey(display)!,
          duration: dto.duration ?? null,
          trial: dto.trial ?? false,
          maxRedemptions: dto.maxRedemptions ?? null,
          perCustomerLimit: dto.perCustomerLimit ?? 1,
          startsAt,
          expiresAt,
          newCustomersOnly: dto.eligibility?.newCustomersOnly ?? false,
          notIfHeldPlanGroups: distinct(dto.eligibility?.notIfHeldPlanGroups),
          note: dto.note ?? null,
        });
        const view = toCodeView(code, plan.name, now);
        this.audit.created(projectId, 'code', code.id, view);
        return view;
      },
      { participant: idem },
    );
  }

  /** The rules a campaign code's terms keep together: `expiresAt` after `startsAt`; a trial's duration and paid plan. */
  private checkTerms(
    plan: Plan,
    trial: boolean,
    duration: string | null,
    startsAt: Date | null,
    expiresAt: Date | null,
  ): void {
    if (startsAt && expiresAt && expiresAt.getTime() <= startsAt.getTime())
      throw validationFailed('expiresAt', 'expiresAt must be after startsAt');
    if (trial && duration === null) throw validationFailed('duration', 'a trial code needs a duration');
    if (trial && !(Number(plan.value) > 0))
      throw validationFailed('planId', 'a trial code needs a plan of value above 0');
  }

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
        const view = toCodeBatchView(batch, plan.name, inserted);
        this.audit.created(projectId, 'code_batch', batch.id, view);
        return view;
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
      ? {
          term: query.search,
          codeFragment: normaliseCodeFragment(query.search),
          keyFragment: codeKey(query.search),
        }
      : undefined;
    // a read replica may answer (ReadReplicas): the page may lag the primary a little
    const [rows, total, names] = await this.reads.run(projectId, async () => {
      const [rows, total] = await this.repository.page(
        projectId,
        { status: query.status, planId: query.planId, batchId: query.batchId, kind: query.kind, search },
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
   * is `409 CODE_ALREADY_REDEEMED`. The row is locked so a concurrent redemption waits. A
   * campaign code is never `redeemed`: what it granted stays.
   */
  async revoke(projectId: string, codeId: number, idem?: IdempotencyContext): Promise<CodeView> {
    return runInTransaction(
      this.transactions,
      async () => {
        const code = await this.repository.lock(projectId, codeId);
        if (!code) throw new DomainError('CODE_NOT_FOUND');
        if (code.status === 'redeemed') throw new DomainError('CODE_ALREADY_REDEEMED');
        // the note is the batch's (migration CodeBatchNotes)
        if (code.batchId !== null)
          code.batch = (await this.repository.findBatch(projectId, code.batchId)) ?? undefined;
        if (code.status === 'available') {
          const now = new Date();
          const planName = (await this.plans.findPlanName(projectId, code.planId)) ?? '';
          const before = toCodeView(code, planName, now);
          await this.repository.markRevoked(projectId, code.id, now);
          code.status = 'revoked';
          code.updatedAt = now;
          const view = toCodeView(code, planName, now);
          this.audit.updated(projectId, 'code', code.id, before, view, { action: 'code.revoked' });
          await this.events.record(projectId, [{ type: 'code.revoked', data: { code: view as never } }]);
          return view;
        }
        return toCodeView(code, (await this.plans.findPlanName(projectId, code.planId)) ?? '');
      },
      { participant: idem },
    );
  }

  /**
   * Changes a campaign code, checks in the order of docs/api-guide.md#campaign-codes: the code,
   * a batch code, revoked, expired, a term changed after the first redemption, then the code as
   * it would be. A value equal to the stored one is no change. The row is locked, so that a
   * redemption's count is the one compared.
   */
  update(
    projectId: string,
    codeId: number,
    dto: UpdateCodeDto,
    idem?: IdempotencyContext,
  ): Promise<CodeView> {
    return runInTransaction(
      this.transactions,
      async () => {
        // the DTO declares every field: those sent are the ones not undefined
        const sent = Object.keys(dto).filter((k) => dto[k as keyof UpdateCodeDto] !== undefined);
        if (sent.length === 0) throw validationFailed('body', 'the body names no field to change');
        const now = new Date();
        const code = await this.repository.lock(projectId, codeId);
        if (!code) throw new DomainError('CODE_NOT_FOUND');
        if (code.kind !== 'campaign') {
          const field = sent[0];
          throw new DomainError('CODE_CHANGE_NOT_ALLOWED', 'A batch code cannot change.', [
            { field, message: 'a batch code cannot change' },
          ]);
        }
        if (code.status === 'revoked') throw new DomainError('CODE_REVOKED');
        if (hasExpired(code, now)) throw new DomainError('CODE_EXPIRED');

        const next: Partial<Code> = {};
        if (dto.planId !== undefined && dto.planId !== code.planId) next.planId = dto.planId;
        if (dto.duration !== undefined && dto.duration !== code.duration) next.duration = dto.duration;
        if (dto.trial !== undefined && dto.trial !== code.trial) next.trial = dto.trial;
        if (dto.startsAt !== undefined && instant(dto.startsAt)?.getTime() !== code.startsAt?.getTime())
          next.startsAt = instant(dto.startsAt);
        if (dto.expiresAt !== undefined && instant(dto.expiresAt)?.getTime() !== code.expiresAt?.getTime())
          next.expiresAt = instant(dto.expiresAt);
        if (dto.maxRedemptions !== undefined && dto.maxRedemptions !== code.maxRedemptions)
          next.maxRedemptions = dto.maxRedemptions;
        if (dto.perCustomerLimit !== undefined && dto.perCustomerLimit !== code.perCustomerLimit)
          next.perCustomerLimit = dto.perCustomerLimit;
        if (dto.eligibility !== undefined) {
          const newOnly = dto.eligibility.newCustomersOnly ?? false;
          const groups = distinct(dto.eligibility.notIfHeldPlanGroups);
          if (newOnly !== code.newCustomersOnly) next.newCustomersOnly = newOnly;
          if (JSON.stringify(groups) !== JSON.stringify(code.notIfHeldPlanGroups ?? []))
            next.notIfHeldPlanGroups = groups;
        }
        if (dto.note !== undefined && dto.note !== code.note) next.note = dto.note;

        if (code.redemptionCount > 0) {
          const field = TERMS.find((f) => f in next);
          if (field)
            throw new DomainError(
              'CODE_CHANGE_NOT_ALLOWED',
              `${field} cannot change after the first redemption.`,
              [{ field, message: `${field} cannot change after the first redemption` }],
            );
        }
        const merged = Object.assign(new Code(), code, next);
        if (merged.maxRedemptions !== null && merged.maxRedemptions < code.redemptionCount)
          throw validationFailed('maxRedemptions', 'maxRedemptions cannot be below redemptionCount');
        const plan = await this.plans.getPlanEntity(projectId, merged.planId);
        this.checkTerms(plan, merged.trial, merged.duration, merged.startsAt, merged.expiresAt);
        if (Object.keys(next).length > 0) {
          await this.repository.update(projectId, codeId, next, now);
          merged.updatedAt = now;
        }
        const view = toCodeView(merged, plan.name, now);
        const planName =
          plan.id === code.planId ? plan.name : await this.plans.findPlanName(projectId, code.planId);
        this.audit.updated(projectId, 'code', codeId, toCodeView(code, planName ?? '', now), view);
        return view;
      },
      { participant: idem },
    );
  }

  /**
   * A code's redemptions, newest first: a campaign code's records, or a batch code's one
   * redemption (its row, the record's id being the code's). `CODE_NOT_FOUND` for another
   * project's code. The customers and windows are the redemption engine's to show.
   */
  async redemptions(
    projectId: string,
    codeId: number,
    query: ListCodeRedemptionsQueryDto,
  ): Promise<{ records: CodeRedemption[]; total: number }> {
    const code = await this.repository.get(projectId, codeId);
    if (!code) throw new DomainError('CODE_NOT_FOUND');
    if (code.kind === 'campaign') {
      const [records, total] = await this.repository.redemptionsPage(
        codeId,
        query.customerId,
        pageWindow(query),
      );
      return { records, total };
    }
    const redeemed =
      code.status === 'redeemed' &&
      code.redeemedAt !== null &&
      (query.customerId === undefined || query.customerId === code.redeemedByCustomerId);
    if (!redeemed) return { records: [], total: 0 };
    const record = Object.assign(new CodeRedemption(), {
      id: code.id,
      projectId,
      codeId: code.id,
      customerId: code.redeemedByCustomerId,
      redeemedAt: code.redeemedAt!,
      windowIds: [],
    });
    return { records: pageWindow(query).offset === 0 ? [record] : [], total: 1 };
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
  ): Promise<{
    code: Code;
    customer: { id: number; username: string } | null;
    marked: boolean;
    /** A campaign code: the customer's redemptions of it so far (as the lock read them). */
    customerRedemptions: number;
  }> {
    const key = codeKey(rawCode);
    if (key === null) throw new DomainError('CODE_NOT_FOUND');
    // a batch code with the key first (it also locks the customer), else a campaign code
    const row = await this.repository.lockForRedemption(projectId, key, customer, now);
    const code = row.id === null ? campaignCode(row.campaign, now) : redeemableCode(row, now); // no code: one row of nulls
    return {
      code,
      customer: row.customer_id === null ? null : { id: row.customer_id, username: row.customer_username! },
      marked: row.marked,
      customerRedemptions: row.campaign?.customer_redemptions ?? 0,
    };
  }

  /**
   * For the redemption engine, as its unit of work's last statement: takes one redemption of the
   * campaign code under its cap and the customer's limit, and records it; `409 CODE_EXHAUSTED` or
   * `CODE_CUSTOMER_LIMIT_REACHED` (all rolled back) when concurrent redemptions took the last ones
   * meanwhile. The code comes back counted, with the customer's redemptions before this one.
   */
  async takeRedemption(
    code: Code,
    customerId: number,
    at: Date,
    windowIds: number[],
  ): Promise<{ code: Code; prior: number }> {
    const taken = await this.repository.takeRedemption(code.projectId, code.id, customerId, at, windowIds);
    if (taken.redemption_count === null)
      throw new DomainError(
        taken.prior >= code.perCustomerLimit ? 'CODE_CUSTOMER_LIMIT_REACHED' : 'CODE_EXHAUSTED',
      );
    const before = { status: effectiveStatus(code, at), redemptionCount: taken.redemption_count - 1 };
    code.redemptionCount = taken.redemption_count;
    code.updatedAt = taken.updated_at!;
    const after = { status: effectiveStatus(code, at), redemptionCount: code.redemptionCount };
    this.audit.updated(code.projectId, 'code', code.id, before, after, { action: 'code.redeemed' });
    return { code, prior: taken.prior };
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
    this.audit.updated(
      code.projectId,
      'code',
      code.id,
      { status: 'available', redeemedByCustomerId: null },
      { status: code.status, redeemedByCustomerId: code.redeemedByCustomerId },
      { action: 'code.redeemed' },
    );
    return code;
  }
}

/**
 * The locked code, or the first check it fails, in this order: `CODE_NOT_FOUND`,
 * `CODE_REVOKED`, `CODE_EXPIRED` (its `expiresAt` has come, whatever its status; a redeemed code
 * keeps showing `redeemed` in the lists), `CODE_ALREADY_REDEEMED`.
 */
/**
 * The campaign code the redemption lock found (else the newest with its key), with its plan, or
 * the first check it fails: `CODE_NOT_FOUND`, `CODE_REVOKED`, `CODE_EXPIRED`,
 * `CODE_NOT_YET_ACTIVE`, `CODE_EXHAUSTED` (as read; `takeRedemption` decides at the end).
 */
function campaignCode(row: CampaignRow | null, now: Date): Code {
  if (!row) throw new DomainError('CODE_NOT_FOUND');
  const date = (value: string | null) => (value === null ? null : new Date(value));
  const code = Object.assign(new Code(), {
    id: row.id,
    kind: 'campaign',
    projectId: row.project_id,
    batchId: null,
    planId: row.plan_id,
    code: null,
    displayCode: row.display_code,
    codeKey: row.code_key,
    duration: row.duration,
    trial: row.trial,
    status: row.status,
    note: row.note,
    startsAt: date(row.starts_at),
    expiresAt: date(row.expires_at),
    maxRedemptions: row.max_redemptions,
    perCustomerLimit: row.per_customer_limit,
    redemptionCount: row.redemption_count,
    newCustomersOnly: row.new_customers_only,
    notIfHeldPlanGroups: row.not_if_held_plan_groups,
    redeemedAt: null,
    redeemedByCustomerId: null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  });
  if (code.status === 'revoked') throw new DomainError('CODE_REVOKED');
  if (hasExpired(code, now)) throw new DomainError('CODE_EXPIRED');
  if (code.startsAt && code.startsAt.getTime() > now.getTime()) throw new DomainError('CODE_NOT_YET_ACTIVE');
  if (code.maxRedemptions !== null && code.redemptionCount >= code.maxRedemptions)
    throw new DomainError('CODE_EXHAUSTED');
  attachPlan(code, {
    plan_project_id: row.plan_project_id,
    plan_slug: row.plan_slug,
    plan_name: row.plan_name,
    plan_value: row.plan_value === null ? null : String(row.plan_value),
    plan_group: row.plan_group,
    plan_created_at: date(row.plan_created_at),
    plan_updated_at: date(row.plan_updated_at),
  });
  return code;
}

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
    kind: 'batch',
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
  attachPlan(code, r);
  return code;
}

/** The code's plan, from the columns the lock joined, when the plan exists. */
function attachPlan(
  code: Code,
  r: Pick<
    LockedCodeRow,
    | 'plan_project_id'
    | 'plan_slug'
    | 'plan_name'
    | 'plan_value'
    | 'plan_group'
    | 'plan_created_at'
    | 'plan_updated_at'
  >,
): void {
  if (r.plan_project_id === null) return;
  code.plan = Object.assign(new Plan(), {
    id: code.planId,
    projectId: r.plan_project_id,
    slug: r.plan_slug!,
    name: r.plan_name!,
    value: Number(r.plan_value),
    group: r.plan_group!,
    createdAt: r.plan_created_at!,
    updatedAt: r.plan_updated_at!,
  });
}
