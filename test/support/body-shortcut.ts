import { ArgumentMetadata, ValidationPipe } from '@nestjs/common';
import { BodyShortcut, createValidationPipe } from '../../src/common/http/validation';

// A body DTO's shortcut (`fromValidBody`, see `BodyShortcut`) against the rules themselves:
// whenever it answers, the rules accept the same body and make the same instance; on anything
// else it steps aside, so the rules word the errors.

const pipe = createValidationPipe();

/** The rules alone: Nest's ValidationPipe with the service's options, without the shortcuts. */
async function viaRules(value: unknown, metatype: ArgumentMetadata['metatype']) {
  try {
    const transformed: unknown = await ValidationPipe.prototype.transform.call(pipe, value, {
      type: 'body',
      metatype,
    });
    return { ok: true as const, value: transformed };
  } catch {
    return { ok: false as const };
  }
}

/**
 * False when `dto`'s shortcut steps aside for `body`; else expects the rules to accept it and make
 * an equal instance, and the service's pipe to answer with the shortcut, and answers true.
 */
export async function expectShortcutAgrees(
  dto: BodyShortcut & NonNullable<ArgumentMetadata['metatype']>,
  body: unknown,
): Promise<boolean> {
  const shortcut = dto.fromValidBody(body);
  if (shortcut === undefined) return false;
  const reference = await viaRules(body, dto);
  expect(reference.ok).toBe(true);
  expect(shortcut).toBeInstanceOf(dto);
  expect(shortcut).toEqual(reference.ok ? reference.value : undefined);
  expect(await pipe.transform(body, { type: 'body', metatype: dto })).toEqual(shortcut);
  return true;
}
