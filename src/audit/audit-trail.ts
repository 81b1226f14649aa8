import { Injectable } from '@nestjs/common';
import { ClsService } from 'nestjs-cls';
import type { EntityManager } from 'typeorm';
import { Clock } from '../common/clock';
import { wellFormedJson } from '../common/json/well-formed';
import { timeOrderedBase32Lower } from '../common/crypto/random';
import { addRider } from '../database/riders';
import { Transactions } from '../database/transactional';
import type { Request } from 'express';
import { AUDIT_CONTEXT, AUDIT_REQUEST, AuditContext, auditContextOf, SYSTEM } from './audit-context';
import { INSERT_AUDIT_RECORDS } from './audit-sql';
import {
  AuditedResource,
  Changes,
  createdChanges,
  deletedChanges,
  Snapshot,
  updatedChanges,
} from './changes';

/** One audit record a write asks for. */
export interface AuditEntry {
  projectId: string;
  action: string;
  resourceType: AuditedResource;
  resourceId: string | number;
  changes: Changes | null;
}

/** Actions recorded even when they change no audited field. */
const ALWAYS = new Set(['customer.logged_in', 'customer.logged_out', 'event.redelivered']);

/** A unit of work's records not sent yet, and the one instant of its records. */
interface Pending {
  at: Date;
  rows: Record<string, unknown>[];
  sent: boolean;
}

/** `aud_` and 24 characters that sort in the order the records were made (see `timeOrderedBase32Lower`). */
export const newAuditEventId = () => `aud_${timeOrderedBase32Lower(24)}`;

/**
 * Appends audit records to the current unit of work: they are inserted in its transaction (with
 * its events' statement, or alone just before the commit), so a record exists exactly when its
 * change committed. A dry run, a refused or failed call rolls them back with everything else; an
 * idempotent replay never runs the write. Who and through which request come from the request's
 * async context (the request `auditRequests` keeps there, or a context the CLI sets), or are
 * given (a batch of several requests).
 */
@Injectable()
export class AuditTrail {
  private readonly pending = new WeakMap<EntityManager, Pending>();

  constructor(
    private readonly transactions: Transactions,
    private readonly cls: ClsService,
    private readonly clock: Clock,
  ) {}

  /** The current request's context (taken along by work done later on its behalf). */
  context(): AuditContext {
    if (!this.cls.isActive()) return SYSTEM;
    const given = this.cls.get<AuditContext | undefined>(AUDIT_CONTEXT);
    if (given) return given;
    const req = this.cls.get<Request | undefined>(AUDIT_REQUEST);
    return req ? auditContextOf(req) : SYSTEM;
  }

  /** Records an entry; one whose `changes` is empty is dropped (nothing audited changed). */
  record(entry: AuditEntry, context: AuditContext = this.context()): void {
    if (!ALWAYS.has(entry.action) && entry.changes !== null && Object.keys(entry.changes).length === 0)
      return;
    if (!this.transactions.isTransactionActive())
      throw new Error(`The audit record ${entry.action} needs the write's unit of work`);
    const tx = this.transactions.tx;
    let pending = this.pending.get(tx);
    if (!pending || pending.sent) {
      const next: Pending = { at: pending?.at ?? this.clock.now(), rows: [], sent: false };
      pending = next;
      this.pending.set(tx, next);
      addRider(tx, {
        name: 'audit',
        sql: INSERT_AUDIT_RECORDS,
        get value() {
          next.sent = true;
          return wellFormedJson(next.rows);
        },
      });
    }
    pending.rows.push({
      id: newAuditEventId(),
      project_id: entry.projectId,
      at: pending.at.toISOString(),
      actor_type: context.actor.type,
      actor_key_id: context.actor.keyId,
      actor_key_prefix: context.actor.keyPrefix,
      actor_customer_id: context.actor.customerId,
      action: entry.action,
      resource_type: entry.resourceType,
      resource_id: String(entry.resourceId),
      changes: entry.changes,
      request_id: context.requestId,
      idempotency_key: context.idempotencyKey,
      ip: context.ip,
    });
  }

  /** `action` (default `<type>.created`) with each audited field that has a value. */
  created(
    projectId: string,
    type: AuditedResource,
    id: string | number,
    after: Snapshot,
    { action = `${type}.created`, context }: { action?: string; context?: AuditContext } = {},
  ) {
    this.record(
      { projectId, action, resourceType: type, resourceId: id, changes: createdChanges(type, after) },
      context,
    );
  }

  /** `action` (default `<type>.updated`) with each audited field that changed; nothing when none did. */
  updated(
    projectId: string,
    type: AuditedResource,
    id: string | number,
    before: Snapshot,
    after: Snapshot,
    { action = `${type}.updated`, context }: { action?: string; context?: AuditContext } = {},
  ) {
    this.record(
      { projectId, action, resourceType: type, resourceId: id, changes: updatedChanges(type, before, after) },
      context,
    );
  }

  /** `<type>.deleted` with each audited field that had a value. */
  deleted(
    projectId: string,
    type: AuditedResource,
    id: string | number,
    before: Snapshot,
    context?: AuditContext,
  ) {
    this.record(
      {
        projectId,
        action: `${type}.deleted`,
        resourceType: type,
        resourceId: id,
        changes: deletedChanges(type, before),
      },
      context,
    );
  }
}
