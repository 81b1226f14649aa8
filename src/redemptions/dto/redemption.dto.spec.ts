import fc from 'fast-check';
import { expectShortcutAgrees } from '../../../test/support/body-shortcut';
import { RedeemCodeDto } from './redemption.dto';

// The shortcut of the usual redemption body against the rules (test/support/body-shortcut.ts).
const expectAgrees = (body: unknown) => expectShortcutAgrees(RedeemCodeDto, body);

describe('RedeemCodeDto.fromValidBody (the usual redemption body without the rules)', () => {
  it.each([
    { code: '7KQ2-M9XD-4TRB-C1ZP', customer: { type: 'username', value: 'ada' } },
    { code: 'x', customer: { type: 'email', value: 'ada@example.com' }, autoCreate: true },
    { code: 'x'.repeat(64), customer: { type: 'e_2', value: 'v'.repeat(128) }, autoCreate: false },
  ])('takes %j as the rules do', async (body) => {
    expect(await expectAgrees(body)).toBe(true);
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
    { code: '😀', customer: { type: 'username', value: 'ada' } },
  ])('steps aside for %j (the rules decide)', (body) => {
    expect(RedeemCodeDto.fromValidBody(body)).toBeUndefined();
  });

  it('on random bodies, whenever it answers, the rules accept and make the same', async () => {
    const text = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom('', 'username', 'email', 'A', 'a b', 'x'.repeat(16), 'x'.repeat(17), '😀', 'é'),
    );
    const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null));
    const customer = fc.oneof(fc.dictionary(fc.constantFrom('type', 'value', 'other'), value), value);
    const body = fc.record({ code: value, customer, autoCreate: value, other: value }, { requiredKeys: [] });
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        if (await expectAgrees(JSON.parse(JSON.stringify(b)))) answered++;
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
      fc.asyncProperty(usual, async (b) => {
        if (await expectAgrees(JSON.parse(JSON.stringify(b)))) answered++;
      }),
      { numRuns: 200 },
    );
    expect(answered).toBeGreaterThan(100);
  });
});
