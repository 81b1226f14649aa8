import { Injectable } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import { randomBase32Lower } from '../common/crypto/random';
import { cursorWindow, toCursorPage } from '../common/http/pagination';
import { DomainError } from '../common/errors/domain-error';
import { Transactions, runInTransaction } from '../database/transactional';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { DeliveryView, EventPageView, EventView, ListEventsQueryDto } from './dto/event.dto';
import { RedeliverDto } from './dto/webhook-endpoint.dto';
import { EventWindow, NewEvent } from './event-types';
import { EventRow, EventsRepository, ScheduleCursorKind } from './events.repository';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';

export const newEventId = () => `evt_${randomBase32Lower(24)}`;

/** The fields of a window an event snapshot is made of. */
export interface WindowLike {
  id: number;
  planId: number;
  group: string;
  validFrom: Date;
  validTo: Date | null;
  status: 'active' | 'cancelled';
  source: 'signup' | 'code' | 'activation';
  codeId: number | null;
  trial: boolean;
}

export const toEventWindow = (w: WindowLike, planName: string): EventWindow => ({
  id: w.id,
  planId: w.planId,
  planName,
  group: w.group,
  validFrom: w.validFrom.toISOString(),
  validTo: w.validTo ? w.validTo.toISOString() : null,
  status: w.status,
  source: w.source,
  codeId: w.codeId,
  trial: w.trial,
});

const toEventView = (row: EventRow): EventView => ({
  id: row.id,
  type: row.type,
  createdAt: row.created_at.toISOString(),
  projectId: row.project_id,
  data: row.data,
});

/** An event's place in the newest-first order: the sort key of the events' cursor. */
interface EventKey {
  createdAt: string;
  id: string;
}

const eventKey = ([createdAt, id]: unknown[]): EventKey | undefined =>
  typeof createdAt === 'string' && !Number.isNaN(Date.parse(createdAt)) && typeof id === 'string'
    ? { createdAt, id }
    : undefined;

/**
 * The events of a project: recorded by the services that change things, in their own
 * transaction (`record`), read back through the pull API, and delivered again on demand.
 */
@Injectable()
export class EventsService {
  constructor(
    private readonly events: EventsRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * Records `events` inside the caller's unit of work (the outbox): they and their deliveries
   * exist if and only if its transaction commits. Events of one customer get consecutive
   * `customerSeq` numbers in the order given. One statement per customer named.
   */
  async record(projectId: string, events: NewEvent[]): Promise<void> {
    const groups = new Map<number | null, NewEvent[]>();
    for (const event of events) {
      const key = event.customer?.id ?? null;
      groups.set(key, [...(groups.get(key) ?? []), event]);
    }
    for (const [customerId, group] of groups)
      await this.events.insert(
        projectId,
        customerId,
        group.map((e) => ({
          id: newEventId(),
          type: e.type,
          data: e.data as unknown as Record<string, unknown>,
          uniqueKey: 'uniqueKey' in e ? e.uniqueKey : undefined,
        })),
      );
  }

  /**
   * The cursor of a time-boundary scheduler that finds its boundaries in another module's tables
   * (the events module reads no other module's tables) and records them here: locked for the rest
   * of the caller's transaction, so that one replica scans at a time; undefined when another
   * replica holds it.
   */
  lockScheduleCursor(kind: ScheduleCursorKind): Promise<Date | undefined> {
    return this.events.lockCursor(kind);
  }

  /** Moves the scheduler's cursor forward to `to` (never back), in the caller's transaction. */
  advanceScheduleCursor(kind: ScheduleCursorKind, to: Date): Promise<void> {
    return this.events.advanceCursor(kind, to);
  }

  /**
   * Which of `uniqueKeys` an event already holds: a scheduler skips those boundaries instead of
   * recording them again (a dropped duplicate would still take a `customerSeq` number).
   */
  async recordedKeys(uniqueKeys: string[]): Promise<Set<string>> {
    return new Set(await this.events.existingUniqueKeys(uniqueKeys));
  }

  async list(projectId: string, query: ListEventsQueryDto): Promise<EventPageView> {
    const rows = await this.events.list(
      projectId,
      { type: query.type, customerId: query.customerId },
      cursorWindow(query.limit, query.cursor, eventKey),
    );
    return toCursorPage(rows, query.limit, toEventView, (row) => [row.created_at.toISOString(), row.id]);
  }

  async get(projectId: string, eventId: string): Promise<EventView> {
    const row = await this.events.get(projectId, eventId);
    if (!row) throw new DomainError('EVENT_NOT_FOUND');
    return toEventView(row);
  }

  async deliveries(projectId: string, eventId: string): Promise<DeliveryView[]> {
    await this.get(projectId, eventId);
    const rows = await this.events.deliveriesOf(projectId, eventId);
    return rows.map((d) => ({
      id: d.id,
      endpointId: d.endpoint_id,
      status: d.status,
      nextAttemptAt: d.status === 'pending' ? d.next_attempt_at.toISOString() : null,
      createdAt: d.created_at.toISOString(),
      attempts: d.attempts,
    }));
  }

  /**
   * Delivers an event again: to every endpoint enabled now whose filter takes its type, or to
   * the one named (whatever its filter); a disabled one named is WEBHOOK_ENDPOINT_DISABLED.
   */
  redeliver(
    projectId: string,
    eventId: string,
    dto: RedeliverDto,
    idem?: IdempotencyContext,
  ): Promise<{ deliveries: number }> {
    return runInTransaction(
      this.transactions,
      async () => {
        const event = await this.events.get(projectId, eventId);
        if (!event) throw new DomainError('EVENT_NOT_FOUND');
        let targets: string[];
        if (dto.endpointId !== undefined) {
          const endpoint = await this.endpoints.get(projectId, dto.endpointId);
          if (!endpoint) throw new DomainError('WEBHOOK_ENDPOINT_NOT_FOUND');
          if (!endpoint.enabled) throw new DomainError('WEBHOOK_ENDPOINT_DISABLED');
          targets = [endpoint.id];
        } else {
          targets = await this.endpoints.enabledFor(projectId, event.type);
        }
        // recorded whatever it delivers: the redelivery itself is the act audited
        this.audit.record({
          projectId,
          action: 'event.redelivered',
          resourceType: 'event',
          resourceId: event.id,
          changes: null,
        });
        return { deliveries: await this.events.addDeliveries(projectId, eventId, targets) };
      },
      { participant: idem },
    );
  }
}
