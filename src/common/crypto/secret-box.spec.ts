import { randomBytes } from 'node:crypto';
import { SecretBox } from './secret-box';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32).toString('base64'));

  it('round-trips and never stores the plaintext', () => {
    const stored = box.encrypt('ss_secret-value');
    expect(stored).not.toContain('ss_secret-value');
    expect(box.decrypt(stored)).toBe('ss_secret-value');
  });

  it('uses a fresh IV per encryption', () => {
    expect(box.encrypt('same')).not.toBe(box.encrypt('same'));
  });

  it('refuses tampered ciphertext and a different key', () => {
    const stored = box.encrypt('value');
    const raw = Buffer.from(stored.slice(3), 'base64');
    raw[raw.length - 1] ^= 1;
    expect(() => box.decrypt('v1.' + raw.toString('base64'))).toThrow();
    expect(() => new SecretBox(randomBytes(32).toString('base64')).decrypt(stored)).toThrow();
  });

  it('rejects a key that is not 32 bytes', () => {
    expect(() => new SecretBox(randomBytes(16).toString('base64'))).toThrow(/32 bytes/);
  });
});
