// Swagger UI at /docs, in a real browser: the page loads without a script error under its Content
// Security Policy, shows the operations, takes a private key through "Authorize" and runs
// "Try it out" on GET /api/private/v1/customers against the service, which answers 200.
import type { AddressInfo } from 'node:net';
import type { Browser, Page, Request } from 'playwright-core';
import { createTestApp, TestApp, TestProject } from './support/app';
import { CHROMIUM_PATH, chromiumAvailable, launchChromium } from './support/browser';

const available = chromiumAvailable();
if (!available && process.env.TEST_REQUIRE_ENGINES === '1')
  throw new Error(
    `TEST_REQUIRE_ENGINES=1 but Chromium is not installed at ${CHROMIUM_PATH} (apt-get install -y chromium)`,
  );
if (!available)
  process.stderr.write(
    `Chromium is not installed at ${CHROMIUM_PATH} (apt-get install -y chromium): the Swagger UI browser test is SKIPPED\n`,
  );
const suite = available ? describe : describe.skip;

/** Long enough for a loaded 2-core machine; a broken page fails at the first missing element instead. */
const UI_TIMEOUT = 30_000;

suite('Swagger UI (/docs) in headless Chromium', () => {
  let t: TestApp;
  let base: string;
  let project: TestProject;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  const consoleErrors: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    project = await t.createProject({ name: 'Docs in a browser' });
    // one customer, so that the list the browser asks for is not empty
    await t.http
      .post('/api/private/v1/customers')
      .set({ Authorization: `Bearer ${project.privateKey}` })
      .send({ username: 'swagger_reader' })
      .expect(201);
    browser = await launchChromium();
    page = await browser.newPage();
    page.setDefaultTimeout(UI_TIMEOUT);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('renders the operations without a script error', async () => {
    const answer = await page.goto(`${base}/docs`, { waitUntil: 'load', timeout: UI_TIMEOUT });
    expect(answer?.status()).toBe(200);
    await page.locator('.opblock').first().waitFor();
    expect(await page.locator('.info .title').innerText()).toContain('Subscription and Customer Service');
    // every tag's operations are listed (Swagger UI opens the tags): dozens of them, customers' among them
    expect(await page.locator('.opblock').count()).toBeGreaterThan(20);
    await page.locator('#operations-Customers-CustomersController_list').waitFor();
    expect(pageErrors).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  it('authorizes with a private key and runs "Try it out" on GET /api/private/v1/customers: 200', async () => {
    // "Authorize": the dialog has a form per scheme; the private key goes into privateKey's (http bearer)
    await page.locator('.scheme-container button.authorize').click();
    const form = page
      .locator('.dialog-ux form')
      .filter({ has: page.locator('h4', { hasText: 'privateKey' }) });
    await form.locator('input').fill(project.privateKey);
    await form.getByRole('button', { name: 'Apply credentials' }).click();
    await form.getByRole('button', { name: 'Remove authorization' }).waitFor();
    await page.locator('.dialog-ux button.close-modal').click();
    await page.locator('.dialog-ux').waitFor({ state: 'detached' });

    const operation = page.locator('#operations-Customers-CustomersController_list');
    await operation.locator('.opblock-summary-control').click();
    await operation.getByRole('button', { name: 'Try it out' }).click();
    const sent = page.waitForRequest(
      (request: Request) => new URL(request.url()).pathname === '/api/private/v1/customers',
      { timeout: UI_TIMEOUT },
    );
    await operation.getByRole('button', { name: 'Execute' }).click();
    const request = await sent;
    expect(request.method()).toBe('GET');
    expect(request.headers().authorization).toBe(`Bearer ${project.privateKey}`);
    expect((await request.response())?.status()).toBe(200);

    // what the page shows: the code 200, the request's curl with the key, the customer in the body
    const live = operation.locator('.live-responses-table td.response-col_status:not(.col_header)');
    await live.waitFor();
    expect((await live.innerText()).trim()).toBe('200');
    expect(await operation.locator('.curl-command').innerText()).toContain(
      `Authorization: Bearer ${project.privateKey}`,
    );
    expect(
      await operation
        .locator('.live-responses-table td.response-col_description:not(.col_header)')
        .innerText(),
    ).toContain('swagger_reader');
    expect(pageErrors).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });
});
