import fc from 'fast-check';
import { expectShortcutAgrees as expectAgrees } from '../../../test/support/body-shortcut';
import { CheckDto, UsageEventDto } from './entitlement.dto';

// The shortcut of the usual check and consume bodies against the rules (test/support/body-shortcut.ts).

const dtos = [
  { name: 'CheckDto', dto: CheckDto },
  { name: 'UsageEventDto', dto: UsageEventDto },
] as const;

describe('fromValidBody (the usual check and consume bodies without the rules)', () => {
  it.each([
    { customerId: 12, feature: 'api-calls' },
    { customerId: 12, feature: 'api-calls', amount: 0 },
    { customerId: 1, feature: 'a', amount: 1.5 },
    { customerId: 2147483647, feature: 'x_y-z', amount: 1e-6 },
    { customerId: 3, feature: 'api-calls', amount: 1_000_000_000_000 },
  ])('CheckDto takes %j as the rules do', async (body) => {
    expect(await expectAgrees(CheckDto, body)).toBe(true);
  });

  it.each([
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: 'e-1' },
    { customerId: 12, feature: 'api-calls', amount: 0.000001, eventId: ' ~', allowOverage: true },
    { customerId: 12, feature: 'api-calls', amount: 2.5, eventId: 'x'.repeat(255), allowOverage: false },
  ])('UsageEventDto takes %j as the rules do', async (body) => {
    expect(await expectAgrees(UsageEventDto, body)).toBe(true);
  });

  it.each([
    null,
    [],
    'text',
    { customerId: 12 },
    { feature: 'api-calls', amount: 1, eventId: 'e' },
    { customerId: 0, feature: 'api-calls', amount: 1, eventId: 'e' },
    { customerId: 2147483648, feature: 'api-calls', amount: 1, eventId: 'e' },
    { customerId: 1.5, feature: 'api-calls', amount: 1, eventId: 'e' },
    { customerId: '12', feature: 'api-calls', amount: 1, eventId: 'e' },
    { customerId: 12, feature: 'API', amount: 1, eventId: 'e' },
    { customerId: 12, feature: 'api-calls', amount: 0, eventId: 'e' },
    { customerId: 12, feature: 'api-calls', amount: -1, eventId: 'e' },
    { customerId: 12, feature: 'api-calls', amount: 1e-7, eventId: 'e' },
    { customerId: 12, feature: 'api-calls', amount: 1e13, eventId: 'e' },
    { customerId: 12, feature: 'api-calls', amount: '1', eventId: 'e' },
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: '' },
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: 'a\tb' },
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: 'x'.repeat(256) },
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: 'e', allowOverage: 'yes' },
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: 'e', featureId: 3 },
    {
      customerId: 12,
      feature: 'api-calls',
      amount: 1,
      eventId: 'e',
      customer: { type: 'username', value: 'a' },
    },
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: 'e', unknown: 1 },
    Object.assign(Object.create(null) as object, { customerId: 12, feature: 'a', amount: 1, eventId: 'e' }),
  ])('steps aside for %j (the rules decide)', (body) => {
    expect(UsageEventDto.fromValidBody(body)).toBeUndefined();
    const check = CheckDto.fromValidBody(body);
    // a check has no eventId or allowOverage: only bodies without them can be a valid check
    if (check !== undefined) expect(body).not.toHaveProperty('eventId');
  });

  it.each(dtos)(
    '$name: on random bodies, whenever it answers, the rules accept and make the same',
    async ({ dto }) => {
      const value = fc.oneof(
        fc.integer({ min: -2, max: 2147483649 }),
        fc.double({ noNaN: true }),
        fc.constantFrom(0, 1, 1.5, 1e-6, 1e-7, 1_000_000_000_000, 1_000_000_000_001, -0),
        fc.string({ maxLength: 8 }),
        fc.constantFrom('api-calls', 'a', 'A', '-a', 'e', 'x'.repeat(64), 'x'.repeat(65)),
        fc.boolean(),
        fc.constant(null),
      );
      const body = fc.dictionary(
        fc.constantFrom('customerId', 'feature', 'amount', 'eventId', 'allowOverage', 'featureId', 'other'),
        value,
      );
      let answered = 0;
      await fc.assert(
        fc.asyncProperty(body, async (b) => {
          // as JSON.parse makes it: a plain object
          if (await expectAgrees(dto, { ...b })) answered++;
        }),
        { numRuns: 400 },
      );
      const usual =
        dto === CheckDto
          ? fc.record(
              {
                customerId: fc.integer({ min: 1, max: 2147483647 }),
                feature: fc.constantFrom('api-calls', 'a'),
                amount: fc.constantFrom(0, 1, 2.25, 1e-6),
              },
              { requiredKeys: ['customerId', 'feature'] },
            )
          : fc.record(
              {
                customerId: fc.integer({ min: 1, max: 2147483647 }),
                feature: fc.constantFrom('api-calls', 'a'),
                amount: fc.constantFrom(1, 2.25, 1e-6),
                eventId: fc.string({ minLength: 1, maxLength: 20 }),
                allowOverage: fc.boolean(),
              },
              { requiredKeys: ['customerId', 'feature', 'amount', 'eventId'] },
            );
      await fc.assert(
        fc.asyncProperty(usual, async (b) => {
          if (await expectAgrees(dto, b)) answered++;
        }),
        { numRuns: 200 },
      );
      expect(answered).toBeGreaterThan(20);
    },
  );
});
