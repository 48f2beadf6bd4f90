import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { eventually } from '../helpers/ws.ts';
import { EMBED_EVENTS } from '../../web/shared/embed-protocol.ts';

// The embedding SDK as a course platform uses it: its page on another origin (http://localhost:<port>,
// Aula being http://127.0.0.1:<port>) loads /sdk/svc-embed.js and frames the room with an embedUrl.

const node = await startTestNode(t, { redis: false });
const { app } = node;
const tenant = await createTenant(node, 'pro');
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 'st1', fullName: 'Sofia Teacher', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 'ss1', fullName: 'Sid Student', role: 'STUDENT' })).body.data;
const browser = await launchBrowser(t, { media: true });

const EXAMPLE = new URL('../../docs/sdk-example.html', import.meta.url);

/**
 * A customer's page: it loads the SDK from Aula and frames the embedUrl given in `?embed=`. At
 * /sdk-example.html, the docs' example page, pointed at this Aula.
 */
async function customerSite(): Promise<{ origin: string; server: Server }> {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname === '/sdk-example.html') {
      res.setHeader('content-type', 'text/html');
      return res.end((await readFile(EXAMPLE, 'utf8')).replaceAll('https://aula.example', node.url));
    }
    const q = url.searchParams;
    const embed = q.get('embed') ?? '';
    // more createFrame options, as JSON in ?opts= (the test page's own; nothing of the room's)
    const opts = JSON.parse(q.get('opts') ?? '{}') as Record<string, unknown>;
    res.setHeader('content-type', 'text/html');
    res.end(`<!doctype html><title>Course platform</title><div id="room" style="width:900px;height:600px"></div>
<script src="${node.url}/sdk/svc-embed.js"></script>
<script>
  window.events = [];
  window.frame = Svc.createFrame('#room', { url: ${JSON.stringify(embed)}, theme: 'dark', ...${JSON.stringify(opts)} });
  for (const name of ['ready', 'joined', 'left', 'meeting-ended', 'waiting', 'admitted', 'participant-joined', 'participant-left', 'hand-raised', 'hand-lowered', 'room-locked', 'room-unlocked', 'poll-opened', 'poll-closed', 'question-answered', 'active-speaker', 'page-changed', 'error']) {
    window.frame.on(name, (data) => window.events.push([name, data]));
  }
</script>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { origin: `http://localhost:${(server.address() as AddressInfo).port}`, server };
}

async function setAllowedOrigins(origins: string[]): Promise<void> {
  const PASSWORD = 'correct horse battery staple';
  const email = `admin${Math.random().toString(36).slice(2)}@platform.example`;
  await app.services.admins.create(app.sql, { orgId: tenant.orgId, email, role: 'admin', password: PASSWORD });
  const session = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: tenant.orgId, email, password: PASSWORD } })).body.data.sessionToken;
  const res = await api(node, 'PATCH', `/orgs/${tenant.orgId}`, { bearer: session, body: { allowedOrigins: origins } });
  if (res.status !== 200) throw new Error(JSON.stringify(res.body));
}

const events = (p: Page) => p.evaluate(() => (window as any).events as [string, any][]);
const named = async (p: Page, name: string) => (await events(p)).filter(([n]) => n === name);

const allowed = await customerSite();
const notAllowed = await customerSite();
await setAllowedOrigins([allowed.origin]);
const m = (await call('POST', '/public/meetings', { title: 'Embedded Biology', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2026-12-01T10:00:00Z', durationMinutes: 45 })).body.data;

t.test('the SDK on an allowed origin: joined with the name, media, participant events, then left after leave()', async (t) => {
  const hostLink = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: teacher.id, role: 'HOST' })).body.data;
  const host = await (await browser.newContext()).newPage();
  const hostSince = Date.now();
  await host.goto(`${allowed.origin}/?embed=${encodeURIComponent(hostLink.embedUrl)}`);
  await eventually(async () => (await named(host, 'ready')).length === 1, 10_000);
  await host.frameLocator('iframe').locator('#join').click();
  await eventually(async () => (await named(host, 'joined')).length === 1, 10_000);
  t.match((await named(host, 'joined'))[0]![1], { participant: { name: 'Sofia Teacher', role: 'HOST', id: /^par_/ }, meeting: { id: m.id, title: 'Embedded Biology' } });
  t.equal(await host.frameLocator('iframe').locator('html').getAttribute('data-theme'), 'dark', 'the theme reaches the page');

  const studentLink = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: student.id })).body.data;
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${allowed.origin}/?embed=${encodeURIComponent(studentLink.embedUrl)}`);
  await eventually(async () => (await named(page, 'ready')).length === 1, 10_000);
  await page.frameLocator('iframe').locator('#join').click();
  await eventually(async () => (await named(page, 'joined')).length === 1, 10_000);
  t.match((await named(page, 'joined'))[0]![1], { participant: { name: 'Sid Student', role: 'PARTICIPANT' } });
  await eventually(async () => (await named(host, 'participant-joined')).some(([, d]) => d.participant.name === 'Sid Student'), 10_000);
  t.pass('the host page hears participant-joined');

  const frame = page.frames().find((f) => f !== page.mainFrame())!;
  const received = () => frame.evaluate(async () => ((window as any).aula.media ? (await (window as any).aula.media.bytes()).received : 0));
  await eventually(async () => (await received()) > 20_000, 15_000);
  t.pass('media flows into the framed room');

  // commands: raise and lower the hand through the SDK; the host's page hears both
  await page.evaluate(() => (window as any).frame.raiseHand());
  await eventually(async () => (await named(host, 'hand-raised')).some(([, d]) => d.participant.name === 'Sid Student'), 10_000);
  await page.evaluate(() => (window as any).frame.lowerHand());
  await eventually(async () => (await named(host, 'hand-lowered')).some(([, d]) => d.participant.name === 'Sid Student'), 10_000);
  t.pass('raiseHand and lowerHand reach the room, and hosts hear hand-raised and hand-lowered');
  // the host locks the meeting from its framed page's panel: the student's page hears room-locked, then room-unlocked
  const hostRoom = host.frameLocator('iframe');
  await hostRoom.locator('button[aria-label^="People"]').click();
  await hostRoom.locator('#lock').click();
  await eventually(async () => (await named(page, 'room-locked')).length === 1, 10_000);
  await hostRoom.locator('#lock').click();
  await eventually(async () => (await named(page, 'room-unlocked')).length === 1, 10_000);
  t.pass('the SDK hears room-locked and room-unlocked');
  // a poll and a question, driven through the framed pages' controllers over their room sockets
  const hostFrame = host.frames().find((f) => f !== host.mainFrame())!;
  await hostFrame.evaluate(() => (window as any).aula.openPoll({ question: 'Ready for the quiz?', pollType: 'YES_NO', anonymous: false, options: [], correct: [] }));
  await eventually(async () => (await named(page, 'poll-opened')).length === 1, 10_000);
  t.match((await named(page, 'poll-opened'))[0]![1], { poll: { question: 'Ready for the quiz?', type: 'YES_NO', quiz: false, id: /^pol_/ } });
  const pollId = (await named(page, 'poll-opened'))[0]![1].poll.id;
  await hostFrame.evaluate((id) => (window as any).aula.closePoll(id, true), pollId);
  await eventually(async () => (await named(page, 'poll-closed')).length === 1, 10_000);
  await frame.evaluate(() => (window as any).aula.askQuestion('Is there homework?', false));
  await eventually(() => hostFrame.evaluate(() => (window as any).aula.state.questions.length === 1), 10_000);
  const questionId = await hostFrame.evaluate(() => (window as any).aula.state.questions[0].questionId);
  await hostFrame.evaluate((id) => (window as any).aula.answerQuestion(id, 'Chapter 4.'), questionId);
  await eventually(async () => (await named(page, 'question-answered')).length === 1, 10_000);
  t.match((await named(page, 'question-answered'))[0]![1], { question: { id: questionId, text: 'Is there homework?', answer: 'Chapter 4.', answeredLive: false, yours: true } });
  t.match((await named(host, 'question-answered'))[0]![1], { question: { yours: false } });
  t.pass('the SDK hears poll-opened, poll-closed and question-answered');
  await page.evaluate(() => (window as any).frame.mute());
  await eventually(() => frame.evaluate(() => (window as any).aula.state.micOn === false), 5000);
  t.pass('mute turns the microphone off');

  await page.evaluate(() => (window as any).frame.leave());
  await eventually(async () => (await named(page, 'left')).length === 1, 10_000);
  t.same((await named(page, 'left'))[0]![1], { reason: 'left' });
  await eventually(async () => (await named(host, 'participant-left')).some(([, d]) => d.participant.name === 'Sid Student'), 10_000);
  t.pass('the host hears participant-left');

  // messages that do not come from the frame the SDK made are ignored
  await page.evaluate(() => window.postMessage({ svc: 'aula-embed', v: 1, frameId: 'x'.repeat(32), kind: 'event', event: 'meeting-ended', data: { reason: null } }, '*'));
  await page.waitForTimeout(300);
  t.equal((await named(page, 'meeting-ended')).length, 0, 'a forged event from the parent itself is ignored');

  t.equal((await call('POST', `/public/meetings/${m.id}/end`)).status, 200);
  await eventually(async () => (await named(host, 'meeting-ended')).length === 1, 10_000);
  const endedReason = (await call('GET', `/public/meetings/${m.id}`)).body.data.endedReason;
  t.ok(endedReason, 'the meeting says why it ended');
  t.same(await named(host, 'meeting-ended'), [['meeting-ended', { reason: endedReason }]], 'the host page hears meeting-ended with the same reason');
  // the page said ready: the SDK's wait for it (10 s) passed without an error
  await host.waitForTimeout(Math.max(0, hostSince + 11_000 - Date.now()));
  t.same(await named(host, 'error'), [], 'no origin_not_allowed once the page was ready');
  await host.evaluate(() => (window as any).frame.destroy());
  t.equal(await host.$$eval('iframe', (f) => f.length), 0, 'destroy removes the frame');
  await host.context().close();
  await page.context().close();
});

t.test('prejoin: false joins at once; layout, pages and audio only from the SDK; active-speaker and page-changed', async (t) => {
  const m3 = (await call('POST', '/public/meetings', { title: 'Embedded Chemistry', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2026-12-01T10:00:00Z', durationMinutes: 45 })).body.data;
  const linkFor = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${m3.id}/join-links`, { userId, role })).body.data;
  const opts = encodeURIComponent(JSON.stringify({ prejoin: false, layout: 'speaker' }));
  const host = await (await browser.newContext()).newPage();
  await host.goto(`${allowed.origin}/?opts=${opts}&embed=${encodeURIComponent((await linkFor(teacher.id, 'HOST')).embedUrl)}`);
  await eventually(async () => (await named(host, 'joined')).length === 1, 15_000);
  t.pass('in the room without a click: no pre-join screen');
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${allowed.origin}/?opts=${opts}&embed=${encodeURIComponent((await linkFor(student.id)).embedUrl)}`);
  await eventually(async () => (await named(page, 'joined')).length === 1, 15_000);
  const room = page.frames().find((f) => f !== page.mainFrame())!;
  const state = () => room.evaluate(() => (window as any).aula.state);
  t.equal((await state()).layoutMode, 'speaker', 'the layout option reaches the room');
  await eventually(async () => (await room.evaluate(() => (window as any).aula.media?.producers.size ?? 0)) === 2, 15_000);
  t.pass('camera and microphone sent with the default devices');
  // the student mutes: the teacher's fake microphone (a beep) is the only voice
  await page.evaluate(() => (window as any).frame.mute());
  await eventually(async () => (await named(page, 'active-speaker')).some(([, d]) => d.participant?.name === 'Sofia Teacher'), 30_000).catch(async () => {
    t.fail('no active-speaker', { state: (await state()).activeSpeaker, peers: (await node.app.media!.rooms.room(m3.id))?.inspect().peers.map((p) => ({ id: p.participantId, producers: p.producers.map((x) => `${x.source}:${x.paused}`) })), events: (await events(page)).map(([n]) => n) });
  });
  t.pass('active-speaker names the teacher');

  await page.evaluate(() => (window as any).frame.setLayout('grid'));
  await eventually(async () => (await state()).layoutMode === 'grid', 5000);
  await page.evaluate(() => (window as any).frame.setPage(3));
  await eventually(async () => (await named(page, 'page-changed')).length > 0, 5000);
  t.same((await named(page, 'page-changed')).at(-1)![1], { page: 1, pages: 1 }, 'two people fit one page: page 3 lands on 1');
  await page.evaluate(() => (window as any).frame.audioOnly(true));
  await eventually(async () => (await state()).audioOnly === true, 5000);
  await eventually(() => room.evaluate(() => document.querySelectorAll('.stage video').length === 0), 5000);
  t.pass('audio only: no video on the page');
  const thrown = await page.evaluate(() => {
    const out: string[] = [];
    for (const f of [() => (window as any).frame.setLayout('big'), () => (window as any).frame.setPage(0), () => (window as any).frame.audioOnly('yes')]) {
      try {
        f();
        out.push('taken');
      } catch (err) {
        out.push((err as Error).message);
      }
    }
    return out;
  });
  t.match(thrown, [/set-layout does not take "big"/, /set-page does not take 0/, /audio-only does not take "yes"/], 'a wrong value throws at once');
  const refused = await page.evaluate(() => {
    try {
      (window as any).Svc.createFrame('#room', { url: (window as any).frame.iframe.src.split('#')[0], layout: 'mosaic' });
      return 'created';
    } catch (err) {
      return (err as Error).message;
    }
  });
  t.match(refused, /options\.layout must be one of grid, speaker/);
  await host.context().close();
  await page.context().close();
});

t.test('a page on an origin the organization did not allow cannot show the room', async (t) => {
  const m2 = (await call('POST', '/public/meetings', { title: 'Not for framing', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2026-12-01T10:00:00Z', durationMinutes: 45 })).body.data;
  const link = (await call('POST', `/public/meetings/${m2.id}/join-links`, { userId: student.id })).body.data;
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${notAllowed.origin}/?embed=${encodeURIComponent(link.embedUrl)}`);
  await page.waitForTimeout(2000);
  t.same(await events(page), [], 'no event from the room: the frame never loaded it');
  // the SDK hears nothing from the frame, so after its 10 s it says why, once
  await eventually(async () => (await events(page)).length > 0, 12_000);
  await page.waitForTimeout(500);
  const heard = await events(page);
  t.equal(heard.length, 1, 'one event');
  t.match(heard[0], ['error', { code: 'origin_not_allowed', message: new RegExp(`did not load within 10 seconds: ${notAllowed.origin} is probably not among the organization's allowed origins`) }]);
  const child = page.frames().find((f) => f !== page.mainFrame());
  t.ok(child, 'the iframe exists');
  t.notMatch(child!.url(), /\/embed\//, `blocked by frame-ancestors (${child!.url()})`);
  // the link was not spent: the page never ran
  const ex = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'after-refusal' } });
  t.equal(ex.status, 200, 'the token is still unused');
  await page.context().close();
});

t.test('createFrame refuses a url that is not an embedUrl', async (t) => {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${allowed.origin}/?embed=${encodeURIComponent(`${node.url}/embed/x?jt=y`)}`);
  const message = await page.evaluate(() => {
    try {
      (window as any).Svc.createFrame('#room', { url: 'javascript:alert(1)' });
      return 'created';
    } catch (err) {
      return (err as Error).message;
    }
  });
  t.match(message, /options\.url must be the embedUrl/);
  await page.context().close();
});

t.test('docs/sdk-example.html listens to every event, and runs against the room', async (t) => {
  const html = await readFile(EXAMPLE, 'utf8');
  for (const name of EMBED_EVENTS) t.ok(html.includes(`'${name}'`), `it listens to ${name}`);
  t.match(html, /<script src="https:\/\/aula\.example\/sdk\/svc-embed\.js"><\/script>/, 'it loads the SDK from Aula');

  const m4 = (await call('POST', '/public/meetings', { title: 'Example page', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2026-12-01T10:00:00Z', durationMinutes: 45 })).body.data;
  const link = (await call('POST', `/public/meetings/${m4.id}/join-links`, { userId: teacher.id, role: 'HOST' })).body.data;
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${allowed.origin}/sdk-example.html?embed=${encodeURIComponent(link.embedUrl)}`);
  const logged = () => page.$$eval('#log b', (bs) => bs.map((b) => b.textContent));
  await eventually(async () => (await logged()).includes('ready'), 10_000);
  await page.frameLocator('iframe').locator('#join').click();
  await eventually(async () => (await logged()).includes('joined'), 10_000);
  await page.selectOption('#layout', 'speaker');
  await page.click('#set-layout');
  const room = page.frames().find((f) => f !== page.mainFrame())!;
  await eventually(() => room.evaluate(() => (window as any).aula.state.layoutMode === 'speaker'), 5000);
  await page.click('button[data-command="leave"]');
  await eventually(async () => (await logged()).includes('left'), 10_000);
  t.pass('ready, joined and left are logged; setLayout and leave reach the room');
  await page.context().close();
});
