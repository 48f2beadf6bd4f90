import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { launchBrowser, screenshot } from '../helpers/browser.ts';
import { freePort, startTurn } from '../helpers/turn.ts';
import { eventually } from '../helpers/ws.ts';

// The pre-join network check: before joining, the page tries each path to the media server (UDP, TCP,
// and through the TURN relay) with throwaway transports, and says which get through. Here every path
// is open (a real coturn relays on loopback); the namespace tests (test/serial/school-networks.test.ts)
// check the page on networks that block them. And the probes' routes refuse what is not the caller's.

const relay = await startTurn(t);
const node = await startTestNode(t, { overrides: { AULA_TURN_URLS: [`turn:${relay.host}:${relay.port}?transport=udp`], AULA_TURN_SECRET: relay.secret } });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, role = 'STUDENT') => (await call('POST', '/public/users', { externalId, fullName: externalId, role })).body.data;
const teacher = await user('teacher', 'TEACHER');
const meeting = async () => (await call('POST', '/public/meetings', { title: 'Chemistry 8A', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 })).body.data;
const m = await meeting();
const exchange = async (meetingId: string, userId: string) => {
  const link = (await call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role: 'PARTICIPANT' })).body.data;
  return (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${userId}-${meetingId}` } })).body.data;
};

t.test('the pre-join page says which paths work: all three on an open network', async (t) => {
  const browser = await launchBrowser(t, { media: true });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: (await user('s-ann')).id, role: 'PARTICIPANT' })).body.data;
  await page.goto(link.url);
  await page.waitForSelector('#network-check');
  const results = await eventually(async () => {
    const r = await page.$$eval('#network-check li', (lis) => Object.fromEntries(lis.map((li) => [li.getAttribute('data-path'), li.getAttribute('data-result')])));
    return Object.values(r).every((v) => v !== 'checking') && r;
  }, 15_000);
  t.same(results, { udp: 'ok', tcp: 'ok', relay: 'ok' }, 'UDP, TCP and the relay get through');
  t.match(await page.textContent('#network-check'), /lets the class's audio and video through/);
  t.match(await page.getAttribute('#network-check', 'class'), /\bok\b/);
  await screenshot(page, 'prejoin-network-check');
});

t.test('the check\'s routes: the caller\'s own session and probes only', async (t) => {
  const s = await exchange(m.id, (await user('s-bob')).id);
  const other = await exchange((await meeting()).id, (await user('s-cal')).id);
  const check = await api(node, 'POST', `/meetings/${s.meeting.slug}/network-check`, { bearer: s.accessToken });
  t.equal(check.status, 200);
  t.same(check.body.data.probes.map((p: { kind: string }) => p.kind), ['udp', 'tcp', 'relay']);
  t.ok(check.body.data.probes.find((p: any) => p.kind === 'udp').iceCandidates.every((c: any) => c.protocol === 'udp'), 'the UDP probe offers UDP only');
  t.ok(check.body.data.probes.find((p: any) => p.kind === 'tcp').iceCandidates.every((c: any) => c.protocol === 'tcp'), 'the TCP probe offers TCP only');
  t.match(check.body.data.iceServers[0], { urls: [String], username: new RegExp(`:${'ses_'}`) }, 'relay credentials for this session');
  const probeId = check.body.data.probes[0].transportId;

  t.match(await api(node, 'POST', `/meetings/${s.meeting.slug}/network-check`, { bearer: other.accessToken }), { status: 403, body: { error: { code: 'session_wrong_meeting' } } }, 'another meeting\'s session');
  const otherCheck = await api(node, 'POST', `/meetings/${other.meeting.slug}/network-check`, { bearer: other.accessToken });
  t.equal(otherCheck.status, 200);
  t.match(
    await api(node, 'POST', `/meetings/${other.meeting.slug}/network-check/${probeId}/connect`, { bearer: other.accessToken, body: { dtlsParameters: { role: 'client', fingerprints: [] } } }),
    { status: 404, body: { error: { code: 'not_found' } } },
    'another session\'s probe',
  );
  t.match(await api(node, 'POST', `/meetings/${s.meeting.slug}/network-check/${probeId}/connect`, { bearer: s.accessToken, body: { dtlsParameters: 'x' } }), { status: 400, body: { error: { code: 'validation_failed' } } });

  // a second check closes the first one's probes: a session holds three at most
  const before = node.app.services.networkCheck.open;
  await api(node, 'POST', `/meetings/${s.meeting.slug}/network-check`, { bearer: s.accessToken });
  t.equal(node.app.services.networkCheck.open, before, 'the same number open');
  t.match(await api(node, 'POST', `/meetings/${s.meeting.slug}/network-check/${probeId}/connect`, { bearer: s.accessToken, body: { dtlsParameters: { role: 'client', fingerprints: [] } } }), { status: 404 }, 'the old probe is gone');

  // five checks at once from one session: still three probes of it at most, the last check's
  const openBefore = node.app.services.networkCheck.open;
  const burst = await Promise.all(Array.from({ length: 5 }, () => api(node, 'POST', `/meetings/${s.meeting.slug}/network-check`, { bearer: s.accessToken })));
  t.ok(burst.every((r) => r.status === 200), 'each answered, one after another');
  t.equal(node.app.services.networkCheck.open, openBefore, 'checks sent at once leave no extra probes behind');

  // a removed person's session checks nothing
  const sid = (await node.app.sql<{ id: string }[]>`select id from meeting_sessions where meeting_id = ${other.meeting.id}`)[0]!.id;
  await node.app.sql`update meeting_sessions set revoked_at = now(), revoked_reason = 'removed' where id = ${sid}`;
  t.match(await api(node, 'POST', `/meetings/${other.meeting.slug}/network-check`, { bearer: other.accessToken }), { body: { error: { code: 'session_revoked' } } });
});

t.test('turns: on its own: the relay over TLS works for a browser that trusts its certificate, and not for one that does not', async (t) => {
  const tlsPort = await freePort();
  const tls = await startTurn(t, { tlsPort });
  const tlsNode = await startTestNode(t, { redis: false, overrides: { AULA_TURN_URLS: [`turns:127.0.0.1:${tlsPort}?transport=tcp`], AULA_TURN_SECRET: tls.secret } });
  const tn = await createTenant(tlsNode);
  const host = (await api(tlsNode, 'POST', '/public/users', { key: tn.key, body: { externalId: 'tls-t', fullName: 'Tess', role: 'TEACHER' } })).body.data;
  const mm = (await api(tlsNode, 'POST', '/public/meetings', { key: tn.key, body: { title: 'Relay over TLS', type: 'MEETING', hostUserId: host.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 } })).body.data;
  const relayResult = async (args: string[]) => {
    const browser = await launchBrowser(t, { media: true, args });
    const page = await (await browser.newContext()).newPage();
    await page.goto((await api(tlsNode, 'POST', `/public/meetings/${mm.id}/join-links`, { key: tn.key, body: { userId: host.id, role: 'HOST' } })).body.data.url);
    await page.waitForSelector('#network-check');
    const r = await eventually(async () => {
      const x = await page.$$eval('#network-check li', (lis) => Object.fromEntries(lis.map((li) => [li.getAttribute('data-path'), li.getAttribute('data-result')])));
      return Object.values(x).every((v) => v !== 'checking') && x;
    }, 15_000);
    await browser.close();
    return r.relay;
  };
  t.equal(await relayResult([]), 'blocked', 'a certificate from a CA the browser does not know: libwebrtc refuses the relay (docs/networks.md: turns: needs a real certificate)');
  t.equal(await relayResult([`--ignore-certificate-errors-spki-list=${tls.spki}`]), 'ok', 'trusted: the relay works over TLS');
  t.match(tls.log(), /method=TLSv1\.[23]/, 'coturn saw an allocation over TLS');
});
