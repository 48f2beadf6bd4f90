import t from 'tap';
import { api, createTenant, startTestMember } from '../helpers/member.ts';
import { launchBrowser } from '../helpers/browser.ts';

const member = await startTestMember(t, { redis: false });
const tenant = await createTenant(member);
await api(member, 'POST', '/public/users', { key: tenant.key, body: { externalId: 'b1', fullName: 'Bea Browser', role: 'STUDENT' } });
const m = (await api(member, 'POST', '/public/meetings', { key: tenant.key, body: { title: 'Biology 101', type: 'MEETING', hostUserId: 'b1', scheduledStart: '2026-10-01T10:00:00Z', durationMinutes: 50, settings: { waitingRoom: true } } })).body.data;
const browser = await launchBrowser(t);

t.test('the join page exchanges the link, survives a reload, and refuses another device', async (t) => {
  const link = (await api(member, 'POST', `/public/meetings/${m.id}/join-links`, { key: tenant.key, body: { userId: 'b1' } })).body.data;
  const tab = await (await browser.newContext()).newPage();
  await tab.goto(link.url);
  await tab.waitForFunction(() => document.title === 'Biology 101');
  t.equal(await tab.textContent('#status'), 'Waiting for a host to let you in…');
  const stored = await tab.evaluate(() => Object.entries(sessionStorage).find(([k]) => k.startsWith('aula:session:'))?.[1]);
  t.match(JSON.parse(stored!), { meeting: { id: m.id }, user: { displayName: 'Bea Browser' }, waitingRoom: { status: 'WAITING' } });

  await tab.reload();
  await tab.waitForFunction(() => document.title === 'Biology 101');
  t.pass('a reload in the same tab keeps working');

  const other = await (await browser.newContext()).newPage();
  await other.goto(link.url);
  await other.waitForFunction(() => document.getElementById('title')?.textContent === 'Cannot join');
  t.equal(await other.textContent('#status'), 'This link was already used on another device.');
});

t.test('the embed page reports the session to its parent frame', async (t) => {
  const link = (await api(member, 'POST', `/public/meetings/${m.id}/join-links`, { key: tenant.key, body: { userId: 'b1' } })).body.data;
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${member.url}/healthz`);
  const message = page.evaluate(
    (src) =>
      new Promise((resolve) => {
        addEventListener('message', (e) => resolve(e.data));
        const f = document.createElement('iframe');
        f.src = src;
        document.body.append(f);
      }),
    link.embedUrl,
  );
  t.match(await message, { source: 'svc-embed', type: 'session', meeting: { id: m.id, title: 'Biology 101' }, role: 'PARTICIPANT' });
});
