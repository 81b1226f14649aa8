import { Injectable, OnModuleInit } from '@nestjs/common';
import { AuditTrail } from '../audit/audit-trail';
import { createdChanges, deletedChanges, updatedChanges } from '../audit/changes';
import { Clock } from '../common/clock';
import { DomainError } from '../common/errors/domain-error';
import { Page, pageWindow, toPage } from '../common/http/pagination';
import { CustomersService } from '../customers/customers.service';
import { runInTransaction, Transactions } from '../database/transactional';
import type { EventCustomer } from '../events/event-types';
import { EventsService } from '../events/events.service';
import type { IdempotencyContext } from '../idempotency/idempotency-context';
import { FeatureReferences } from '../plans/feature-references';
import { FeaturesService } from '../plans/features.service';
import { EntitlementView } from './dto/entitlement.dto';
import {
  CreateGrantDto,
  GrantListQueryDto,
  GrantResultView,
  GrantView,
  OverrideResultView,
  SetOverrideDto,
  VoidGrantDto,
} from './dto/grant.dto';
import { OverrideView } from './dto/entitlement.dto';
import { microsText, overrideInEffect, toMicros } from './engine/entitlement-engine';
import { EntitlementsService, featureOf } from './entitlements.service';
import { grantRowOf, overrideRemovedKey, overrideRowOf, toGrantView, toOverrideView } from './grant-views';
import { GrantsRepository, NewOverride } from './grants.repository';
import { DryRunRollback } from '../database/dry-run';

/**
 * Grants (an amount of a metered feature outside the plans) and per-customer overrides (`set` or
 * `deny`): their private interface (docs/entitlements.md). Each write is one unit of work that
 * locks the customer first, the lock consumes and reversals take too, then names the feature;
 * its event is recorded in it. A dry run does the same work, reads the entitlements after it in
 * the same transaction and rolls it back.
 */
@Injectable()
export class GrantsService implements OnModuleInit {
  constructor(
    private readonly repository: GrantsRepository,
    private readonly customers: CustomersService,
    private readonly features: FeaturesService,
    private readonly references: FeatureReferences,
    private readonly entitlements: EntitlementsService,
    private readonly events: EventsService,
    private readonly clock: Clock,
    private readonly transactions: Transactions,
    private readonly audit: AuditTrail,
  ) {}

  onModuleInit(): void {
    // a feature that overrides or grants not ended name is not deleted (FEATURE_IN_USE)
    this.references.register((projectId, featureId) =>
      this.repository.featureInUse(projectId, featureId, this.clock.now()),
    );
  }

  /** `POST /customers/:customerId/grants`. */
  createGrant(
    projectId: string,
    customerId: number,
    dto: CreateGrantDto,
    dryRun: boolean,
    idem?: IdempotencyContext,
  ): Promise<GrantResultView> {
    // body validation first: the times against now
    const effectiveAt = dto.effectiveAt !== undefined ? new Date(dto.effectiveAt) : null;
    const expiresAt = dto.expiresAt != null ? new Date(dto.expiresAt) : null;
    assertExpiryAfter(expiresAt, this.clock.now(), effectiveAt);
    return this.write(dryRun, idem, async () => {
      const customer = await this.customers.lock(projectId, customerId);
      const feature = await this.features.reference(projectId, featureOf(dto));
      if (!feature.metered)
        throw new DomainError('FEATURE_NOT_METERED', 'A grant gives an amount of a metered feature only.');
      // the time is read once the customer is locked
      const now = this.clock.now();
      const grant = await this.repository.insertGrant({
        projectId,
        customerId: customer.id,
        featureId: feature.id,
        amount: microsText(toMicros(dto.amount)),
        priority: dto.priority ?? 0,
        effectiveAt: effectiveAt ?? now,
        expiresAt,
        reason: dto.reason ?? null,
        metadata: dto.metadata ?? {},
        createdAt: now,
      });
      const view = toGrantView(grantRowOf(grant), now);
      if (dryRun)
        await this.rollBack(projectId, customer.id, now, (after) => ({
          grant: { ...view, id: null },
          entitlementsAfter: withoutGrantId(after, grant.id),
        }));
      this.audit.created(projectId, 'grant', grant.id, view);
      const ref = eventCustomer(customer);
      await this.events.record(projectId, [
        { type: 'grant.created', customer: ref, data: { customer: ref, grant: { ...view } } },
      ]);
      return { grant: view };
    });
  }

  /** `GET /customers/:customerId/grants`: newest first, filtered by feature and status now. */
  async listGrants(
    projectId: string,
    customerId: number,
    query: GrantListQueryDto,
  ): Promise<Page<GrantView>> {
    await this.customers.get(projectId, customerId); // CUSTOMER_NOT_FOUND
    const now = this.clock.now();
    const [rows, total] = await this.repository.pageGrants(
      projectId,
      customerId,
      { featureId: query.featureId, status: query.status },
      now,
      pageWindow(query),
    );
    return toPage(
      rows.map((g) => toGrantView(grantRowOf(g), now)),
      total,
      query,
    );
  }

  /** `GET /grants/:grantId`. */
  async getGrant(projectId: string, grantId: number): Promise<GrantView> {
    const grant = await this.repository.findGrant(projectId, grantId);
    if (!grant) throw new DomainError('GRANT_NOT_FOUND');
    return toGrantView(grantRowOf(grant), this.clock.now());
  }

  /**
   * `POST /grants/:grantId/void`: ends the grant now, forfeiting what remains. A voided grant
   * answers unchanged (and records nothing); an expired one is GRANT_EXPIRED; a scheduled one
   * can be voided.
   */
  voidGrant(
    projectId: string,
    grantId: number,
    dto: VoidGrantDto,
    idem?: IdempotencyContext,
  ): Promise<GrantResultView> {
    return runInTransaction(
      this.transactions,
      async () => {
        const found = await this.repository.findGrant(projectId, grantId);
        if (!found) throw new DomainError('GRANT_NOT_FOUND');
        // the customer's lock serialises the void with consumes: none takes from it after `voidedAt`
        // (a customer deleted meanwhile took its grants with it)
        const customer = await this.customers.lock(projectId, found.customerId).catch((error: unknown) => {
          throw error instanceof DomainError && error.code === 'CUSTOMER_NOT_FOUND'
            ? new DomainError('GRANT_NOT_FOUND')
            : error;
        });
        const grant = await this.repository.findGrant(projectId, grantId, true);
        if (!grant) throw new DomainError('GRANT_NOT_FOUND');
        const now = this.clock.now();
        if (grant.voidedAt) return { grant: toGrantView(grantRowOf(grant), now) };
        if (grant.expiresAt && grant.expiresAt.getTime() <= now.getTime())
          throw new DomainError('GRANT_EXPIRED');
        const before = toGrantView(grantRowOf(grant), now);
        const voided = await this.repository.voidGrant(projectId, grantId, now, dto.reason ?? null);
        const view = toGrantView(grantRowOf(voided), now);
        this.audit.updated(projectId, 'grant', grantId, before, view, { action: 'grant.voided' });
        const ref = eventCustomer(customer);
        await this.events.record(projectId, [
          { type: 'grant.voided', customer: ref, data: { customer: ref, grant: { ...view } } },
        ]);
        return { grant: view };
      },
      { participant: idem },
    );
  }

  /**
   * `PUT /customers/:customerId/overrides/:featureId`: the customer's one override of the
   * feature, replacing any. A `set` on a metered feature copies its period's anchor, and its reset
   * interval and priority unless named, from the feature's plan bucket first in the order of
   * consumption now (none: now, null and 0).
   */
  setOverride(
    projectId: string,
    customerId: number,
    featureId: number,
    dto: SetOverrideDto,
    dryRun: boolean,
    idem?: IdempotencyContext,
  ): Promise<OverrideResultView> {
    const expiresAt = dto.expiresAt != null ? new Date(dto.expiresAt) : null;
    assertExpiryAfter(expiresAt, this.clock.now(), null);
    return this.write(dryRun, idem, async () => {
      const customer = await this.customers.lock(projectId, customerId);
      const feature = await this.features.reference(projectId, { id: featureId });
      assertFitsKind(dto, feature.metered);
      const now = this.clock.now();
      const replaced = await this.repository.findOverride(projectId, customerId, featureId);
      const row: NewOverride = {
        projectId,
        customerId,
        featureId,
        mode: dto.mode,
        limit: null,
        priority: null,
        resetInterval: null,
        resetAnchor: null,
        resetDayOfMonth: null,
        resetTimeZone: null,
        anchor: null,
        expiresAt,
        reason: dto.reason ?? null,
        createdAt: now,
      };
      if (dto.mode === 'set' && feature.metered) {
        const first = await this.entitlements.firstPlanBucket(projectId, customerId, featureId, now);
        row.limit = dto.limit === null || dto.limit === undefined ? null : microsText(toMicros(dto.limit));
        row.anchor = first?.anchor ?? now;
        // the reset rule travels whole: an interval the PUT names is laid out from the anchor (`run`)
        const copied = dto.resetInterval === undefined ? (first?.quota ?? null) : null;
        row.resetInterval = copied ? copied.resetInterval : (dto.resetInterval ?? null);
        row.resetAnchor = copied?.resetAnchor ?? 'run';
        row.resetDayOfMonth = copied?.resetDayOfMonth ?? null;
        row.resetTimeZone = copied?.resetTimeZone ?? null;
        row.priority = dto.priority ?? first?.priority ?? 0;
      }
      const view = toOverrideView(overrideRowOf(await this.repository.upsertOverride(row)));
      if (dryRun)
        await this.rollBack(projectId, customerId, now, (after) => ({
          override: view,
          entitlementsAfter: after,
        }));
      // told against the override in effect it replaces; one expired meanwhile is gone already
      const previous =
        replaced && overrideInEffect(replaced, now) ? toOverrideView(overrideRowOf(replaced)) : null;
      this.audit.record({
        projectId,
        action: 'override.set',
        resourceType: 'override',
        resourceId: overrideResourceId(customerId, featureId),
        changes: previous ? updatedChanges('override', previous, view) : createdChanges('override', view),
      });
      const ref = eventCustomer(customer);
      // an override that expired since the scheduler's last scan is announced here, before the
      // one replacing it, under the key the scheduler would have used
      const expired =
        replaced &&
        !overrideInEffect(replaced, now) &&
        !(await this.events.recordedKeys([overrideRemovedKey(replaced)])).size
          ? replaced
          : null;
      await this.events.record(projectId, [
        ...(expired
          ? [
              {
                type: 'override.removed' as const,
                customer: ref,
                data: {
                  customer: ref,
                  override: { ...toOverrideView(overrideRowOf(expired)) },
                  reason: 'expired' as const,
                },
                uniqueKey: overrideRemovedKey(expired),
              },
            ]
          : []),
        {
          type: 'override.set',
          customer: ref,
          data: {
            customer: ref,
            override: { ...view },
            previous: previous ? { ...previous } : null,
          },
        },
      ]);
      return { override: view };
    });
  }

  /** `GET /customers/:customerId/overrides`: those in effect, in feature id order. */
  async listOverrides(projectId: string, customerId: number): Promise<OverrideView[]> {
    await this.customers.get(projectId, customerId); // CUSTOMER_NOT_FOUND
    const rows = await this.repository.overridesInEffect(projectId, customerId, this.clock.now());
    return rows.map((o) => toOverrideView(overrideRowOf(o)));
  }

  /** `GET /customers/:customerId/overrides/:featureId`: the override in effect. */
  async getOverride(projectId: string, customerId: number, featureId: number): Promise<OverrideView> {
    await this.customers.get(projectId, customerId); // CUSTOMER_NOT_FOUND
    await this.features.get(projectId, featureId); // FEATURE_NOT_FOUND
    const row = await this.repository.findOverride(projectId, customerId, featureId);
    if (!row || !overrideInEffect(row, this.clock.now())) throw new DomainError('OVERRIDE_NOT_FOUND');
    return toOverrideView(overrideRowOf(row));
  }

  /**
   * `DELETE /customers/:customerId/overrides/:featureId`: removes the override in effect and
   * answers it as it was; the plans' answer applies again at once. An expired one is left for the
   * boundary scheduler to announce.
   */
  removeOverride(
    projectId: string,
    customerId: number,
    featureId: number,
    dryRun: boolean,
    idem?: IdempotencyContext,
  ): Promise<OverrideResultView> {
    return this.write(dryRun, idem, async () => {
      const customer = await this.customers.lock(projectId, customerId);
      await this.features.reference(projectId, { id: featureId });
      const now = this.clock.now();
      const row = await this.repository.findOverride(projectId, customerId, featureId);
      if (!row || !overrideInEffect(row, now)) throw new DomainError('OVERRIDE_NOT_FOUND');
      const view = toOverrideView(overrideRowOf(row));
      await this.repository.deleteOverride(projectId, customerId, featureId);
      if (dryRun)
        await this.rollBack(projectId, customerId, now, (after) => ({
          override: view,
          entitlementsAfter: after,
        }));
      this.audit.record({
        projectId,
        action: 'override.removed',
        resourceType: 'override',
        resourceId: overrideResourceId(customerId, featureId),
        changes: deletedChanges('override', view),
      });
      const ref = eventCustomer(customer);
      await this.events.record(projectId, [
        {
          type: 'override.removed',
          customer: ref,
          data: { customer: ref, override: { ...view }, reason: 'deleted' },
          // the key the boundary scheduler uses for the same row, so that its end is announced once
          uniqueKey: overrideRemovedKey(row),
        },
      ]);
      return { override: view };
    });
  }

  /**
   * Ends a dry run's unit of work: answers what the write would have been, with the customer's
   * entitlements right after it (`answer` shapes both), and rolls it back (`write` catches it).
   */
  private async rollBack(
    projectId: string,
    customerId: number,
    now: Date,
    answer: (entitlementsAfter: EntitlementView[]) => object,
  ): Promise<never> {
    const after = await this.entitlements.listIn(projectId, customerId, now);
    throw new DryRunRollback({ ...answer(after), dryRun: true });
  }

  /**
   * A write as one unit of work with the request's `Idempotency-Key`; a dry run rolls it back on
   * purpose and answers what it would have been (no event, no stored effect).
   */
  private async write<T>(
    dryRun: boolean,
    idem: IdempotencyContext | undefined,
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      return await runInTransaction(this.transactions, work, { participant: idem });
    } catch (error) {
      if (dryRun && error instanceof DryRunRollback) return error.result as T;
      throw error;
    }
  }
}

/** An override's id in the audit log: its customer and feature. */
const overrideResourceId = (customerId: number, featureId: number) => `${customerId}:${featureId}`;

const eventCustomer = (c: { id: number; username: string }): EventCustomer => ({
  id: c.id,
  username: c.username,
});

/** `expiresAt` later than now and than `effectiveAt` (body validation; the breach names `expiresAt`). */
function assertExpiryAfter(expiresAt: Date | null, now: Date, effectiveAt: Date | null): void {
  if (!expiresAt) return;
  if (expiresAt.getTime() <= now.getTime()) throw invalid('expiresAt', 'expiresAt must be later than now');
  if (effectiveAt && expiresAt.getTime() <= effectiveAt.getTime())
    throw invalid('expiresAt', 'expiresAt must be later than effectiveAt');
}

/**
 * The rules of the feature's kind, once it is found: on a boolean feature a `set` has no limit,
 * period or priority (refused even as null); on a metered one a `set` needs its `limit`.
 */
function assertFitsKind(dto: SetOverrideDto, metered: boolean): void {
  if (!metered) {
    for (const field of ['limit', 'resetInterval', 'priority'] as const)
      if (dto[field] !== undefined)
        throw invalid(field, `${field} is refused on a boolean feature (even as null)`);
    return;
  }
  if (dto.mode === 'set' && dto.limit === undefined)
    throw invalid('limit', 'limit is required for mode "set" on a metered feature (null: unlimited)');
}

function invalid(field: string, message: string): DomainError {
  return new DomainError('VALIDATION_FAILED', message, [{ field, message }]);
}

/** A dry-run grant does not exist: its bucket's `grantId` is null, like its own id. */
function withoutGrantId(entitlements: EntitlementView[], grantId: number): EntitlementView[] {
  return entitlements.map((e) => ({
    ...e,
    buckets: e.buckets.map((b) =>
      (b as { grantId?: number | null }).grantId === grantId ? { ...b, grantId: null } : b,
    ),
  }));
}
