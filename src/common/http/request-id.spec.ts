import { requestIdFor } from './request-id';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request ids', () => {
  it('keeps an acceptable incoming id, and makes a version 7 UUID otherwise', () => {
    expect(requestIdFor('client-req.1:a')).toBe('client-req.1:a');
    expect(requestIdFor(['first', 'second'])).toBe('first');
    for (const refused of [undefined, '', 'has space', 'x'.repeat(129), 'a/b'])
      expect(requestIdFor(refused)).toMatch(V7);
  });
});
