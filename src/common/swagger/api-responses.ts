import { applyDecorators, HttpStatus, Type } from '@nestjs/common';
import { ApiExtraModels, ApiResponse, getSchemaPath } from '@nestjs/swagger';
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

/** Documents the error answers of an operation: one response per status, listing the codes. */
export function ApiErrors(...codes: ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return applyDecorators(
    ApiExtraModels(ApiErrorResponse),
    ...[...byStatus.entries()].map(([status, list]) =>
      ApiResponse({
        status,
        description: `Error codes: ${list.join(', ')}`,
        schema: {
          allOf: [
            { $ref: getSchemaPath(ApiErrorResponse) },
            { properties: { error: { properties: { code: { type: 'string', enum: list } } } } },
          ],
        },
      }),
    ),
  );
}
