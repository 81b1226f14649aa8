import { randomUUID } from 'node:crypto';
import { timeOrderedUuid } from '../crypto/random';
import { requestIdFor } from './request-id';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('request ids', () => {
  it('keeps an acceptable incoming id, and makes a version 7 UUID otherwise', () => {
    expect(requestIdFor('client-req.1:a')).toBe('client-req.1:a');
    expect(requestIdFor(['first', 'second'])).toBe('first');
    for (const refused of [undefined, '', 'has space', 'x'.repeat(129), 'a/b'])
      expect(requestIdFor(refused)).toMatch(V7);
  });

  it('writes the milliseconds first, so that later ids sort after earlier ones', () => {
    const at = Date.UTC(2026, 10, 29, 12, 0, 0, 123);
    const id = timeOrderedUuid(at);
    expect(id).toMatch(V7);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
    const ids = [0, 1, 255, 256, at, at + 1, 2 ** 48 - 1].map((t) => timeOrderedUuid(t));
    expect([...ids].sort()).toEqual(ids);
  });

  it('draws the rest at random', () => {
    const tails = new Set(Array.from({ length: 1_000 }, () => timeOrderedUuid(5).slice(15)));
    expect(tails.size).toBe(1_000);
    expect(randomUUID().slice(14, 15)).toBe('4'); // the digit replaced is the version's
  });
});
