import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { runCli } from '../src/cli';
import { createTestDatabase } from './support/database';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The operator's tool against a migrated database of its own. The commands run in-process
 * (`runCli`, the same commander program with its output captured); the last test starts it as the
 * docs show (`npm run -s cli -- ...` and the package's bin `npx subscription-service ...`, both
 * `scripts/cli.mjs`), to prove the entry points, the exit status and that stdout is the JSON alone.
 */
describe('cli', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let env: Record<string, string>;

  const cli = async (...args: string[]): Promise<Run> => {
    let stdout = '';
    let stderr = '';
    const code = await runCli(args, {
      env,
      stdout: (text) => (stdout += text),
      stderr: (text) => (stderr += text),
    });
    return { code, stdout, stderr };
  };

  /**
   * A command line as an operator types it, from the project's directory: the environment holds
   * the database's settings, PATH and HOME (npm and npx need them) and nothing of this test run.
   */
  const spawned = (command: string, args: string[], extraEnv: Record<string, string> = {}) =>
    new Promise<Run>((done, fail) => {
      const child = spawn(command, args, {
        cwd: resolve(__dirname, '..'),
        env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env, ...extraEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // A hung CLI is a failure, not a hung test run.
      const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('error', fail);
      child.on('close', (code) => {
        clearTimeout(timer);
        done({ code, stdout, stderr });
      });
    });
  /** `npm run -s cli -- <args>`, as the README and docs/operations.md show it. */
  const npmCli = (args: string[], extraEnv?: Record<string, string>) =>
    spawned('npm', ['run', '-s', 'cli', '--', ...args], extraEnv);
  /** The package's bin, `npx subscription-service <args>`. */
  const binCli = (args: string[]) => spawned('npx', ['subscription-service', ...args]);
  /** A shell pipeline (with pipefail), for `... | jq`. */
  const shell = (script: string) => spawned('bash', ['-o', 'pipefail', '-c', script]);
  const hasJq = spawnSync('jq', ['--version']).status === 0;

  /** A successful run's JSON output. */
  const ok = (run: Run) => {
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    return JSON.parse(run.stdout);
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    env = {
      DATABASE_URL: db.url,
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'silent',
    };
  }, 60_000);
  afterAll(() => db?.drop());

  it('manages a project and its keys, and reports errors with a code and exit status 1', async () => {
    const [created, unknown, invalid] = await Promise.all([
      cli('projects:create', '--name', 'CLI project', '--auto-create-customer'),
      cli('projects:get', 'prj_doesnotexist0000000'),
      cli('projects:create', '--name', ''),
    ]);

    const project = ok(created);
    expect(project).toEqual({
      id: expect.stringMatching(/^prj_[a-z2-7]{20}$/),
      name: 'CLI project',
      autoCreateCustomerAtRedemption: true,
      requireSignature: false,
      timeZone: 'UTC',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/^error: PROJECT_NOT_FOUND: /);

    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toMatch(/^error: VALIDATION_FAILED: /);
    expect(invalid.stderr).toContain('name');

    const key = ok(await cli('keys:create', project.id, '--kind', 'private', '--name', 'backend'));
    expect(key).toEqual({
      id: expect.any(Number),
      kind: 'private',
      name: 'backend',
      prefix: key.key.slice(0, 8),
      enabled: true,
      scopes: ['*'],
      expiresAt: null,
      createdAt: expect.any(String),
      key: expect.stringMatching(/^sk_[A-Za-z0-9]{40}$/),
    });

    const [listed, disabled] = await Promise.all([
      cli('keys:list', project.id),
      cli('keys:update', project.id, String(key.id), '--enabled', 'false'),
    ]);
    expect(listed.stdout).not.toContain(key.key);
    const keys = ok(listed);
    expect(keys).toEqual([
      expect.objectContaining({ id: key.id, kind: 'private', name: 'backend', prefix: key.prefix }),
    ]);
    expect(keys[0]).not.toHaveProperty('key');
    expect(keys[0]).not.toHaveProperty('signingSecret');

    expect(ok(disabled)).toEqual(expect.objectContaining({ id: key.id, enabled: false, name: 'backend' }));
  }, 120_000);

  it('refuses a missing environment and unknown options without touching the database', async () => {
    const saved = env;
    env = {};
    try {
      const missing = await cli('projects:list');
      expect(missing).toEqual({
        code: 1,
        stdout: '',
        stderr: expect.stringMatching(
          /^error: INVALID_CONFIGURATION: DATABASE_URL and SECRET_ENCRYPTION_KEY must be set/,
        ),
      });
    } finally {
      env = saved;
    }
    const unknownOption = await cli('projects:list', '--colour');
    expect(unknownOption.code).toBe(1);
    expect(unknownOption.stderr).toMatch(/unknown option '--colour'/);
  });

  it('started as the docs show (npm run -s cli, the bin), stdout is its JSON alone: parsed and piped into jq', async () => {
    // At a chatty log level (not the tests' silent one): nothing logged may reach stdout either.
    const created = await npmCli(['projects:create', '--name', 'Piped project'], { LOG_LEVEL: 'trace' });
    expect(created.code).toBe(0);
    const project = JSON.parse(created.stdout);
    expect(project).toEqual(
      expect.objectContaining({ id: expect.stringMatching(/^prj_/), name: 'Piped project' }),
    );

    const listed = await binCli(['projects:list', '--search', 'Piped']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual(
      expect.objectContaining({ data: [expect.objectContaining({ id: project.id })] }),
    );

    // The issue's own line: the key, shown once, survives the pipe.
    const key = await shell(
      hasJq
        ? `npm run -s cli -- keys:create ${project.id} --kind private | jq -r .key`
        : `npm run -s cli -- keys:create ${project.id} --kind private | node -e 'let s="";process.stdin.on("data",(c)=>(s+=c)).on("end",()=>console.log(JSON.parse(s).key))'`,
    );
    expect({ code: key.code, stdout: key.stdout }).toEqual({
      code: 0,
      stdout: expect.stringMatching(/^sk_[A-Za-z0-9]{40}\n$/),
    });
    const keys = JSON.parse((await npmCli(['keys:list', project.id])).stdout);
    expect(keys).toEqual([expect.objectContaining({ prefix: key.stdout.slice(0, 8) })]);

    // Errors: nothing on stdout, the message on stderr, a non-zero exit, from both entry points.
    for (const failed of await Promise.all([
      npmCli(['projects:get', 'prj_doesnotexist0000000']),
      binCli(['projects:get', 'prj_doesnotexist0000000']),
    ])) {
      expect(failed.code).not.toBe(0);
      expect(failed.stdout).toBe('');
      expect(failed.stderr).toMatch(/^error: PROJECT_NOT_FOUND: /m);
    }
  }, 180_000);
});
