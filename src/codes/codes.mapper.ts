import { formatCode } from './code-format';
import type { CodeBatchView, CodeStatus, CodeView } from './dto/code.dto';
import type { CodeBatch } from './entities/code-batch.entity';
import type { Code } from './entities/code.entity';
import { isoOrNull as iso } from '../common/time/iso';

/**
 * The status a caller sees (docs/api-guide.md#codes): an available code whose `expiresAt` has come is
 * `expired`; otherwise the stored status.
 */
export function effectiveStatus(
  code: Pick<Code, 'status' | 'expiresAt'> &
    Partial<Pick<Code, 'kind' | 'startsAt' | 'maxRedemptions' | 'redemptionCount'>>,
  now: Date = new Date(),
): CodeStatus {
  if (code.kind === 'campaign') {
    // the first that applies (docs/api-guide.md#campaign-codes)
    if (code.status === 'revoked') return 'revoked';
    if (hasExpired(code, now)) return 'expired';
    if (code.maxRedemptions != null && code.redemptionCount! >= code.maxRedemptions) return 'exhausted';
    if (code.startsAt && code.startsAt.getTime() > now.getTime()) return 'scheduled';
    return 'available';
  }
  return code.status === 'available' && hasExpired(code, now) ? 'expired' : code.status;
}

/** A campaign code's remaining redemptions: null without a cap. */
export const remainingRedemptions = (code: Pick<Code, 'maxRedemptions' | 'redemptionCount'>) =>
  code.maxRedemptions === null ? null : Math.max(0, code.maxRedemptions - code.redemptionCount);

/** Whether the code's `expiresAt` has come (whatever its status). */
export const hasExpired = (code: Pick<Code, 'expiresAt'>, now: Date): boolean =>
  code.expiresAt !== null && code.expiresAt.getTime() <= now.getTime();

/** A code as the private interface shows it; `planName` comes from the code's plan. */
export const toCodeView = (code: Code, planName: string, now: Date = new Date()): CodeView =>
  code.kind === 'campaign' ? toCampaignCodeView(code, planName, now) : toBatchCodeView(code, planName, now);

/** A campaign code as the private interface shows it (docs/api-guide.md#campaign-codes). */
const toCampaignCodeView = (code: Code, planName: string, now: Date): CodeView => ({
  id: code.id,
  kind: 'campaign',
  code: code.displayCode!,
  planId: code.planId,
  planName,
  duration: code.duration,
  permanent: code.duration === null,
  trial: code.trial,
  status: effectiveStatus(code, now),
  batchId: null,
  note: code.note,
  startsAt: iso(code.startsAt),
  expiresAt: iso(code.expiresAt),
  maxRedemptions: code.maxRedemptions,
  perCustomerLimit: code.perCustomerLimit,
  eligibility: {
    newCustomersOnly: code.newCustomersOnly,
    notIfHeldPlanGroups: code.notIfHeldPlanGroups ?? [],
  },
  redemptionCount: code.redemptionCount,
  remainingRedemptions: remainingRedemptions(code),
  redeemedAt: null,
  redeemedByCustomerId: null,
  createdAt: code.createdAt.toISOString(),
  updatedAt: code.updatedAt.toISOString(),
});

const toBatchCodeView = (code: Code, planName: string, now: Date): CodeView => ({
  id: code.id,
  kind: 'batch',
  code: formatCode(code.code!),
  planId: code.planId,
  planName,
  duration: code.duration,
  permanent: code.duration === null,
  status: effectiveStatus(code, now),
  batchId: code.batchId,
  // stored once, on the batch (migration CodeBatchNotes); `code.note` only for rows not yet migrated
  note: code.batch ? code.batch.note : code.note,
  expiresAt: iso(code.expiresAt),
  redeemedAt: iso(code.redeemedAt),
  redeemedByCustomerId: code.redeemedByCustomerId,
  createdAt: code.createdAt.toISOString(),
  updatedAt: code.updatedAt.toISOString(),
});

/** A new batch with every code in plaintext (shown in the create answer). */
export const toCodeBatchView = (batch: CodeBatch, planName: string, codes: string[]): CodeBatchView => ({
  batchId: batch.id,
  planId: batch.planId,
  planName,
  duration: batch.duration,
  permanent: batch.duration === null,
  count: batch.count,
  expiresAt: iso(batch.expiresAt),
  note: batch.note,
  createdAt: batch.createdAt.toISOString(),
  codes: codes.map(formatCode),
});

export const CSV_HEADER = [
  'code',
  'status',
  'plan_id',
  'plan_name',
  'duration',
  'expires_at',
  'redeemed_at',
  'redeemed_by_customer_id',
];

/**
 * One CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. A text that a
 * spreadsheet would read as a formula (it starts with `=`, `+`, `-`, `@`, a tab or a carriage
 * return: a plan named `=HYPERLINK(...)`) gets a leading `'` (OWASP, CSV injection), so that it
 * shows as the text it is; numbers are written as they are.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV row of the export, in the order of `CSV_HEADER`. */
export const toCsvRow = (code: Code, planName: string, now: Date): string =>
  [
    formatCode(code.code!),
    effectiveStatus(code, now),
    code.planId,
    planName,
    code.duration,
    iso(code.expiresAt),
    iso(code.redeemedAt),
    code.redeemedByCustomerId,
  ]
    .map(csvField)
    .join(',');
