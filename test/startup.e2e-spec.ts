import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { waitFor } from './support/faults';
import { freePort } from './support/ports';

/**
 * Start-up messages of the real process (src/main.ts under ts-node), in a directory of its own so
 * that its embedded PostgreSQL (`.data/`) is not the checkout's: the admin API said to be off, and
 * a second instance on the same data directory, or on the same port (API or metrics), told which
 * one is in use.
 */

const ROOT = resolve(__dirname, '..');

interface Run {
  child: ChildProcess;
  output: string;
  exited: Promise<number | null>;
}

function startService(cwd: string, env: Record<string, string>): Run {
  const child = spawn(
    process.execPath,
    ['-r', join(ROOT, 'node_modules/ts-node/register/transpile-only'), join(ROOT, 'src/main.ts')],
    {
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TS_NODE_PROJECT: join(ROOT, 'tsconfig.json'),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
        BCRYPT_COST: '4',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const run: Run = { child, output: '', exited: new Promise((r) => child.once('exit', (code) => r(code))) };
  child.stdout!.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (run.output += chunk.toString()));
  return run;
}

describe('start-up of the real process', () => {
  let dir: string;
  let first: Run | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'startup-'));
    // as root the embedded PostgreSQL runs as the user "postgres", which must enter this directory
    chmodSync(dir, 0o755);
  });

  afterAll(async () => {
    if (first && first.child.exitCode === null) {
      first.child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([first.exited, new Promise((r) => (timer = setTimeout(r, 30_000)))]);
      clearTimeout(timer);
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('says the admin API is off; a second instance names the data directory, then the port, in use', async () => {
    const port = await freePort();
    first = startService(dir, { PORT: String(port) });
    const running = first;
    await waitFor(
      'the first instance to listen',
      () => {
        if (running.child.exitCode !== null) throw new Error(`the first instance exited:\n${running.output}`);
        // the line comes right after "listening on"
        return running.output.includes('admin API');
      },
      240_000,
    );
    expect(first.output).toContain('listening on ');
    expect(first.output).toMatch(
      /the admin API \(\/api\/admin\/v1\) is off: ADMIN_TOKEN is not set; to turn it on/,
    );

    // the same clone (data directory), the same port: the data directory is the first thing in use
    const sameDir = startService(dir, { PORT: String(port) });
    expect(await sameDir.exited).toBe(1);
    expect(sameDir.output).toContain(
      'Start-up failed: the embedded PostgreSQL data directory .data/ is in use by another instance',
    );

    // the first instance's database, the same port: the port is named, with the setting to change
    const pgPort = readFileSync(join(dir, '.data', 'pg', 'postmaster.pid'), 'utf8').split('\n')[3];
    const settings = {
      DATABASE_URL: `postgres://postgres:postgres@127.0.0.1:${pgPort}/subscriptions`,
      SECRET_ENCRYPTION_KEY: readFileSync(join(dir, '.data', 'secret-encryption.key'), 'utf8').trim(),
      DB_MIGRATE_ON_START: 'false',
      ADMIN_TOKEN: 'a-start-up-test-admin-token-0123456789',
    };
    const samePort = startService(dir, { ...settings, PORT: String(port) });
    expect(await samePort.exited).toBe(1);
    expect(samePort.output).toContain(
      `Start-up failed: port ${port} is already in use: stop the other instance or set PORT`,
    );
    expect(samePort.output).not.toContain('admin API');
    expect(samePort.output).not.toContain('undefined');

    // the metrics port taken (here by the first instance's API): named with its own setting
    const sameMetricsPort = startService(dir, {
      ...settings,
      PORT: String(await freePort()),
      METRICS_PORT: String(port),
    });
    expect(await sameMetricsPort.exited).toBe(1);
    expect(sameMetricsPort.output).toContain(
      `Start-up failed: port ${port} is already in use: stop the other instance or set METRICS_PORT`,
    );
  }, 300_000);
});
