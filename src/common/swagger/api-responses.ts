import { applyDecorators, HttpStatus, Type } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import { ERROR_STATUS, ErrorCode } from '../errors/error-codes';
import { ApiErrorResponse } from '../errors/error-response';

const envelopeProps = (data: object) => ({
  type: 'object',
  required: ['ok', 'requestId', 'data'],
  properties: {
    ok: { type: 'boolean', enum: [true], example: true, description: '`true` on success.' },
    requestId: {
      type: 'string',
      example: '6f1c2f9e-7d0a-4a55-9d3b-1b7f9a0c1e22',
      description: 'Identifier of the request, also in the `X-Request-Id` header.',
    },
    data,
  },
});

export const PAGE_SCHEMA_REF = '#/components/schemas/Page';

const pageInt = (description: string, example: number) => ({
  type: 'integer',
  format: 'int32',
  minimum: 0,
  maximum: 2147483647,
  description,
  example,
});

/**
 * What every page object (docs/api-guide.md#envelope-and-errors) holds beside its items: declared
 * once under `components.schemas` (`Page`), each list adding only the type of its `data`.
 */
export const PAGE_SCHEMA = {
  type: 'object',
  description: 'One page of a list: `data` holds its items.',
  required: ['total', 'page', 'pageSize', 'totalPages'],
  properties: {
    total: pageInt('Total number of matches, on every page.', 42),
    page: pageInt('This page, from 1.', 1),
    pageSize: pageInt('Items per page.', 10),
    totalPages: pageInt('Number of pages (0 when nothing matches).', 5),
  },
};

/** The page object of one item type: `Page` and a `data` array of those items. */
function pageSchema(item: object): object {
  return {
    allOf: [
      { $ref: PAGE_SCHEMA_REF },
      {
        type: 'object',
        required: ['data'],
        properties: {
          data: {
            type: 'array',
            items: item,
            maxItems: 100,
            description: 'The items of this page (at most `pageSize`, itself at most 100).',
          },
        },
      },
    ],
  };
}

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
  if (options.paged) data = pageSchema(item);
  return applyDecorators(
    ApiExtraModels(model),
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
      description: list.join(', '),
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
