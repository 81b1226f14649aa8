/** The retry rules of webhook delivery (docs/events.md#delivery): a schedule with ±10 % jitter, `Retry-After`, at most 24 h. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
export const MAX_RETRY_WAIT_MS = 24 * 3_600_000;

/** `5s,5m,30m,2h` → milliseconds; null when it is not such a list. */
export function parseSchedule(text: string): number[] | null {
  const parts = text.split(',').map((p) => p.trim());
  const out: number[] = [];
  for (const part of parts) {
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(part);
    if (!m) return null;
    out.push(Number(m[1]) * UNIT_MS[m[2]]);
  }
  return out.length > 0 ? out : null;
}

/** `Retry-After` (delay in seconds or an HTTP date) in milliseconds from `now`; undefined if absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}

/**
 * The wait before the next attempt after `failedAttempts` failures, or null when the schedule is
 * used up (the delivery has failed). `random` is in [0, 1).
 */
export function nextRetryDelay(
  schedule: readonly number[],
  failedAttempts: number,
  retryAfterMs: number | undefined,
  random: number = Math.random(),
): number | null {
  if (failedAttempts < 1 || failedAttempts > schedule.length) return null;
  const base = schedule[failedAttempts - 1];
  const jittered = base * (0.9 + 0.2 * random);
  return Math.min(MAX_RETRY_WAIT_MS, Math.max(jittered, retryAfterMs ?? 0));
}
