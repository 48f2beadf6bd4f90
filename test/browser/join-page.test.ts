import t from 'tap';
import type { Page } from 'playwright-core';
import { ManualClock } from '../../src/clock.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser } from '../helpers/browser.ts';

// The join page before the room: the exchange after load, a reload, and the page a person sees for
// each refusal. (The room itself: room.test.ts.)

const clock = new ManualClock(Date.parse('2026-11-24T09:00:00Z'));
const node = await startTestNode(t, { redis: false, clock });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
await call('POST', '/public/users', { externalId: 'h1', fullName: 'Hal Host', role: 'TEACHER' });
await call('POST', '/public/users', { externalId: 'b1', fullName: 'Bea Browser', role: 'STUDENT' });
await call('POST', '/public/users', { externalId: 'b2', fullName: 'Ben Gone', role: 'STUDENT' });
const m = (await call('POST', '/public/meetings', { title: 'Biology 101', type: 'MEETING', hostUserId: 'h1', scheduledStart: '2026-11-24T10:00:00Z', durationMinutes: 50, settings: { waitingRoom: true } })).body.data;
const browser = await launchBrowser(t);

const heading = (p: Page) => p.textContent('#title');
async function opened(url: string): Promise<Page> {
  const tab = await (await browser.newContext()).newPage();
  await tab.goto(url);
  return tab;
}

t.test('the join page exchanges the link after load, survives a reload, and refuses another device', async (t) => {
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b1' })).body.data;
  const tab = await opened(link.url);
  await tab.waitForSelector('#join');
  t.equal(await tab.title(), 'Biology 101');
  t.equal(await tab.textContent('#join'), 'Ask to join', 'a waiting room: the button says so');
  t.match(await tab.evaluate(() => (window as any).aula.state.session), { meeting: { id: m.id }, user: { displayName: 'Bea Browser' }, waitingRoom: { status: 'WAITING' } });

  await tab.reload();
  await tab.waitForSelector('#join');
  t.pass('a reload in the same tab keeps working');

  const other = await opened(link.url);
  await other.waitForFunction(() => document.getElementById('title')?.textContent === 'This link was already used');
  t.match(await other.textContent('#status'), /opened on another device/);
});

t.test('clear pages for an expired link, a revoked link and a missing token', async (t) => {
  const expiring = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b1', expiresInSeconds: 60 })).body.data;
  clock.advance(61_000);
  const expired = await opened(expiring.url);
  await expired.waitForFunction(() => document.getElementById('title')?.textContent !== 'Joining…');
  t.equal(await heading(expired), 'This link has expired');

  const revoked = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b2' })).body.data;
  t.equal((await call('POST', '/public/users/b2/deactivate')).status, 200);
  const tab = await opened(revoked.url);
  await tab.waitForFunction(() => document.getElementById('title')?.textContent !== 'Joining…');
  t.match(await heading(tab), /^(This link is no longer valid|Your account is deactivated)$/);

  const bare = await opened(new URL(expiring.url).origin + new URL(expiring.url).pathname);
  await bare.waitForFunction(() => document.getElementById('title')?.textContent !== 'Joining…');
  t.equal(await heading(bare), 'No join link');
});

t.test('on Android the page offers the app first, and the browser path still works', async (t) => {
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b1' })).body.data;
  const ctx = await browser.newContext({ userAgent: 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Mobile Safari/537.36', viewport: { width: 360, height: 740 } });
  const tab = await ctx.newPage();
  await tab.goto(link.url);
  const deep = await tab.getAttribute('a[href^="svc://join"]', 'href');
  t.equal(deep, `svc://join?token=${encodeURIComponent(link.token)}`, 'the deep link carries the token');
  t.equal((await call('GET', `/public/meetings/${m.id}`)).status, 200);
  await tab.click('text=Continue in the browser');
  await tab.waitForSelector('#join');
  t.pass('the browser path exchanges the token');
  // the token is spent: the app (the same exchange from another device) is refused
  const app = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'android-app' } });
  t.equal(app.body.error.code, 'join_token_used');
});
