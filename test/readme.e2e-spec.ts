import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_TOKEN, createTestApp, TestApp } from './support/app';

const run = promisify(execFile);

/** The shell block of the README that follows the `<!-- walkthrough -->` marker. */
export function walkthroughBlock(readme: string): string {
  const match = /<!-- walkthrough -->\s*```bash\n([\s\S]*?)\n```/.exec(readme);
  if (!match) throw new Error('README.md has no ```bash block after <!-- walkthrough -->');
  return match[1];
}

/**
 * The README's curl walk-through, executed as written (bash, curl and jq) against the running
 * application, so that the README cannot drift from the API: every step must answer 2xx
 * (`curl -f`) and every id it reads with `jq -e` must be there.
 */
describe('README walk-through', () => {
  let t: TestApp;
  let base: string;
  let cwd: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    cwd = mkdtempSync(join(tmpdir(), 'readme-walkthrough-'));
  });
  afterAll(async () => {
    await t.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('runs top to bottom and every step succeeds', async () => {
    const script = walkthroughBlock(readFileSync(join(__dirname, '..', 'README.md'), 'utf8'));
    const { stdout } = await run('bash', ['-c', script], {
      cwd,
      env: { ...process.env, H: base, ADMIN_TOKEN },
      timeout: 60_000,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(
        `the walk-through failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`,
      );
    });
    // the redemption of step 6 and the auto-created customer of step 7 happened
    expect(stdout).toContain('"dryRun":true');
    expect(stdout).toContain('"created":true');
    expect(stdout).toContain('"projectKeyHeader": "X-Service-Key"');
    const csv = readFileSync(join(cwd, 'codes.csv'), 'utf8').split('\r\n');
    expect(csv[0]).toBe(
      'code,status,plan_id,plan_name,duration,expires_at,redeemed_at,redeemed_by_customer_id',
    );
    expect(csv.filter((line) => /^[0-9A-Z]{4}-/.test(line))).toHaveLength(100);
  });

  it('uses no fixed id, and the admin token of the start command', () => {
    const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
    const script = walkthroughBlock(readme);
    expect(script).not.toMatch(/(customers|projects|keys)\/(\d+|prj_)/);
    expect(script).not.toMatch(/"(featureId|planId)":\d/);
    expect(readme).toContain('ADMIN_TOKEN=change-me-to-something-at-least-32-chars npm start');
    expect(script).toContain('change-me-to-something-at-least-32-chars');
  });
});
