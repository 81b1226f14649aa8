import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, Server } from 'node:net';
import {
  closedAncestor,
  embeddedConnection,
  freePort,
  rootCannotRunHere,
  startEmbeddedPostgres,
} from './embedded';

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

describe('startEmbeddedPostgres (npm start without DATABASE_URL)', () => {
  let base: string;
  let taken: Server | undefined;
  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'embedded-start-'));
    chmodSync(base, 0o755);
  });
  afterEach(async () => {
    await new Promise((done) => (taken ? taken.close(done) : done(undefined)));
    taken = undefined;
    rmSync(base, { recursive: true, force: true });
  });

  it('tries another port when its port was taken before PostgreSQL bound it', async () => {
    // a port held on every address, as another process may take the picked one meanwhile
    taken = createServer();
    await new Promise<void>((listening) => taken!.listen(0, '::', listening));
    const held = (taken.address() as { port: number }).port;
    const handed: number[] = [];
    const ports = [held, await freePort()];
    const db = await startEmbeddedPostgres(
      join(base, '.data'),
      () => undefined,
      [],
      async () => {
        const port = ports[handed.length];
        handed.push(port);
        return port;
      },
    );
    try {
      expect(handed).toEqual(ports);
      expect(db.url).toBe(`postgres://postgres:postgres@127.0.0.1:${ports[1]}/subscriptions`);
    } finally {
      await db.stop();
    }
  }, 120_000);

  it('says what PostgreSQL said when it never gets ready, rather than nothing', async () => {
    await expect(
      startEmbeddedPostgres(join(base, '.data'), () => undefined, ['shared_buffers=lots']),
    ).rejects.toThrow(/exited before it was ready \(3 tries\): .*shared_buffers/);
  }, 120_000);
});
