import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closedAncestor, rootCannotRunHere } from './embedded';

describe('closedAncestor (npm start as root from a 0700 directory)', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'closed-ancestor-'));
    chmodSync(base, 0o755);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('finds the first directory others cannot enter, and names it with its mode in one line', () => {
    const home = join(base, 'home');
    mkdirSync(join(home, 'project', '.data'), { recursive: true });
    chmodSync(home, 0o700);
    expect(closedAncestor(join(home, 'project', '.data'))).toBe(home);
    const line = rootCannotRunHere(home);
    expect(line).toContain(`cannot enter ${home} (mode 0700)`);
    expect(line).toContain('DATABASE_URL');
    expect(line).not.toContain('\n');
  });

  it('finds nothing when every directory can be entered, or in a path not created yet', () => {
    mkdirSync(join(base, 'project'), { recursive: true });
    expect(closedAncestor(join(base, 'project'))).toBeUndefined();
    expect(closedAncestor(join(base, 'project', '.data', 'pg'))).toBeUndefined();
  });
});
