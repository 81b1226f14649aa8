import { applyDecorators, HttpStatus, Type } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { ERROR_STATUS, ErrorCode } from '../errors/error-codes';
import { ApiErrorResponse } from '../errors/error-response';
import { Page } from '../http/pagination';

const envelopeProps = (data: object) => ({
  type: 'object',
  required: ['ok', 'requestId', 'data'],
  properties: {
    ok: { type: 'boolean', example: true },
    requestId: { type: 'string', example: '6f1c2f9e-7d0a-4a55-9d3b-1b7f9a0c1e22' },
    data,
  },
});

interface EnvelopeOptions {
  status?: number;
  description?: string;
  /** The data is a page object whose items are `model`. */
  paged?: boolean;
  isArray?: boolean;
}

/** Documents the enveloped success answer `{ ok, requestId, data }` of one operation. */
export function ApiEnvelope(model: Type<unknown>, options: EnvelopeOptions = {}) {
  const item = { $ref: getSchemaPath(model) };
  let data: object = options.isArray ? { type: 'array', items: item } : item;
  if (options.paged) {
    data = {
      allOf: [{ $ref: getSchemaPath(Page) }, { properties: { data: { type: 'array', items: item } } }],
    };
  }
  return applyDecorators(
    ApiExtraModels(model, Page),
    ApiResponse({
      status: options.status ?? HttpStatus.OK,
      description: options.description ?? 'Success',
      schema: envelopeProps(data),
    }),
  );
}

const ERROR_CODES = Symbol('api-error-codes');

/**
 * Documents the error answers of an operation: one response per status, listing every code of
 * that status. Codes given at several levels (a class-wide auth decorator and the handler itself)
 * are merged per handler, so one status never hides the codes of another decorator.
 */
export function ApiErrors(...codes: ErrorCode[]) {
  return (target: object, key?: string | symbol, descriptor?: PropertyDescriptor): void => {
    if (descriptor && key !== undefined) {
      documentErrors(target, key, descriptor, codes);
      return;
    }
    const proto = (target as { prototype: object }).prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const method = Object.getOwnPropertyDescriptor(proto, name);
      if (name !== 'constructor' && typeof method?.value === 'function')
        documentErrors(proto, name, method, codes);
    }
  };
}

function documentErrors(
  proto: object,
  key: string | symbol,
  descriptor: PropertyDescriptor,
  codes: ErrorCode[],
): void {
  const handler = descriptor.value as object;
  const merged = [
    ...new Set([...((Reflect.getMetadata(ERROR_CODES, handler) as ErrorCode[] | undefined) ?? []), ...codes]),
  ];
  Reflect.defineMetadata(ERROR_CODES, merged, handler);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of merged)
    byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  ApiExtraModels(ApiErrorResponse)(proto, key, descriptor);
  for (const [status, list] of byStatus) {
    ApiResponse({
      status,
      description: `Error codes: ${list.join(', ')}`,
      schema: {
        allOf: [
          { $ref: getSchemaPath(ApiErrorResponse) },
          { properties: { error: { properties: { code: { type: 'string', enum: list } } } } },
        ],
      },
    })(proto, key, descriptor);
  }
}

/** The answer of an operation that has nothing else to say (a delete, a logout). */
export class SuccessView {
  @ApiProperty({ example: true }) success: true;
}
