/**
 * The reset rules a quota may have, shared by the plans module (which checks a plan's quotas) and
 * the entitlement rules (which lay out the periods): how periods are laid out, and the intervals
 * that are one calendar unit.
 */

/** How a quota's periods are laid out (docs/entitlements.md#calendar-periods). */
export const RESET_ANCHORS = ['run', 'calendar'] as const;
export type ResetAnchor = (typeof RESET_ANCHORS)[number];

/** The intervals a calendar quota may have, each one calendar unit. */
export const CALENDAR_INTERVALS = ['PT1M', 'PT1H', 'P1D', 'P1W', 'P1M', 'P3M', 'P6M', 'P1Y'] as const;
export type CalendarInterval = (typeof CALENDAR_INTERVALS)[number];

/** The calendar intervals whose periods may start on a chosen day of the month. */
export const DAY_OF_MONTH_INTERVALS: readonly string[] = ['P1M', 'P3M', 'P6M'];

export const isCalendarInterval = (interval: string | null | undefined): interval is CalendarInterval =>
  interval != null && (CALENDAR_INTERVALS as readonly string[]).includes(interval);
