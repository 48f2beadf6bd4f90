import t from 'tap';
import wrtc from '@roamhq/wrtc';
import { ManualClock } from '../../src/core/clock.ts';
import { loadConfig } from '../../src/platform/config.ts';
import { turnCredential, TURN_CREDENTIAL_TTL_MS, TURN_RENEW_BEFORE_MS } from '../../src/services/live/turn.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { startTurn } from '../helpers/turn.ts';
import { eventually } from '../helpers/ws.ts';

// A real coturn in its REST-credential mode beside a node configured with AULA_TURN_URLS: each media
// session gets credentials coturn accepts, media flows through the relay when nothing else is allowed,
// credentials are renewed on the socket before they expire, and a stale or forged one is refused.

const relay = await startTurn(t);
const urls = [`turn:${relay.host}:${relay.port}?transport=udp`, `turn:${relay.host}:${relay.port}?transport=tcp`];
// coturn reads the expiry in the username against real time: the node's clock starts at it
const clock = new ManualClock(Date.now());
const node = await startTestNode(t, { clock, overrides: { AULA_TURN_URLS: urls, AULA_TURN_SECRET: relay.secret } });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, role = 'STUDENT') => (await call('POST', '/public/users', { externalId, fullName: externalId, role })).body.data;
const host = await user('teacher', 'TEACHER');
const m = (await call('POST', '/public/meetings', { title: 'Relay', type: 'MEETING', hostUserId: host.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 })).body.data;

/** The candidates an RTCPeerConnection gathers with these servers, relays only. */
async function relayCandidates(iceServers: RTCIceServer[]): Promise<string[]> {
  const pc = new wrtc.RTCPeerConnection({ iceServers, iceTransportPolicy: 'relay' });
  const found: string[] = [];
  const done = new Promise<void>((resolve) => {
    pc.onicecandidate = (e: { candidate: { candidate: string } | null }) => {
      if (!e.candidate) resolve();
      else found.push(e.candidate.candidate);
    };
    setTimeout(resolve, 8000);
  });
  pc.createDataChannel('probe');
  await pc.setLocalDescription(await pc.createOffer());
  await done;
  pc.close();
  return found.filter((c) => / typ relay /.test(c));
}

t.test('AULA_TURN_URLS: turn: and turns: URLs only, and the secret with them', async (t) => {
  t.same(loadConfig({ AULA_TURN_URLS: 'turn:a.example:3478?transport=udp, turns:a.example:443?transport=tcp', AULA_TURN_SECRET: 'x'.repeat(16) }).AULA_TURN_URLS, ['turn:a.example:3478?transport=udp', 'turns:a.example:443?transport=tcp']);
  t.throws(() => loadConfig({ AULA_TURN_URLS: 'http://a.example', AULA_TURN_SECRET: 'x'.repeat(16) }), /AULA_TURN_URLS: "http:\/\/a.example" is not a turn: or turns: URL/);
  t.throws(() => loadConfig({ AULA_TURN_URLS: 'turn:a.example:3478?transport=sctp', AULA_TURN_SECRET: 'x'.repeat(16) }), /not a turn: or turns: URL/);
  t.throws(() => loadConfig({ AULA_TURN_URLS: 'turn:a.example' }), /AULA_TURN_SECRET: required with AULA_TURN_URLS/);
  t.throws(() => loadConfig({ AULA_TURN_URLS: 'turn:a.example', AULA_TURN_SECRET: 'short' }), /AULA_TURN_SECRET: must be at least 16/);
  t.same(loadConfig({}).AULA_TURN_URLS, undefined, 'unset: no relays');
});

t.test('each media session gets its own credentials, and media flows through the relay alone', async (t) => {
  const a = await enterRoom(t, node, tenant.key, m.id, (await user('s-ana')).id);
  const sid = (await node.app.sql<{ id: string }[]>`select id from meeting_sessions where meeting_id = ${m.id} and role = 'PARTICIPANT' order by created_at limit 1`)[0]!.id;
  const [server] = a.peer.iceServers;
  t.same(server?.urls, urls, 'the configured relays');
  const [expiry, session] = server!.username.split(':');
  t.equal(session, sid, 'username: <expiry>:<session id>');
  t.ok(Number(expiry) * 1000 <= clock.now() + TURN_CREDENTIAL_TTL_MS && Number(expiry) * 1000 > clock.now() + TURN_CREDENTIAL_TTL_MS - 2000, 'an hour from now');
  t.equal(server!.credential, turnCredential(relay.secret, sid, Number(expiry) * 1000).credential, 'HMAC-SHA1 of the username under the secret');

  t.ok((await relayCandidates([server!])).length > 0, 'coturn allocates a relay with them');
  const stale = turnCredential(relay.secret, sid, Date.now() - 60_000);
  t.same(await relayCandidates([{ urls, ...stale }]), [], 'an expired one is refused');
  const forged = { username: `${Math.floor(Date.now() / 1000) + 3600}:${sid}`, credential: turnCredential('not-the-secret-at-all', sid, Date.now() + 3_600_000).credential };
  t.same(await relayCandidates([{ urls, ...forged }]), [], 'one signed with another secret is refused');

  // two students whose networks let nothing reach the media server: relayed paths only
  a.peer.close();
  const sender = await enterRoomRelayOnly(t, 's-cat');
  const receiver = await enterRoomRelayOnly(t, 's-dan');
  await sender.peer.produceAudio();
  await eventually(() => receiver.peer.from(sender.participantId, 'mic'), 15_000).catch((e) => {
    console.error('events', JSON.stringify(receiver.peer.events.map((x) => x.type)), relay.log().slice(-3000));
    throw e;
  });
  await eventually(() => receiver.peer.from(sender.participantId, 'mic')!.peak > 3000, 15_000);
  t.pass('the receiver hears the sender through the relay');
  const paths = [...(await sender.peer.paths()), ...(await receiver.peer.paths())];
  t.ok(paths.length >= 2, 'both transports in use');
  t.ok(paths.every((p) => p.candidateType === 'relay'), 'every path is relayed');
});

async function enterRoomRelayOnly(t: Parameters<typeof enterRoom>[0], externalId: string) {
  const u = await user(externalId);
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: u.id, role: 'PARTICIPANT' })).body.data;
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${u.id}` } })).body.data;
  const { connect } = await import('../helpers/ws.ts');
  const { MediaPeer } = await import('../helpers/media.ts');
  const room = await connect(t, s.mediaUrl, s.mediaToken);
  const joined = await room.type('joined');
  const peer = new MediaPeer(room);
  peer.relayOnly = true;
  t.teardown(() => peer.close());
  await peer.start();
  return { peer, participantId: joined.participantId as string, room };
}

t.test('credentials are renewed on the socket before they expire, and never for a revoked session', async (t) => {
  const { room, peer } = await enterRoom(t, node, tenant.key, m.id, (await user('s-eve')).id);
  const first = peer.iceServers[0]!;
  const turn = node.app.services.rooms.turnRelays!;
  t.equal(await turn.renewDue(), 0, 'nothing is due at first');
  clock.advance(TURN_CREDENTIAL_TTL_MS - TURN_RENEW_BEFORE_MS + 1000);
  const renewed = room.type('turn-credentials', 5000);
  t.ok((await turn.renewDue()) >= 1);
  const m1 = await renewed;
  t.ok(Date.parse(m1.expiresAt) > Number(first.username.split(':')[0]) * 1000, 'a later expiry');
  t.not(m1.iceServers[0].username, first.username);
  t.ok((await relayCandidates(m1.iceServers)).length > 0, 'coturn takes the new ones');

  // a removed student's session is revoked: no more credentials for it
  const sid = m1.iceServers[0].username.split(':')[1];
  await node.app.sql`update meeting_sessions set revoked_at = now(), revoked_reason = 'removed' where id = ${sid}`;
  clock.advance(TURN_CREDENTIAL_TTL_MS);
  let got = false;
  room.ws.on('message', (raw) => {
    if (JSON.parse(String(raw)).type === 'turn-credentials') got = true;
  });
  await turn.renewDue();
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(got, 'a revoked session gets none');
});

t.test('without AULA_TURN_URLS the answer names no relays', async (t) => {
  const plain = await startTestNode(t, { redis: false });
  const tn = await createTenant(plain);
  const u = (await api(plain, 'POST', '/public/users', { key: tn.key, body: { externalId: 'x', fullName: 'X', role: 'TEACHER' } })).body.data;
  const mm = (await api(plain, 'POST', '/public/meetings', { key: tn.key, body: { title: 'Open', type: 'MEETING', hostUserId: u.id, scheduledStart: '2030-11-24T10:00:00Z', durationMinutes: 60 } })).body.data;
  const { peer } = await enterRoom(t, plain, tn.key, mm.id, u.id, 'HOST');
  t.same(peer.iceServers, []);
});
