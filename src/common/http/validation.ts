import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { ErrorDetail } from '../errors/error-codes';

/**
 * Most `details` an error answer lists. A body within the shape limits of `body-parser.ts` can
 * still break hundreds of rules; the answer names the first ones and says how many there are.
 */
export const MAX_ERROR_DETAILS = 20;

/** Flattens class-validator's tree into `[{ field: 'customer.value', message }]`. */
export function flattenValidationErrors(errors: ValidationError[], parent = ''): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  for (const error of errors) {
    const field = parent ? `${parent}.${error.property}` : error.property;
    for (const constraint of Object.keys(error.constraints ?? {})) {
      let message = error.constraints![constraint];
      if (constraint === 'whitelistValidation') message = `${field} is not a known field`;
      out.push({ field, message });
    }
    if (error.children?.length) out.push(...flattenValidationErrors(error.children, field));
  }
  return out;
}

/**
 * The message of a VALIDATION_FAILED: the one problem itself, or how many fields have problems
 * (a field with several problems, such as a wrong type and a length, counts once).
 */
export function validationSummary(details: ErrorDetail[]): string {
  if (details.length === 1) return details[0].message;
  const fields = new Set(details.map((d) => d.field)).size;
  return fields === 1 ? `${details[0].field} is not valid` : `${fields} fields are not valid`;
}

/**
 * One pipe for every body, query and path value: unknown fields refused, values converted to
 * their declared types, failures as 400 VALIDATION_FAILED with `details`.
 */
export function createValidationPipe(): ValidationPipe {
  return new ApiValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    stopAtFirstError: false,
    exceptionFactory: (errors) => {
      const details = flattenValidationErrors(errors);
      const summary =
        details.length > MAX_ERROR_DETAILS
          ? `${details.length} rules are broken; the first ${MAX_ERROR_DETAILS} are listed`
          : validationSummary(details);
      return new DomainError('VALIDATION_FAILED', summary, details.slice(0, MAX_ERROR_DETAILS));
    },
  });
}

/**
 * A body DTO of a hot route may declare `static fromValidBody(value)`: the instance the rules
 * would make of `value` when it is certainly valid, else `undefined` (anything unusual: the
 * rules then decide and word the errors). Its test compares it with the rules on many bodies.
 */
export interface BodyShortcut {
  fromValidBody(value: unknown): object | undefined;
}

/** A plain JSON object (as `JSON.parse` makes one) with no key but `keys`, else undefined. */
export function plainBody(value: unknown, keys: readonly string[]): Record<string, unknown> | undefined {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype)
    return undefined;
  for (const key in value) if (!keys.includes(key)) return undefined;
  return value as Record<string, unknown>;
}

/**
 * A string of `min` to `max` characters as class-validator's `Length` counts them, when that is
 * certain: strings with surrogate pairs or variation selectors (which `Length` counts otherwise
 * than `.length`) are left to the rules.
 */
export const isPlainLength = (v: unknown, min: number, max: number): v is string =>
  typeof v === 'string' && v.length >= min && v.length <= max && !/[\uD800-\uDFFF]|\uFE0E|\uFE0F/.test(v);

/**
 * Nest's ValidationPipe, with three shortcuts that give the same result without its work on every
 * request, and one rule of its own: path values are passed as they are (each is read by its own
 * pipe, `IdParam`, or is a string). The shortcuts: a body DTO's `fromValidBody` (see
 * `BodyShortcut`); a custom parameter (`@CurrentProject()`, `@IdempotencyScope()`) is passed as
 * it is (the pipe does not validate those); and an empty query for a query DTO that an empty
 * query has once passed is answered with a new instance of the DTO (what transforming `{}` makes:
 * its defaults; the rules cannot judge the same empty object differently the second time).
 */
class ApiValidationPipe extends ValidationPipe {
  private readonly emptyQueryValid = new WeakSet<object>();

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // Custom parameters are not validated by the pipe; path values are read by their own pipe
    // (`IdParam`) or are strings: the pipe's loose number conversion (`+value`) would let `1e1`,
    // `0x10` or ` 12` through as ids before `ParseIdPipe` sees them.
    if (metadata.type === 'custom' || metadata.type === 'param') return value;
    if (metadata.type === 'body' && metadata.metatype && 'fromValidBody' in metadata.metatype) {
      const shortcut = (metadata.metatype as unknown as BodyShortcut).fromValidBody(value);
      if (shortcut !== undefined) return shortcut;
    }
    const dto = metadata.type === 'query' && isEmptyObject(value) ? metadata.metatype : undefined;
    if (dto && this.emptyQueryValid.has(dto)) return new (dto as new () => object)();
    const result: unknown = await super.transform(value, metadata);
    if (dto && result instanceof dto) this.emptyQueryValid.add(dto);
    return result;
  }
}

const isEmptyObject = (value: unknown): boolean => {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  for (const _ in value) return false;
  return true;
};
