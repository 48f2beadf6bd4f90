import { chromium, type Browser, type Page } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Test } from 'tap';

export const CHROMIUM = process.env.AULA_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Debian's Chromium, headless, with the flags this closed network needs; closed at teardown. With
 * `media`, it has a fake camera (a moving test pattern) and microphone (a beep), granted without asking,
 * and WebRTC may use loopback addresses (the test nodes announce 127.0.0.1).
 */
export async function launchBrowser(t: Test, opts: { media?: boolean; executablePath?: string; args?: string[] } = {}): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: opts.executablePath ?? CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...(opts.media ? ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', '--allow-loopback-in-peer-connection', '--autoplay-policy=no-user-gesture-required'] : []),
      ...(opts.args ?? []),
    ],
  });
  t.teardown(() => browser.close());
  return browser;
}

/** Where a test saves what a person would see: AULA_SCREENSHOTS=<dir> (the docs' pictures come from there). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.AULA_SCREENSHOTS;
  if (dir) await page.screenshot({ path: `${dir}/${name}.png` });
}

// axe is evaluated in the page rather than added as a script tag: the pages' CSP allows no inline script
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is, each with the elements it found. */
export async function axeViolations(p: Page): Promise<{ id: string; impact: string; targets: string[] }[]> {
  if (!(await p.evaluate(() => 'axe' in window))) await p.evaluate(AXE);
  const found: { id: string; impact: string; nodes: { target: string[]; failureSummary: string }[] }[] = await p.evaluate(async () => (await (window as any).axe.run(document, { resultTypes: ['violations'] })).violations);
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => `${n.target.join(' ')}: ${n.failureSummary.replace(/\s+/g, ' ')}`) }));
}
