import { ValidateBy, ValidationArguments, ValidationOptions } from 'class-validator';
import { DomainError } from '../common/errors/domain-error';
import type { ErrorDetail } from '../common/errors/error-codes';
import {
  CALENDAR_INTERVALS,
  DAY_OF_MONTH_INTERVALS,
  isCalendarInterval,
  RESET_ANCHORS,
  ResetAnchor,
} from '../common/time/calendar-units';

export { RESET_ANCHORS, type ResetAnchor };

/** The reset fields of a quota as a plan write sends them (absent fields left out). */
export interface QuotaResetInput {
  resetInterval?: string | null;
  resetAnchor?: ResetAnchor;
  resetDayOfMonth?: number | null;
  resetTimeZone?: string | null;
}

/**
 * 400 INVALID_RESET_ANCHOR, naming each field, when a quota's reset fields do not go together.
 * Runs after the body's validation and before anything is read, so a plan write is refused in
 * that order whatever else is wrong with it.
 */
export function assertResetFields(quotas: readonly QuotaResetInput[] | undefined): void {
  const details: ErrorDetail[] = [];
  (quotas ?? []).forEach((q, i) => {
    const anchor = q.resetAnchor ?? 'run';
    const interval = q.resetInterval ?? null;
    if (anchor === 'calendar' && !isCalendarInterval(interval)) {
      details.push({
        field: `quotas.${i}.resetInterval`,
        message: `a calendar quota's resetInterval must be one of ${CALENDAR_INTERVALS.join(', ')}`,
      });
    }
    if (q.resetDayOfMonth != null) {
      if (anchor === 'run') {
        details.push({
          field: `quotas.${i}.resetDayOfMonth`,
          message: 'resetDayOfMonth is only taken with resetAnchor calendar',
        });
      } else if (interval === null || !DAY_OF_MONTH_INTERVALS.includes(interval)) {
        details.push({
          field: `quotas.${i}.resetDayOfMonth`,
          message: `resetDayOfMonth is only taken with resetInterval ${DAY_OF_MONTH_INTERVALS.join(', ')}`,
        });
      }
    }
    if (q.resetTimeZone != null && anchor === 'run') {
      details.push({
        field: `quotas.${i}.resetTimeZone`,
        message: 'resetTimeZone is only taken with resetAnchor calendar',
      });
    }
  });
  if (details.length > 0) throw new DomainError('INVALID_RESET_ANCHOR', undefined, details);
}

/** A quota's `thresholds` are percents of its limit: a non-empty list needs one (`limit` not null). */
export function ThresholdsNeedLimit(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'thresholdsNeedLimit',
      validator: {
        validate: (value: unknown, args?: ValidationArguments) =>
          !(Array.isArray(value) && value.length > 0 && (args?.object as { limit?: unknown }).limit === null),
        defaultMessage: () => 'thresholds must be empty when limit is null (unlimited)',
      },
    },
    options,
  );
}
