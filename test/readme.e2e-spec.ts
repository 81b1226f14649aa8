import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_TOKEN, createTestApp, TestApp } from './support/app';

const run = promisify(execFile);
const ROOT = join(__dirname, '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The pages whose `<!-- walkthrough-continued -->` blocks run after the walk-through, in this order. */
const CONTINUED_PAGES = ['docs/entitlements.md', 'docs/events.md'];
const START_COMMAND = 'ADMIN_TOKEN=change-me-to-something-at-least-32-chars npm start';

/** The ```bash blocks that follow `<!-- marker -->` in a Markdown text, in order. */
export function markedBlocks(markdown: string, marker: string): string[] {
  const pattern = new RegExp(`<!-- ${marker} -->\\s*\`\`\`bash\\n([\\s\\S]*?)\\n\`\`\``, 'g');
  return [...markdown.matchAll(pattern)].map((match) => match[1]);
}

/** The API guide's shell block that follows the `<!-- walkthrough -->` marker. */
export function walkthroughBlock(guide: string): string {
  const [block] = markedBlocks(guide, 'walkthrough');
  if (!block) throw new Error('docs/api-guide.md has no ```bash block after <!-- walkthrough -->');
  return block;
}

/** The walk-through, then every block that continues it in the same shell. */
function walkthroughScript(): string {
  const continued = CONTINUED_PAGES.flatMap((page) => {
    const blocks = markedBlocks(read(page), 'walkthrough-continued');
    if (blocks.length === 0) throw new Error(`${page} has no block after <!-- walkthrough-continued -->`);
    return blocks;
  });
  return [walkthroughBlock(read('docs/api-guide.md')), ...continued].join('\n');
}

/** The README's five-minute tour: the shell block after `<!-- tour -->`. */
function tourScript(): string {
  const [block] = markedBlocks(read('README.md'), 'tour');
  if (!block) throw new Error('README.md has no ```bash block after <!-- tour -->');
  return block;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown page's headings (outside code blocks), repeated ones numbered as GitHub does. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inCode = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inCode = !inCode;
    const heading = !inCode && /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const base = anchorOf(heading[1]);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Relative links of a Markdown page (outside code blocks) that name no file or no heading. */
function brokenLinks(page: string): string[] {
  const text = read(page);
  const prose = text.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  const broken: string[] = [];
  for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z]+:/.test(target)) continue;
    const [path, anchor] = target.split('#');
    const file = path ? join(dirname(join(ROOT, page)), path) : join(ROOT, page);
    if (!existsSync(file)) {
      broken.push(`${page}: ${target} (no such file)`);
      continue;
    }
    if (anchor !== undefined && file.endsWith('.md') && !anchorsOf(readFileSync(file, 'utf8')).has(anchor)) {
      broken.push(`${page}: ${target} (no heading ${relative(ROOT, file)}#${anchor})`);
    }
  }
  return broken;
}

/**
 * The documentation's shell blocks, executed as written (bash, curl and jq) against the running
 * application, so that the README and the API guide cannot drift from the API: every step must
 * answer 2xx (`curl -f`) and every id it reads with `jq -e` must be there.
 */
describe('README and docs walk-through', () => {
  let t: TestApp;
  let base: string;
  let cwd: string;

  beforeAll(async () => {
    // the webhook example registers https://example.com, which this machine cannot resolve
    t = await createTestApp({ WEBHOOK_ALLOW_INSECURE_URLS: 'true' });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    cwd = mkdtempSync(join(tmpdir(), 'readme-walkthrough-'));
  });
  afterAll(async () => {
    await t.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  async function runScript(script: string): Promise<string> {
    const { stdout } = await run('bash', ['-c', script], {
      cwd,
      env: { ...process.env, H: base, ADMIN_TOKEN },
      timeout: 60_000,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`the script failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
    });
    return stdout;
  }

  it('runs the walk-through top to bottom, then the examples that continue it', async () => {
    const stdout = await runScript(walkthroughScript());
    // the redemption of step 6 and the auto-created customer of step 7 happened
    expect(stdout).toContain('"dryRun":true');
    expect(stdout).toContain('"created":true');
    expect(stdout).toContain('"projectKeyHeader": "X-Service-Key"');
    const csv = readFileSync(join(cwd, 'codes.csv'), 'utf8').split('\r\n');
    expect(csv[0]).toBe(
      'code,status,plan_id,plan_name,duration,expires_at,redeemed_at,redeemed_by_customer_id',
    );
    expect(csv.filter((line) => /^[0-9A-Z]{4}-/.test(line))).toHaveLength(100);
    // the entitlements example: a check allowed, a usage event replayed, a batch of two recorded
    expect(stdout).toContain('"allowed":true');
    expect(stdout).toContain('"replayed":true');
    expect(stdout).toContain('[201,201]');
    // the events example: an endpoint made, and the customer's events pulled
    expect(stdout).toContain('"url":"https://example.com/webhooks"');
    expect(stdout).toContain('"type":"subscriptions.changed"');
  });

  it('runs the README tour top to bottom', async () => {
    const stdout = await runScript(tourScript());
    expect(stdout).toContain('"created":true');
    expect(stdout).toContain('"allowed":true');
    expect(stdout).toContain('"used":1,');
  });

  it('uses no fixed id, and the admin token of the start command', () => {
    for (const script of [walkthroughScript(), tourScript()]) {
      expect(script).not.toMatch(/(customers|projects|keys|usage|webhook-endpoints)\/(\d+|prj_|we_)/);
      expect(script).not.toMatch(/"(featureId|planId|customerId)":\d/);
      expect(script).toContain('change-me-to-something-at-least-32-chars');
    }
    expect(read('docs/api-guide.md')).toContain(START_COMMAND);
    expect(read('README.md')).toContain(START_COMMAND);
  });

  it('keeps the README a front door, and every relative link and anchor of the docs resolves', () => {
    expect(Buffer.byteLength(read('README.md'))).toBeLessThanOrEqual(20_000);
    const pages = [
      'README.md',
      ...readdirSync(join(ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
    ];
    expect(pages.flatMap(brokenLinks)).toEqual([]);
  });
});
