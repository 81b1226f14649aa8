import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { redeemForNewCustomer } from '../clients/typescript/src/example';
import { createPublicClient } from '../clients/typescript/src/index';
import { bearer, createTestApp, TestApp } from './support/app';

const run = promisify(execFile);

/**
 * The typed client of `clients/typescript` (openapi-typescript + openapi-fetch over openapi.json):
 * it type-checks under `strict`, and its example (`src/example.ts`, shown in
 * docs/api-guide.md#reference-and-typed-client) works against the running service.
 */
describe('typed client (clients/typescript)', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  it('type-checks under strict (with noUncheckedIndexedAccess and exactOptionalPropertyTypes)', async () => {
    const root = join(__dirname, '..');
    await run(
      process.execPath,
      [require.resolve('typescript/bin/tsc'), '-p', 'clients/typescript/tsconfig.json'],
      {
        cwd: root,
      },
    ).catch((error: { stdout?: string; message: string }) => {
      throw new Error(`tsc: ${error.message}\n${error.stdout ?? ''}`);
    });
  }, 120_000);

  it('creates a customer, redeems a code for it and reads its subscriptions', async () => {
    const project = await t.createProject();
    const auth = bearer(project.privateKey);
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

    const { customer, subscriptions } = await redeemForNewCustomer(
      base,
      project.privateKey,
      batch.body.data.codes[0],
    );
    expect(customer.username).toBe('grace_hopper');
    expect(subscriptions.map((s) => [s.planId, s.source, s.status])).toEqual([
      [plan.body.data.id, 'code', 'active'],
    ]);

    const info = await createPublicClient(base, project.publicKey).GET('/api/public/v1/info');
    expect(info.data?.data.project.id).toBe(project.id);
    const wrong = await createPublicClient(base, 'pk_wrong').GET('/api/public/v1/info');
    expect([wrong.response.status, wrong.error?.error.code]).toEqual([401, 'INVALID_API_KEY']);
  });
});
