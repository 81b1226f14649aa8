import { existsSync } from 'node:fs';
import { Browser, chromium } from 'playwright-core';

/** Debian's Chromium (`apt-get install -y chromium`), which CI installs when it is missing. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether the browser is installed. */
export const chromiumAvailable = (): boolean => existsSync(CHROMIUM_PATH);

/**
 * Chromium without a window, as root on a machine without a GPU: no sandbox (it refuses to start as
 * root with one), and none of the background traffic (updates, sync, QUIC) that a test machine
 * without internet access would only wait on. Playwright gives every launch a fresh profile
 * (`--user-data-dir`) of its own, removed on close, so nothing is kept between runs.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    timeout: 60_000,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
