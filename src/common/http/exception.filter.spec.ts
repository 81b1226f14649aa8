import {
  ArgumentsHost,
  BadRequestException,
  HttpException,
  ImATeapotException,
  Logger,
} from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { AnswerRecorder, attachAnswerRecorder } from './answer-recorder';
import { GlobalExceptionFilter } from './exception.filter';

/** An HTTP host whose response records what the filter sends. */
function hostFor(requestId: string, recorder?: AnswerRecorder) {
  const sent: { status?: number; body?: unknown; text?: string; headers: Record<string, string> } = {
    headers: {},
  };
  const res = {
    headersSent: false,
    setHeader: (name: string, value: string) => (sent.headers[name] = value),
    status(code: number) {
      sent.status = code;
      return this;
    },
    type(value: string) {
      sent.headers['Content-Type'] = value;
      return this;
    },
    json: (body: unknown) => (sent.body = body),
    send: (text: string) => (sent.text = text),
  };
  const req = { id: requestId };
  if (recorder) attachAnswerRecorder(req as never, recorder);
  const host = {
    switchToHttp: () => ({ getRequest: () => req, getResponse: () => res }),
  } as unknown as ArgumentsHost;
  return { host, sent };
}

describe('GlobalExceptionFilter', () => {
  const filter = new GlobalExceptionFilter();
  let errors: jest.SpyInstance;
  let warnings: jest.SpyInstance;
  beforeEach(() => {
    errors = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    warnings = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('answers an unexpected error with a bare 500 and logs it, stack included, under the request id', () => {
    const { host, sent } = hostFor('trace-500');
    filter.catch(new Error('password=hunter2 in a driver message'), host);
    expect(sent.status).toBe(500);
    expect(sent.body).toEqual({
      ok: false,
      requestId: 'trace-500',
      error: { code: 'INTERNAL_ERROR', message: expect.any(String) },
    });
    expect(JSON.stringify(sent.body)).not.toContain('hunter2');
    expect(errors).toHaveBeenCalledWith(
      expect.objectContaining({
        reqId: 'trace-500',
        err: expect.objectContaining({
          message: 'password=hunter2 in a driver message',
          stack: expect.any(String),
        }),
      }),
      'Unhandled error',
    );
  });

  it('logs an unmapped framework error under the request id', () => {
    const { host, sent } = hostFor('trace-418');
    filter.catch(new ImATeapotException(), host);
    expect(sent.status).toBe(500);
    expect(warnings).toHaveBeenCalledWith(
      expect.objectContaining({ reqId: 'trace-418', status: 418 }),
      'Unmapped HTTP error',
    );
  });

  it('maps a framework 400 onto VALIDATION_FAILED without logging it', () => {
    const { host, sent } = hostFor('trace-400');
    filter.catch(new BadRequestException('bad'), host);
    expect(sent.status).toBe(400);
    expect(sent.body).toMatchObject({
      ok: false,
      requestId: 'trace-400',
      error: { code: 'VALIDATION_FAILED' },
    });
    expect(errors).not.toHaveBeenCalled();
    expect(warnings).not.toHaveBeenCalled();
  });

  it("maps the JSON parser's errors by their kind: 413 PAYLOAD_TOO_LARGE, 400 MALFORMED_JSON", () => {
    const tooLarge = Object.assign(new Error('request entity too large'), { type: 'entity.too.large' });
    const big = hostFor('trace-413');
    filter.catch(new HttpException('request entity too large', 413, { cause: tooLarge }), big.host);
    expect(big.sent.status).toBe(413);
    expect(big.sent.body).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
    const malformed = Object.assign(new SyntaxError('Unexpected end'), { type: 'entity.parse.failed' });
    const bad = hostFor('trace-json');
    filter.catch(new BadRequestException('Unexpected end', { cause: malformed }), bad.host);
    expect(bad.sent.body).toMatchObject({ error: { code: 'MALFORMED_JSON' } });
  });

  it("settles a keyed request's error answer with its recorder before sending it", async () => {
    const order: string[] = [];
    const recorder: AnswerRecorder = {
      settle: jest.fn(async (answer) => {
        order.push('settled');
        return answer;
      }),
      abandon: jest.fn(),
    };
    const { host, sent } = hostFor('trace-keyed', recorder);
    filter.catch(new DomainError('CUSTOMER_NOT_FOUND'), host);
    expect(sent.status).toBeUndefined();
    await new Promise((r) => setImmediate(r));
    expect(recorder.settle).toHaveBeenCalledWith({
      status: 404,
      text: JSON.stringify({
        ok: false,
        requestId: 'trace-keyed',
        error: { code: 'CUSTOMER_NOT_FOUND', message: 'Customer not found.' },
      }),
    });
    expect(order).toEqual(['settled']);
    expect(sent.status).toBe(404);
    expect(sent.body).toMatchObject({ error: { code: 'CUSTOMER_NOT_FOUND' } });
  });

  it('sends the answer the recorder gives instead (the work committed with its answer before a 5xx)', async () => {
    const committed = { status: 201, text: '{"ok":true,"requestId":"trace-c","data":{"id":1}}' };
    const recorder: AnswerRecorder = { settle: jest.fn().mockResolvedValue(committed), abandon: jest.fn() };
    const { host, sent } = hostFor('trace-c', recorder);
    filter.catch(new Error('lost after commit'), host);
    await new Promise((r) => setImmediate(r));
    expect(sent.status).toBe(201);
    expect(sent.text).toBe(committed.text);
    expect(sent.body).toBeUndefined();
  });
});
