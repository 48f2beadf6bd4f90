import t from 'tap';
import type { Browser, Page } from 'playwright-core';
import type { Test } from 'tap';
import type { Config } from '../../src/platform/config.ts';
import type { Node } from '../../src/server/node.ts';
import { MEDIA_ERROR_TEXT } from '../../web/room/reducer.ts';
import { enterRoom } from '../helpers/media.ts';
import { createNetns, launchBrowserIn } from '../helpers/netns.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { freePort, startTurn } from '../helpers/turn.ts';
import { connect, eventually } from '../helpers/ws.ts';

// A student on a school's network, which is a network namespace joined to this host by a veth pair:
// from inside it the host answers only on the veth address, and 127.0.0.1 is the namespace's own. So a
// node announcing its media on 127.0.0.1 (the tests' default) cannot be reached directly, as behind a
// firewall that lets only web traffic out. The student's Chromium runs inside it; the teacher is a
// WebRTC peer in Node on the host. Three cases: a TURN relay on TCP 443 carries everything; with no
// way through, the page says why; the device's address changes mid-class, and ICE restarts on the same
// transports. Wall-clock bounds: the serial lane.

const ns = await createNetns(t);

/** A node whose HTTP and room socket the namespace reaches (on the host side's address), and a class on it with its teacher. */
async function classroom(t: Test, overrides: Partial<Config> = {}) {
  const port = await freePort('0.0.0.0');
  const node = await startTestNode(t, {
    redis: false,
    overrides: { AULA_HOST: '0.0.0.0', AULA_PORT: port, AULA_BASE_URL: `http://${ns.hostIp}:${port}`, ...overrides },
  });
  const tenant = await createTenant(node);
  const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
  const user = async (externalId: string, role = 'STUDENT') => (await call('POST', '/public/users', { externalId, fullName: externalId, role })).body.data;
  const teacher = await user('t-net', 'TEACHER');
  const m = (await call('POST', '/public/meetings', { title: 'Geography 8C', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 })).body.data;
  return { node, tenant, call, user, teacher, m };
}

/** Chromium in the namespace, taking these nodes' plain-http pages as secure (as https would be). */
const browserFor = (t: Test, ...nodes: Node[]): Promise<Browser> => launchBrowserIn(t, ns, { secureOrigins: nodes.map((n) => n.url) });

/** A student's page in the namespace, joined (phase `room`); `joinedAt` is when it got there. With `paths`, the pre-join network check must say those first. */
async function studentPage(t: Test, browser: Browser, c: Awaited<ReturnType<typeof classroom>>, externalId: string, expect?: { paths: Record<'udp' | 'tcp' | 'relay', string>; summary: RegExp }) {
  const student = await c.user(externalId);
  const link = (await c.call('POST', `/public/meetings/${c.m.id}/join-links`, { userId: student.id, role: 'PARTICIPANT' })).body.data;
  t.match(link.url, new RegExp(`^http://${ns.hostIp.replace(/\./g, '\\.')}:`), 'the join link points at the address the school network reaches');
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  t.teardown(() => context.close());
  const page: Page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error') process.stderr.write(`[page ${externalId}] ${msg.text()}\n`);
  });
  page.on('pageerror', (err) => process.stderr.write(`[page ${externalId}] ${err.message}\n`));
  await page.goto(link.url);
  await page.waitForSelector('#join', { timeout: 20_000 });
  if (expect) {
    const found = await eventually(async () => {
      const r = await page.$$eval('#network-check li', (lis) => Object.fromEntries(lis.map((li) => [li.getAttribute('data-path'), li.getAttribute('data-result')])));
      return Object.keys(r).length === 3 && Object.values(r).every((v) => v !== 'checking') && r;
    }, 15_000);
    t.same(found, expect.paths, `${externalId}: the pre-join check found the paths this network allows`);
    t.match(await page.textContent('#network-check'), expect.summary, `${externalId}: and says what it means`);
    await screenshot(page, `prejoin-network-${externalId}`);
  }
  await page.click('#join');
  await eventually(() => page.evaluate(() => (window as any).aula.state.phase === 'room'), 20_000);
  const joinedAt = Date.now();
  const participantId = await page.evaluate(() => (window as any).aula.state.participantId as string);
  return { page, joinedAt, participantId, student };
}

const mediaBytes = (page: Page) => page.evaluate(() => (window as any).aula.media?.bytes() ?? { sent: 0, received: 0, audioEnergy: 0 }) as Promise<{ sent: number; received: number; audioEnergy: number }>;
const paths = (page: Page) =>
  page.evaluate(() => (window as any).aula.media?.paths() ?? []) as Promise<{ direction: string; candidateType: string; protocol: string; relayProtocol: string | null; url: string | null }[]>;
const producersOf = async (node: Node, meetingId: string, participantId: string) =>
  ((await node.app.media!.rooms.room(meetingId))?.inspect().peers.find((p) => p.participantId === participantId)?.producers ?? []).map((p) => ({ source: p.source, id: p.producerId }));

/** Whether `read()` grows by more than `by` within `ms` from now. */
async function grows(read: () => Promise<number>, by: number, ms: number): Promise<boolean> {
  const from = await read();
  return eventually(async () => (await read()) > from + by, ms).then(
    () => true,
    () => false,
  );
}

t.test('a network that lets only TCP 443 out: everything goes through the relay on 443, both ways', async (t) => {
  // coturn on the host side's address, port 443, TCP only; it relays from loopback, where the media listens
  const relay = await startTurn(t, { host: ns.hostIp, relayIp: '127.0.0.1', port: 443, udp: false });
  const c = await classroom(t, { AULA_TURN_URLS: [`turn:${ns.hostIp}:443?transport=tcp`], AULA_TURN_SECRET: relay.secret });
  const teacher = await enterRoom(t, c.node, c.tenant.key, c.m.id, c.teacher.id, 'HOST');
  await teacher.peer.produceAudio();

  const s = await studentPage(t, await browserFor(t, c.node), c, 's-relay', { paths: { udp: 'blocked', tcp: 'blocked', relay: 'ok' }, summary: /blocks the fastest path/ });
  const diagnose = async () =>
    console.error(
      'paths',
      JSON.stringify(await paths(s.page)),
      'bytes',
      JSON.stringify(await mediaBytes(s.page)),
      'mediaError',
      await s.page.evaluate(() => (window as any).aula.state.mediaError),
      '\nturnserver:\n',
      relay.log().slice(-3000),
    );
  const studentMic = () => {
    const r = teacher.peer.from(s.participantId, 'mic');
    return r ? teacher.peer.receivedBy(r.consumer.id) : Promise.resolve(0);
  };
  // two-way audio: the student's microphone reaches the teacher, and the teacher's tone reaches the page
  const twoWay = await eventually(async () => (await studentMic()) > 0 && (await mediaBytes(s.page)).received > 0, Math.max(1000, s.joinedAt + 10_000 - Date.now())).then(
    () => Date.now() - s.joinedAt,
    () => null,
  );
  if (twoWay === null) await diagnose();
  t.ok(twoWay !== null, `two-way audio within 10 s of joining (${twoWay} ms)`);
  t.ok(await grows(studentMic, 1000, 5000), "the student's microphone keeps reaching the teacher");
  t.ok(await grows(async () => (await mediaBytes(s.page)).received, 1000, 5000), "the teacher's audio keeps reaching the page");
  t.ok((await mediaBytes(s.page)).audioEnergy > 0, "the page decodes the teacher's tone");

  const used = await paths(s.page);
  t.equal(used.length, 2, 'both transports have a selected path');
  t.ok(
    used.every((p) => p.candidateType === 'relay' && p.relayProtocol === 'tcp' && (p.url ?? '').includes(':443')),
    `every path is relayed over TCP to port 443: ${JSON.stringify(used)}`,
  );
  t.equal(await s.page.locator('#media-error').count(), 0, 'no media error shown');
  t.equal(await s.page.evaluate(() => (window as any).aula.state.mediaError), null);
});

t.test('no way through: the page says so, and why', async (t) => {
  // a relay on an address the school reaches, where nothing listens; and a node with no relay at all
  const deadPort = await freePort(ns.hostIp);
  const [withRelay, without] = await Promise.all([
    classroom(t, { AULA_TURN_URLS: [`turn:${ns.hostIp}:${deadPort}?transport=tcp`], AULA_TURN_SECRET: 'a-secret-nobody-checks-0123' }),
    classroom(t),
  ]);
  // the teachers are in: a socket in one room (they need not send anything), a page on the host's open network in the other, which shows who cannot connect
  {
    const link = (await without.call('POST', `/public/meetings/${without.m.id}/join-links`, { userId: without.teacher.id, role: 'HOST' })).body.data;
    const session = (await api(without.node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `host-${without.m.id}` } })).body.data;
    await (await connect(t, session.mediaUrl, session.mediaToken)).type('joined');
  }
  const hostBrowser = await launchBrowser(t, { media: true, args: [`--unsafely-treat-insecure-origin-as-secure=${withRelay.node.url}`] });
  const hostPage = await (await hostBrowser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await hostPage.goto((await withRelay.call('POST', `/public/meetings/${withRelay.m.id}/join-links`, { userId: withRelay.teacher.id, role: 'HOST' })).body.data.url);
  await hostPage.waitForSelector('#join');
  await hostPage.click('#join');
  await eventually(() => hostPage.evaluate(() => (window as any).aula.state.phase === 'room'), 20_000);
  const cases = [
    { c: withRelay, code: 'relay_unreachable', who: 's-relay-down' },
    { c: without, code: 'media_blocked', who: 's-no-relay' },
  ] as const;
  const browser = await browserFor(t, withRelay.node, without.node);
  const results = await Promise.all(
    cases.map(async ({ c, code, who }) => {
      const s = await studentPage(t, browser, c, who, {
        paths: { udp: 'blocked', tcp: 'blocked', relay: code === 'media_blocked' ? 'none' : 'blocked' },
        summary: /blocking the class's audio and video/,
      });
      const shown = await eventually(() => s.page.locator('#media-error').isVisible(), Math.max(1000, s.joinedAt + 15_000 - Date.now())).then(
        () => Date.now() - s.joinedAt,
        () => null,
      );
      return {
        code,
        shown,
        state: await s.page.evaluate(() => (window as any).aula.state.mediaError),
        text: (await s.page.locator('#media-error').textContent().catch(() => null))?.trim() ?? null,
        role: await s.page.locator('#media-error').getAttribute('role').catch(() => null),
        paths: await paths(s.page),
      };
    }),
  );
  for (const r of results) {
    t.ok(r.shown !== null, `${r.code}: #media-error shown within 15 s of joining (${r.shown} ms)`);
    t.equal(r.state, r.code, `${r.code}: the state says why`);
    t.equal(r.text, MEDIA_ERROR_TEXT[r.code], `${r.code}: and the banner says what to try`);
    t.equal(r.role, 'alert', `${r.code}: announced to screen readers`);
    t.same(r.paths, [], `${r.code}: no path was found`);
  }

  // the teacher's people list marks the student who cannot connect, with the room's line
  await hostPage.click('button:has-text("People")');
  const row = hostPage.locator('.roster li', { hasText: 's-relay-down' });
  await eventually(async () => (await row.locator('.health.blocked').count()) === 1, 10_000);
  t.match(await row.locator('.health summary').textContent(), /Can't connect audio and video/, "the host sees the student can't connect");
  t.match(await hostPage.textContent('#room-health'), /1 cannot connect/, 'and the room health line counts them');
  await row.locator('.health summary').click();
  t.match(await row.locator('.health dl').textContent(), /Path/, 'details on a click');
  await screenshot(hostPage, 'host-people-health');
});

/** From the address change: the page has restarted ICE, and the student's microphone reaches the teacher again. */
const RESTART_WITHIN_MS = 5000;
const BACK_WITHIN_MS = 8000;

t.test("the device's address changes mid-class: ICE restarts on the same transports, and the same producers carry on", async (t) => {
  // media announced on the host side's address: the school reaches it directly, no relay
  const c = await classroom(t, { AULA_MEDIA_ANNOUNCED_ADDRESS: ns.hostIp, AULA_MEDIA_LISTEN_IP: '0.0.0.0' });
  const teacher = await enterRoom(t, c.node, c.tenant.key, c.m.id, c.teacher.id, 'HOST');
  await teacher.peer.produceAudio();
  const s = await studentPage(t, await browserFor(t, c.node), c, 's-roaming');
  const studentMic = () => {
    const r = teacher.peer.from(s.participantId, 'mic');
    return r ? teacher.peer.receivedBy(r.consumer.id) : Promise.resolve(0);
  };
  await eventually(async () => (await studentMic()) > 3000, 15_000);
  await eventually(async () => (await paths(s.page)).length === 2, 10_000);
  const before = await paths(s.page);
  t.ok(before.every((p) => p.candidateType === 'host' && p.protocol === 'udp'), `straight to the media server over UDP: ${JSON.stringify(before)}`);
  const producersBefore = await producersOf(c.node, c.m.id, s.participantId);
  t.ok(producersBefore.some((p) => p.source === 'mic'), 'the student sends a microphone');
  const restartsBefore = await s.page.evaluate(() => {
    const media = (window as any).aula.media;
    media.__mark = 1;
    return media.iceRestarts as number;
  });
  const restartsAsked = async () => Number((await c.node.app.metrics.registry.getSingleMetric('aula_ice_restarts_total')?.get())?.values[0]?.value ?? 0);
  const askedBefore = await restartsAsked();

  const old = ns.nsIp;
  const changedAt = Date.now();
  const now = await ns.renumber();
  t.not(now, old, `the device moved from ${old} to ${now}`);
  const state = async () => ({
    iceRestarts: await s.page.evaluate(() => (window as any).aula.media?.iceRestarts),
    phase: await s.page.evaluate(() => (window as any).aula.state.phase),
    mediaError: await s.page.evaluate(() => (window as any).aula.state.mediaError),
    paths: await paths(s.page),
    serverRestarts: (await restartsAsked()) - askedBefore,
    studentMic: await studentMic(),
  });

  // Chromium would call the old path `disconnected` only some 5-6 s after the address went; the page sees
  // its transports receive nothing for STALL_MS (2 s), finds its room socket dead (its TCP connection
  // went with the address), reconnects from the new address, resumes the media and restarts ICE.
  const restarted = await eventually(async () => (await s.page.evaluate(() => (window as any).aula.media?.iceRestarts as number)) > restartsBefore, RESTART_WITHIN_MS).then(
    () => Date.now() - changedAt,
    () => null,
  );
  if (restarted === null) console.error(`${RESTART_WITHIN_MS} ms after the change`, JSON.stringify(await state()));
  t.ok(restarted !== null, `the page restarted ICE within ${RESTART_WITHIN_MS / 1000} s of the change (${restarted} ms)`);

  // media comes back: the teacher hears the student again
  const micAt = await studentMic();
  const back = await eventually(async () => (await studentMic()) > micAt + 3000, Math.max(1000, changedAt + BACK_WITHIN_MS - Date.now())).then(
    () => Date.now() - changedAt,
    () => null,
  );
  if (back === null) console.error(`${BACK_WITHIN_MS} ms after the change`, JSON.stringify(await state()));
  t.ok(back !== null, `the student's microphone reaches the teacher again within ${BACK_WITHIN_MS / 1000} s of the change (${back} ms)`);

  t.equal(await s.page.evaluate(() => (window as any).aula.media?.__mark), 1, 'the same media client: its transports were not rebuilt');
  t.same(await producersOf(c.node, c.m.id, s.participantId), producersBefore, 'the server holds the same producers of the student');
  const after = await paths(s.page);
  t.ok(after.length === 2 && after.every((p) => p.candidateType === 'host' && p.protocol === 'udp'), `straight to the media server again: ${JSON.stringify(after)}`);
  t.equal(await s.page.evaluate(() => (window as any).aula.state.mediaError), null, 'no media error shown');
});
