import fc from 'fast-check';
import { createValidationPipe } from '../../common/http/validation';
import { CheckDto, UsageEventDto } from './entitlement.dto';

// The check and consume bodies as the global ValidationPipe (the rules of the DTOs) judges them.

const pipe = createValidationPipe();
type Dto = typeof CheckDto | typeof UsageEventDto;

/** What the pipe makes of `body`: an instance of `dto`, or the code of its refusal. */
async function judged(
  dto: Dto,
  body: unknown,
): Promise<{ ok: true; value: object } | { ok: false; code: string }> {
  try {
    return { ok: true, value: (await pipe.transform(body, { type: 'body', metatype: dto })) as object };
  } catch (error) {
    return { ok: false, code: String((error as { code?: unknown }).code) };
  }
}

/** Expects the pipe to accept `body` and make an instance of `dto` with exactly its fields. */
async function expectAccepted(dto: Dto, body: object): Promise<void> {
  const result = await judged(dto, body);
  expect(result.ok).toBe(true);
  if (!result.ok) return;
  expect(result.value).toBeInstanceOf(dto);
  expect({ ...result.value }).toEqual({ ...body });
}

const dtos = [
  { name: 'CheckDto', dto: CheckDto },
  { name: 'UsageEventDto', dto: UsageEventDto },
] as const;

describe('the check and consume bodies through the global ValidationPipe', () => {
  it.each([
    { customerId: 12, feature: 'api-calls' },
    { customerId: 12, feature: 'api-calls', amount: 0 },
    { customerId: 1, feature: 'a', amount: 1.5 },
    { customerId: 2147483647, feature: 'x_y-z', amount: 1e-6 },
    { customerId: 3, feature: 'api-calls', amount: 1_000_000_000_000 },
  ])('CheckDto takes %j', async (body) => {
    await expectAccepted(CheckDto, body);
  });

  it.each([
    { customerId: 12, feature: 'api-calls', amount: 1, eventId: 'e-1' },
    { customerId: 12, feature: 'api-calls', amount: 0.000001, eventId: ' ~', allowOverage: true },
    { customerId: 12, feature: 'api-calls', amount: 2.5, eventId: 'x'.repeat(255), allowOverage: false },
    Object.assign(Object.create(null) as object, { customerId: 12, feature: 'a', amount: 1, eventId: 'e' }),
  ])('UsageEventDto takes %j', async (body) => {
    await expectAccepted(UsageEventDto, body);
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
  ])('refuses %j as a consume and as a check: 400 VALIDATION_FAILED', async (body) => {
    for (const dto of [UsageEventDto, CheckDto])
      expect(await judged(dto, body)).toEqual({ ok: false, code: 'VALIDATION_FAILED' });
  });

  it.each(dtos)(
    '$name: on random bodies, an instance of the DTO or 400 VALIDATION_FAILED, and the usual bodies taken',
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
      await fc.assert(
        fc.asyncProperty(body, async (b) => {
          // as JSON.parse makes it: a plain object
          const result = await judged(dto, { ...b });
          if (result.ok) expect(result.value).toBeInstanceOf(dto);
          else expect(result.code).toBe('VALIDATION_FAILED');
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
                eventId: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => /^[\x20-\x7E]+$/.test(s)),
                allowOverage: fc.boolean(),
              },
              { requiredKeys: ['customerId', 'feature', 'amount', 'eventId'] },
            );
      await fc.assert(
        fc.asyncProperty(usual, async (b) => expectAccepted(dto, b)),
        { numRuns: 200 },
      );
    },
  );
});
