import t from 'tap';
import type { Page } from 'playwright-core';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { connect, eventually } from '../helpers/ws.ts';

// What the server closes, the page stops capturing: a student's screen share when a setting no longer
// allows it, a camera a host turned off. Chromium with fake devices, real WebRTC through the node.
const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't1', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 's1', fullName: 'Sam Student', role: 'STUDENT' })).body.data;
const browser = await launchBrowser(t, { media: true });

const m = (await call('POST', '/public/meetings', { title: 'Policy', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60, settings: { allowStudentScreenShare: true } })).body.data;
const link = async (userId: string, role = 'PARTICIPANT') => (await call('POST', `/public/meetings/${m.id}/join-links`, { userId, role })).body.data;
const state = (p: Page) => p.evaluate(() => (window as any).aula.state);

// the host: a socket of its own (a host need not send media to run the class)
const hostSession = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: (await link(teacher.id, 'HOST')).token, deviceId: 'host' } })).body.data;
const host = await connect(t, hostSession.mediaUrl, hostSession.mediaToken);
await host.type('joined');

const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const sp = await context.newPage();
// keep a hand on the screen capture the page asks for, to see whether it stops
await sp.addInitScript(() => {
  const md = navigator.mediaDevices;
  const original = md.getDisplayMedia.bind(md);
  md.getDisplayMedia = async (c?: DisplayMediaStreamOptions) => {
    const s = await original(c);
    (window as any).__screen = s;
    return s;
  };
});
await sp.goto((await link(student.id)).url);
await sp.waitForSelector('#join');
await sp.click('#join');
await eventually(async () => (await state(sp)).phase === 'room', 10_000);
const participantId = (await state(sp)).participantId as string;
const producers = async () => (await node.app.media!.rooms.room(m.id))?.inspect().peers.find((p) => p.participantId === participantId)?.producers.map((p) => p.source) ?? [];
// the student's camera and microphone reach the room before the tests start (slow on a loaded machine)
await eventually(async () => {
  const sources = await producers();
  return sources.includes('camera') && sources.includes('mic');
}, 30_000);

t.test('a student sharing a screen when the setting turns off: the share closes on the server and the capture stops in the browser', async (t) => {
  await sp.click('button[aria-label="Share screen"]');
  await eventually(async () => (await producers()).includes('screen'), 20_000);
  t.equal(await sp.evaluate(() => (window as any).__screen.getVideoTracks()[0].readyState), 'live', 'capturing');
  t.equal(await sp.evaluate(() => (window as any).__screen.getVideoTracks()[0].contentHint), 'detail', 'encoded for text');
  t.equal((await call('PATCH', `/public/meetings/${m.id}`, { settings: { allowStudentScreenShare: false } })).status, 200);
  await eventually(async () => !(await producers()).includes('screen'), 10_000);
  await eventually(() => sp.evaluate(() => (window as any).__screen.getVideoTracks()[0].readyState === 'ended'), 5000);
  t.pass('the capture ended (the browser no longer says the tab is being shared)');
  t.equal((await state(sp)).screenOn, false, 'the button shows it off');
  t.match((await state(sp)).notice, /Screen sharing was turned off/);
  await screenshot(sp, 'screen-share-turned-off');
});

t.test('a host turns a student\'s camera off: closed on the server, and the student\'s page shows it off and says why', async (t) => {
  await eventually(async () => (await producers()).includes('camera'), 10_000);
  t.match(await host.command({ type: 'stop-camera', participantId }), { ok: true });
  await eventually(async () => (await state(sp)).camOn === false, 5000);
  t.notOk((await producers()).includes('camera'), 'no camera producer');
  t.match((await state(sp)).notice, /A host turned off your camera/);
  await screenshot(sp, 'camera-stopped-by-host');
  await sp.click('button[aria-label="Start video"]');
  await eventually(async () => (await producers()).includes('camera'), 10_000);
  t.pass('the student turns it on again');
});

t.test('a media event lost on its way to a page: the gap in seq brings a media-resync, and the page receives what it missed', async (t) => {
  const other = (await call('POST', '/public/users', { externalId: 's2', fullName: 'Ana Student', role: 'STUDENT' })).body.data;
  const lc = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const lp = await lc.newPage();
  let dropped = 0;
  // the page's room socket through a relay that loses the first consumer-new, as the server's bus may
  await lp.routeWebSocket(/\/media/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => server.send(m));
    server.onMessage((m) => {
      if (dropped === 0 && typeof m === 'string' && m.includes('"type":"consumer-new"')) {
        dropped++;
        return;
      }
      ws.send(m);
    });
  });
  await lp.goto((await link(other.id)).url);
  await lp.waitForSelector('#join');
  await lp.click('#join');
  await eventually(async () => (await state(lp)).phase === 'room', 10_000);
  const remote = () => lp.evaluate(() => [...((window as any).aula.media?.remote.values() ?? [])].map((r: any) => `${r.source}:${r.kind}`).sort().join());
  await eventually(async () => (await remote()) === 'camera:video,mic:audio', 30_000);
  t.equal(dropped, 1, 'one consumer-new was lost');
  t.pass('the page has both of the student\'s tracks');
  await lc.close();
});

t.test('a muted microphone is paused at the source: no packets leave the page', async (t) => {
  const sent = () => sp.evaluate(async () => ((await (window as any).aula.media.sentByLayer('mic')) as number[]).reduce((a, b) => a + b, 0));
  if (!(await state(sp)).micOn) await sp.click('button[aria-label="Unmute"]');
  await eventually(async () => (await state(sp)).micOn === true, 5000);
  const a = await sent();
  await new Promise((r) => setTimeout(r, 1000));
  t.ok((await sent()) > a + 1000, 'unmuted: audio is sent');
  await sp.click('button[aria-label="Mute"]');
  await eventually(async () => (await state(sp)).micOn === false, 5000);
  await new Promise((r) => setTimeout(r, 300));
  const b = await sent();
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(await sent(), b, 'muted: not a byte more');
});

t.test('Join clicked before the camera and microphone opened: they are sent once they open', async (t) => {
  const quick = (await call('POST', '/public/users', { externalId: 's3', fullName: 'Quinn Quick', role: 'STUDENT' })).body.data;
  const qc = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const qp = await qc.newPage();
  // a slow camera (or a slow answer to the browser's permission prompt)
  await qp.addInitScript(() => {
    const md = navigator.mediaDevices;
    const original = md.getUserMedia.bind(md);
    md.getUserMedia = async (c?: MediaStreamConstraints) => {
      await new Promise((r) => setTimeout(r, 2500));
      return original(c);
    };
  });
  await qp.goto((await link(quick.id)).url);
  await qp.waitForSelector('#join');
  await qp.click('#join');
  await eventually(async () => (await state(qp)).phase === 'room', 10_000);
  const pid = (await state(qp)).participantId as string;
  const sources = async () => ((await node.app.media!.rooms.room(m.id))?.inspect().peers.find((p) => p.participantId === pid)?.producers.map((p) => p.source) ?? []).sort().join();
  await eventually(async () => (await sources()) === 'camera,mic', 15_000);
  t.pass('the camera and the microphone reach the room');
  await qc.close();
});
