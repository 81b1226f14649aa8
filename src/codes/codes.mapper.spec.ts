import { csvField, effectiveStatus, toCodeView, toCsvRow } from './codes.mapper';
import type { Code } from './entities/code.entity';

const now = new Date('2026-05-01T12:00:00.000Z');

const code = (over: Partial<Code> = {}): Code =>
  ({
    id: 7,
    projectId: 'prj_x',
    batchId: 3,
    planId: 12,
    code: '7KQ2M9XD4TRBC1ZP',
    duration: 'P30D',
    status: 'available',
    note: 'spring',
    expiresAt: null,
    redeemedAt: null,
    redeemedByCustomerId: null,
    createdAt: new Date('2026-01-01T00:00:00.000Z'),
    updatedAt: new Date('2026-01-02T00:00:00.000Z'),
    ...over,
  }) as Code;

describe('codes mapper', () => {
  describe('effectiveStatus', () => {
    it('is the stored status, except an available code whose expiry has come', () => {
      expect(effectiveStatus(code(), now)).toBe('available');
      expect(effectiveStatus(code({ expiresAt: new Date(now.getTime() + 1) }), now)).toBe('available');
      expect(effectiveStatus(code({ expiresAt: now }), now)).toBe('expired');
      expect(effectiveStatus(code({ expiresAt: new Date(now.getTime() - 1) }), now)).toBe('expired');
      expect(effectiveStatus(code({ status: 'revoked', expiresAt: new Date(0) }), now)).toBe('revoked');
      expect(effectiveStatus(code({ status: 'redeemed', expiresAt: new Date(0) }), now)).toBe('redeemed');
    });

    it('of a campaign code is the first that applies: revoked, expired, exhausted, scheduled, available', () => {
      const later = new Date(now.getTime() + 1);
      const campaign = (over: Partial<Code>) =>
        code({ kind: 'campaign', maxRedemptions: 1, redemptionCount: 1, startsAt: later, ...over });
      expect(effectiveStatus(campaign({ status: 'revoked', expiresAt: now }), now)).toBe('revoked');
      expect(effectiveStatus(campaign({ expiresAt: now }), now)).toBe('expired');
      expect(effectiveStatus(campaign({}), now)).toBe('exhausted');
      expect(effectiveStatus(campaign({ maxRedemptions: null }), now)).toBe('scheduled');
      expect(effectiveStatus(campaign({ maxRedemptions: 2, startsAt: now }), now)).toBe('available');
    });
  });

  describe('toCodeView', () => {
    it('shows the formatted code, the plan name and ISO timestamps', () => {
      expect(
        toCodeView(code({ redeemedAt: now, redeemedByCustomerId: 4, status: 'redeemed' }), 'Pro', now),
      ).toEqual({
        id: 7,
        kind: 'batch',
        code: '7KQ2-M9XD-4TRB-C1ZP',
        planId: 12,
        planName: 'Pro',
        duration: 'P30D',
        permanent: false,
        status: 'redeemed',
        batchId: 3,
        note: 'spring',
        expiresAt: null,
        redeemedAt: '2026-05-01T12:00:00.000Z',
        redeemedByCustomerId: 4,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-02T00:00:00.000Z',
      });
    });

    it('a code without duration is permanent', () => {
      expect(toCodeView(code({ duration: null }), 'Pro', now)).toMatchObject({
        duration: null,
        permanent: true,
      });
    });
  });

  describe('CSV', () => {
    it('quotes fields with commas, quotes or line breaks (RFC 4180)', () => {
      expect(csvField('plain')).toBe('plain');
      expect(csvField('a,b')).toBe('"a,b"');
      expect(csvField('say "hi"')).toBe('"say ""hi"""');
      expect(csvField('two\nlines')).toBe('"two\nlines"');
      expect(csvField(null)).toBe('');
      expect(csvField(12)).toBe('12');
    });

    it('neutralises texts a spreadsheet would run as a formula', () => {
      expect(csvField('=HYPERLINK("http://x","y")')).toBe(`"'=HYPERLINK(""http://x"",""y"")"`);
      for (const lead of ['=', '+', '-', '@', '\t']) expect(csvField(`${lead}1`)).toBe(`'${lead}1`);
      expect(csvField('\r1')).toBe(`"'\r1"`);
      expect(csvField('a=1')).toBe('a=1');
      expect(csvField(-1)).toBe('-1');
    });

    it('writes one row in the header order', () => {
      const row = toCsvRow(code({ expiresAt: new Date('2026-04-01T00:00:00.000Z') }), 'Pro, yearly', now);
      expect(row).toBe('7KQ2-M9XD-4TRB-C1ZP,expired,12,"Pro, yearly",P30D,2026-04-01T00:00:00.000Z,,');
    });
  });
});
