import {
  CODE_ALPHABET,
  encodeCode,
  formatCode,
  generateCode,
  generateCodes,
  normaliseCode,
  normaliseCodeFragment,
} from './code-format';

const NORMALISED = /^[0-9A-HJKMNP-TV-Z]{16}$/;

describe('code format', () => {
  describe('alphabet', () => {
    it('is Crockford base32: 32 distinct characters without I, L, O and U', () => {
      expect(CODE_ALPHABET).toHaveLength(32);
      expect(new Set(CODE_ALPHABET).size).toBe(32);
      for (const c of 'ILOU') expect(CODE_ALPHABET).not.toContain(c);
      expect(CODE_ALPHABET).toBe('0123456789ABCDEFGHJKMNPQRSTVWXYZ');
    });
  });

  describe('encodeCode', () => {
    it('reads 10 bytes as 16 groups of 5 bits, most significant first', () => {
      expect(encodeCode(Buffer.alloc(10, 0))).toBe('0000000000000000');
      expect(encodeCode(Buffer.alloc(10, 0xff))).toBe('ZZZZZZZZZZZZZZZZ');
      // reference values: RFC 4648 base32 of the same bytes, mapped onto the Crockford alphabet
      expect(encodeCode(Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]))).toBe('000G40R40M30E209');
      expect(encodeCode(Buffer.from('deadbeefcafebabe0123', 'hex'))).toBe('VTPVXVYAZTXBW093');
    });

    it('reads from an offset', () => {
      const bytes = Buffer.concat([Buffer.alloc(10, 0xff), Buffer.from('deadbeefcafebabe0123', 'hex')]);
      expect(encodeCode(bytes, 10)).toBe('VTPVXVYAZTXBW093');
    });
  });

  describe('generateCode', () => {
    it('makes 16 characters of the alphabet', () => {
      const code = generateCode();
      expect(code).toMatch(NORMALISED);
      expect(normaliseCode(code)).toBe(code);
    });

    it('makes 10,000 distinct, valid codes', () => {
      const codes = Array.from({ length: 10_000 }, generateCode);
      expect(new Set(codes).size).toBe(10_000);
      expect(codes.filter((code) => !NORMALISED.test(code))).toEqual([]);
    });

    it('generateCodes makes 10,000 distinct, valid codes from one buffer', () => {
      const codes = generateCodes(10_000);
      expect(codes).toHaveLength(10_000);
      expect(new Set(codes).size).toBe(10_000);
      expect(codes.filter((code) => !NORMALISED.test(code))).toEqual([]);
    });

    it('uses every character of the alphabet in every position (80 bits, no fixed bits)', () => {
      const seen = Array.from({ length: 16 }, () => new Set<string>());
      for (const code of generateCodes(5_000)) {
        for (let p = 0; p < 16; p++) seen[p].add(code[p]);
      }
      for (const set of seen) expect(set.size).toBe(32);
    });
  });

  describe('formatCode', () => {
    it('shows four groups of four', () => {
      expect(formatCode('7KQ2M9XD4TRBC1ZP')).toBe('7KQ2-M9XD-4TRB-C1ZP');
    });

    it('round-trips with normaliseCode', () => {
      for (let i = 0; i < 100; i++) {
        const code = generateCode();
        const shown = formatCode(code);
        expect(shown).toMatch(/^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4}$/);
        expect(normaliseCode(shown)).toBe(code);
      }
    });
  });

  describe('normaliseCode', () => {
    it.each([
      ['7KQ2-M9XD-4TRB-C1ZP', '7KQ2M9XD4TRBC1ZP'],
      ['7KQ2M9XD4TRBC1ZP', '7KQ2M9XD4TRBC1ZP'],
      ['7kq2-m9xd-4trb-c1zp', '7KQ2M9XD4TRBC1ZP'],
      ['  7KQ2 M9XD 4TRB C1ZP  ', '7KQ2M9XD4TRBC1ZP'],
      ['7KQ2--M9XD - 4TRB\tC1ZP', '7KQ2M9XD4TRBC1ZP'],
      ['OOOO-OOOO-OOOO-OOOO', '0000000000000000'],
      ['oooo-iiii-llll-IIII', '0000111111111111'],
      ['7KQ2-M9XD-4TRB-CIZP', '7KQ2M9XD4TRBC1ZP'],
      ['7KQ2-M9XD-4TRB-ClZP', '7KQ2M9XD4TRBC1ZP'],
    ])('%j → %s', (input, expected) => {
      expect(normaliseCode(input)).toBe(expected);
    });

    it.each([
      ['', 'empty'],
      ['7KQ2-M9XD-4TRB-C1Z', '15 characters'],
      ['7KQ2-M9XD-4TRB-C1ZPX', '17 characters'],
      ['7KQ2-M9XD-4TRB-C1ZU', 'U is not in the alphabet'],
      ['7KQ2-M9XD-4TRB-C1Z!', 'punctuation'],
      ['7KQ2_M9XD_4TRB_C1ZP', 'underscores are not separators'],
      ['7KQ2-M9XD-4TRB-C1ZÉ', 'non-ASCII letter'],
      [' '.repeat(100) + '7KQ2M9XD4TRBC1ZP', 'far too long'],
    ])('%j is refused (%s)', (input) => {
      expect(normaliseCode(input)).toBeNull();
    });

    it('refuses what is not a string', () => {
      expect(normaliseCode(undefined as unknown as string)).toBeNull();
      expect(normaliseCode(1234 as unknown as string)).toBeNull();
    });
  });

  describe('normaliseCodeFragment', () => {
    it('reads a search term like a piece of a code', () => {
      expect(normaliseCodeFragment('m9xd-4t')).toBe('M9XD4T');
      expect(normaliseCodeFragment('o1l')).toBe('011');
      expect(normaliseCodeFragment('7KQ2-M9XD-4TRB-C1ZP')).toBe('7KQ2M9XD4TRBC1ZP');
    });

    it('is null when the term cannot be part of a code', () => {
      expect(normaliseCodeFragment('summer promo')).toBeNull(); // U
      expect(normaliseCodeFragment('a%b')).toBeNull();
      expect(normaliseCodeFragment(' - ')).toBeNull();
      expect(normaliseCodeFragment('0'.repeat(17))).toBeNull();
    });
  });
});
