import { BadRequestException, HttpException } from '@nestjs/common';
import {
  BODY_MAX_DEPTH,
  BODY_MAX_ITEMS,
  BODY_MAX_KEYS,
  BODY_MAX_NODES,
  bodyParserErrorOf,
  bodyShapeError,
  isJsonContentType,
  refuseBeforeParsing,
} from './body-parser';

const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)]);

describe('bodyShapeError: the limits of a parsed body', () => {
  it('takes a body within every limit', () => {
    expect(bodyShapeError({ a: [1, 'x', null, true], b: { c: nested(BODY_MAX_DEPTH - 2) } })).toBeUndefined();
    expect(bodyShapeError('text')).toBeUndefined();
    expect(bodyShapeError(Array.from({ length: BODY_MAX_ITEMS }, () => 0))).toBeUndefined();
  });

  it('names the object with too many keys, the array with too many items, or the body for too many values', () => {
    const wide = Object.fromEntries(Array.from({ length: BODY_MAX_KEYS + 1 }, (_, i) => [`k${i}`, i]));
    expect(bodyShapeError(wide)).toEqual({ field: 'body', message: 'has more than 100 keys' });
    expect(bodyShapeError({ a: { customer: wide } })).toEqual({
      field: 'a.customer',
      message: 'has more than 100 keys',
    });
    expect(bodyShapeError({ identifiers: Array.from({ length: BODY_MAX_ITEMS + 1 }, () => 0) })).toEqual({
      field: 'identifiers',
      message: 'has more than 1000 items',
    });
    const many = { quotas: Array.from({ length: 20 }, () => Array.from({ length: 600 }, () => 0)) };
    expect(bodyShapeError(many)).toEqual({
      field: 'body',
      message: `holds more than ${BODY_MAX_NODES} values in all`,
    });
  });

  it('refuses nesting past the limit and U+0000 in a string or a key, naming where', () => {
    expect(bodyShapeError({ name: nested(BODY_MAX_DEPTH + 5) })).toEqual({
      field: expect.stringMatching(/^name(\[0\])+$/),
      message: 'nests deeper than 32 levels of arrays and objects',
    });
    expect(bodyShapeError({ list: [{ v: 'a\u0000' }] })).toEqual({
      field: 'list[0].v',
      message: expect.stringContaining('U+0000'),
    });
    expect(bodyShapeError({ customer: { 'k\u0000': 1 } })).toEqual({
      field: 'customer',
      message: expect.stringContaining('has a key that'),
    });
  });

  it('reports the first problem in the order of the text', () => {
    expect(
      bodyShapeError({ a: 'x\u0000', b: Array.from({ length: BODY_MAX_ITEMS + 1 }, () => 0) })?.field,
    ).toBe('a');
    expect(
      bodyShapeError({ b: Array.from({ length: BODY_MAX_ITEMS + 1 }, () => 0), a: 'x\u0000' })?.field,
    ).toBe('b');
  });
});

describe("the JSON parser's errors and content types", () => {
  const parserError = (type: string, status: number) =>
    Object.assign(new Error(type), { type, status, statusCode: status, expose: true });

  it('maps the parser errors, raw or as the cause Nest maps them to, onto 413, 400 and 415', () => {
    expect(bodyParserErrorOf(parserError('entity.too.large', 413))?.code).toBe('PAYLOAD_TOO_LARGE');
    const parse = new BadRequestException('Unexpected end', {
      cause: parserError('entity.parse.failed', 400),
    });
    expect(bodyParserErrorOf(parse)?.code).toBe('MALFORMED_JSON');
    const charset = new HttpException('unsupported charset', 415, {
      cause: parserError('charset.unsupported', 415),
    });
    expect(bodyParserErrorOf(charset)).toMatchObject({
      code: 'UNSUPPORTED_MEDIA_TYPE',
      message: 'Request bodies must be UTF-8 JSON.',
    });
    expect(bodyParserErrorOf(parserError('request.aborted', 400))?.code).toBe('MALFORMED_JSON');
    expect(bodyParserErrorOf(new Error('other'))).toBeUndefined();
    expect(bodyParserErrorOf(new BadRequestException('x'))).toBeUndefined();
  });

  it('takes application/json and application/*+json, parameters ignored, and nothing else', () => {
    expect(isJsonContentType('application/json; charset=utf-8')).toBe(true);
    expect(isJsonContentType('Application/Problem+JSON')).toBe(true);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });
});

describe('refuseBeforeParsing: nesting, and a top level too wide, refused before the body is parsed', () => {
  const bytes = (text: string) => Buffer.from(text, 'utf8');
  const refusal = (text: string) => {
    try {
      refuseBeforeParsing(bytes(text));
      return undefined;
    } catch (error) {
      return bodyParserErrorOf(error);
    }
  };

  it('takes nesting at the limit, however wide', () => {
    const atLimit = `${'['.repeat(BODY_MAX_DEPTH - 1)}[${'1,'.repeat(999)}1]${']'.repeat(BODY_MAX_DEPTH - 1)}`;
    expect(refusal(atLimit)).toBeUndefined();
    expect(refusal(JSON.stringify({ a: { b: [{ c: nested(BODY_MAX_DEPTH - 4) }] } }))).toBeUndefined();
  });

  it('refuses one level more as 400 VALIDATION_FAILED, with the same words as the parsed-body check', () => {
    const error = refusal(JSON.stringify(nested(BODY_MAX_DEPTH + 1)));
    expect(error).toMatchObject({
      code: 'VALIDATION_FAILED',
      details: [{ field: 'body', message: 'nests deeper than 32 levels of arrays and objects' }],
    });
    expect(refusal(`${'['.repeat(500_000)}${']'.repeat(500_000)}`)?.code).toBe('VALIDATION_FAILED');
  });

  it('refuses a top-level object or array with too many members, as the parsed-body check does', () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    const items = (n: number) => Array.from({ length: n }, (_, i) => i);
    expect(refusal(JSON.stringify(keys(BODY_MAX_KEYS)))).toBeUndefined();
    expect(refusal(JSON.stringify(items(BODY_MAX_ITEMS)))).toBeUndefined();
    for (const body of [keys(BODY_MAX_KEYS + 1), keys(80_000), items(BODY_MAX_ITEMS + 1)]) {
      const error = refusal(JSON.stringify(body));
      expect(error).toMatchObject({ code: 'VALIDATION_FAILED', details: [bodyShapeError(body)] });
    }
    expect(refusal(JSON.stringify(keys(BODY_MAX_KEYS + 1)))?.details).toEqual([
      { field: 'body', message: 'has more than 100 keys' },
    ]);
  });

  it('counts only the top level, and no comma inside a string', () => {
    // nested members are the parsed-body check's, which names their path
    const wide = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, i]));
    expect(refusal(JSON.stringify({ customer: wide }))).toBeUndefined();
    expect(refusal(JSON.stringify({ list: Array.from({ length: 5_000 }, () => 0) }))).toBeUndefined();
    expect(
      refusal(JSON.stringify({ note: ','.repeat(10_000), quoted: `\\",${','.repeat(200)}` })),
    ).toBeUndefined();
    expect(refusal(JSON.stringify([{ a: 1, b: 2 }, [1, 2, 3], ','.repeat(2_000)]))).toBeUndefined();
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ s: '['.repeat(100), t: `\\"${'{'.repeat(100)}`, u: ['"[[["'] });
    expect(refusal(text)).toBeUndefined();
  });
});
