import t, { type Test } from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { MediaPeer } from '../helpers/media.ts';
import { connect, eventually } from '../helpers/ws.ts';

// A room socket that drops and comes back within the reconnect grace keeps its media session
// (media-join with resume), so nobody else sees its tracks close; after the grace it starts afresh. And
// what pages report of their media (media-report) reaches hosts (media-health) and the metrics.
// Real WebRTC (mediasoup-client on libwebrtc), one node; the grace runs on the node's manual clock.

const clock = new ManualClock(Date.now());
const node = await startTestNode(t, { clock });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, role = 'STUDENT') => (await call('POST', '/public/users', { externalId, fullName: externalId, role })).body.data;
const teacher = await user('teacher', 'TEACHER');
const meeting = async (settings: Record<string, unknown> = {}) =>
  (await call('POST', '/public/meetings', { title: 'Resume', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60, settings })).body.data;

/** A session of `userId` in the meeting: its room token, to connect (and connect again) with. */
async function session(meetingId: string, userId: string, role = 'PARTICIPANT') {
  const link = (await call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role })).body.data;
  return (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${userId}` } })).body.data as { mediaUrl: string; mediaToken: string };
}

/** A socket of the session, joined, with a media peer on it (not started). */
async function open(t: Test, s: { mediaUrl: string; mediaToken: string }) {
  const room = await connect(t, s.mediaUrl, s.mediaToken);
  const joined = await room.type('joined');
  const peer = new MediaPeer(room);
  t.teardown(() => peer.close());
  return { room, joined, peer, participantId: joined.participantId as string };
}

const inspect = async (meetingId: string) => (await node.app.media!.rooms.room(meetingId))!.inspect();
const producersOf = async (meetingId: string, participantId: string) => ((await inspect(meetingId)).peers.find((p) => p.participantId === participantId)?.producers ?? []).map((p) => p.producerId).sort();
const metric = async (name: string, labels: Record<string, string> = {}) => {
  const m = await node.app.metrics.registry.getSingleMetric(name)!.get();
  return m.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
};

t.test('a socket back within the grace resumes its media: the same producers and consumers, nothing closed for the others', async (t) => {
  const m = await meeting();
  const host = await open(t, await session(m.id, teacher.id, 'HOST'));
  await host.peer.start();
  const ss = await session(m.id, (await user('s-ana')).id);
  const ana = await open(t, ss);
  await ana.peer.start();
  await ana.peer.produceAudio();
  await ana.peer.produceVideo();
  await host.peer.produceAudio();
  await eventually(() => host.peer.from(ana.participantId, 'mic') && host.peer.from(ana.participantId, 'camera') && ana.peer.from(host.participantId, 'mic'), 10_000);
  const before = await producersOf(m.id, ana.participantId);
  const heardBefore = host.room.messages.length;
  const resumes = await metric('aula_room_resumes_total');

  // the socket drops (the network), the media transports do not ride on it
  ana.room.ws.terminate();
  await host.room.next((e) => e.type === 'roster' && e.participants.some((p: any) => p.participantId === ana.participantId && !p.connected));
  const back = await connect(t, ss.mediaUrl, ss.mediaToken);
  await back.type('joined');
  const join = await back.command({ type: 'media-join', resume: true });
  t.match(join, { ok: true, resumed: true, iceServers: [] }, 'resumed');
  const resync = await back.command({ type: 'media-resync' });
  t.equal(resync.producers.length, 2, 'its producers are still there');
  t.ok(resync.consumers.some((c: any) => c.participantId === host.participantId && c.source === 'mic'), 'and its consumer of the teacher');
  t.same(await producersOf(m.id, ana.participantId), before, 'the same producer ids');
  const closed = host.room.messages.slice(heardBefore).filter((e: any) => e.type === 'consumer-closed' || e.type === 'consumer-new');
  t.same(closed, [], 'the teacher saw nothing of hers close or start again');
  t.equal(await metric('aula_room_resumes_total'), resumes + 1, 'counted');
  const bytes = await host.peer.receivedBy(host.peer.from(ana.participantId, 'mic')!.consumer.id);
  await eventually(async () => (await host.peer.receivedBy(host.peer.from(ana.participantId, 'mic')!.consumer.id)) > bytes + 1000, 10_000);
  t.pass('the teacher still hears her');

  // a plain media-join (a page that lost its transports) starts afresh: its old media closes
  t.match(await back.command({ type: 'media-join' }), { ok: true, resumed: false });
  t.same(await producersOf(m.id, ana.participantId), [], 'a fresh media session has no producers yet');
});

t.test('after the grace the participant left: a socket of the same session starts a fresh media session', async (t) => {
  const m = await meeting();
  const host = await open(t, await session(m.id, teacher.id, 'HOST'));
  await host.peer.start();
  const ss = await session(m.id, (await user('s-ben')).id);
  const ben = await open(t, ss);
  await ben.peer.start();
  await ben.peer.produceAudio();
  await eventually(() => host.peer.from(ben.participantId, 'mic'), 10_000);
  ben.room.ws.terminate();
  await host.room.next((e) => e.type === 'roster' && e.participants.some((p: any) => p.participantId === ben.participantId && !p.connected));
  clock.advance(16_000); // past the 15-second grace
  await host.room.next((e) => e.type === 'roster' && !e.participants.some((p: any) => p.participantId === ben.participantId), 10_000);
  await eventually(async () => (await inspect(m.id)).peers.every((p) => p.participantId !== ben.participantId), 5000);
  t.pass('its media closed with its leave');
  const back = await connect(t, ss.mediaUrl, ss.mediaToken);
  await back.type('joined');
  t.match(await back.command({ type: 'media-join', resume: true }), { ok: true, resumed: false }, 'nothing to resume: a fresh start');
});

t.test('muteOnEntry holds the microphone once per stay, not once per media session', async (t) => {
  const m = await meeting({ muteOnEntry: true });
  const host = await open(t, await session(m.id, teacher.id, 'HOST'));
  await host.peer.start();
  const cai = await open(t, await session(m.id, (await user('s-cai')).id));
  await cai.peer.start();
  const mic = await cai.peer.produceAudio();
  t.equal((await inspect(m.id)).peers.find((p) => p.participantId === cai.participantId)!.producers[0]!.heldBy, 'entry', 'held on entry');
  await cai.peer.setPaused(mic, false);
  // the page restarts its media (its transports failed): a new media session in the same stay
  cai.peer.close();
  const again = new MediaPeer(cai.room);
  t.teardown(() => again.close());
  await again.start();
  await again.produceAudio();
  const p = (await inspect(m.id)).peers.find((x) => x.participantId === cai.participantId)!.producers[0]!;
  t.equal(p.heldBy, null, 'not held again');
  t.equal(p.paused, false, 'the microphone is live');
});

t.test('media-report: hosts see each person\'s media health; errors and relayed sessions are in the metrics', async (t) => {
  const m = await meeting();
  const host = await open(t, await session(m.id, teacher.id, 'HOST'));
  await host.peer.start();
  const dan = await open(t, await session(m.id, (await user('s-dan')).id));
  await dan.peer.start();
  const eli = await open(t, await session(m.id, (await user('s-eli')).id));
  await eli.peer.start();

  const bad = [{ error: 'nope' }, { lossDown: 2 }, { rttMs: -1 }, { relayed: 'yes' }];
  const good = { error: null, relayed: true, rttMs: 48, lossDown: 0.02, lossUp: null };
  for (const b of bad) t.match(await dan.room.command({ type: 'media-report', ...good, ...b }), { ok: false, error: { code: 'validation_failed' } }, `refused: ${JSON.stringify(b)}`);

  const errors = await metric('aula_media_errors_total', { code: 'relay_unreachable' });
  t.match(await dan.room.command({ type: 'media-report', ...good }), { ok: true, raised: null });
  t.match(await eli.room.command({ type: 'media-report', ...good, relayed: false, error: 'relay_unreachable' }), { ok: true, raised: 'relay_unreachable' });
  t.match(await eli.room.command({ type: 'media-report', ...good, relayed: false, error: 'relay_unreachable' }), { ok: true, raised: null }, 'the same spell is counted once');
  t.equal(await metric('aula_media_errors_total', { code: 'relay_unreachable' }), errors + 1);
  t.equal(await metric('aula_media_relayed_sessions'), 1, 'one session goes through a relay');

  const health = await host.room.next((e) => e.type === 'media-health' && e.participants.some((p: any) => p.participantId === eli.participantId && p.error === 'relay_unreachable'), 8000);
  const d = health.participants.find((p: any) => p.participantId === dan.participantId);
  t.match(d, { relayed: true, rttMs: 48, lossDown: 0.02, lossUp: null, error: null, audioOnly: false, bitrateUp: Number, bitrateDown: Number, quality: Number });
  t.notOk(dan.room.messages.some((e: any) => e.type === 'media-health'), 'students do not hear it');

  t.match(await eli.room.command({ type: 'media-report', ...good, error: null }), { ok: true, raised: null });
  t.match(await eli.room.command({ type: 'media-report', ...good, error: 'relay_unreachable' }), { ok: true, raised: 'relay_unreachable' }, 'a new spell counts again');
});
