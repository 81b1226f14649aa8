import { registerDecorator, ValidationOptions } from 'class-validator';
import { isValidIsoDuration } from '../chain/duration';

/** A positive ISO 8601 duration such as `P30D`, `P1M` or `PT1H`. */
export function IsIsoDuration(options?: ValidationOptions) {
  return (target: object, propertyName: string) =>
    registerDecorator({
      name: 'isIsoDuration',
      target: target.constructor,
      propertyName,
      options: { message: `${propertyName} must be a positive ISO 8601 duration such as P30D, P1M or PT1H`, ...options },
      validator: { validate: (value: unknown) => isValidIsoDuration(value) },
    });
}
