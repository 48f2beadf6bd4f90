import t from 'tap';
import type { Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { enterRoom } from '../helpers/media.ts';
import { memoryLogger } from '../helpers/logs.ts';
import { eventually } from '../helpers/ws.ts';

// Eight people: three Chromium pages (the teacher and a student on laptops, a student on a phone with
// four tiles) and five Node WebRTC students sending a camera and a microphone. What each page shows
// decides what it receives: the server resumes the videos of the visible tiles only, at the layer
// their size needs, and a page turned changes that within a second.

const logs = memoryLogger('info');
const node = await startTestNode(t, { redis: false, logger: logs.log });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, fullName: string, role = 'STUDENT') => (await call('POST', '/public/users', { externalId, fullName, role })).body.data;
const teacher = await user('t1', 'Tina Teacher', 'TEACHER');
const bea = await user('s-bea', 'Bea Laptop');
const cai = await user('s-cai', 'Cai Phone');
const browser = await launchBrowser(t, { media: true });
const m = (await call('POST', '/public/meetings', { title: 'Biology 7C', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 })).body.data;
const link = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${m.id}/join-links`, { userId, role })).body.data;

async function open(url: string, viewport: { width: number; height: number }, mobile = false): Promise<Page> {
  const context = await browser.newContext({ viewport, ...(mobile ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}) });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'warning' || msg.type() === 'error') process.stderr.write(`[page ${msg.type()}] ${msg.text()}\n`);
  });
  await page.goto(url);
  await page.waitForSelector('#join');
  await page.click('#join');
  await eventually(() => page.evaluate(() => (window as any).aula.state.phase === 'room'), 15_000);
  return page;
}

const tp = await open((await link(teacher.id, 'HOST')).url, { width: 1280, height: 800 });
const bp = await open((await link(bea.id)).url, { width: 1280, height: 800 });
const cp = await open((await link(cai.id)).url, { width: 390, height: 844 }, true);
const nodeStudents: string[] = [];
for (let i = 1; i <= 5; i++) {
  const u = await user(`s-n${i}`, `Node Student ${i}`);
  const { peer, participantId } = await enterRoom(t, node, tenant.key, m.id, u.id);
  await peer.produceVideo();
  await peer.produceAudio();
  nodeStudents.push(participantId);
}

const pid = (p: Page) => p.evaluate(() => (window as any).aula.state.participantId as string);
const [tid, bid, cid] = [await pid(tp), await pid(bp), await pid(cp)];
const inspect = async () => (await node.app.media!.rooms.room(m.id))!.inspect();
/** The senders of the video consumers the server forwards to a receiver now (resumed), sorted. */
const resumedFor = async (receiver: string) =>
  (await inspect()).peers
    .find((p) => p.participantId === receiver)!
    .received.filter((c) => c.kind === 'video' && c.ready && !c.paused)
    .map((c) => c.from)
    .sort();
/** Whose camera tiles the page shows (not its own), sorted. */
const shown = (p: Page, me: string) =>
  p.evaluate((me) => [...document.querySelectorAll<HTMLElement>('[data-view-source="camera"]')].map((e) => e.dataset.viewParticipant!).filter((id) => id !== me).sort(), me);
/** Frames decoded per sender over a second and a half, as the page's WebRTC stats say. */
async function decoding(p: Page): Promise<Record<string, number>> {
  const read = () => p.evaluate(() => (window as any).aula.media.videoReceived() as Promise<Record<string, { participantId: string; framesDecoded: number }>>);
  const a = await read();
  await new Promise((r) => setTimeout(r, 1500));
  const b = await read();
  const out: Record<string, number> = {};
  for (const [id, v] of Object.entries(b)) out[v.participantId] = v.framesDecoded - (a[id]?.framesDecoded ?? 0);
  return out;
}

t.test('the phone shows four tiles of eight people: only those videos are resumed and decoded; turning the page moves them within a second', async (t) => {
  // everyone's camera is on, so the page's tiles are the video senders: pages of 4 on a phone
  await eventually(async () => (await cp.evaluate(() => (window as any).aula.state.pages)) === 2, 15_000);
  const first = await shown(cp, cid);
  t.equal(first.length, 3, 'four tiles: this student and three others');
  t.ok(first.includes(tid), 'the teacher is on the first page');
  await eventually(async () => JSON.stringify(await resumedFor(cid)) === JSON.stringify(first), 20_000).catch(() => {});
  t.same(await resumedFor(cid), first, 'the server resumes exactly the visible tiles\' videos', { consumers: (await inspect()).peers.find((p) => p.participantId === cid)!.received, producers: (await inspect()).peers.map((p) => ({ id: p.participantId, producers: p.producers })), log: logs.lines.filter((l) => l.level >= 40 || /consumer|media/.test(l.msg)).map((l) => `${l.msg} ${l.err?.message ?? ''} ${l.participantId ?? l.to ?? ''}`) });
  const all = (await inspect()).peers.find((p) => p.participantId === cid)!.received.filter((c) => c.kind === 'video');
  t.equal(all.length, 7, 'a consumer for each of the seven others exists (paused when hidden)');
  t.equal(all.filter((c) => c.paused).length, 4, 'four hidden, four paused');
  await eventually(async () => {
    const d = await decoding(cp);
    return first.every((id) => (d[id] ?? 0) > 0) && Object.entries(d).every(([id, n]) => first.includes(id) || n === 0);
  }, 15_000);
  t.pass('the phone decodes the visible videos and nothing else');
  await screenshot(cp, 'class-phone-page-1');

  await cp.click('button[aria-label="Next page"]');
  const clicked = Date.now();
  const second = await (async () => {
    await eventually(async () => (await cp.evaluate(() => (window as any).aula.state.page)) === 2, 2000);
    return shown(cp, cid);
  })();
  t.equal(second.length, 4, 'the second page: the other four');
  t.same(second.filter((id) => first.includes(id)), [], 'nobody from the first page');
  await eventually(async () => JSON.stringify(await resumedFor(cid)) === JSON.stringify(second), 5000);
  const took = Date.now() - clicked;
  t.ok(took <= 1000, `the resumed set followed the page in ${took} ms`);
  await screenshot(cp, 'class-phone-page-2');
});

t.test('a tile made big gets a higher layer: pinning the teacher on a laptop', async (t) => {
  const layerOf = async () => (await inspect()).peers.find((p) => p.participantId === bid)!.received.find((c) => c.from === tid && c.source === 'camera' && c.kind === 'video');
  await eventually(async () => (await layerOf())?.paused === false, 10_000);
  const before = (await layerOf())!.spatialLayer;
  t.ok(before !== null && before < 2, `in the grid of eight the teacher's tile takes layer ${before}`);
  await bp.click(`button[aria-label="Pin Tina Teacher"]`);
  await eventually(async () => (await layerOf())?.spatialLayer === 2, 5000);
  t.pass('pinned big: layer 2');
  const big = await bp.evaluate(() => document.querySelector('.focus .tile')!.getBoundingClientRect().height);
  t.ok(big > 480, `the pinned tile is ${Math.round(big)} px high`);
  // the teacher's browser encodes the top layer again for this viewer (dynacast)
  await eventually(async () => (await inspect()).peers.find((p) => p.participantId === tid)!.producers.find((p) => p.source === 'camera')!.layersWanted === 2, 5000);
  t.pass('the teacher is asked for the top layer');
  await screenshot(bp, 'class-pinned');
  await bp.click(`button[aria-label="Unpin Tina Teacher"]`);
  await eventually(async () => ((await layerOf())?.spatialLayer ?? 2) < 2, 5000);
  t.pass('unpinned: back to the grid\'s layer');
});

t.test('the spotlight: a host puts a student big on every page; hosts can turn a camera off', async (t) => {
  const target = nodeStudents[2]!;
  await tp.click('button[aria-label^="People"]');
  await tp.click('button[aria-label="Spotlight Node Student 3 for everyone"]');
  for (const p of [bp, cp]) await eventually(() => p.evaluate((id) => document.querySelector('.focus [data-view-participant]')?.getAttribute('data-view-participant') === id, target), 5000);
  t.pass('big on the laptop and on the phone');
  await eventually(async () => (await inspect()).peers.find((p) => p.participantId === cid)!.received.some((c) => c.from === target && c.kind === 'video' && !c.paused), 5000);
  t.pass('the phone receives the spotlit student although they were on its other page');
  await screenshot(cp, 'class-phone-spotlight');
  await screenshot(tp, 'class-host-spotlight');
  await tp.click('button[aria-label="Remove spotlight from Node Student 3"]');
  await eventually(() => bp.evaluate(() => document.querySelector('.focus') === null), 5000);
  t.pass('the spotlight off: the grid again');

  await tp.click(`button[aria-label="Stop camera of Bea Laptop"]`);
  await eventually(() => bp.evaluate(() => (window as any).aula.state.camOn === false), 5000);
  t.notOk((await inspect()).peers.find((p) => p.participantId === bid)!.producers.some((p) => p.source === 'camera'), 'no camera producer on the server');
  await tp.click('button[aria-label^="People"]');
});

t.test('audio only: the page receives no video and still hears everyone; the speaker view', async (t) => {
  await cp.click('#audio-only');
  await eventually(async () => (await resumedFor(cid)).length === 0, 5000);
  t.pass('no video is resumed for the phone');
  const audio = (await inspect()).peers.find((p) => p.participantId === cid)!.received.filter((c) => c.kind === 'audio');
  t.ok(audio.length >= 6 && audio.every((c) => !c.paused), `every voice is still forwarded (${audio.length})`);
  t.equal(await cp.evaluate(() => document.querySelectorAll('.stage video').length), 0, 'no video element on the page');
  await screenshot(cp, 'class-phone-audio-only');
  await cp.click('#audio-only');
  await eventually(async () => (await resumedFor(cid)).length > 0, 5000);
  t.pass('video again');

  await tp.click('button:has-text("Speaker")');
  await eventually(() => tp.evaluate(() => document.querySelector('.focus [data-view-participant]') !== null), 5000);
  const thumbs = await tp.evaluate(() => document.querySelectorAll('.thumbs .tile').length);
  t.ok(thumbs >= 1 && thumbs <= 6, `the speaker big, ${thumbs} thumbnails beside`);
  await screenshot(tp, 'class-speaker-view');
});

t.test('four people on a laptop: the videos fill most of the stage', async (t) => {
  const small = (await call('POST', '/public/meetings', { title: 'Small group', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 })).body.data;
  const linkTo = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${small.id}/join-links`, { userId, role })).body.data;
  const host = await open((await linkTo(teacher.id, 'HOST')).url, { width: 1280, height: 800 });
  for (let i = 1; i <= 3; i++) {
    const u = await user(`s-small-${i}`, `Small ${i}`);
    const { peer } = await enterRoom(t, node, tenant.key, small.id, u.id);
    await peer.produceVideo();
  }
  await eventually(() => host.evaluate(() => document.querySelectorAll('.grid .tile').length === 4), 10_000);
  await eventually(() => host.evaluate(() => document.querySelectorAll('.grid video').length === 4), 15_000);
  const share = await host.evaluate(() => {
    const stage = document.querySelector('.stage')!.getBoundingClientRect();
    const videos = [...document.querySelectorAll('.grid .tile')].map((v) => v.getBoundingClientRect());
    return videos.reduce((a, r) => a + r.width * r.height, 0) / (stage.width * stage.height);
  });
  t.ok(share >= 0.7, `the four videos cover ${Math.round(share * 100)}% of the stage`);
  await screenshot(host, 'class-four');
  await host.context().close();
});
