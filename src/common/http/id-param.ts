import { ArgumentMetadata, Injectable, Param, PipeTransform } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { MAX_INT4 } from './pagination';

/** A numeric path id (1 .. 2^31-1); anything else is 400 VALIDATION_FAILED naming the parameter. */
@Injectable()
export class ParseIdPipe implements PipeTransform<string, number> {
  transform(value: string, metadata: ArgumentMetadata): number {
    const id = /^[0-9]{1,10}$/.test(value) ? Number(value) : NaN;
    if (!Number.isInteger(id) || id < 1 || id > MAX_INT4) {
      const field = metadata.data ?? 'id';
      throw new DomainError('VALIDATION_FAILED', `${field} must be a positive integer`, [
        { field, message: `${field} must be a positive integer` },
      ]);
    }
    return id;
  }
}

/** `@IdParam('customerId') id: number` */
export const IdParam = (name: string) => Param(name, ParseIdPipe);
