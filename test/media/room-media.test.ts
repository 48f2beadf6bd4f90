import t, { type Test } from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { ackError, enterRoom, framesOf } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';

// Real WebRTC through Aula's SFU: mediasoup-client 3.6 on libwebrtc in this process, the room protocol over
// the real WebSocket, one node with one mediasoup worker, real Postgres and Redis.
const node = await startTestNode(t);
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
const students = await Promise.all(
  ['Sam', 'Ana', 'Lee'].map(async (name) => (await call('POST', '/public/users', { externalId: name, fullName: name, role: 'STUDENT' })).body.data),
);

async function meeting(settings: Record<string, unknown> = {}, type = 'MEETING') {
  const body: Record<string, unknown> = { title: 'Media', type, hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60, settings };
  if (type === 'CLASS') {
    const cls = (await call('POST', '/public/classes', { externalId: `c-${Math.random()}`, name: 'Physics' })).body.data;
    body.classId = cls.id;
  }
  return (await call('POST', '/public/meetings', body)).body.data;
}

const enter = (t: Test, meetingId: string, userId: string, role = 'PARTICIPANT') => enterRoom(t, node, tenant.key, meetingId, userId, role);


t.test('two-way audio and video between a teacher and a student through the SFU', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  t.match(host.joined, { media: { available: true, rev: 1 } }, 'the room\'s media was placed when it went LIVE');
  const stu = await enter(t, m.id, students[0].id);
  await host.peer.produceAudio({ hz: 440 });
  await host.peer.produceVideo();
  await stu.peer.produceAudio({ hz: 660 });
  await stu.peer.produceVideo({ simulcast: false });

  await eventually(() => host.peer.from(stu.participantId, 'mic') && host.peer.from(stu.participantId, 'camera') && stu.peer.from(host.participantId, 'mic') && stu.peer.from(host.participantId, 'camera'), 10_000);
  const before = { host: await host.peer.bytes(), stu: await stu.peer.bytes() };
  await eventually(async () => {
    const [h, s] = [await host.peer.bytes(), await stu.peer.bytes()];
    return h.sent > before.host.sent + 20_000 && h.received > before.host.received + 20_000 && s.sent > before.stu.sent + 20_000 && s.received > before.stu.received + 20_000;
  }, 15_000);
  t.pass('RTP bytes grow on both sides, sent and received');
  const scrape = await (await fetch(`${node.url}/metrics`)).text();
  const value = (name: string) => Number(scrape.match(new RegExp(`^${name} (\\d+)`, 'm'))?.[1]);
  t.match({ rooms: value('aula_media_rooms'), participants: value('aula_media_participants'), producers: value('aula_media_producers'), consumers: value('aula_media_consumers') }, { rooms: 1, participants: 2, producers: 4, consumers: 4 }, 'the metrics count the room, its two participants, four tracks in and four out');
  await eventually(() => host.peer.from(stu.participantId, 'mic')!.peak > 3000 && stu.peer.from(host.participantId, 'mic')!.peak > 3000, 10_000);
  t.pass('each side decodes the other\'s tone (not silence)');

  const full = (x: any) => x.type === 'media-state' && x.participants.length === 2 && x.participants.every((p: any) => p.sources.mic === 'on' && p.sources.camera === 'on');
  t.ok(await host.room.next(full, 5000), 'media-state shows who sends what');
  t.ok(await host.room.next((x) => x.type === 'active-speaker' && x.participantId !== null, 10_000), 'an active speaker is announced');
  const camera = stu.peer.from(host.participantId, 'camera')!;
  t.equal(stu.peer.events.find((e) => e.type === 'consumer-new' && e.consumerId === camera.consumer.id)?.consumerType, 'simulcast', 'the host\'s camera arrives as simulcast');
  t.match(await stu.room.command({ type: 'view', tiles: [{ participantId: host.participantId, source: 'camera', width: 240, height: 136 }] }), { ok: true }, 'a receiver shows the host in a thumbnail');
  t.match(await stu.room.next((x) => x.type === 'consumer-layers' && x.consumerId === camera.consumer.id && x.spatialLayer === 0, 10_000), { spatialLayer: 0 }, 'and gets the lowest layer');
  const ice = await host.room.command({ type: 'transport-restart-ice', transportId: host.peer.send!.id });
  t.match(ice, { ok: true, iceParameters: { usernameFragment: String, password: String } }, 'ICE restarts on request');
  t.ok(await host.room.next((x) => x.type === 'network-quality' && x.participants.length >= 2, 10_000), 'network quality per participant is sent');
});

t.test('a late joiner receives every existing producer at once', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const a = await enter(t, m.id, students[0].id);
  await host.peer.produceAudio();
  await host.peer.produceVideo({ simulcast: false });
  await a.peer.produceAudio();
  const late = await enter(t, m.id, students[1].id);
  await eventually(() => late.peer.received.size === 3, 10_000);
  t.same([...late.peer.received.values()].map((r) => `${r.participantId === host.participantId ? 'host' : 'a'}:${r.source}`).sort(), ['a:mic', 'host:camera', 'host:mic']);
  await eventually(async () => (await late.peer.bytes()).received > 20_000, 10_000);
  t.pass('and media flows to it');
});

t.test('a late joiner is told who speaks now, without waiting for it to change', async (t) => {
  const m = await meeting();
  const host = await enterRoom(t, node, tenant.key, m.id, teacher.id, 'HOST');
  await host.peer.produceAudio();
  t.match(await host.room.next((x) => x.type === 'active-speaker' && x.participantId === host.participantId, 10_000), { participantId: host.participantId }, 'the teacher speaks');
  const late = await enterRoom(t, node, tenant.key, m.id, students[2].id);
  t.match(await late.room.next((x) => x.type === 'active-speaker', 5000), { participantId: host.participantId }, 'the late joiner hears who it is');
});

t.test('a VIEWER watches and listens but cannot produce', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  await host.peer.produceAudio();
  const viewer = await enter(t, m.id, students[0].id, 'VIEWER');
  t.match(await viewer.room.command({ type: 'transport-create', direction: 'send' }), { ok: false, error: { code: 'produce_not_allowed' } }, 'a VIEWER gets no sending transport');
  const recv = viewer.peer.recv!.id;
  for (const [kind, source] of [['audio', 'mic'], ['video', 'camera']]) {
    t.match(await viewer.room.command({ type: 'produce', transportId: recv, kind, source, rtpParameters: {} }), { ok: false, error: { code: 'produce_not_allowed' } }, `a VIEWER's ${source} is refused`);
  }
  await eventually(() => viewer.peer.from(host.participantId, 'mic'), 10_000);
  t.pass('it still receives the host');
});

t.test('muteOnEntry: a student\'s microphone starts paused by the server; the student may unmute', async (t) => {
  const m = await meeting({ muteOnEntry: true });
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  const hostMic = await host.peer.produceAudio();
  const mic = await stu.peer.produceAudio();
  t.match(await stu.room.type('producer-paused'), { producerId: mic.id, source: 'mic', reason: 'entry' });
  t.notOk(stu.peer.events.some((e) => e.type === 'producer-paused' && e.producerId === hostMic.id), 'a host is not muted on entry');
  await eventually(() => host.peer.from(stu.participantId, 'mic'), 10_000);
  t.equal(host.peer.from(stu.participantId, 'mic')!.consumer.paused === false && host.peer.events.some((e) => e.type === 'consumer-new' && e.source === 'mic' && e.producerPaused), true, 'the host receives it paused');
  t.match(await stu.peer.setPaused(mic, false), { ok: true }, 'unmuting oneself is allowed');
  await host.room.next((e) => e.type === 'consumer-resumed');
});

t.test('host mute: the server pauses the mic; the student cannot unmute until a host allows it', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  const mic = await stu.peer.produceAudio();
  await eventually(() => host.peer.from(stu.participantId, 'mic'), 10_000);
  t.match(await host.room.command({ type: 'mute', participantId: stu.participantId }), { ok: true });
  t.match(await stu.room.type('muted'), { by: host.participantId }, 'the student is told');
  t.match(await stu.room.next((e) => e.type === 'producer-paused'), { producerId: mic.id, reason: 'muted-by-host' }, 'and the server paused the microphone');
  await host.room.next((e) => e.type === 'consumer-paused');
  t.match(await stu.peer.setPaused(mic, false), { ok: false, error: { code: 'muted_by_host' } }, 'resuming is refused');
  t.match(await stu.room.command({ type: 'mute', participantId: host.participantId }), { ok: false, error: { code: 'forbidden' } }, 'a student cannot mute anyone');
  t.match(await stu.room.command({ type: 'mute-all' }), { ok: false, error: { code: 'forbidden' } }, 'nor everyone');
  t.match(await stu.room.command({ type: 'ask-unmute' }), { ok: true });
  t.match(await host.room.type('unmute-requested'), { participantId: stu.participantId, name: 'Sam' }, 'the hosts hear the request');
  t.match(await host.room.command({ type: 'allow-unmute', participantId: stu.participantId }), { ok: true });
  await stu.room.type('unmute-allowed');
  t.ok(stu.peer.producers.get(mic.id), 'the microphone stays paused until the student unmutes (permission, not a forced unmute)');
  t.match(await stu.peer.setPaused(mic, false), { ok: true }, 'then resuming works');
  await host.room.next((e) => e.type === 'consumer-resumed');
  t.match(await host.room.command({ type: 'mute-all' }), { ok: true, muted: [stu.participantId] }, 'mute all: every student');
  t.match(await stu.room.next((e) => e.type === 'producer-paused'), { producerId: mic.id, reason: 'muted-by-host' });
  t.match(await stu.peer.setPaused(mic, false), { ok: false, error: { code: 'muted_by_host' } });
});

t.test('screen share: hosts only by default in a class, students too with allowStudentScreenShare', async (t) => {
  const closed = await meeting({}, 'CLASS');
  const host = await enter(t, closed.id, teacher.id, 'HOST');
  const stu = await enter(t, closed.id, students[0].id);
  t.equal(await ackError(stu.peer.produceVideo({ source: 'screen', simulcast: false })), 'produce_not_allowed', 'a student\'s screen is refused');
  await host.peer.produceVideo({ source: 'screen', simulcast: false });
  await eventually(() => stu.peer.from(host.participantId, 'screen'), 10_000);
  t.pass('the host shares a screen');

  const open = await meeting({ allowStudentScreenShare: true }, 'CLASS');
  await enter(t, open.id, teacher.id, 'HOST');
  const s2 = await enter(t, open.id, students[1].id);
  const screen = await s2.peer.produceVideo({ source: 'screen', simulcast: false });
  t.ok(screen.id, 'allowed by the setting');
  t.match((await call('PATCH', `/public/meetings/${open.id}`, { settings: { allowStudentScreenShare: false } })).status, 200);
  t.match(await s2.room.next((e) => e.type === 'producer-closed'), { producerId: screen.id, reason: 'policy' }, 'turning the setting off closes a student\'s screen share');
});

t.test('a screen beside the camera, both simulcast with the same RIDs, whose first packets come before the server knows it, still reaches students', async (t) => {
  const m = await meeting({}, 'CLASS');
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  await host.peer.produceVideo();
  const camera = await eventually(() => stu.peer.from(host.participantId, 'camera'), 10_000);
  await host.peer.produceVideo({ source: 'screen', announceAfterMs: 1500 });
  const screen = await eventually(() => stu.peer.from(host.participantId, 'screen'), 10_000);
  const screenFrames = framesOf(screen!.consumer.track);
  const cameraFrames = framesOf(camera!.consumer.track);
  t.ok(await eventually(() => screenFrames.count > 5, 10_000), 'the screen is decoded');
  t.ok(await eventually(() => cameraFrames.count > 5, 10_000), 'and the camera still is');
  screenFrames.stop();
  cameraFrames.stop();
});

t.test('lecture mode: only hosts speak until a host gives a student the floor', async (t) => {
  const m = await meeting({ lectureMode: true });
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  const mic = await stu.peer.produceAudio();
  t.match(await stu.room.next((e) => e.type === 'producer-paused'), { producerId: mic.id, reason: 'floor' });
  t.match(await stu.peer.setPaused(mic, false), { ok: false, error: { code: 'floor_required' } });
  t.match(await host.room.command({ type: 'floor', participantId: stu.participantId, give: true }), { ok: true });
  await stu.room.type('floor');
  t.match(await stu.peer.setPaused(mic, false), { ok: true }, 'with the floor the student speaks');
  t.match(await host.room.command({ type: 'floor', participantId: stu.participantId, give: false }), { ok: true });
  t.match(await stu.room.next((e) => e.type === 'producer-paused' && e.reason === 'floor'), { producerId: mic.id }, 'taking the floor back pauses the microphone again');
});

t.test('a removed participant\'s transports close at once', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  await stu.peer.produceAudio();
  const consumerId = (await eventually(() => host.peer.from(stu.participantId, 'mic'), 10_000))!.consumer.id;
  t.match(await host.room.command({ type: 'remove', participantId: stu.participantId }), { ok: true });
  t.match(await host.room.type('consumer-closed'), { consumerId }, 'what the student sent is gone for everyone');
  const room = await node.app.media!.rooms.room(m.id);
  await eventually(() => room!.peers === 1);
  t.pass('only the host has media left');
});
