import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_TOKEN, createTestApp, TestApp } from './support/app';
import { blockName, chainedScript, notRunReason, ShellBlock, shellBlocks } from './support/doc-shell';

const run = promisify(execFile);
const ROOT = join(__dirname, '..');
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

/** The pages whose `<!-- walkthrough-continued -->` blocks run after the walk-through, in this order. */
const CONTINUED_PAGES = ['docs/entitlements.md', 'docs/events.md', 'docs/api-guide.md'];
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

/** The README and every page under docs/, in that order. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];

/** Every shell block of the README and docs/, in page order. */
const BLOCKS = PAGES.flatMap((page) => shellBlocks(page, read(page)));

/** Whether the walk-through test or the tour test runs the block (as a part of its script). */
const inWalkthroughOrTour = ({ page, markers }: ShellBlock): boolean =>
  (page === 'README.md' && markers.includes('tour')) ||
  (page === 'docs/api-guide.md' && markers.includes('walkthrough')) ||
  (CONTINUED_PAGES.includes(page) && markers.includes('walkthrough-continued'));

/**
 * What a page's text asks the reader to have before its blocks, set up by the test before the
 * page's first block that runs. A page's blocks share one shell's variables in order ("chain", the
 * page itself unless named here); every block also has the started service's environment: `H` (its
 * address), `ADMIN_TOKEN`, and its `DATABASE_URL` and `SECRET_ENCRYPTION_KEY` (which the CLI needs,
 * docs/operations.md#admin-api-and-cli).
 */
const PAGE_SETUP: Record<string, { chain?: string; prelude?: string }> = {
  // "after the walk-through", with KEY a public key, SECRET its signing secret and BASE the address
  'docs/public-api.md': {
    chain: 'walkthrough',
    prelude: [
      'BASE=$H',
      `PUBLIC=$(curl -fsS -X POST $H/api/admin/v1/projects/$PROJECT/keys -H "$ADMIN" -H "$JSON" -d '{"kind":"public"}')`,
      'KEY=$(echo "$PUBLIC" | jq -er .data.key) SECRET=$(echo "$PUBLIC" | jq -er .data.signingSecret)',
    ].join('\n'),
  },
  // `node dist/cli.js` is "after `npm run build`": CI builds before the tests, so there it runs the
  // build; in a working tree whose dist/ is missing or older than src/ (edits since the last build),
  // the same CLI runs from src/ through scripts/cli.mjs instead of a stale or missing build
  'docs/operations.md': {
    prelude: [
      'if [ ! -f dist/cli.js ] || [ -n "$(find src -newer dist/cli.js -print -quit)" ]; then',
      '  node() { if [ "${1:-}" = dist/cli.js ]; then shift; set -- scripts/cli.mjs "$@"; fi; command node "$@"; }',
      'fi',
    ].join('\n'),
  },
};

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

  /** The file where a chain of blocks keeps its shell variables between blocks. */
  const stateOf = (chain: string): string => join(cwd, `${chain.replace(/[^\w.-]/g, '_')}.state`);

  async function runScript(
    script: string,
    options: { cwd?: string; timeout?: number } = {},
  ): Promise<string> {
    const { stdout } = await run('bash', ['-c', script], {
      cwd: options.cwd ?? cwd,
      env: {
        ...process.env,
        H: base,
        ADMIN_TOKEN,
        DATABASE_URL: t.appDatabaseUrl,
        SECRET_ENCRYPTION_KEY: t.env.SECRET_ENCRYPTION_KEY,
      },
      timeout: options.timeout ?? 60_000,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      throw new Error(`the script failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`);
    });
    return stdout;
  }

  it('runs the walk-through top to bottom, then the examples that continue it', async () => {
    const stdout = await runScript(chainedScript(walkthroughScript(), stateOf('walkthrough')));
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
    const stdout = await runScript(chainedScript(tourScript(), stateOf('README.md')));
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
    expect(PAGES.flatMap(brokenLinks)).toEqual([]);
  });

  /**
   * Every other shell block of the README and docs/ runs too, in order within its page, as a test of
   * its own that must exit 0; a block that cannot run here (a cluster, Docker, the whole test suite)
   * says why in a `<!-- not-run: reason -->` comment right before it and is listed as skipped.
   */
  describe('every other shell block of the README and docs/', () => {
    it('finds every fenced shell block, and every not-run marker gives a reason', () => {
      const fences = PAGES.flatMap((page) =>
        read(page)
          .split('\n')
          .filter((line) => /^\s*(```|~~~)\s*(bash|sh|shell)\s*$/.test(line)),
      );
      expect(BLOCKS).toHaveLength(fences.length);
      expect(BLOCKS.filter((block) => notRunReason(block) === '').map(blockName)).toEqual([]);
      // the walk-through (its blocks of three pages) and the tour are run above, as one script each
      expect(BLOCKS.filter(inWalkthroughOrTour).map((block) => block.page)).toEqual([
        'README.md',
        'docs/api-guide.md',
        'docs/api-guide.md', // campaign codes
        'docs/entitlements.md', // the example
        'docs/entitlements.md', // grants and overrides
        'docs/entitlements.md', // holds
        'docs/events.md',
      ]);
      expect(
        BLOCKS.filter((block) => inWalkthroughOrTour(block) && notRunReason(block) !== undefined).map(
          blockName,
        ),
      ).toEqual([]);
    });

    const started = new Set<string>();
    for (const block of BLOCKS.filter((b) => !inWalkthroughOrTour(b))) {
      const reason = notRunReason(block);
      if (reason !== undefined) {
        it.skip(`${blockName(block)} is not run: ${reason}`, () => undefined);
        continue;
      }
      it(`runs ${blockName(block)} (${block.lang}) and it exits 0`, async () => {
        const setup = PAGE_SETUP[block.page] ?? {};
        const first = !started.has(block.page);
        started.add(block.page);
        await runScript(
          chainedScript(block.code, stateOf(setup.chain ?? block.page), first ? setup.prelude : ''),
          // from the project's directory, as the pages assume (npm run, dist/, deploy/)
          { cwd: ROOT, timeout: 150_000 },
        );
      }, 180_000);
    }
  });
});
