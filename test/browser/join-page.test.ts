import t from 'tap';
import type { Page } from 'playwright-core';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';

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

// The organization's app (admin setting mobileApps): offered only when configured for the phone's
// platform, and its link opens only that app.
const ANDROID_UA = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Mobile Safari/537.36';
const IPHONE_UA = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
const PACKAGE = 'org.school.classroom';
await node.app.services.admins.create(node.app.sql, { orgId: tenant.orgId, email: 'admin@school.example', role: 'admin', password: 'correct horse battery staple' });
const adminBearer = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email: 'admin@school.example', password: 'correct horse battery staple' } })).body.data.sessionToken as string;
const setApps = async (mobileApps: unknown) => t.equal((await api(node, 'PATCH', `/orgs/${tenant.orgId}`, { bearer: adminBearer, body: { mobileApps } })).status, 200);
const phone = async (userAgent: string) => (await browser.newContext({ userAgent, viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true })).newPage();

t.test('on Android with no app configured the page offers none: straight to pre-join, no svc:// anywhere', async (t) => {
  await setApps({ android: null, ios: null });
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b1' })).body.data;
  const tab = await phone(ANDROID_UA);
  await tab.goto(link.url);
  await tab.waitForSelector('#join');
  t.equal(await tab.$('#open-app'), null, 'no app offer');
  const html = await tab.evaluate(() => document.documentElement.outerHTML);
  t.notMatch(html, 'svc:', 'no svc:// link in the DOM');
  t.notMatch(html, 'intent:', 'no intent: link either');
  t.notMatch(html, 'Open in the app');
  const app = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'android-app' } });
  t.equal(app.body.error.code, 'join_token_used', 'the browser spent the link');
});

t.test('on Android with the organization\'s app configured the page offers it, by the verified link pinned to its package', async (t) => {
  await setApps({ android: { packageName: PACKAGE, sha256CertFingerprints: [Array.from({ length: 32 }, () => 'AB').join(':')] } });
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b1' })).body.data;
  const tab = await phone(ANDROID_UA);
  await tab.goto(link.url);
  await tab.waitForSelector('#open-app');
  await screenshot(tab, 'app-choice');
  t.equal(await heading(tab), 'Join the meeting');

  const url = new URL(link.url);
  const href = (await tab.getAttribute('#open-app', 'href'))!;
  const [data, intent] = [href.slice(0, href.lastIndexOf('#Intent;')), href.slice(href.lastIndexOf('#Intent;'))];
  t.equal(data, `intent://${url.host}${url.pathname}#jt=${link.token}`, 'the data is the join link itself, token in its fragment');
  const extras = new Map(intent.slice('#Intent;'.length, -';end'.length).split(';').map((kv) => kv.split('=') as [string, string]));
  t.equal(extras.get('scheme'), url.protocol.slice(0, -1), 'with the join link\'s scheme (https in production)');
  t.equal(extras.get('package'), PACKAGE, 'pinned to the organization\'s package: no other app can take it');
  t.ok(intent.endsWith(';end'));
  const fallback = decodeURIComponent(extras.get('S.browser_fallback_url')!);
  t.equal(fallback, `${url.origin}${url.pathname}#jt=${link.token}&app=legacy`, 'an app that cannot take it sends the tab back here');
  t.notMatch(await tab.evaluate(() => document.documentElement.outerHTML), 'svc:', 'svc:// is not offered first');
  t.equal((await call('GET', `/public/meetings/${m.id}`)).status, 200);

  // what Chrome does when the package cannot take the intent: the fallback URL, in this tab
  await tab.goto(fallback);
  await tab.waitForFunction(() => document.getElementById('open-app')?.getAttribute('href')?.startsWith('intent://join?'));
  const legacy = (await tab.getAttribute('#open-app', 'href'))!;
  await screenshot(tab, 'app-choice-legacy');
  t.match(legacy, new RegExp(`^intent://join\\?token=${link.token}#Intent;scheme=svc;package=${PACKAGE.replaceAll('.', '\\.')};S\\.browser_fallback_url=[^;]+;end$`), 'then the spec\'s svc://join, pinned to the same package');
  t.notMatch(await tab.evaluate(() => document.documentElement.outerHTML), 'href="svc:', 'never a bare svc:// link any app could claim');

  const missing = decodeURIComponent(/S\.browser_fallback_url=([^;]+)/.exec(legacy)![1]!);
  await tab.goto(missing);
  await tab.waitForFunction(() => document.getElementById('title')?.textContent === 'The app did not open');
  await screenshot(tab, 'app-choice-missing');
  t.equal(await tab.getAttribute('#open-app', 'href'), href, 'trying again opens the verified link');

  await tab.click('#continue-browser');
  await tab.waitForSelector('#join');
  t.pass('the browser path exchanges the token');
  const app = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'android-app' } });
  t.equal(app.body.error.code, 'join_token_used', 'and the app is refused: one or the other');
});

t.test('the offer spends nothing: the app may use the link, and then the browser is refused', async (t) => {
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b1' })).body.data;
  const tab = await phone(ANDROID_UA);
  await tab.goto(link.url);
  await tab.waitForSelector('#open-app');
  const app = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'android-app' } });
  t.equal(app.status, 200, 'the app exchanges the token the page offered it');
  await tab.click('#continue-browser');
  await tab.waitForFunction(() => document.getElementById('title')?.textContent === 'This link was already used');
});

t.test('on an iPhone the page offers the iOS app only when there is one, by the universal link', async (t) => {
  const url = async () => {
    const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: 'b1' })).body.data;
    return link.url as string;
  };
  const noIos = await phone(IPHONE_UA);
  await noIos.goto(await url());
  await noIos.waitForSelector('#join');
  t.equal(await noIos.$('#open-app'), null, 'an Android app is not offered on an iPhone');

  await setApps({ ios: { teamId: 'A1B2C3D4E5', bundleId: PACKAGE } });
  const joinUrl = await url();
  const tab = await phone(IPHONE_UA);
  await tab.goto(joinUrl);
  await tab.waitForSelector('#open-app');
  t.equal(await tab.getAttribute('#open-app', 'href'), joinUrl, 'the join link itself, which iOS hands the verified app');
  t.notMatch(await tab.evaluate(() => document.documentElement.outerHTML), 'svc:');
  await setApps({ android: null, ios: null });
});
