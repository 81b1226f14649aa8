import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { bearer, createTestApp, TestApp } from './support/app';

const execFileAsync = promisify(execFile);
const root = join(__dirname, '..');
const clientDir = join(root, 'clients', 'typescript');

/**
 * The environment a user's shell would have (npm needs its proxy and certificate settings to reach
 * the registry), without what this test run adds: jest's NODE_OPTIONS and an outer npm's settings.
 */
const userEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS' && !/^npm_/i.test(name)),
);

/** Runs a command and answers its stdout; a failure carries its stdout and stderr. */
async function run(
  command: string,
  args: string[],
  options: { cwd: string; env?: Record<string, string | undefined> },
): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, {
      cwd: options.cwd,
      env: { ...userEnv, ...options.env },
      maxBuffer: 16 * 1024 * 1024,
      timeout: 150_000,
    });
    return stdout;
  } catch (error) {
    const e = error as { message: string; stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/**
 * The typed client as a user gets it: `clients/typescript` packed with `npm pack` (its prepack
 * compiles dist/ with the project's TypeScript), the tarball installed into an empty project
 * (openapi-fetch comes from the registry), the ten-line example of its README type-checked there
 * under `strict` and run against a started service.
 */
describe('typed client package (clients/typescript, packed and installed)', () => {
  let t: TestApp;
  let base: string;
  let project: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    project = mkdtempSync(join(tmpdir(), 'subs-client-package-'));
  });
  afterAll(async () => {
    if (project) rmSync(project, { recursive: true, force: true });
    await t?.close();
  });

  it('packs, installs into an empty project, type-checks its README example and runs it', async () => {
    // npm pack prints the tarball's name last on stdout (the prepack's output comes before it).
    const packed = await run('npm', ['pack', '--pack-destination', project], { cwd: clientDir });
    const tarball = packed.trim().split('\n').pop()!;
    expect(tarball).toMatch(/^subscription-service-client-[\d.]+\.tgz$/);

    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'client-example', private: true, type: 'module' }),
    );
    await run('npm', ['install', '--no-audit', '--no-fund', `./${tarball}`], { cwd: project });
    const installed = JSON.parse(
      readFileSync(join(project, 'node_modules/@subscription-service/client/package.json'), 'utf8'),
    );
    expect(installed.dependencies).toHaveProperty('openapi-fetch');

    // The README's example, word for word.
    const readme = readFileSync(join(clientDir, 'README.md'), 'utf8');
    const example = /```ts\n([\s\S]*?)```/.exec(readme)![1];
    expect(
      example
        .trim()
        .split('\n')
        .filter((line) => line.trim()).length,
    ).toBeLessThanOrEqual(10);
    writeFileSync(join(project, 'example.ts'), example);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'nodenext',
          moduleResolution: 'nodenext',
          strict: true,
          noEmit: true,
          // the package's own declarations are checked too
          skipLibCheck: false,
          // process.env: Node's types from the service's own dependencies, not installed again
          typeRoots: [join(root, 'node_modules', '@types')],
          types: ['node'],
        },
        files: ['example.ts'],
      }),
    );
    await run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', '.'], { cwd: project });

    const p = await t.createProject({ autoCreateCustomerAtRedemption: false });
    const auth = bearer(p.privateKey);
    const plan = await t.http
      .post('/api/private/v1/plans')
      .set(auth)
      .send({ slug: 'pro', name: 'Pro', value: 20, group: 'tier' })
      .expect(201);
    const batch = await t.http
      .post('/api/private/v1/codes')
      .set(auth)
      .send({ planId: plan.body.data.id, duration: 'P30D', count: 1 })
      .expect(201);
    const code: string = batch.body.data.codes[0];

    // Node runs the TypeScript itself (its type stripping): the installed package's dist/index.js.
    const printed = await run(process.execPath, ['example.ts'], {
      cwd: project,
      env: { BASE_URL: base, SK: p.privateKey, CODE: code },
    });
    const result = JSON.parse(printed);
    expect(result).toEqual(
      expect.objectContaining({
        customer: expect.objectContaining({ username: 'grace_hopper', created: false }),
        subscriptions: [expect.objectContaining({ planId: plan.body.data.id, planName: 'Pro' })],
      }),
    );

    // What the example did is what the service holds.
    const subscriptions = await t.http
      .get(`/api/private/v1/customers/${result.customer.id}/subscriptions`)
      .set(auth)
      .expect(200);
    expect(
      subscriptions.body.data.map((s: { planId: string; status: string }) => [s.planId, s.status]),
    ).toEqual([[plan.body.data.id, 'active']]);
  }, 300_000);
});
