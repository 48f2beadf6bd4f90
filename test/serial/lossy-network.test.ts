import t from 'tap';
import * as mediasoup from 'mediasoup';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { enterRoom } from '../helpers/media.ts';
import { lossyLink, type LinkConditions, type LossyLink } from '../helpers/lossy-link.ts';
import { eventually } from '../helpers/ws.ts';

// A student on a bad school network: 10% of packets lost each way and 500 kbit/s each way. Their audio
// keeps going both ways, video steps down, their network quality turns red and the page offers audio
// only; taking it pauses every video the server sends them while they still hear the class. The
// student's page reaches the media server only through a relay of the test's (test/helpers/lossy-link.ts):
// the room socket's transport-create acks are rewritten so the page's one server candidate is the relay.
// A control first: the same relay with no loss and no limit keeps the quality good. Wall-clock bounds:
// the serial lane.

/** The worker's producers and consumers, with who sends or receives them (their transport says), for the scores over time. */
const producers = new Map<string, { producer: mediasoup.types.Producer; participantId: string; source: string }>();
const consumers = new Map<string, { consumer: mediasoup.types.Consumer; to: string; from: string; source: string }>();
mediasoup.observer.on('newworker', (w) =>
  w.observer.on('newrouter', (r) =>
    r.observer.on('newtransport', (tr) => {
      const to = (tr.appData as { participantId?: string }).participantId;
      if (!to) return;
      tr.observer.on('newproducer', (p) => {
        producers.set(p.id, { producer: p, participantId: to, source: String((p.appData as { source?: string }).source) });
        p.observer.once('close', () => producers.delete(p.id));
      });
      tr.observer.on('newconsumer', (c) => {
        const from = c.appData as { participantId: string; source: string };
        consumers.set(c.id, { consumer: c, to, from: from.participantId, source: from.source });
        c.observer.once('close', () => consumers.delete(c.id));
      });
    }),
  ),
);

const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, fullName: string, role = 'STUDENT') => (await call('POST', '/public/users', { externalId, fullName, role })).body.data;
const teacherUser = await user('t-lossy', 'Tom Teacher', 'TEACHER');
const m = (await call('POST', '/public/meetings', { title: 'Geography 8A', type: 'MEETING', hostUserId: teacherUser.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 })).body.data;

// the teacher, on a good network: a simulcast camera (frames an encoder cannot squeeze, so its top
// layer needs more than the student's link carries, as a real camera's does) and a tone
const teacher = await enterRoom(t, node, tenant.key, m.id, teacherUser.id, 'HOST');
await teacher.peer.produceVideo({ noise: true });
await teacher.peer.produceAudio();
const tid = teacher.participantId;

const browser: Browser = await launchBrowser(t, { media: true });
const inspect = async () => (await node.app.media!.rooms.room(m.id))!.inspect();
const aula = <T>(page: Page, fn: string): Promise<T> => page.evaluate(fn) as Promise<T>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Student {
  context: BrowserContext;
  page: Page;
  links: LossyLink[];
  participantId: string;
  /** When the page was in the room (Date.now()). */
  inRoomAt: number;
}

/**
 * A student's page whose media goes through lossy links (one per transport): the udp candidate of each
 * transport-create ack points at a new link to the real port, and the tcp candidates are dropped, so
 * the page has no other way to the media server.
 */
async function joinThrough(externalId: string, conditions: Partial<LinkConditions>, seed: number): Promise<Student> {
  const u = await user(externalId, 'Sam Student');
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: u.id, role: 'PARTICIPANT' })).body.data;
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error') process.stderr.write(`[page ${msg.type()}] ${msg.text()}\n`);
  });
  const links: LossyLink[] = [];
  await page.routeWebSocket(/\/media/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((msg) => server.send(msg));
    // in order: an ack waits for its link to open, and what follows waits for it
    let chain = Promise.resolve();
    server.onMessage((msg) => {
      chain = chain.then(async () => {
        if (typeof msg !== 'string' || !msg.includes('"iceCandidates"')) return ws.send(msg);
        const ack = JSON.parse(msg);
        if (ack.type !== 'ack' || !Array.isArray(ack.iceCandidates)) return ws.send(msg);
        const udp = ack.iceCandidates.filter((c: { protocol: string }) => c.protocol === 'udp');
        const out = [];
        for (const c of udp) {
          const l = await lossyLink(t, { ip: c.ip ?? c.address, port: c.port }, conditions, seed + links.length);
          links.push(l);
          out.push({ ...c, port: l.port });
        }
        ws.send(JSON.stringify({ ...ack, iceCandidates: out }));
      });
    });
  });
  await page.goto(link.url);
  await page.waitForSelector('#join');
  await page.click('#join');
  await eventually(() => aula<boolean>(page, `window.aula.state.phase === 'room'`), 30_000);
  const inRoomAt = Date.now();
  const participantId = await aula<string>(page, 'window.aula.state.participantId');
  // every change of this student's quality as the page holds it, with when (a string: the page gets no helpers of this file's compiler)
  await page.evaluate(`{
    const pid = ${JSON.stringify(participantId)};
    window.qualitySeen = [];
    const note = () => {
      const q = window.aula.state.quality[pid];
      if (window.qualitySeen.length === 0 || q !== window.qualitySeen.at(-1)[1]) window.qualitySeen.push([Date.now(), q]);
    };
    note();
    window.aula.subscribe(note);
  }`);
  await eventually(() => aula<boolean>(page, `!!window.aula.media && window.aula.media.producers.has('mic') && window.aula.media.producers.has('camera')`), 30_000);
  // the teacher pinned big: the page wants the top layer of their camera (media/view.ts)
  await page.click('button.pin[aria-label="Pin Tom Teacher"]');
  return { context, page, links, participantId, inRoomAt };
}

const quality = (s: Student) => aula<number | undefined>(s.page, `window.aula.state.quality[${JSON.stringify(s.participantId)}]`);
const pageBytes = (s: Student) => aula<{ sent: number; received: number; audioEnergy: number }>(s.page, 'window.aula.media.bytes()');
const sentByLayer = (s: Student) => aula<number[]>(s.page, `window.aula.media.sentByLayer('camera')`);
/** What the teacher's Node peer has received of the student's microphone. */
const micAtTeacher = async (s: Student) => {
  const r = teacher.peer.from(s.participantId, 'mic');
  return r ? teacher.peer.receivedBy(r.consumer.id) : 0;
};
/** The student's consumer of the teacher's camera, as the server holds it. */
const teacherCameraAt = async (s: Student) =>
  (await inspect()).peers.find((p) => p.participantId === s.participantId)?.received.find((c) => c.from === tid && c.source === 'camera' && c.kind === 'video');

/** The scores behind a student's quality, from the worker: its producers' (per encoding) and its consumers'. */
function scores(s: Student) {
  const up = [...producers.values()].filter((p) => p.participantId === s.participantId && !p.producer.closed).map((p) => `${p.source}${p.producer.paused ? '(paused)' : ''}:[${p.producer.score.map((e) => e.score).join(',')}]`);
  const down = [...consumers.values()].filter((c) => c.to === s.participantId && !c.consumer.closed).map((c) => `${c.from === tid ? 'teacher' : c.from.slice(0, 6)}.${c.source}${c.consumer.paused ? '(paused)' : ''}:${c.consumer.score.score}${c.consumer.kind === 'video' ? `@L${c.consumer.currentLayers?.spatialLayer ?? '-'}` : ''}`);
  return `up ${up.join(' ')} | down ${down.join(' ')}`;
}

/** What the teacher's camera brings the server, kbit/s per layer (the worker's stats). */
async function teacherLayers(): Promise<string> {
  const p = [...producers.values()].find((p) => p.participantId === tid && p.source === 'camera');
  if (!p) return '';
  const stats = (await p.producer.getStats().catch(() => [])) as { rid?: string; ssrc: number; bitrate: number }[];
  return stats
    .filter((x) => x.bitrate !== undefined)
    .sort((a, b) => String(a.rid ?? a.ssrc).localeCompare(String(b.rid ?? b.ssrc)))
    .map((x) => Math.round(x.bitrate / 1000))
    .join(',');
}

/** Every 2 s until stopped: the student's quality, the scores behind it, their camera's layers and what crossed the links. */
function record(s: Student): { rows: string[]; stop(): Promise<void> } {
  const rows: string[] = [];
  let running = true;
  const done = (async () => {
    let lastLayers: number[] = [];
    let lastLinks = s.links.map((l) => [l.stats.up.outBytes, l.stats.down.outBytes]);
    while (running) {
      const at = ((Date.now() - s.inRoomAt) / 1000).toFixed(0);
      const layers = await sentByLayer(s).catch(() => [] as number[]);
      const kbps = layers.map((b, i) => Math.round(((b - (lastLayers[i] ?? 0)) * 8) / 2000));
      lastLayers = layers;
      const nowLinks = s.links.map((l) => [l.stats.up.outBytes, l.stats.down.outBytes]);
      const link = s.links
        .map((l, i) => {
          const [u, d] = nowLinks[i]!.map((b, j) => Math.round(((b - (lastLinks[i]?.[j] ?? 0)) * 8) / 2000));
          return `${i ? 'recv' : 'send'}: up ${u}kbps ${l.stats.up.out}/${l.stats.up.in} (lost ${l.stats.up.lost}, overflow ${l.stats.up.overflow}) down ${d}kbps ${l.stats.down.out}/${l.stats.down.in} (lost ${l.stats.down.lost}, overflow ${l.stats.down.overflow})`;
        })
        .join('; ');
      lastLinks = nowLinks;
      const page = await aula<string>(s.page, '`iceRestarts ${window.aula.media?.iceRestarts} mediaError ${window.aula.state.mediaError}`').catch(() => '?');
      rows.push(`t=${at}s quality=${await quality(s).catch(() => '?')} ${scores(s)} | teacher camera kbps by layer [${await teacherLayers()}] | student camera sent kbps by layer [${kbps.join(',')}] | ${page} | links ${link}`);
      await sleep(2000);
    }
  })();
  return {
    rows,
    async stop() {
      running = false;
      await done;
    },
  };
}

/** Leaves the room the way the page's button does, and closes the page. */
async function leave(s: Student): Promise<void> {
  await s.page.evaluate(() => (window as any).aula.leave()).catch(() => {});
  await eventually(async () => !(await inspect()).peers.some((p) => p.participantId === s.participantId), 10_000).catch(() => {});
  await s.context.close();
  for (const l of s.links) await l.close();
}

/** Kbit/s of the student's camera per simulcast layer over `ms`, lowest first (the page's outbound-rtp stats). */
async function layerRates(s: Student, ms: number): Promise<number[]> {
  const a = await sentByLayer(s);
  await sleep(ms);
  const b = await sentByLayer(s);
  return b.map((x, i) => Math.round(((x - (a[i] ?? 0)) * 8) / ms));
}

/**
 * The page's quality over time as [ms since entering, quality] changes, and its first red spell (<= 2)
 * that lasted RED_HOLD_MS or more: longer than the moment a just-made producer has no score yet (the
 * server says 0 until its first one), so a red that is the network's, not the join's.
 */
const RED_HOLD_MS = 2500;
async function qualityOver(s: Student): Promise<{ seen: [number, number | undefined][]; red: number | null }> {
  const raw = await aula<[number, number | undefined][]>(s.page, 'window.qualitySeen');
  const seen = raw.map(([at, q]) => [at - s.inRoomAt, q] as [number, number | undefined]);
  const now = Date.now() - s.inRoomAt;
  for (let i = 0; i < seen.length; i++) {
    const [at, q] = seen[i]!;
    if (q === undefined || q > 2) continue;
    let end = i + 1;
    while (end < seen.length && (seen[end]![1] ?? 5) <= 2) end++;
    const until = end < seen.length ? seen[end]![0] : now;
    if (until - at >= RED_HOLD_MS) return { seen, red: at };
    i = end - 1;
  }
  return { seen, red: null };
}

/** The layer of the teacher's camera the pinned student receives on a good link, and what the student's camera sends there. */
let controlLayer: number | null = null;
let controlRates: number[] = [];

t.test('control: the same relay with no loss and no limit keeps the quality good', async (t) => {
  const s = await joinThrough('s-clean', { loss: 0, rateKbps: null }, 7);
  const rec = record(s);
  t.teardown(() => rec.stop());
  t.equal(s.links.length, 2, 'one link per transport');
  await eventually(async () => (await micAtTeacher(s)) > 2000, 20_000);
  t.pass('the teacher hears the student through the relay');
  t.ok(s.links.every((l) => l.stats.up.out > 0 && l.stats.down.out > 0), 'both transports carry media through their link');
  await eventually(async () => ((await quality(s)) ?? -1) >= 4, 20_000);
  const seen: number[] = [];
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    seen.push((await quality(s)) ?? -1);
    await sleep(500);
  }
  t.ok(Math.min(...seen) >= 4, `quality stayed at 4 or above for 10 s (${[...new Set(seen)].join(',')})`);
  controlLayer = (await teacherCameraAt(s))?.currentLayer ?? null;
  t.ok(controlLayer !== null && controlLayer > 0, `the pinned teacher's camera reaches the student at layer ${controlLayer} on a good link`);
  controlRates = await layerRates(s, 3000);
  t.ok(controlRates.length === 3 && controlRates[2]! > 100, `the student's camera sends its three layers (kbit/s: ${controlRates.join(', ')})`);
  await rec.stop();
  t.comment(`control, every 2 s:\n${rec.rows.join('\n')}`);
  await leave(s);
});

t.test('10% loss at 500 kbit/s each way', async (t) => {
  const s = await joinThrough('s-lossy', { loss: 0.1, rateKbps: 500, queueMs: 150 }, 42);
  const rec = record(s);
  t.teardown(() => rec.stop());
  const sinceRoom = () => Date.now() - s.inRoomAt;
  // watched from the start: when the page offered audio only
  const offer = s.page.waitForSelector('#audio-only-offer', { timeout: Math.max(1000, 30_000 - sinceRoom()) }).then(
    () => Date.now(),
    () => null,
  );
  t.equal(s.links.length, 2, 'one link per transport');
  await eventually(async () => (await micAtTeacher(s)) > 0, 30_000);

  await t.test('audio keeps flowing both ways', async (t) => {
    const a0 = await micAtTeacher(s);
    const p0 = await pageBytes(s);
    await sleep(10_000);
    const a1 = await micAtTeacher(s);
    const p1 = await pageBytes(s);
    t.ok(a1 - a0 > 5000, `the teacher received ${a1 - a0} bytes of the student's microphone in 10 s`);
    t.ok(p1.audioEnergy > p0.audioEnergy, `the student's page decoded the teacher's audio (energy ${p0.audioEnergy.toFixed(3)} -> ${p1.audioEnergy.toFixed(3)})`);
    t.ok(p1.received > p0.received, `and received ${p1.received - p0.received} bytes`);
  });

  await t.test('video adapts to the link', async (t) => {
    const top = controlLayer ?? 2;
    const c = await eventually(async () => {
      const c = await teacherCameraAt(s);
      return c && (c.paused || c.currentLayer === null || c.currentLayer < top) && c;
    }, 30_000).catch(() => null);
    const now = await teacherCameraAt(s);
    t.ok(c, `the teacher's camera reaches the student below the layer of a good link (${top}) or paused (preferred ${now?.spatialLayer}, current ${now?.currentLayer}, paused ${now?.paused})`);
    const rates = await layerRates(s, 5000);
    t.ok((rates[2] ?? 0) < 5, `the student's camera stops sending its top layer (kbit/s by layer: ${rates.join(', ')}; on a good link ${controlRates.join(', ')})`);
  });

  await t.test('the student\'s network quality turns red', async (t) => {
    await eventually(async () => (await qualityOver(s)).red !== null, Math.max(1000, 20_000 + RED_HOLD_MS - sinceRoom())).catch(() => {});
    const { seen, red } = await qualityOver(s);
    const timeline = seen.map(([at, q]) => `${(at / 1000).toFixed(1)}s:${q}`).join(' ');
    t.ok(red !== null && red <= 20_000, `the page's quality turned red (2 or less, for ${RED_HOLD_MS / 1000} s or more) within 20 s of entering (${red === null ? 'never' : `at ${(red / 1000).toFixed(1)} s`}; the page's quality: ${timeline}; scores now ${scores(s)})`);
  });

  await t.test('the page offers audio only, and taking it pauses every video while audio goes on', async (t) => {
    const shownAt = await offer;
    t.ok(shownAt !== null, `#audio-only-offer shown within 30 s of entering (${shownAt === null ? 'not shown' : `after ${((shownAt - s.inRoomAt) / 1000).toFixed(1)} s`})`);
    if (shownAt === null) return;
    await s.page.click('#audio-only-offer button:has-text("Switch to audio only")');
    await eventually(() => aula<boolean>(s.page, 'window.aula.state.audioOnly === true'), 5000);
    t.pass('the page is audio only');
    const received = async () => (await inspect()).peers.find((p) => p.participantId === s.participantId)!.received;
    await eventually(async () => (await received()).filter((c) => c.kind === 'video').every((c) => c.paused), 10_000).catch(() => {});
    const videos = (await received()).filter((c) => c.kind === 'video');
    t.ok(videos.length > 0 && videos.every((c) => c.paused), 'the server pauses every video it sends the student', { videos });
    const audio = (await received()).filter((c) => c.kind === 'audio');
    t.ok(audio.length > 0 && audio.every((c) => !c.paused), 'and not the audio');
    const e0 = (await pageBytes(s)).audioEnergy;
    const a0 = await micAtTeacher(s);
    await sleep(5000);
    t.ok((await pageBytes(s)).audioEnergy > e0, 'the student still hears the teacher');
    t.ok((await micAtTeacher(s)) > a0, 'and the teacher the student');
  });

  await rec.stop();
  t.comment(`10% loss at 500 kbit/s, every 2 s:\n${rec.rows.join('\n')}`);
});
