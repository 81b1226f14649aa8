import fc from 'fast-check';
import { DomainError } from '../../common/errors/domain-error';
import { ErrorCode } from '../../common/errors/error-codes';
import { ChainPlan, ChainWindow, Grant, checkChainInvariants, liveWindows, planGrant } from './chain-engine';
import { addIsoDuration } from '../../common/time/duration';

const DAY = 86_400_000;
const EPOCH = Date.UTC(2025, 0, 1, 12, 0, 0, 0);
/** Day `n` relative to `now` = day 0. */
const day = (n: number): Date => new Date(EPOCH + n * DAY);
const NOW = day(0);

interface Plan {
  id: number;
  value: number;
}
const BASIC: Plan = { id: 1, value: 10 };
const PRO: Plan = { id: 2, value: 20 };
const MAX: Plan = { id: 3, value: 40 };
const FREE: Plan = { id: 4, value: 0 };
/** Same value as Pro, another plan of the group. */
const PRO2: Plan = { id: 5, value: 20 };

let nextId = 100;
function win(plan: Plan, from: Date, to: Date | null, id = nextId++): ChainWindow {
  return { id, planId: plan.id, planValue: plan.value, validFrom: from, validTo: to };
}
const timed = (plan: Plan, duration: string): Grant => ({ planId: plan.id, planValue: plan.value, duration });
const permanent = (plan: Plan): Grant => ({ planId: plan.id, planValue: plan.value, duration: null });

/** A comparable picture of a chain (Invalid Dates included, which `toEqual` cannot compare). */
function snapshot(chain: ChainWindow[]): unknown[] {
  return chain.map((w) => ({
    ...w,
    planValue: String(w.planValue),
    validFrom: String(w.validFrom.getTime()),
    validTo: w.validTo === null ? null : String(w.validTo.getTime()),
  }));
}

/** Runs planGrant, checking that the input is left as it was. */
function plan(chain: ChainWindow[], grant: Grant, now = NOW): ChainPlan {
  const before = snapshot(chain);
  const grantBefore = { ...grant };
  try {
    return planGrant(chain, grant, now);
  } finally {
    expect(snapshot(chain)).toEqual(before);
    expect(grant).toEqual(grantBefore);
  }
}

function errorOf(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DomainError);
    return e as DomainError;
  }
  throw new Error('expected a DomainError');
}

function expectCode(chain: ChainWindow[], grant: Grant, code: ErrorCode, now = NOW): DomainError {
  const error = errorOf(() => plan(chain, grant, now));
  expect(error.code).toBe(code);
  return error;
}

const empty: ChainPlan = { ended: [], cancelled: [], moved: [], created: [] };

describe('planGrant: the worked examples of docs/api-guide.md#worked-examples', () => {
  it('Free permanent + Pro 30 days = Pro 0-30, Free permanent from day 30', () => {
    const free = win(FREE, day(-100), null);
    expect(plan([free], timed(PRO, 'P30D'))).toEqual({
      ...empty,
      ended: [{ id: free.id, planId: FREE.id, validFrom: day(-100), validTo: NOW }],
      created: [
        { planId: PRO.id, validFrom: NOW, validTo: day(30) },
        { planId: FREE.id, validFrom: day(30), validTo: null },
      ],
    });
  });

  it('Pro -10 to 20 + Pro 30 days = Pro -10 to 20, Pro 20-50', () => {
    expect(plan([win(PRO, day(-10), day(20))], timed(PRO, 'P30D'))).toEqual({
      ...empty,
      created: [{ planId: PRO.id, validFrom: day(20), validTo: day(50) }],
    });
  });

  it('Pro -10 to 20 + Max 30 days = Pro -10 to 0, Max 0-40 (30 + 20 x 20/40)', () => {
    const pro = win(PRO, day(-10), day(20));
    expect(plan([pro], timed(MAX, 'P30D'))).toEqual({
      ...empty,
      ended: [{ id: pro.id, planId: PRO.id, validFrom: day(-10), validTo: NOW }],
      created: [{ planId: MAX.id, validFrom: NOW, validTo: day(40) }],
    });
  });

  it('Max -5 to 10 + Basic 30 days = Max -5 to 10, Basic 10-40', () => {
    expect(plan([win(MAX, day(-5), day(10))], timed(BASIC, 'P30D'))).toEqual({
      ...empty,
      created: [{ planId: BASIC.id, validFrom: day(10), validTo: day(40) }],
    });
  });

  it('Max 0-10, Basic 10-40 + Pro 10 days = Max 0-10, Pro 10-35 (10 + 30 x 10/20); Basic cancelled', () => {
    const max = win(MAX, day(0), day(10));
    const basic = win(BASIC, day(10), day(40));
    expect(plan([max, basic], timed(PRO, 'P10D'))).toEqual({
      ...empty,
      cancelled: [{ id: basic.id, planId: BASIC.id, validFrom: day(10), validTo: day(40) }],
      created: [{ planId: PRO.id, validFrom: day(10), validTo: day(35) }],
    });
  });

  it('Pro permanent + Basic 30 days = 409 PERMANENT_TAIL_CONFLICT', () => {
    expectCode([win(PRO, day(-3), null)], timed(BASIC, 'P30D'), 'PERMANENT_TAIL_CONFLICT');
  });

  it('Pro permanent since day -3 + Max 30 days = Pro -3 to 0, Max 0-30, Pro permanent from day 30', () => {
    const pro = win(PRO, day(-3), null);
    expect(plan([pro], timed(MAX, 'P30D'))).toEqual({
      ...empty,
      ended: [{ id: pro.id, planId: PRO.id, validFrom: day(-3), validTo: NOW }],
      created: [
        { planId: MAX.id, validFrom: NOW, validTo: day(30) },
        { planId: PRO.id, validFrom: day(30), validTo: null },
      ],
    });
  });

  it('Pro permanent + Pro permanent = 409 REDUNDANT_PERMANENT_PURCHASE', () => {
    expectCode([win(PRO, day(-3), null)], permanent(PRO), 'REDUNDANT_PERMANENT_PURCHASE');
  });

  it('Basic -5 to 25 + Pro permanent = Basic -5 to 0, Pro permanent from day 0', () => {
    const basic = win(BASIC, day(-5), day(25));
    expect(plan([basic], permanent(PRO))).toEqual({
      ...empty,
      ended: [{ id: basic.id, planId: BASIC.id, validFrom: day(-5), validTo: NOW }],
      created: [{ planId: PRO.id, validFrom: NOW, validTo: null }],
    });
  });
});

describe('planGrant: timed grants', () => {
  it('starts now on an empty chain', () => {
    expect(plan([], timed(PRO, 'P30D'))).toEqual({
      ...empty,
      created: [{ planId: PRO.id, validFrom: NOW, validTo: day(30) }],
    });
  });

  it('ignores windows that are no longer live, even inconsistent ones', () => {
    const old = [
      win(BASIC, day(-50), day(-10)),
      win(MAX, day(-40), day(-20)), // overlaps the Basic one and has a higher value
      win(PRO, day(-10), NOW), // ended exactly now: not live
      { ...win(PRO, day(-60), day(-30)), planValue: NaN }, // bad value, but not live
    ];
    expect(plan(old, timed(BASIC, 'P1D'))).toEqual({
      ...empty,
      created: [{ planId: BASIC.id, validFrom: NOW, validTo: day(1) }],
    });
  });

  it('moves a tail that has not started yet (it follows kept windows)', () => {
    const max = win(MAX, day(-5), day(10));
    const free = win(FREE, day(10), null);
    expect(plan([free, max], timed(PRO, 'P10D'))).toEqual({
      ...empty,
      moved: [{ id: free.id, planId: FREE.id, validFrom: day(20), validTo: null }],
      created: [{ planId: PRO.id, validFrom: day(10), validTo: day(20) }],
    });
  });

  it('moves a later tail to where the new window ends, even if that is earlier (gap in the chain)', () => {
    const basic = win(BASIC, day(10), day(20));
    const free = win(FREE, day(30), null);
    expect(plan([basic, free], timed(PRO, 'P1D'))).toEqual({
      ...empty,
      cancelled: [{ id: basic.id, planId: BASIC.id, validFrom: day(10), validTo: day(20) }],
      moved: [{ id: free.id, planId: FREE.id, validFrom: day(6), validTo: null }],
      created: [{ planId: PRO.id, validFrom: NOW, validTo: day(6) }], // 1 + 10 x 10/20
    });
  });

  it('converts a window in effect and one not yet started, cancels the latter, and moves the tail', () => {
    const pro = win(PRO, day(-2), day(8));
    const basic = win(BASIC, day(8), day(28));
    const free = win(FREE, day(28), null);
    expect(plan([pro, basic, free], timed(MAX, 'P1M'))).toEqual({
      ...empty,
      ended: [{ id: pro.id, planId: PRO.id, validFrom: day(-2), validTo: NOW }],
      cancelled: [{ id: basic.id, planId: BASIC.id, validFrom: day(8), validTo: day(28) }],
      moved: [{ id: free.id, planId: FREE.id, validFrom: day(31 + 4 + 5), validTo: null }],
      // January 2025 has 31 days; 8 x 20/40 + 20 x 10/40 = 4 + 5 days converted
      created: [{ planId: MAX.id, validFrom: NOW, validTo: day(31 + 4 + 5) }],
    });
  });

  it('a free timed window is converted into nothing', () => {
    const free = win(FREE, day(-1), day(10));
    const result = plan([free], timed(BASIC, 'P1D'));
    expect(result.ended).toEqual([{ id: free.id, planId: FREE.id, validFrom: day(-1), validTo: NOW }]);
    expect(result.created).toEqual([{ planId: BASIC.id, validFrom: NOW, validTo: day(1) }]);
  });

  it('a free timed grant waits behind every paid window', () => {
    const basic = win(BASIC, day(-1), day(10));
    expect(plan([basic], timed(FREE, 'P7D')).created).toEqual([
      { planId: FREE.id, validFrom: day(10), validTo: day(17) },
    ]);
  });

  it('a free timed grant behind a free permanent tail is a PERMANENT_TAIL_CONFLICT', () => {
    expectCode([win(FREE, day(-1), null)], timed(FREE, 'P7D'), 'PERMANENT_TAIL_CONFLICT');
  });

  it('a window that starts exactly now has not started: it is cancelled, never left as an empty window', () => {
    const basic = win(BASIC, NOW, day(10));
    const result = plan([basic], timed(PRO, 'P1D'));
    expect(result.ended).toEqual([]);
    expect(result.cancelled).toEqual([{ id: basic.id, planId: BASIC.id, validFrom: NOW, validTo: day(10) }]);
    expect(result.created).toEqual([{ planId: PRO.id, validFrom: NOW, validTo: day(6) }]);
  });

  it('a tail that starts exactly now (a sign-up grant of this call) is moved after the new window', () => {
    const free = win(FREE, NOW, null);
    const result = plan([free], timed(PRO, 'P1D'));
    expect(result.ended).toEqual([]);
    expect(result.moved).toEqual([{ id: free.id, planId: FREE.id, validFrom: day(1), validTo: null }]);
    expect(result.created).toEqual([{ planId: PRO.id, validFrom: NOW, validTo: day(1) }]);
  });

  it('keeps the time of day and milliseconds of now', () => {
    const now = new Date('2025-01-31T10:11:12.345Z');
    expect(plan([], timed(PRO, 'P1M'), now).created).toEqual([
      { planId: PRO.id, validFrom: now, validTo: new Date('2025-02-28T10:11:12.345Z') },
    ]);
  });

  it('returns new Date objects, never the input ones', () => {
    const max = win(MAX, day(-5), day(10));
    const free = win(FREE, day(10), null);
    const result = plan([max, free], timed(PRO, 'P10D'));
    expect(result.created[0].validFrom).not.toBe(max.validTo);
    result.created[0].validFrom.setTime(0);
    result.moved[0].validFrom.setTime(0);
    expect(max.validTo).toEqual(day(10));
    expect(free.validFrom).toEqual(day(10));
  });
});

/** A trial window of `plan` (docs/api-guide.md#trials): worth 0 in every grant. */
const trialWin = (plan: Plan, from: Date, to: Date, id = nextId++): ChainWindow => ({
  ...win(plan, from, to, id),
  trial: true,
});

describe('planGrant: trial windows count as windows of value 0', () => {
  it('a trial grant on a free permanent tail starts now, lasts exactly its duration, and moves the tail', () => {
    const free = win(FREE, day(-100), null);
    expect(plan([free], timed(PRO, 'P14D'))).toEqual({
      ...empty,
      ended: [{ id: free.id, planId: FREE.id, validFrom: day(-100), validTo: NOW }],
      created: [
        { planId: PRO.id, validFrom: NOW, validTo: day(14) },
        { planId: FREE.id, validFrom: day(14), validTo: null },
      ],
    });
  });

  it('a trial grant converts free timed windows into nothing', () => {
    const free = win(FREE, day(-1), day(10));
    const result = plan([free], timed(PRO, 'P14D'));
    expect(result.ended).toEqual([{ id: free.id, planId: FREE.id, validFrom: day(-1), validTo: NOW }]);
    expect(result.created).toEqual([{ planId: PRO.id, validFrom: NOW, validTo: day(14) }]);
  });

  it('Pro trial day -4 to 10, Free tail + Pro 30 days: the trial ends now, none of its time converted', () => {
    const trial = trialWin(PRO, day(-4), day(10));
    const free = win(FREE, day(10), null);
    expect(plan([trial, free], timed(PRO, 'P30D'))).toEqual({
      ...empty,
      ended: [{ id: trial.id, planId: PRO.id, validFrom: day(-4), validTo: NOW }],
      moved: [{ id: free.id, planId: FREE.id, validFrom: day(30), validTo: null }],
      created: [{ planId: PRO.id, validFrom: NOW, validTo: day(30) }],
    });
  });

  it('a lesser paid plan also ends a trial of a better one at once (it is worth 0, never a head)', () => {
    const trial = trialWin(MAX, day(-4), day(10));
    const result = plan([trial], timed(BASIC, 'P30D'));
    expect(result.ended).toEqual([{ id: trial.id, planId: MAX.id, validFrom: day(-4), validTo: NOW }]);
    expect(result.created).toEqual([{ planId: BASIC.id, validFrom: NOW, validTo: day(30) }]);
  });

  it('a permanent paid grant ends the trial at now, unconverted', () => {
    const trial = trialWin(PRO, day(-4), day(10));
    const free = win(FREE, day(10), null);
    expect(plan([trial, free], permanent(PRO))).toEqual({
      ...empty,
      ended: [{ id: trial.id, planId: PRO.id, validFrom: day(-4), validTo: NOW }],
      cancelled: [{ id: free.id, planId: FREE.id, validFrom: day(10), validTo: null }],
      created: [{ planId: PRO.id, validFrom: NOW, validTo: null }],
    });
  });

  it('a trial that starts exactly now (made earlier in the same instant) is cancelled by a paid grant', () => {
    const trial = trialWin(PRO, NOW, day(14));
    const result = plan([trial], timed(PRO, 'P30D'));
    expect(result.cancelled).toEqual([{ id: trial.id, planId: PRO.id, validFrom: NOW, validTo: day(14) }]);
    expect(result.created).toEqual([{ planId: PRO.id, validFrom: NOW, validTo: day(30) }]);
  });

  it('a free timed grant waits behind the trial, as behind any window of value 0', () => {
    const trial = trialWin(PRO, day(-4), day(10));
    expect(plan([trial], timed(FREE, 'P7D'))).toEqual({
      ...empty,
      created: [{ planId: FREE.id, validFrom: day(10), validTo: day(17) }],
    });
  });

  it('a trial is ordered as value 0: a paid window after it breaks invariant 3, one before it does not', () => {
    expectCode(
      [trialWin(PRO, day(-4), day(10)), win(BASIC, day(10), day(20))],
      timed(PRO, 'P1D'),
      'INVALID_SUBSCRIPTION_CHAIN',
    );
    expect(() =>
      checkChainInvariants([win(BASIC, day(-4), day(10)), trialWin(MAX, day(10), day(20))]),
    ).not.toThrow();
  });

  it('a trial of a plan with an unreadable value is still worth 0, and the input is not changed', () => {
    const trial = { ...trialWin(PRO, day(-4), day(10)), planValue: NaN };
    expect(plan([trial], timed(BASIC, 'P1D')).ended).toEqual([
      { id: trial.id, planId: PRO.id, validFrom: day(-4), validTo: NOW },
    ]);
    expect(trial.planValue).toBeNaN();
  });
});

describe('planGrant: calendar arithmetic (UTC)', () => {
  const at = (iso: string): Date => new Date(iso);

  it.each([
    ['2025-01-31T00:00:00.000Z', 'P1M', '2025-02-28T00:00:00.000Z'],
    ['2024-01-31T00:00:00.000Z', 'P1M', '2024-02-29T00:00:00.000Z'],
    ['2024-02-29T00:00:00.000Z', 'P1Y', '2025-02-28T00:00:00.000Z'],
  ])('from %s, %s ends at %s', (now, duration, end) => {
    expect(plan([], timed(PRO, duration), at(now)).created).toEqual([
      { planId: PRO.id, validFrom: at(now), validTo: at(end) },
    ]);
  });

  it('adds D from the start of the new window, not from now', () => {
    // The head ends on 2024-01-31: P1M from there is 2024-02-29.
    const now = at('2024-01-01T00:00:00.000Z');
    const max = win(MAX, at('2023-12-20T00:00:00.000Z'), at('2024-01-31T00:00:00.000Z'));
    expect(plan([max], timed(PRO, 'P1M'), now).created).toEqual([
      { planId: PRO.id, validFrom: at('2024-01-31T00:00:00.000Z'), validTo: at('2024-02-29T00:00:00.000Z') },
    ]);
  });

  it('adds the converted time after D', () => {
    // Basic has 4 days left, worth 1 day of Max; D = P1M from 2025-01-31 = 2025-02-28.
    const now = at('2025-01-31T00:00:00.000Z');
    const basic = win(BASIC, at('2025-01-01T00:00:00.000Z'), at('2025-02-04T00:00:00.000Z'));
    expect(plan([basic], timed(MAX, 'P1M'), now).created).toEqual([
      { planId: MAX.id, validFrom: now, validTo: at('2025-03-01T00:00:00.000Z') },
    ]);
  });
});

describe('planGrant: conversion rounding', () => {
  it('rounds the converted time down to whole seconds', () => {
    // 7 s of Basic into Max: 7 x 10/40 = 1.75 s -> 1 s.
    const basic = win(BASIC, day(-1), new Date(NOW.getTime() + 7_000));
    expect(plan([basic], timed(MAX, 'PT1H')).created).toEqual([
      { planId: MAX.id, validFrom: NOW, validTo: new Date(NOW.getTime() + 3_600_000 + 1_000) },
    ]);
  });

  it('rounds the total, not each window', () => {
    // Two windows of 3 s of Basic into Max: 0.75 s each, 1.5 s in total -> 1 s (not 0 + 0).
    const a = win(BASIC, day(-1), new Date(NOW.getTime() + 3_000));
    const b = win(BASIC, new Date(NOW.getTime() + 3_000), new Date(NOW.getTime() + 6_000));
    expect(plan([a, b], timed(MAX, 'PT1H')).created[0].validTo).toEqual(
      new Date(NOW.getTime() + 3_600_000 + 1_000),
    );
  });

  it('rounds the milliseconds of the remaining time too', () => {
    // 1999 ms of Pro into Max: 999.5 ms -> 0 s.
    const pro = win(PRO, day(-1), new Date(NOW.getTime() + 1_999));
    expect(plan([pro], timed(MAX, 'PT1H')).created[0].validTo).toEqual(new Date(NOW.getTime() + 3_600_000));
  });

  it('computes exactly on decimal values (no floating-point loss)', () => {
    // 45 s of a 0.70 plan into a 0.90 plan is exactly 35 s; 45000 * 0.7 / 0.9 in floating point is 34999.99...
    const cheap: Plan = { id: 10, value: 0.7 };
    const dear: Plan = { id: 11, value: 0.9 };
    const w = win(cheap, day(-1), new Date(NOW.getTime() + 45_000));
    expect(plan([w], timed(dear, 'PT1S')).created[0].validTo).toEqual(
      new Date(NOW.getTime() + 1_000 + 35_000),
    );
  });

  it('converts between equal fractions of different scales exactly', () => {
    const a: Plan = { id: 12, value: 12.5 };
    const b: Plan = { id: 13, value: 25 };
    const w = win(a, day(-1), day(10));
    expect(plan([w], timed(b, 'P1D')).created[0].validTo).toEqual(day(6));
  });
});

describe('planGrant: equal values of different plans', () => {
  it('a timed grant of an equal-value plan keeps the other as head and starts after it', () => {
    const pro = win(PRO, day(-10), day(20));
    expect(plan([pro], timed(PRO2, 'P30D'))).toEqual({
      ...empty,
      created: [{ planId: PRO2.id, validFrom: day(20), validTo: day(50) }],
    });
  });

  it('a timed grant behind an equal-value permanent tail of another plan is a PERMANENT_TAIL_CONFLICT', () => {
    expectCode([win(PRO, day(-1), null)], timed(PRO2, 'P30D'), 'PERMANENT_TAIL_CONFLICT');
  });

  it('a permanent grant over an equal-value permanent tail of another plan is redundant', () => {
    expectCode([win(PRO, day(-1), null)], permanent(PRO2), 'REDUNDANT_PERMANENT_PURCHASE');
  });

  it('a permanent grant ends timed windows of equal value (only strictly better ones are kept)', () => {
    const pro = win(PRO, day(-10), day(20));
    expect(plan([pro], permanent(PRO2))).toEqual({
      ...empty,
      ended: [{ id: pro.id, planId: PRO.id, validFrom: day(-10), validTo: NOW }],
      created: [{ planId: PRO2.id, validFrom: NOW, validTo: null }],
    });
  });
});

describe('planGrant: permanent grants', () => {
  it('starts now on an empty chain', () => {
    expect(plan([], permanent(FREE))).toEqual({
      ...empty,
      created: [{ planId: FREE.id, validFrom: NOW, validTo: null }],
    });
  });

  it('a free permanent grant on a chain with a free tail is redundant (sign-up skips it)', () => {
    expectCode([win(FREE, day(-1), null)], permanent(FREE), 'REDUNDANT_PERMANENT_PURCHASE');
  });

  it('a better permanent grant ends a tail in effect', () => {
    const pro = win(PRO, day(-3), null);
    expect(plan([pro], permanent(MAX))).toEqual({
      ...empty,
      ended: [{ id: pro.id, planId: PRO.id, validFrom: day(-3), validTo: NOW }],
      created: [{ planId: MAX.id, validFrom: NOW, validTo: null }],
    });
  });

  it('keeps better timed windows, cancels lower ones and the lower tail, and starts after the kept ones', () => {
    const max = win(MAX, day(-5), day(10));
    const pro = win(PRO, day(10), day(20));
    const basic = win(BASIC, day(20), day(30));
    const free = win(FREE, day(30), null);
    expect(plan([free, basic, pro, max], permanent(PRO))).toEqual({
      ...empty,
      cancelled: [
        { id: pro.id, planId: PRO.id, validFrom: day(10), validTo: day(20) },
        { id: basic.id, planId: BASIC.id, validFrom: day(20), validTo: day(30) },
        { id: free.id, planId: FREE.id, validFrom: day(30), validTo: null },
      ],
      created: [{ planId: PRO.id, validFrom: day(10), validTo: null }],
    });
  });

  it('ends a lower window in effect and cancels the following ones, without conversion', () => {
    const pro = win(PRO, day(-5), day(10));
    const basic = win(BASIC, day(10), day(30));
    expect(plan([pro, basic], permanent(MAX))).toEqual({
      ...empty,
      ended: [{ id: pro.id, planId: PRO.id, validFrom: day(-5), validTo: NOW }],
      cancelled: [{ id: basic.id, planId: BASIC.id, validFrom: day(10), validTo: day(30) }],
      created: [{ planId: MAX.id, validFrom: NOW, validTo: null }],
    });
  });
});

describe('planGrant: long chains', () => {
  // Ten windows of 10 days from day -5: Max x3, Pro x3, Basic x3, then a Free tail from day 85.
  const longChain = (): ChainWindow[] => {
    const plans = [MAX, MAX, MAX, PRO, PRO, PRO, BASIC, BASIC, BASIC];
    const windows = plans.map((p, i) => win(p, day(-5 + 10 * i), day(5 + 10 * i), i + 1));
    return [...windows, win(FREE, day(85), null, 10)];
  };

  it('a Pro grant keeps the Max and Pro windows and converts the Basic ones', () => {
    const chain = longChain();
    expect(plan(chain, timed(PRO, 'P10D'))).toEqual({
      ...empty,
      cancelled: [7, 8, 9].map((id) => ({
        id,
        planId: BASIC.id,
        validFrom: day(10 * id - 15),
        validTo: day(10 * id - 5),
      })),
      moved: [{ id: 10, planId: FREE.id, validFrom: day(80), validTo: null }],
      created: [{ planId: PRO.id, validFrom: day(55), validTo: day(80) }], // 10 + 30 x 10/20
    });
  });

  it('a Max grant converts the Pro and Basic windows', () => {
    const chain = longChain();
    expect(plan(chain, timed(MAX, 'P10D'))).toEqual({
      ...empty,
      cancelled: [4, 5, 6, 7, 8, 9].map((id) => ({
        id,
        planId: id <= 6 ? PRO.id : BASIC.id,
        validFrom: day(10 * id - 15),
        validTo: day(10 * id - 5),
      })),
      moved: [{ id: 10, planId: FREE.id, validFrom: day(57.5), validTo: null }],
      created: [{ planId: MAX.id, validFrom: day(25), validTo: day(57.5) }], // 10 + 30 x 20/40 + 30 x 10/40
    });
  });

  it('a Max permanent grant ends the window in effect and cancels all the others', () => {
    const chain = longChain();
    const result = plan(chain, permanent(MAX));
    expect(result.ended).toEqual([{ id: 1, planId: MAX.id, validFrom: day(-5), validTo: NOW }]);
    expect(result.cancelled.map((c) => c.id)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(result.moved).toEqual([]);
    expect(result.created).toEqual([{ planId: MAX.id, validFrom: NOW, validTo: null }]);
  });

  it('a Basic grant goes after everything and moves the tail', () => {
    const chain = longChain();
    expect(plan(chain, timed(BASIC, 'P10D'))).toEqual({
      ...empty,
      moved: [{ id: 10, planId: FREE.id, validFrom: day(95), validTo: null }],
      created: [{ planId: BASIC.id, validFrom: day(85), validTo: day(95) }],
    });
  });
});

describe('planGrant and checkChainInvariants: invariant violations', () => {
  const cases: Array<[string, ErrorCode, () => ChainWindow[]]> = [
    [
      'overlapping windows',
      'INVALID_SUBSCRIPTION_CHAIN',
      () => [win(PRO, day(-5), day(10)), win(BASIC, day(9), day(20))],
    ],
    [
      'two windows starting together',
      'INVALID_SUBSCRIPTION_CHAIN',
      () => [win(PRO, day(1), day(10)), win(PRO, day(1), day(5))],
    ],
    [
      'two permanent windows',
      'INVALID_SUBSCRIPTION_CHAIN',
      () => [win(PRO, day(-5), null), win(FREE, day(-1), null)],
    ],
    [
      'a permanent window that is not last',
      'INVALID_SUBSCRIPTION_CHAIN',
      () => [win(FREE, day(-5), null), win(BASIC, day(3), day(10))],
    ],
    [
      'increasing values',
      'INVALID_SUBSCRIPTION_CHAIN',
      () => [win(BASIC, day(-5), day(10)), win(PRO, day(10), day(20))],
    ],
    [
      'increasing values in the future',
      'INVALID_SUBSCRIPTION_CHAIN',
      () => [win(PRO, day(1), day(2)), win(BASIC, day(2), day(3)), win(MAX, day(3), day(4))],
    ],
    ['a window ending before it starts', 'INVALID_SUBSCRIPTION_CHAIN', () => [win(PRO, day(10), day(5))]],
    ['an empty live window', 'INVALID_SUBSCRIPTION_CHAIN', () => [win(PRO, day(10), day(10))]],
    ['an invalid date', 'INVALID_SUBSCRIPTION_CHAIN', () => [win(PRO, new Date(NaN), day(10))]],
    ['a negative value', 'INVALID_PLAN_VALUE', () => [{ ...win(PRO, day(-5), day(10)), planValue: -1 }]],
    ['a NaN value', 'INVALID_PLAN_VALUE', () => [{ ...win(PRO, day(-5), day(10)), planValue: NaN }]],
    [
      'an infinite value',
      'INVALID_PLAN_VALUE',
      () => [{ ...win(PRO, day(-5), day(10)), planValue: Infinity }],
    ],
    [
      'a -Infinity value on the tail',
      'INVALID_PLAN_VALUE',
      () => [{ ...win(FREE, day(-5), null), planValue: -Infinity }],
    ],
    [
      'a bad value together with a broken order (the value is reported)',
      'INVALID_PLAN_VALUE',
      () => [win(BASIC, day(-5), day(10)), { ...win(PRO, day(5), day(20)), planValue: NaN }],
    ],
  ];

  it.each(cases)('%s -> %s, input unchanged', (_name, code, chain) => {
    for (const grant of [timed(MAX, 'P1D'), timed(FREE, 'P1D'), permanent(MAX), permanent(FREE)]) {
      expectCode(chain(), grant, code);
    }
  });

  it.each(cases)('checkChainInvariants: %s -> %s', (_name, code, chain) => {
    const live = chain();
    const before = snapshot(live);
    expect(errorOf(() => checkChainInvariants(live)).code).toBe(code);
    expect(snapshot(live)).toEqual(before);
  });

  it.each([
    ['negative', -10],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
  ])('a granted plan with a %s value -> INVALID_PLAN_VALUE', (_name, value) => {
    const chain = [win(PRO, day(-5), day(10))];
    expectCode(chain, { planId: 99, planValue: value, duration: 'P1D' }, 'INVALID_PLAN_VALUE');
    expectCode(chain, { planId: 99, planValue: value, duration: null }, 'INVALID_PLAN_VALUE');
    expectCode([], { planId: 99, planValue: value, duration: null }, 'INVALID_PLAN_VALUE');
  });

  it('accepts a valid chain, in any input order, with equal values and adjoining windows', () => {
    const chain = [
      win(FREE, day(30), null),
      win(PRO2, day(20), day(30)),
      win(MAX, day(-5), day(10)),
      win(PRO, day(10), day(20)),
    ];
    expect(() => checkChainInvariants(chain)).not.toThrow();
    expect(() => checkChainInvariants([])).not.toThrow();
  });

  it('accepts a permanent tail of higher value than the timed windows (the invariants order timed windows only)', () => {
    expect(() => checkChainInvariants([win(BASIC, day(-5), day(10)), win(MAX, day(10), null)])).not.toThrow();
  });
});

describe('planGrant: invalid durations', () => {
  it.each(['', 'P0D', 'PT0S', '-P1D', 'P1M-1D', '30D', 'P1.5M', 'P', 'PT', 'nope'])(
    '%j -> VALIDATION_FAILED on the duration field',
    (duration) => {
      const error = expectCode([win(PRO, day(-1), day(1))], timed(PRO, duration), 'VALIDATION_FAILED');
      expect(error.message).toBe('duration must be an ISO 8601 duration');
      expect(error.details).toEqual([{ field: 'duration', message: expect.any(String) }]);
      expect(error.status).toBe(400);
    },
  );

  it('checks the duration before the chain', () => {
    expectCode([win(PRO, day(-5), null), win(FREE, day(-1), null)], timed(PRO, 'P0D'), 'VALIDATION_FAILED');
  });

  it('a new window ending past the supported date range -> VALIDATION_FAILED', () => {
    expectCode([], timed(PRO, 'P273760Y'), 'VALIDATION_FAILED');
  });
});

describe('planGrant: programming errors', () => {
  it('rejects an invalid now with a RangeError (not a DomainError)', () => {
    expect(() => planGrant([], timed(PRO, 'P1D'), new Date(NaN))).toThrow(RangeError);
  });
});

describe('liveWindows', () => {
  it('keeps windows ending after now (and permanent ones), sorted by validFrom, without mutating', () => {
    const a = win(PRO, day(-10), NOW, 1);
    const b = win(FREE, day(20), null, 2);
    const c = win(MAX, day(-1), day(1), 3);
    const d = win(BASIC, day(1), day(20), 4);
    const e = win(BASIC, day(-20), day(-10), 5);
    const chain = [a, b, c, d, e];
    expect(liveWindows(chain, NOW).map((w) => w.id)).toEqual([3, 4, 2]);
    expect(chain.map((w) => w.id)).toEqual([1, 2, 3, 4, 5]);
  });
});

// ---------------------------------------------------------------------------------------------
// Property test: an in-memory simulator applies each ChainPlan to a chain built only by the engine.

interface SimWindow extends ChainWindow {
  cancelled: boolean;
}

/** Applies a plan to the simulator's chain, checking that it only touches live windows. */
function applyPlan(
  chain: SimWindow[],
  result: ChainPlan,
  now: Date,
  grant: Grant,
  ids: { next: number },
): void {
  const byId = (id: number): SimWindow => {
    const w = chain.find((x) => x.id === id);
    if (w === undefined || w.cancelled) throw new Error(`unknown window ${id}`);
    return w;
  };
  for (const c of result.ended) {
    const w = byId(c.id);
    expect(w.validFrom.getTime()).toBeLessThan(now.getTime());
    expect(c.validTo).toEqual(now);
    expect(c.validFrom).toEqual(w.validFrom);
    w.validTo = new Date(now);
  }
  for (const c of result.cancelled) {
    const w = byId(c.id);
    expect(w.validFrom.getTime()).toBeGreaterThanOrEqual(now.getTime());
    expect({ validFrom: c.validFrom, validTo: c.validTo }).toEqual({
      validFrom: w.validFrom,
      validTo: w.validTo,
    });
    w.cancelled = true;
  }
  for (const c of result.moved) {
    const w = byId(c.id);
    expect(w.validTo).toBeNull();
    expect(w.validFrom.getTime()).toBeGreaterThanOrEqual(now.getTime());
    expect(c.validTo).toBeNull();
    w.validFrom = new Date(c.validFrom);
  }
  for (const n of result.created) {
    const value =
      n.planId === grant.planId ? grant.planValue : chain.find((w) => w.planId === n.planId)?.planValue;
    if (value === undefined) throw new Error(`unknown plan ${n.planId}`);
    chain.push({
      id: ids.next++,
      planId: n.planId,
      planValue: value,
      validFrom: n.validFrom,
      validTo: n.validTo,
      cancelled: false,
    });
  }
}

/** Sum over the live timed windows of remaining time x value. */
function weightedRemaining(live: ChainWindow[], now: Date): number {
  return live
    .filter((w) => w.validTo !== null)
    .reduce(
      (sum, w) =>
        sum + ((w.validTo as Date).getTime() - Math.max(w.validFrom.getTime(), now.getTime())) * w.planValue,
      0,
    );
}

describe('planGrant: property test on chains built by the engine', () => {
  // Values whose products with integer milliseconds stay exact in floating point.
  const PLANS: Plan[] = [FREE, BASIC, { id: 6, value: 15.5 }, PRO, PRO2, MAX];
  const durationArb = fc.oneof(
    fc.constantFrom('P1D', 'P1M', 'PT1H', 'P2W', 'P1Y', 'PT90M', 'P1DT1.5S', 'P1Y2M3DT4H5M6S'),
    fc.integer({ min: 1, max: 400 }).map((n) => `P${n}D`),
    fc.integer({ min: 1, max: 100_000 }).map((n) => `PT${n}S`),
  );
  const stepArb = fc.record({
    plan: fc.constantFrom(...PLANS),
    duration: fc.option(durationArb, { freq: 4, nil: null }),
    advanceMs: fc.oneof(
      fc.constant(0),
      fc.integer({ min: 1, max: 10_000 }),
      fc.integer({ min: 1, max: 90 * DAY }),
    ),
  });

  it('keeps the invariants, loses no time except the rounding, and never throws INVALID_*', () => {
    // How often each situation came up, to make sure the property is not vacuous.
    const seen = {
      conversion: 0,
      noConversion: 0,
      tailMoved: 0,
      tailRecreated: 0,
      conflict: 0,
      redundant: 0,
      permanent: 0,
    };
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 30 }), (steps) => {
        const chain: SimWindow[] = [];
        const ids = { next: 1 };
        let now = new Date(Date.UTC(2024, 0, 31, 10, 0, 0, 123));
        for (const step of steps) {
          now = new Date(now.getTime() + step.advanceMs);
          const grant: Grant = { planId: step.plan.id, planValue: step.plan.value, duration: step.duration };
          const input = chain.filter((w) => !w.cancelled).map(({ cancelled: _c, ...w }) => w);
          const live = liveWindows(input, now);
          const last = live[live.length - 1];
          const tail = last !== undefined && last.validTo === null ? last : undefined;
          const vN = grant.planValue;

          let result: ChainPlan;
          try {
            result = planGrant(input, grant, now);
          } catch (e) {
            expect(e).toBeInstanceOf(DomainError);
            const code = (e as DomainError).code;
            expect(tail).toBeDefined();
            expect((tail as ChainWindow).planValue).toBeGreaterThanOrEqual(vN);
            expect(code).toBe(
              grant.duration === null ? 'REDUNDANT_PERMANENT_PURCHASE' : 'PERMANENT_TAIL_CONFLICT',
            );
            seen[grant.duration === null ? 'redundant' : 'conflict']++;
            continue;
          }
          expect(tail === undefined || tail.planValue < vN).toBe(true);

          const before = weightedRemaining(live, now);
          applyPlan(chain, result, now, grant, ids);
          if (result.moved.length > 0) seen.tailMoved++;
          if (result.created.length > 1) seen.tailRecreated++;
          const liveAfter = liveWindows(
            chain.filter((w) => !w.cancelled),
            now,
          );
          checkChainInvariants(liveAfter);

          const created = result.created[0];
          expect(created.planId).toBe(grant.planId);
          expect(created.validFrom.getTime()).toBeGreaterThanOrEqual(now.getTime());

          // The new window starts at the end of the kept windows, or now (timed rule 4, permanent rule 4).
          const kept = live.filter(
            (w) => w.validTo !== null && (grant.duration === null ? w.planValue > vN : w.planValue >= vN),
          );
          const expectedStart = Math.max(now.getTime(), ...kept.map((w) => (w.validTo as Date).getTime()));
          expect(created.validFrom.getTime()).toBe(expectedStart);

          if (grant.duration === null) {
            // Permanent grant: the new window is the tail; only strictly better timed windows remain.
            expect(result.created).toHaveLength(1);
            expect(liveAfter[liveAfter.length - 1]).toMatchObject({ planId: grant.planId, validTo: null });
            expect(liveAfter.filter((w) => w.validTo !== null).every((w) => w.planValue > vN)).toBe(true);
            seen.permanent++;
            continue;
          }

          // Timed grant.
          const dMs =
            addIsoDuration(created.validFrom, grant.duration).getTime() - created.validFrom.getTime();
          const length = (created.validTo as Date).getTime() - created.validFrom.getTime();
          const convertedCount = live.filter((w) => w.validTo !== null && w.planValue < vN).length;
          const after = weightedRemaining(liveAfter, now);
          seen[convertedCount === 0 ? 'noConversion' : 'conversion']++;
          if (convertedCount === 0) {
            expect(length).toBe(dMs);
            expect(after).toBe(before + dMs * vN);
          } else {
            expect(length).toBeGreaterThanOrEqual(dMs);
            expect((length - dMs) % 1000).toBe(0);
            // No time lost except the rounding of the total to whole seconds, and none created.
            expect(after).toBeGreaterThan(before + dMs * vN - 1000 * vN);
            expect(after).toBeLessThanOrEqual(before + dMs * vN);
            expect(after).toBeGreaterThanOrEqual(before + dMs * vN - (convertedCount + 1) * 1000 * vN);
          }
          // A tail follows the new window.
          if (tail !== undefined) {
            expect(liveAfter[liveAfter.length - 1]).toMatchObject({
              planId: tail.planId,
              validFrom: created.validTo,
              validTo: null,
            });
          }
        }
      }),
      { numRuns: 500 },
    );
    for (const count of Object.values(seen)) expect(count).toBeGreaterThan(10);
  });
});
