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
 * Nest's ValidationPipe with one rule of its own: path values are passed as they are. Each is
 * read by its own pipe (`IdParam`) or is a string, and the pipe's loose number conversion
 * (`+value`) would let `1e1`, `0x10` or ` 12` through as ids before `ParseIdPipe` sees them.
 */
class ApiValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'param') return value;
    return super.transform(value, metadata) as Promise<unknown>;
  }
}
