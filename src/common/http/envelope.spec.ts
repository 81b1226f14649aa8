import { StreamableFile } from '@nestjs/common';
import type { Response } from 'express';
import { envelopeOf, successAnswerOf } from './envelope';

/** What is written for a handler's `result`, for a request with id `id`, answered with `status`. */
function answered(result: unknown, { id = 'rid-1', status = 200, headersSent = false } = {}) {
  const res = { req: { id }, headersSent } as unknown as Response;
  return successAnswerOf(res, result, status);
}

describe('successAnswerOf: every success answer as { ok, requestId, data }', () => {
  it("wraps a handler's result with the request's id", () => {
    expect(answered({ id: 12 }, { id: 'trace-7', status: 201 })).toEqual({
      ok: true,
      requestId: 'trace-7',
      data: { id: 12 },
    });
    expect(answered([1, 2])).toEqual({ ok: true, requestId: 'rid-1', data: [1, 2] });
  });

  it('wraps what is not an object as well: a string, null, nothing (no data key then once serialized)', () => {
    expect(answered('text')).toEqual({ ok: true, requestId: 'rid-1', data: 'text' });
    expect(answered(null)).toEqual({ ok: true, requestId: 'rid-1', data: null });
    expect(JSON.stringify(answered(undefined))).toBe('{"ok":true,"requestId":"rid-1"}');
  });

  it('leaves files, answers without a body (204, 304), errors and answers already written as they are', () => {
    const file = new StreamableFile(Buffer.from('a,b\n'));
    expect(answered(file)).toBe(file);
    expect(answered(undefined, { status: 204 })).toBeUndefined();
    expect(answered('x', { status: 304 })).toBe('x');
    expect(answered({ statusCode: 404 }, { status: 404 })).toEqual({ statusCode: 404 });
    expect(answered(undefined, { headersSent: true })).toBeUndefined();
  });

  it('names the request "unknown" without an id', () => {
    expect(answered(1, { id: null as unknown as string })).toEqual(envelopeOf('unknown', 1));
  });
});
