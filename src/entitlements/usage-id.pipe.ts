import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { DomainError } from '../common/errors/domain-error';

/** A usage record id (a positive bigint, up to 2^53 - 1 so that JSON carries it exactly), as a string. */
@Injectable()
export class ParseUsageIdPipe implements PipeTransform<string, string> {
  transform(value: string, metadata: ArgumentMetadata): string {
    const field = metadata.data ?? 'usageId';
    if (!/^[0-9]{1,16}$/.test(value) || Number(value) < 1 || Number(value) > Number.MAX_SAFE_INTEGER)
      throw new DomainError('VALIDATION_FAILED', `${field} must be a positive integer`, [
        { field, message: `${field} must be a positive integer` },
      ]);
    return String(Number(value));
  }
}
