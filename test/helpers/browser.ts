import { chromium, type Browser } from 'playwright-core';
import type { Test } from 'tap';

export const CHROMIUM = process.env.AULA_CHROMIUM ?? '/usr/bin/chromium';

/** Debian's Chromium, headless, with the flags this closed network needs; closed at teardown. */
export async function launchBrowser(t: Test): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  t.teardown(() => browser.close());
  return browser;
}
