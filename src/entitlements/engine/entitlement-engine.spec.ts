import fc from 'fast-check';
import {
  Allocation,
  accessEndsAt,
  allocate,
  balanceOf,
  boundary,
  Bucket,
  featureBucketsAt,
  BucketUsage,
  bucketsAt,
  EngineOverride,
  EngineQuota,
  EngineWindow,
  fromMicros,
  heldIn,
  holdLiveAt,
  MICROS,
  microsText,
  periodAt,
  remainingOf,
  resetsAt,
  runAnchor,
  toMicros,
} from './entitlement-engine';

const d = (iso: string) => new Date(iso);
const iso = (x: Date | null) => (x ? x.toISOString() : null);
let nextId = 1;
function win(
  group: string,
  from: string,
  to: string | null,
  quota: Partial<EngineQuota> | null = {},
  planId = nextId,
): EngineWindow {
  const id = nextId++;
  return {
    id,
    planId,
    planSlug: `plan-${planId}`,
    group,
    validFrom: d(from),
    validTo: to === null ? null : d(to),
    quota:
      quota === null
        ? null
        : ({
            ...RUN_QUOTA,
            id,
            limit: 10n * MICROS,
            priority: 0,
            resetInterval: null,
            ...quota,
          } satisfies EngineQuota),
  };
}
/** The period fields of a quota reset on its run, in UTC. */
const RUN_QUOTA: Pick<EngineQuota, 'resetAnchor' | 'resetDayOfMonth' | 'resetTimeZone' | 'thresholds'> = {
  resetAnchor: 'run',
  resetDayOfMonth: null,
  resetTimeZone: null,
  thresholds: [],
};
const withUsed = (buckets: Bucket[], used: bigint[] = []): BucketUsage[] =>
  buckets.map((b, i) => ({ ...b, used: used[i] ?? 0n }));

describe('periods', () => {
  it('P1M from an anchor on Jan 31: Feb 28, Mar 31, Apr 30 (each from the anchor, never from the previous end)', () => {
    const anchor = d('2025-01-31T00:00:00.000Z');
    expect([1, 2, 3].map((k) => iso(boundary(anchor, 'P1M', k)))).toEqual([
      '2025-02-28T00:00:00.000Z',
      '2025-03-31T00:00:00.000Z',
      '2025-04-30T00:00:00.000Z',
    ]);
    expect(iso(boundary(d('2024-01-31T00:00:00.000Z'), 'P1M', 1))).toBe('2024-02-29T00:00:00.000Z');
  });

  it('half-open: the instant of a boundary belongs to the next period', () => {
    const anchor = d('2025-01-31T00:00:00.000Z');
    expect(periodAt(anchor, 'P1M', d('2025-02-27T23:59:59.999Z'))).toEqual({
      start: d('2025-01-31T00:00:00.000Z'),
      end: d('2025-02-28T00:00:00.000Z'),
    });
    expect(periodAt(anchor, 'P1M', d('2025-02-28T00:00:00.000Z'))).toEqual({
      start: d('2025-02-28T00:00:00.000Z'),
      end: d('2025-03-31T00:00:00.000Z'),
    });
    expect(periodAt(anchor, 'P1M', anchor).start).toEqual(anchor);
  });

  it('PT1H grid from 10:15 and a P1Y from Feb 29 (Feb 28 in 2025, Feb 29 again in 2028)', () => {
    expect(periodAt(d('2025-06-01T10:15:00.000Z'), 'PT1H', d('2025-06-03T12:15:00.000Z'))).toEqual({
      start: d('2025-06-03T12:15:00.000Z'),
      end: d('2025-06-03T13:15:00.000Z'),
    });
    const leap = d('2024-02-29T00:00:00.000Z');
    expect(iso(boundary(leap, 'P1Y', 1))).toBe('2025-02-28T00:00:00.000Z');
    expect(iso(boundary(leap, 'P1Y', 4))).toBe('2028-02-29T00:00:00.000Z');
  });

  it('several units add the larger first: P1M1D from Jan 31 is Mar 1 (Feb 28 + 1 day)', () => {
    expect(iso(boundary(d('2025-01-31T00:00:00.000Z'), 'P1M1D', 1))).toBe('2025-03-01T00:00:00.000Z');
  });

  it('resetInterval null: one period for the whole run', () => {
    expect(periodAt(d('2025-01-01T00:00:00.000Z'), null, d('2030-01-01T00:00:00.000Z'))).toEqual({
      start: d('2025-01-01T00:00:00.000Z'),
      end: null,
    });
  });
});

describe('runs', () => {
  it('abutting windows keep the anchor (renewal, upgrade); a gap starts a new run; other groups do not count', () => {
    const a = win('tier', '2025-01-01T00:00:00.000Z', '2025-01-10T00:00:00.000Z');
    const b = win('tier', '2025-01-10T00:00:00.000Z', '2025-02-01T00:00:00.000Z');
    const c = win('tier', '2025-02-05T00:00:00.000Z', null);
    const other = win('addon', '2024-12-01T00:00:00.000Z', '2025-02-05T00:00:00.000Z');
    const all = [a, b, c, other];
    expect(runAnchor(all, b)).toEqual(a.validFrom);
    expect(runAnchor(all, c)).toEqual(c.validFrom);
    expect(runAnchor(all, other)).toEqual(other.validFrom);
  });
});

describe('buckets, order and allocation', () => {
  it('one bucket per group from the window in effect; a window not yet started grants nothing', () => {
    const ws = [
      win('tier', '2025-01-01T00:00:00.000Z', null, { resetInterval: 'P1M' }),
      win('addon', '2025-03-01T00:00:00.000Z', null),
      win('flag', '2025-01-01T00:00:00.000Z', null, null),
    ];
    const buckets = bucketsAt(ws, d('2025-02-15T00:00:00.000Z'));
    expect(buckets.map((b) => [b.group, iso(b.periodStart), iso(b.periodEnd)])).toEqual([
      ['tier', '2025-02-01T00:00:00.000Z', '2025-03-01T00:00:00.000Z'],
    ]);
    expect(iso(resetsAt(buckets))).toBe('2025-03-01T00:00:00.000Z');
  });

  it('order: priority, then the period ending first, then the window ending first, then the lower plan id', () => {
    const t = '2025-01-01T00:00:00.000Z';
    const ws = [
      win('g1', t, null, { priority: 0, resetInterval: null }, 1),
      win('g2', t, null, { priority: 0, resetInterval: 'P1D' }, 2),
      win('g3', t, null, { priority: 1, resetInterval: null }, 3),
      win('g4', t, '2025-02-01T00:00:00.000Z', { priority: 0, resetInterval: null }, 4),
      win('g5', t, null, { priority: 0, resetInterval: null }, 0),
    ];
    expect(bucketsAt(ws, d('2025-01-05T00:00:00.000Z')).map((b) => b.group)).toEqual([
      'g3',
      'g2',
      'g4',
      'g5',
      'g1',
    ]);
  });

  it('allocation across buckets, refusal, overage, unlimited', () => {
    const t = '2025-01-01T00:00:00.000Z';
    const ws = [
      win('a', t, null, { limit: 3n * MICROS, priority: 1 }),
      win('b', t, null, { limit: 5n * MICROS }),
    ];
    const buckets = withUsed(bucketsAt(ws, d(t)), [1n * MICROS, 0n]);
    expect(balanceOf(buckets)).toEqual({
      limit: 8n * MICROS,
      used: 1n * MICROS,
      held: 0n,
      remaining: 7n * MICROS,
    });
    const taken = allocate(buckets, 4n * MICROS, false);
    expect(taken).toEqual({
      ok: true,
      overage: 0n,
      allocations: [
        { source: 'plan', group: 'a', periodStart: d(t), grantId: null, amount: 2n * MICROS },
        { source: 'plan', group: 'b', periodStart: d(t), grantId: null, amount: 2n * MICROS },
      ],
    });
    expect(allocate(buckets, 8n * MICROS, false)).toEqual({ ok: false, remaining: 7n * MICROS });
    expect(allocate(buckets, 8n * MICROS, true)).toMatchObject({ ok: true, overage: 1n * MICROS });
    const unlimited = withUsed(bucketsAt([win('u', t, null, { limit: null })], d(t)));
    expect(balanceOf(unlimited).remaining).toBeNull();
    expect(allocate(unlimited, 10n ** 15n, false)).toMatchObject({ ok: true, overage: 0n });
  });

  it('holds: what live holds hold counts in the period they were made, per bucket; remaining = limit - used - held', () => {
    const t = '2025-01-01T00:00:00.000Z';
    const w = win('a', t, null, { limit: 10n * MICROS, resetInterval: 'P1D' });
    const at = d('2025-01-01T12:00:00.000Z');
    const [bucket] = bucketsAt([w], at);
    const plan = (amount: bigint): Allocation => ({
      source: 'plan',
      group: 'a',
      periodStart: d(t),
      grantId: null,
      amount,
    });
    const holds = [
      {
        id: 1,
        createdAt: d('2025-01-01T11:00:00.000Z'),
        expiresAt: d('2025-01-01T13:00:00.000Z'),
        allocations: [plan(3n * MICROS)],
      },
      // expired: counts nowhere, with no job run
      { id: 2, createdAt: d('2025-01-01T10:00:00.000Z'), expiresAt: at, allocations: [plan(1n * MICROS)] },
      // another group's
      {
        id: 3,
        createdAt: d('2025-01-01T11:00:00.000Z'),
        expiresAt: d('2025-01-02T00:00:00.000Z'),
        allocations: [{ ...plan(2n * MICROS), group: 'b' }],
      },
    ];
    expect(holds.map((h) => holdLiveAt(h, at))).toEqual([true, false, true]);
    const held = heldIn(bucket, holds, at);
    expect(held).toBe(3n * MICROS);
    const usage: BucketUsage = { ...bucket, used: 2n * MICROS, held };
    expect(remainingOf(usage)).toBe(5n * MICROS);
    expect(balanceOf([usage])).toEqual({
      limit: 10n * MICROS,
      used: 2n * MICROS,
      held: 3n * MICROS,
      remaining: 5n * MICROS,
    });
    expect(allocate([usage], 6n * MICROS, false)).toEqual({ ok: false, remaining: 5n * MICROS });
    // the next period: made in the one before, it holds nothing there though still live
    const next = d('2025-01-02T00:30:00.000Z');
    const [later] = bucketsAt([w], next);
    expect(heldIn(later, [{ ...holds[0], expiresAt: d('2025-01-02T01:00:00.000Z') }], next)).toBe(0n);
  });

  it('accessEndsAt: the end of the coverage by granting windows from now, across groups; null when it reaches a permanent one', () => {
    const ws = [
      win('tier', '2025-01-01T00:00:00.000Z', '2025-02-01T00:00:00.000Z'),
      win('tier', '2025-02-01T00:00:00.000Z', '2025-03-01T00:00:00.000Z'),
      win('addon', '2025-02-15T00:00:00.000Z', '2025-04-01T00:00:00.000Z'),
      win('tier', '2025-05-01T00:00:00.000Z', null),
    ];
    expect(iso(accessEndsAt(ws, d('2025-01-10T00:00:00.000Z')))).toBe('2025-04-01T00:00:00.000Z');
    expect(accessEndsAt(ws, d('2025-04-10T00:00:00.000Z'))).toBeNull(); // nothing grants now
    expect(accessEndsAt(ws, d('2025-05-10T00:00:00.000Z'))).toBeNull(); // permanent
  });

  it('micro-units: exact decimal text both ways', () => {
    expect(toMicros(0.000001)).toBe(1n);
    expect(toMicros('100.0000')).toBe(100n * MICROS);
    expect(toMicros(1e-6)).toBe(1n);
    expect(() => toMicros(1e-7)).toThrow(RangeError);
    expect(microsText(1_500_000n)).toBe('1.500000');
    expect(fromMicros(1_500_000n)).toBe(1.5);
  });
});

describe('override bucket', () => {
  const override = (fields: Partial<EngineOverride>): EngineOverride => ({
    mode: 'set',
    limit: 7n * MICROS,
    priority: 0,
    resetInterval: 'P1D',
    resetAnchor: 'run',
    resetDayOfMonth: null,
    resetTimeZone: null,
    anchor: d('2026-03-01T00:00:00.000Z'),
    expiresAt: null,
    ...fields,
  });
  const bucketOf = (o: EngineOverride, t: string, zones?: Array<{ from: number | null; zone: string }>) => {
    const { buckets } = featureBucketsAt(
      { metered: true, windows: [], override: o, grants: [], zones },
      d(t),
    );
    expect(buckets).toHaveLength(1);
    const [b] = buckets;
    return {
      start: iso(b.periodStart),
      end: iso(b.periodEnd),
      resetAnchor: b.resetAnchor,
      timeZone: b.timeZone,
    };
  };

  it('calendar: periods of local days from its anchor, in its own zone, across a DST change', () => {
    const o = override({ resetAnchor: 'calendar', resetTimeZone: 'America/New_York' });
    // the first period runs from the anchor to the first local midnight after it
    expect(bucketOf(o, '2026-03-01T03:00:00.000Z')).toEqual({
      start: '2026-03-01T00:00:00.000Z',
      end: '2026-03-01T05:00:00.000Z',
      resetAnchor: 'calendar',
      timeZone: 'America/New_York',
    });
    // clocks go forward on March 8: that day is 23 hours long
    expect(bucketOf(o, '2026-03-08T12:00:00.000Z')).toMatchObject({
      start: '2026-03-08T05:00:00.000Z',
      end: '2026-03-09T04:00:00.000Z',
    });
  });

  it("calendar without its own zone: the customer's zone at the period's start; a P1M takes its day of the month", () => {
    const o = override({ resetAnchor: 'calendar', resetInterval: 'P1M', resetDayOfMonth: 15 });
    expect(bucketOf(o, '2026-04-20T00:00:00.000Z', [{ from: null, zone: 'Asia/Tokyo' }])).toEqual({
      start: '2026-04-14T15:00:00.000Z',
      end: '2026-05-14T15:00:00.000Z',
      resetAnchor: 'calendar',
      timeZone: 'Asia/Tokyo',
    });
    // no zone given: UTC
    expect(bucketOf(o, '2026-04-20T00:00:00.000Z')).toMatchObject({
      start: '2026-04-15T00:00:00.000Z',
      timeZone: 'UTC',
    });
  });

  it('run (and a row without a reset anchor): anchor + k x resetInterval in UTC', () => {
    const expected = {
      start: '2026-03-08T00:00:00.000Z',
      end: '2026-03-09T00:00:00.000Z',
      resetAnchor: 'run',
      timeZone: 'UTC',
    };
    const zones = [{ from: null, zone: 'Asia/Tokyo' }];
    expect(bucketOf(override({}), '2026-03-08T12:00:00.000Z', zones)).toEqual(expected);
    expect(bucketOf(override({ resetAnchor: null }), '2026-03-08T12:00:00.000Z', zones)).toEqual(expected);
  });
});

/**
 * Property: for random chains (two groups, runs with and without gaps, one reset interval per
 * group), quotas and sequences of consumes and reversals at increasing instants:
 * - an allocation never takes more than a bucket's remaining (so without overage a bucket that
 *   was within its limit stays within it), the parts add up to the amount, and a bucket later
 *   in the order only gets something when every earlier one is full;
 * - every current period's `used`, summed from the ledger by recording time as the database
 *   does, equals the running total of the allocations made to that period minus the reversed
 *   ones (so the period a record was made in is the period its allocation counts in, later too).
 */
describe('property: allocations within buckets, period sums equal the ledger', () => {
  const HOUR = 3_600_000;
  const T0 = Date.UTC(2025, 0, 31, 0, 0, 0);
  const intervalArb = fc.constantFrom('PT1H', 'P1D', 'P1W', 'P1M', null);
  const quotaArb = fc.option(
    fc.record({
      limit: fc.option(
        fc.integer({ min: 0, max: 20 }).map((n) => BigInt(n) * MICROS),
        { freq: 5 },
      ),
      priority: fc.integer({ min: 0, max: 2 }),
    }),
    { freq: 5 },
  );
  const groupArb = (group: string) =>
    fc.record({
      group: fc.constant(group),
      interval: intervalArb,
      windows: fc.array(
        fc.record({
          hours: fc.integer({ min: 1, max: 24 * 40 }),
          gap: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 72 })),
          quota: quotaArb,
        }),
        { minLength: 1, maxLength: 5 },
      ),
      permanentTail: fc.boolean(),
    });
  const stepArb = fc.oneof(
    fc.record({
      kind: fc.constant('consume' as const),
      advance: fc.integer({ min: 0, max: 3 * 24 * HOUR }),
      amount: fc.integer({ min: 1, max: 6_000_000 }).map(BigInt),
      overage: fc.boolean(),
      /** jump exactly onto the next period boundary (the earliest end among the buckets) */
      toBoundary: fc.boolean(),
    }),
    fc.record({
      kind: fc.constant('reverse' as const),
      advance: fc.integer({ min: 0, max: HOUR }),
      pick: fc.nat(),
    }),
  );

  it('holds', () => {
    fc.assert(
      fc.property(
        fc.tuple(groupArb('a'), groupArb('b')),
        fc.array(stepArb, { minLength: 1, maxLength: 40 }),
        (groups, steps) => {
          let id = 1;
          const windows: EngineWindow[] = [];
          for (const g of groups) {
            let t = T0;
            g.windows.forEach((w, i) => {
              t += w.gap * HOUR;
              const last = i === g.windows.length - 1 && g.permanentTail;
              const end = last ? null : t + w.hours * HOUR;
              windows.push({
                id: id++,
                planId: id,
                planSlug: 'p',
                group: g.group,
                validFrom: new Date(t),
                validTo: end === null ? null : new Date(end),
                quota: w.quota
                  ? {
                      ...RUN_QUOTA,
                      id,
                      limit: w.quota.limit,
                      priority: w.quota.priority,
                      resetInterval: g.interval,
                    }
                  : null,
              });
              if (end !== null) t = end;
            });
          }
          const ledger: Array<{
            at: number;
            allocations: Allocation[];
            reversed: boolean;
          }> = [];
          const counters = new Map<string, bigint>();
          const key = (group: string | null, start: Date | null) => `${group}@${start?.getTime()}`;
          const usedAt = (b: Bucket) =>
            ledger
              .filter(
                (r) =>
                  !r.reversed &&
                  r.at >= b.periodStart.getTime() &&
                  (b.periodEnd === null || r.at < b.periodEnd.getTime()),
              )
              .flatMap((r) => r.allocations.filter((x) => x.group === b.group))
              .reduce((s, x) => s + x.amount, 0n);

          let now = T0;
          for (const step of steps) {
            now += step.advance;
            const at = new Date(now);
            const buckets = bucketsAt(windows, at).map((b) => ({ ...b, used: usedAt(b) }));
            // invariant 2, before every step
            for (const b of buckets) expect(b.used).toBe(counters.get(key(b.group, b.periodStart)) ?? 0n);
            if (step.kind === 'reverse') {
              const live = ledger.filter((r) => !r.reversed);
              if (live.length === 0) continue;
              const r = live[step.pick % live.length];
              r.reversed = true;
              for (const x of r.allocations)
                counters.set(
                  key(x.group, x.periodStart),
                  counters.get(key(x.group, x.periodStart))! - x.amount,
                );
              continue;
            }
            if (buckets.length === 0) continue;
            const result = allocate(buckets, step.amount, step.overage);
            if (!result.ok) {
              expect(step.overage).toBe(false);
              expect(result.remaining).not.toBeNull();
              expect(result.remaining! < step.amount).toBe(true);
              continue;
            }
            expect(result.allocations.reduce((s, x) => s + x.amount, 0n) + result.overage).toBe(step.amount);
            if (!step.overage) expect(result.overage).toBe(0n);
            result.allocations.forEach((x) => {
              const index = buckets.findIndex((b) => b.group === x.group);
              const b = buckets[index];
              const room = remainingOf(b);
              expect(x.amount > 0n).toBe(true);
              if (room !== null) expect(x.amount <= room).toBe(true);
              expect(x.periodStart).toEqual(b.periodStart);
              // the period a record counts in holds the instant it was recorded at (half-open)
              expect(
                b.periodStart.getTime() <= now && (b.periodEnd === null || now < b.periodEnd.getTime()),
              ).toBe(true);
              // every bucket before it in the order was filled up
              for (const earlier of buckets.slice(0, index)) {
                const taken = result.allocations.find((y) => y.group === earlier.group)?.amount ?? 0n;
                expect(remainingOf({ ...earlier, used: earlier.used + taken })).toBe(0n);
              }
            });
            ledger.push({ at: now, allocations: result.allocations, reversed: false });
            for (const x of result.allocations)
              counters.set(
                key(x.group, x.periodStart),
                (counters.get(key(x.group, x.periodStart)) ?? 0n) + x.amount,
              );
          }
        },
      ),
      { numRuns: 300, seed: 17 },
    );
  });
});
