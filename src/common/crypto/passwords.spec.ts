import * as bcrypt from 'bcrypt';
import { BCRYPT_MAX_BYTES, bcryptInput, hashPassword, verifyPassword } from './passwords';

describe('passwords', () => {
  const COST = 4;
  const head = 'p'.repeat(BCRYPT_MAX_BYTES);

  it('gives bcrypt a password of up to 72 bytes as it is, a longer one as 44 characters that depend on all of it', () => {
    expect(bcryptInput(head)).toBe(head);
    expect(bcryptInput('é'.repeat(36))).toBe('é'.repeat(36)); // 72 bytes of UTF-8
    const long = bcryptInput(`${head}a`);
    expect(long).toHaveLength(44);
    expect(long).not.toBe(bcryptInput(`${head}b`));
    expect(bcryptInput('é'.repeat(37))).toHaveLength(44); // 37 characters, 74 bytes
  });

  it('tells apart two long passwords that share their first 72 bytes (bcrypt alone would not)', async () => {
    const hash = await hashPassword(`${head}-first`, COST);
    expect(await bcrypt.compare(`${head}-second`, hash)).toBe(false);
    expect(await verifyPassword(`${head}-first`, hash)).toBe(true);
    expect(await verifyPassword(`${head}-second`, hash)).toBe(false);
    // plain bcrypt on the raw text: the difference after 72 bytes is lost
    const raw = await bcrypt.hash(`${head}-first`, COST);
    expect(await bcrypt.compare(`${head}-second`, raw)).toBe(true);
  });

  it('verifies short passwords, and long ones hashed before the reduction (from their raw text)', async () => {
    const short = await hashPassword('correct horse', COST);
    expect(await verifyPassword('correct horse', short)).toBe(true);
    expect(await verifyPassword('correct horsE', short)).toBe(false);
    const earlier = await bcrypt.hash(`${head}-old`, COST);
    expect(await verifyPassword(`${head}-old`, earlier)).toBe(true);
  });
});
