import t from 'tap';
import type { Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { MediaPeer } from '../helpers/media.ts';
import { connect, eventually } from '../helpers/ws.ts';

// A class of sixty: the teacher and two students in Chromium (a laptop and a phone), 57 students as
// Node senders, 47 with a small camera and ten without one. Each page shows a page of
// tiles, receives only those videos, and lists the people without video in the strip. The screenshots
// (AULA_SCREENSHOTS) are the docs' pictures of a full class.

const STUDENTS = 57;
const CAMERAS_OFF = 10;
const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, fullName: string, role = 'STUDENT') => (await call('POST', '/public/users', { externalId, fullName, role })).body.data;
const teacher = await user('t1', 'Tina Teacher', 'TEACHER');
const lia = await user('s-lia', 'Lia Laptop');
const pia = await user('s-pia', 'Pia Phone');
await call('POST', '/public/classes', { externalId: 'science-9', name: 'Year 9 Science' });
const created = await call('POST', '/public/meetings', { title: 'Year 9 Science', type: 'CLASS', classId: 'science-9', access: { mode: 'ORG_MEMBERS' }, hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 });
if (created.status !== 201) throw new Error(`the class meeting was not created: ${JSON.stringify(created.body)}`);
const m = created.body.data;
const link = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${m.id}/join-links`, { userId, role })).body.data;
const browser = await launchBrowser(t, { media: true });

async function open(url: string, viewport: { width: number; height: number }, mobile = false): Promise<Page> {
  const context = await browser.newContext({ viewport, ...(mobile ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}) });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') process.stderr.write(`[page ${msg.type()}] ${msg.text()}\n`);
  });
  await page.goto(url);
  await page.waitForSelector('#join');
  await page.click('#join');
  await eventually(() => page.evaluate(() => (window as any).aula.state.phase === 'room'), 20_000);
  return page;
}

const tp = await open((await link(teacher.id, 'HOST')).url, { width: 1280, height: 800 });

// the synthetic students: a room socket each, sending a small camera and receiving nothing
const FIRST = ['Ada', 'Ben', 'Cleo', 'Dev', 'Eli', 'Fay', 'Gus', 'Hana', 'Ivo', 'Jun', 'Kai', 'Lena', 'Mo', 'Nia', 'Otto', 'Pax', 'Quin', 'Rita', 'Sol'];
const LAST = ['Abara', 'Berg', 'Costa'];
const peers: MediaPeer[] = [];
for (let i = 0; i < STUDENTS; i++) {
  const u = await user(`s-${i}`, `${FIRST[i % FIRST.length]} ${LAST[Math.floor(i / FIRST.length) % LAST.length]}`);
  const l = await link(u.id);
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: l.token, deviceId: `d-${i}` } })).body.data;
  const room = await connect(t, s.mediaUrl, s.mediaToken);
  await room.type('joined');
  const peer = new MediaPeer(room);
  t.teardown(() => peer.close());
  await peer.start({ receive: false });
  // the last ten have no camera (a paused libwebrtc sender in Node is a native path best left out of a
  // test that already runs 47 of them: one CI run died of a SIGSEGV in this setup)
  if (i < STUDENTS - CAMERAS_OFF) await peer.produceVideo({ small: true });
  peers.push(peer);
}
const lp = await open((await link(lia.id)).url, { width: 1280, height: 800 });
const pp = await open((await link(pia.id)).url, { width: 390, height: 844 }, true);

// a page that joins a class of sixty is offered a consumer per camera and microphone, and sets them up
// one at a time (voices, then what it shows, then the rest: web/room/media.ts): how long that takes here
const settled = async (p: Page, name: string) => {
  const from = Date.now();
  await eventually(() => p.evaluate(() => (window as any).aula.media?.waiting === 0 && (window as any).aula.media.remote.size >= 50), 120_000);
  t.comment(`${name} set up its consumers in ${((Date.now() - from) / 1000).toFixed(1)} s after joining`);
};
await settled(lp, 'the laptop');
await settled(pp, 'the phone');
const pid = (p: Page) => p.evaluate(() => (window as any).aula.state.participantId as string);
const inspect = async () => (await node.app.media!.rooms.room(m.id))!.inspect();
const resumedVideo = async (receiver: string) => (await inspect()).peers.find((p) => p.participantId === receiver)!.received.filter((c) => c.kind === 'video' && c.ready && !c.paused).length;
/** For a failure: the tiles a page shows whose video the server does not forward, with their consumers. */
async function why(p: Page, receiver: string) {
  const shown = await p.evaluate((me) => [...document.querySelectorAll<HTMLElement>('[data-view-source="camera"]')].map((e) => e.dataset.viewParticipant!).filter((id) => id !== me), receiver);
  const received = (await inspect()).peers.find((x) => x.participantId === receiver)!.received.filter((c) => c.kind === 'video');
  const names = new Map(((await state(p)).roster as { participantId: string; name: string }[]).map((r) => [r.participantId, r.name]));
  const missing = shown.filter((id) => !received.some((c) => c.from === id && c.ready && !c.paused));
  return Promise.all(
    missing.map(async (id) => ({
      id,
      name: names.get(id),
      consumers: await Promise.all(received.filter((c) => c.from === id).map(async (c) => ({ ...c, page: await p.evaluate((cid) => (window as any).aula.media.knows(cid), c.consumerId) }))),
    })),
  );
}
/** For a failure: the tiles whose video shows no picture, with what the server and the page know of them. */
async function stalled(p: Page, receiver: string) {
  const ids = await p.evaluate(() => [...document.querySelectorAll<HTMLElement>('.grid .tile')].filter((t) => !((t.querySelector('video') as HTMLVideoElement | null)?.videoWidth)).map((t) => t.dataset.viewParticipant!));
  const received = (await inspect()).peers.find((x) => x.participantId === receiver)!.received.filter((c) => c.kind === 'video');
  const stats = await p.evaluate(() => (window as any).aula.media.videoReceived());
  return ids.map((id) => ({ id, server: received.filter((c) => c.from === id), page: Object.entries(stats).filter(([, v]: any) => v.participantId === id) }));
}
const state = (p: Page) => p.evaluate(() => (window as any).aula.state);

t.test('sixty in the room: pages of 16 on a laptop and 4 on a phone, the cameras that are off in the strip', async (t) => {
  await eventually(async () => (await state(tp)).roster.length === 60, 20_000);
  // 50 with a camera on: 47 synthetic and 3 pages; the teacher's tile comes first
  await eventually(async () => (await state(lp)).pages === Math.ceil(50 / 16), 20_000);
  await eventually(async () => (await state(pp)).pages === Math.ceil(50 / 4), 20_000);
  t.pass('the phone pages by four');
  await eventually(() => lp.evaluate(() => document.querySelectorAll('.strip .chip').length === 10), 10_000);
  t.pass('the ten without video are in the strip, not in the grid');
  t.equal(await lp.evaluate(() => document.querySelector('.grid .tile')?.getAttribute('aria-label')), 'Tina Teacher, Teacher', 'the teacher leads, with the Teacher tag');
  const [lid, ppid] = [await pid(lp), await pid(pp)];
  await eventually(async () => (await resumedVideo(lid)) === 15, 15_000).catch(() => {});
  t.equal(await resumedVideo(lid), 15, 'the laptop receives 15 videos (its page of 16, less itself), of 59 others', { missing: await why(lp, lid) });
  await eventually(async () => (await resumedVideo(ppid)) === 3, 15_000).catch(() => {});
  t.equal(await resumedVideo(ppid), 3, 'the phone receives 3', { missing: await why(pp, ppid) });
  const playing = () => lp.evaluate(() => [...document.querySelectorAll('.grid video')].filter((v) => (v as HTMLVideoElement).videoWidth > 0).length);
  await eventually(async () => (await playing()) === 16, 20_000).catch(() => {});
  t.equal(await playing(), 16, 'the page plays its sixteen videos', { stalled: await stalled(lp, lid) });
  await screenshot(lp, 'class-sixty-laptop');
  await screenshot(pp, 'class-sixty-phone');
  await lp.click('button[aria-label="Next page"]');
  await lp.click('button[aria-label="Next page"]');
  await eventually(async () => (await state(lp)).page === 3, 5000);
  // a page that joined late may still be setting up the consumers of people it does not show (one at a
  // time, each renegotiating its transport): those it shows now go first (web/room/media.ts, #next)
  await eventually(async () => (await resumedVideo(lid)) === 16, 30_000).catch(() => {});
  t.equal(await resumedVideo(lid), 16, 'page 3: sixteen others, all received', { missing: await why(lp, lid) });
  await eventually(async () => (await playing()) === 16, 20_000).catch(() => {});
  t.equal(await playing(), 16, 'page 3 plays its sixteen videos', { stalled: await stalled(lp, lid) });
  await screenshot(lp, 'class-sixty-laptop-page-3');
});

t.test('sixty in the speaker view and in audio only', async (t) => {
  await tp.click('button:has-text("Speaker")');
  await eventually(() => tp.evaluate(() => document.querySelector('.focus .tile') !== null && document.querySelectorAll('.thumbs .tile').length >= 3), 5000);
  const tid = await pid(tp);
  await eventually(async () => (await resumedVideo(tid)) <= 6, 10_000).catch(() => {});
  const receivedByTeacher = await resumedVideo(tid);
  t.ok(receivedByTeacher <= 6, `the teacher's speaker view receives ${receivedByTeacher} videos: the speaker and the thumbnails`);
  await screenshot(tp, 'class-sixty-speaker');
  await pp.click('#audio-only');
  await eventually(async () => (await resumedVideo(await pid(pp))) === 0, 5000);
  t.pass('audio only: no video for the phone');
  await screenshot(pp, 'class-sixty-phone-audio-only');
});
