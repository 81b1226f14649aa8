import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { closedAncestor, embeddedConnection, rootCannotRunHere } from './embedded';

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

describe('embeddedConnection (the CLI run from the project finds the running embedded server)', () => {
  let data: string;
  beforeEach(() => {
    data = join(mkdtempSync(join(tmpdir(), 'embedded-connection-')), '.data');
  });
  afterEach(() => rmSync(join(data, '..'), { recursive: true, force: true }));

  it('is undefined without an embedded data directory', () => {
    expect(embeddedConnection(data)).toBeUndefined();
  });

  it("reads the port from PostgreSQL's postmaster.pid and the key beside the data", () => {
    mkdirSync(join(data, 'pg'), { recursive: true });
    writeFileSync(join(data, 'pg', 'PG_VERSION'), '17\n');
    writeFileSync(
      join(data, 'pg', 'postmaster.pid'),
      `4242\n${data}/pg\n1795473133\n54321\n/tmp\n127.0.0.1\n`,
    );
    writeFileSync(join(data, 'secret-encryption.key'), 'a2V5\n');
    expect(embeddedConnection(data)).toEqual({
      url: 'postgres://postgres:postgres@127.0.0.1:54321/subscriptions',
      secretKey: 'a2V5',
    });
  });

  it('says to start the service when the data directory is there but no server runs on it', () => {
    mkdirSync(join(data, 'pg'), { recursive: true });
    writeFileSync(join(data, 'pg', 'PG_VERSION'), '17\n');
    expect(() => embeddedConnection(data)).toThrow(
      /is not running: start the service \(npm start\), or set DATABASE_URL/,
    );
  });
});

/**
 * Runs `body` (TypeScript, with `startEmbeddedPostgres`, `freePort`, `createServer` and `dataDir`
 * in scope) in a Node process of its own and answers what it printed: the package is ESM-only and
 * loaded by a dynamic import, which Jest's module sandbox does not always link.
 */
async function inNode(dataDir: string, body: string): Promise<string> {
  const script = `
    const { startEmbeddedPostgres, freePort } = require(${JSON.stringify(join(__dirname, 'embedded'))});
    const { createServer } = require('node:net');
    const dataDir = ${JSON.stringify(dataDir)};
    (async () => { ${body} })().catch((e) => { console.log('failed: ' + e.message); process.exit(0); });`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', '-e', script],
    { env: { ...process.env, NODE_OPTIONS: '' }, timeout: 100_000 },
  );
  return stdout.trim();
}

describe('startEmbeddedPostgres (npm start without DATABASE_URL)', () => {
  let base: string;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'embedded-start-'));
    chmodSync(base, 0o755);
  });
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('tries another port when its port was taken before PostgreSQL bound it', async () => {
    // a port held on every address, as another process may take the picked one meanwhile
    const answer = await inNode(
      join(base, '.data'),
      `const taken = createServer();
       await new Promise((listening) => taken.listen(0, '::', listening));
       const ports = [taken.address().port, await freePort()];
       const handed = [];
       const db = await startEmbeddedPostgres(dataDir, () => undefined, [], async () => {
         const port = ports[handed.length];
         handed.push(port);
         return port;
       });
       await db.stop();
       taken.close();
       console.log(JSON.stringify({ ports, handed, url: db.url }));`,
    );
    // a failed start prints its reason rather than the ports: show that, not a parse error
    expect(answer).not.toMatch(/^failed: /);
    const { ports, handed, url } = JSON.parse(answer);
    expect(handed).toEqual(ports);
    expect(url).toBe(`postgres://postgres:postgres@127.0.0.1:${ports[1]}/subscriptions`);
  }, 120_000);

  it('says what PostgreSQL said when it never gets ready, rather than nothing', async () => {
    const answer = await inNode(
      join(base, '.data'),
      `await startEmbeddedPostgres(dataDir, () => undefined, ['shared_buffers=lots']);
       console.log('started');`,
    );
    expect(answer).toMatch(
      /^failed: the embedded PostgreSQL exited before it was ready \(3 tries\): .*shared_buffers/,
    );
  }, 120_000);
});
