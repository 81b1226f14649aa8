import fc from 'fast-check';
import { createValidationPipe } from '../../common/http/validation';
import { RedeemCodeDto } from './redemption.dto';

// The redemption body as the global ValidationPipe (the rules of the DTO) judges it.

const pipe = createValidationPipe();

async function judged(body: unknown): Promise<{ ok: true; value: object } | { ok: false; code: string }> {
  try {
    return {
      ok: true,
      value: (await pipe.transform(body, { type: 'body', metatype: RedeemCodeDto })) as object,
    };
  } catch (error) {
    return { ok: false, code: String((error as { code?: unknown }).code) };
  }
}

/** Expects the pipe to take `body` as a RedeemCodeDto with the same fields (its customer a nested DTO). */
async function expectAccepted(body: { customer: object }): Promise<void> {
  const result = await judged(body);
  expect(result.ok).toBe(true);
  if (!result.ok) return;
  expect(result.value).toBeInstanceOf(RedeemCodeDto);
  expect(JSON.parse(JSON.stringify(result.value))).toEqual(body);
}

describe('RedeemCodeDto through the global ValidationPipe', () => {
  it.each([
    { code: '7KQ2-M9XD-4TRB-C1ZP', customer: { type: 'username', value: 'ada' } },
    { code: 'x', customer: { type: 'email', value: 'ada@example.com' }, autoCreate: true },
    { code: 'x'.repeat(64), customer: { type: 'e_2', value: 'v'.repeat(128) }, autoCreate: false },
    { code: '😀', customer: { type: 'username', value: 'ada' } },
  ])('takes %j', async (body) => {
    await expectAccepted(body);
  });

  it.each([
    null,
    [],
    { code: '', customer: { type: 'username', value: 'ada' } },
    { code: 'x'.repeat(65), customer: { type: 'username', value: 'ada' } },
    { code: 7, customer: { type: 'username', value: 'ada' } },
    { code: 'x' },
    { code: 'x', customer: null },
    { code: 'x', customer: { type: 'Username', value: 'ada' } },
    { code: 'x', customer: { type: 'username', value: '' } },
    { code: 'x', customer: { type: 'username', value: 'v'.repeat(129) } },
    { code: 'x', customer: { type: 'username', value: 'ada', extra: 1 } },
    { code: 'x', customer: { type: 'username', value: 'ada' }, autoCreate: 'yes' },
    { code: 'x', customer: { type: 'username', value: 'ada' }, planId: 1 },
  ])('refuses %j: 400 VALIDATION_FAILED', async (body) => {
    expect(await judged(body)).toEqual({ ok: false, code: 'VALIDATION_FAILED' });
  });

  it('on random bodies, a RedeemCodeDto or 400 VALIDATION_FAILED, and the usual bodies taken', async () => {
    const text = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom('', 'username', 'email', 'A', 'a b', 'x'.repeat(16), 'x'.repeat(17), '😀', 'é'),
    );
    const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null));
    const customer = fc.oneof(fc.dictionary(fc.constantFrom('type', 'value', 'other'), value), value);
    const body = fc.record({ code: value, customer, autoCreate: value, other: value }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const result = await judged(JSON.parse(JSON.stringify(b)));
        if (result.ok) expect(result.value).toBeInstanceOf(RedeemCodeDto);
        else expect(result.code).toBe('VALIDATION_FAILED');
      }),
      { numRuns: 400 },
    );
    const usual = fc.record(
      {
        code: fc.string({ minLength: 1, maxLength: 64 }),
        customer: fc.record({
          type: fc.constantFrom('username', 'email', 'ext_id'),
          value: fc.string({ minLength: 1, maxLength: 128 }),
        }),
        autoCreate: fc.boolean(),
      },
      { requiredKeys: ['code', 'customer'] },
    );
    await fc.assert(
      fc.asyncProperty(usual, async (b) => expectAccepted(JSON.parse(JSON.stringify(b)))),
      { numRuns: 200 },
    );
  });
});
