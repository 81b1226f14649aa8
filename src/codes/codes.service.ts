import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, SelectQueryBuilder } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { allowLongStatements } from '../database/timeouts';
import { inTransaction } from '../database/transaction';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { DomainError } from '../common/errors/domain-error';
import { likePattern, Page, toPage } from '../common/http/pagination';
import { Plan } from '../plans/entities/plan.entity';
import { PlansService } from '../plans/plans.service';
import { Statement, Statements } from '../database/statements';
import { EventsService } from '../events/events.service';
import type { CustomerLock } from '../customers/customers.service';
import { generateCodes, normaliseCode, normaliseCodeFragment } from './code-format';
import { CSV_HEADER, hasExpired, toCodeBatchView, toCodeView, toCsvRow } from './codes.mapper';
import { CodeBatchView, CodeView, CreateCodeBatchDto, ListCodesQueryDto } from './dto/code.dto';
import { CodeBatch } from './entities/code-batch.entity';
import { Code } from './entities/code.entity';

/** Rounds of regeneration for codes that collided with existing ones (80 bits: practically never). */
const MAX_INSERT_ROUNDS = 5;

/**
 * The code (with its plan) and the customer locked in one statement, and the code marked
 * redeemed by that customer when it is still available: one round trip for what otherwise takes
 * three. What is returned is the code as it was before (so the caller's checks see `available`);
 * if a check then fails, the caller's transaction rolls the mark back with everything else.
 */
const lockCodeWithCustomer = (customer: CustomerLock): Statement => {
  const code = `$${customer.values.length + 2}`;
  const now = `$${customer.values.length + 3}`;
  return {
    name: `codes.lock-with-customer-${customer.name}`,
    text: `WITH cust AS (SELECT c.id, c.username ${customer.from} FOR UPDATE OF c),
                code AS (
                  SELECT c.id, c.project_id, c.batch_id, c.plan_id, c.code, c.duration, c.status, c.note, c.expires_at,
                         c.redeemed_at, c.redeemed_by_customer_id, c.created_at, c.updated_at,
                         p.project_id AS plan_project_id, p.slug AS plan_slug, p.name AS plan_name, p.value AS plan_value,
                         p.plan_group, p.created_at AS plan_created_at, p.updated_at AS plan_updated_at
                    FROM codes c LEFT JOIN plans p ON p.id = c.plan_id
                   WHERE c.code = ${code} AND c.project_id = $1
                     FOR UPDATE OF c),
                marked AS (
                  UPDATE codes SET status = 'redeemed', redeemed_at = ${now}, redeemed_by_customer_id = (SELECT id FROM cust), updated_at = ${now}
                   WHERE id = (SELECT id FROM code) AND status = 'available' AND EXISTS (SELECT 1 FROM cust)
                  RETURNING id)
           SELECT code.*, (SELECT id FROM cust) AS customer_id, (SELECT username FROM cust) AS customer_username,
                  EXISTS (SELECT 1 FROM marked) AS marked
             FROM (SELECT 1) AS one LEFT JOIN code ON true`,
  };
};

const MARK_REDEEMED: Statement = {
  name: 'codes.mark-redeemed',
  text: `UPDATE codes SET status = 'redeemed', redeemed_at = $3, redeemed_by_customer_id = $4, updated_at = $3
          WHERE id = $1 AND project_id = $2 AND status = 'available'`,
};

export interface CsvExport {
  filename: string;
  body: string;
}

/**
 * Redeemable codes (product.md 5): batches, list and read, revoke, CSV export, and the two
 * steps the redemption engine runs inside its own transaction (`lockCodeForRedemption`,
 * `markRedeemed`). Every query is filtered by the caller's project.
 */
@Injectable()
export class CodesService {
  private readonly logger = new Logger(CodesService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly plans: PlansService,
    private readonly statements: Statements,
    private readonly config: AppConfig,
    private readonly events: EventsService,
  ) {}

  /** `lockCodeWithCustomer` statements by the shape of their customer lookup. */
  private readonly lockWithCustomer = new Map<string, Statement>();

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
        const batch = await em.getRepository(CodeBatch).save(
          em.create(CodeBatch, {
            projectId,
            planId: plan.id,
            duration: dto.duration ?? null,
            count,
            expiresAt: dto.expiresAt ? new Date(dto.expiresAt) : null,
            note: dto.note ?? null,
          }),
        );

        const inserted: string[] = [];
        for (let round = 0; inserted.length < count; round++) {
          if (round === MAX_INSERT_ROUNDS)
            throw new Error(`could not generate ${count} unique codes in ${MAX_INSERT_ROUNDS} rounds`);
          if (round > 0)
            this.logger.warn({ reqId, batchId: batch.id, round }, 'Code collision; regenerating');
          const candidates = new Set(generateCodes(count - inserted.length));
          const rows: Array<{ code: string }> = await em.query(
            `INSERT INTO codes (project_id, batch_id, plan_id, code, duration, note, expires_at)
           SELECT $1::varchar, $2::int, $3::int, c, $4::varchar, $5::varchar, $6::timestamptz
             FROM unnest($7::char(16)[]) WITH ORDINALITY AS t(c, n) ORDER BY n
           ON CONFLICT (code) DO NOTHING
           RETURNING code`,
            [projectId, batch.id, plan.id, batch.duration, batch.note, batch.expiresAt, [...candidates]],
          );
          const accepted = new Set(rows.map((r) => r.code));
          for (const code of candidates) if (accepted.has(code)) inserted.push(code);
        }
        return toCodeBatchView(batch, plan.name, inserted);
      },
      { participant: idem },
    );
  }

  async list(projectId: string, query: ListCodesQueryDto): Promise<Page<CodeView>> {
    const now = new Date();
    const qb = this.withPlanName(this.dataSource.manager.createQueryBuilder(Code, 'c'))
      .where('c.project_id = :projectId', { projectId })
      .orderBy('c.id', 'DESC');

    switch (query.status) {
      case undefined:
        break;
      case 'available':
        qb.andWhere(`c.status = 'available' AND (c.expires_at IS NULL OR c.expires_at > :now)`, { now });
        break;
      case 'expired':
        qb.andWhere(`c.status = 'available' AND c.expires_at <= :now`, { now });
        break;
      case 'redeemed':
      case 'revoked':
        qb.andWhere('c.status = :status', { status: query.status });
        break;
    }
    if (query.planId !== undefined) qb.andWhere('c.plan_id = :planId', { planId: query.planId });
    if (query.batchId !== undefined) qb.andWhere('c.batch_id = :batchId', { batchId: query.batchId });
    if (query.search) {
      const fragment = normaliseCodeFragment(query.search);
      qb.andWhere(
        fragment ? '(c.code LIKE :codePattern OR c.note ILIKE :pattern)' : 'c.note ILIKE :pattern',
        {
          pattern: likePattern(query.search),
          codePattern: `%${fragment}%`,
        },
      );
    }

    const [rows, total] = await qb
      .offset((query.page - 1) * query.pageSize)
      .limit(query.pageSize)
      .getManyAndCount();
    return toPage(
      rows.map((c) => toCodeView(c, c.plan!.name, now)),
      total,
      query,
    );
  }

  async get(projectId: string, codeId: number): Promise<CodeView> {
    const code = await this.withPlanName(this.dataSource.manager.createQueryBuilder(Code, 'c'))
      .where('c.id = :codeId AND c.project_id = :projectId', { codeId, projectId })
      .getOne();
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
        const code = await em.findOne(Code, {
          where: { id: codeId, projectId },
          lock: { mode: 'pessimistic_write' },
        });
        if (!code) throw new DomainError('CODE_NOT_FOUND');
        if (code.status === 'redeemed') throw new DomainError('CODE_ALREADY_REDEEMED');
        if (code.status === 'available') {
          const now = new Date();
          await em
            .createQueryBuilder()
            .update(Code)
            .set({ status: 'revoked', updatedAt: now })
            .where('id = :id AND project_id = :projectId', { id: code.id, projectId })
            .execute();
          code.status = 'revoked';
          code.updatedAt = now;
          const view = toCodeView(code, await this.planName(em, projectId, code.planId));
          await this.events.record(em, projectId, [{ type: 'code.revoked', data: { code: view as never } }]);
          return view;
        }
        return toCodeView(code, await this.planName(em, projectId, code.planId));
      },
      { participant: idem },
    );
  }

  /** The codes of one batch as CSV; an unknown batch, or one of another project, is CODE_NOT_FOUND. */
  async exportBatchCsv(projectId: string, batchId: number): Promise<CsvExport> {
    const batch = await this.dataSource.manager.findOne(CodeBatch, { where: { id: batchId, projectId } });
    if (!batch) throw new DomainError('CODE_NOT_FOUND', 'Code batch not found.');
    const now = new Date();
    const codes = await this.withPlanName(this.dataSource.manager.createQueryBuilder(Code, 'c'))
      .where('c.batch_id = :batchId AND c.project_id = :projectId', { batchId, projectId })
      .orderBy('c.id', 'ASC')
      .getMany();
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
    customer: CustomerLock,
    now: Date,
  ): Promise<{ code: Code; customer: { id: number; username: string } | null; marked: boolean }> {
    const normalised = normaliseCode(rawCode);
    if (normalised === null) throw new DomainError('CODE_NOT_FOUND');
    let statement = this.lockWithCustomer.get(customer.name);
    if (!statement) this.lockWithCustomer.set(customer.name, (statement = lockCodeWithCustomer(customer)));
    const [row] = await this.statements.rows<
      LockedCodeRow & { customer_id: number | null; customer_username: string | null; marked: boolean }
    >(manager, statement, [projectId, ...customer.values, normalised, now]);
    const code = redeemableCode(row.id === null ? undefined : row, now); // no code: one row of nulls
    return {
      code,
      customer: row.customer_id === null ? null : { id: row.customer_id, username: row.customer_username! },
      marked: row.marked,
    };
  }

  /**
   * For the redemption engine, inside the same transaction, after `lockCodeForRedemption`:
   * records the redemption on the locked code and returns it updated.
   */
  async markRedeemed(
    manager: EntityManager,
    code: Code,
    customerId: number,
    now: Date = new Date(),
  ): Promise<Code> {
    const { rowCount: affected } = await this.statements.run(manager, MARK_REDEEMED, [
      code.id,
      code.projectId,
      now,
      customerId,
    ]);
    // The row is locked by lockCodeAndCustomer; this only fires if that step was skipped.
    if (affected !== 1) throw new DomainError('CODE_ALREADY_REDEEMED');
    code.status = 'redeemed';
    code.redeemedAt = now;
    code.redeemedByCustomerId = customerId;
    code.updatedAt = now;
    return code;
  }

  /** Joins the plan, selecting only what a view needs (its id and name). */
  private withPlanName(qb: SelectQueryBuilder<Code>): SelectQueryBuilder<Code> {
    return qb.innerJoin('c.plan', 'p', 'p.project_id = c.project_id').addSelect(['p.id', 'p.name']);
  }

  private async planName(manager: EntityManager, projectId: string, planId: number): Promise<string> {
    const plan = await manager.findOne(Plan, {
      where: { id: planId, projectId },
      select: { id: true, name: true },
    });
    return plan?.name ?? '';
  }
}

interface LockedCodeRow {
  id: number;
  project_id: string;
  batch_id: number;
  plan_id: number;
  code: string;
  duration: string | null;
  status: Code['status'];
  note: string | null;
  expires_at: Date | null;
  redeemed_at: Date | null;
  redeemed_by_customer_id: number | null;
  created_at: Date;
  updated_at: Date;
  plan_project_id: string | null;
  plan_slug: string | null;
  plan_name: string | null;
  plan_value: string | null;
  plan_group: string | null;
  plan_created_at: Date | null;
  plan_updated_at: Date | null;
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
