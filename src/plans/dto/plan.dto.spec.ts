import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { CreatePlanDto, UpdatePlanDto } from './plan.dto';
import { decimalPlaces } from '../../common/http/validators';

const errorsOf = (cls: new () => object, body: object) =>
  validateSync(plainToInstance(cls, body), { whitelist: true, forbidNonWhitelisted: true }).map(
    (e) => e.property,
  );

describe('decimalPlaces', () => {
  it.each([
    [0, 0],
    [10, 0],
    [10.5, 1],
    [9.99, 2],
    [1.005, 3],
    [1e-7, 7],
    [1.5e-7, 8],
    [1e21, 0],
    [-0.25, 2],
  ])('%p has %p', (value, places) => expect(decimalPlaces(value)).toBe(places));
});

describe('plan DTOs', () => {
  const plan = { slug: 'pro', name: 'Pro', value: 9.99, group: 'pro' };

  it('accepts a valid plan and refuses values with more than two decimals', () => {
    expect(errorsOf(CreatePlanDto, plan)).toEqual([]);
    expect(errorsOf(CreatePlanDto, { ...plan, value: 9.999 })).toEqual(['value']);
    expect(errorsOf(CreatePlanDto, { ...plan, value: 1e-7 })).toEqual(['value']);
  });

  it('takes at most 100 quotas (the documented maxItems)', () => {
    const quotas = (n: number) => Array.from({ length: n }, (_, i) => ({ featureId: i + 1, limit: 1 }));
    expect(errorsOf(CreatePlanDto, { ...plan, quotas: quotas(100) })).toEqual([]);
    expect(errorsOf(CreatePlanDto, { ...plan, quotas: quotas(101) })).toEqual(['quotas']);
    expect(errorsOf(UpdatePlanDto, { quotas: quotas(101) })).toEqual(['quotas']);
  });

  it('checks the reset interval with the ISO 8601 duration rules', () => {
    const quota = (resetInterval: unknown) => ({
      ...plan,
      quotas: [{ featureId: 1, limit: 1, resetInterval }],
    });
    for (const ok of ['P1M', 'PT1H', 'P1D', null, undefined])
      expect(errorsOf(CreatePlanDto, quota(ok))).toEqual([]);
    for (const bad of ['P1X', 'P0D', '', 5]) expect(errorsOf(CreatePlanDto, quota(bad))).toEqual(['quotas']);
  });

  it('lets an update leave fields out but refuses null', () => {
    expect(errorsOf(UpdatePlanDto, {})).toEqual([]);
    expect(errorsOf(UpdatePlanDto, { name: null, quotas: null, value: null }).sort()).toEqual([
      'name',
      'quotas',
      'value',
    ]);
  });
});
