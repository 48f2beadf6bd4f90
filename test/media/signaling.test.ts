import t, { type Test } from 'tap';
import { MEDIA_LIMITS } from '../../http/ws/gateway.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { memoryLogger } from '../helpers/logs.ts';
import { ackError, enterRoom, MediaPeer, replayProduce } from '../helpers/media.ts';
import { connect, eventually } from '../helpers/ws.ts';

// A hostile participant on the room socket's media signaling: a shared screen's sound used as a second
// microphone, bursts of concurrent produce and transport-create, a mute racing a new microphone, resumes
// racing closing producers. Real WebRTC (mediasoup-client on libwebrtc), one node, one worker.
const { log: logger, lines } = memoryLogger('warn');
const node = await startTestNode(t, { logger });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Teacher', role: 'TEACHER' })).body.data;
const students = await Promise.all(
  ['s1', 's2', 's3', 's4', 's5'].map(async (x) => (await call('POST', '/public/users', { externalId: x, fullName: `Student ${x}`, role: 'STUDENT' })).body.data),
);

async function meeting(settings: Record<string, unknown> = {}) {
  return (await call('POST', '/public/meetings', { title: 'Signaling', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60, settings })).body.data;
}
const enter = (t: Test, meetingId: string, userId: string, role = 'PARTICIPANT') => enterRoom(t, node, tenant.key, meetingId, userId, role);
const mediaOf = async (meetingId: string) => (await node.app.media!.rooms.room(meetingId))!;
const producersOf = async (meetingId: string, participantId: string) => (await mediaOf(meetingId)).inspect().peers.find((p) => p.participantId === participantId)?.producers ?? [];
const errorLines = () => lines.filter((l) => l.level >= 50);

t.test('a muted student cannot speak through a shared screen\'s sound: mute, mute-all and the floor hold every audio source', async (t) => {
  const m = await meeting();
  t.equal(m.settings.allowStudentScreenShare, true, 'a MEETING lets students share screens by default');
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  t.equal(await ackError(stu.peer.produceAudio({ source: 'screen-audio' })), 'invalid_state', 'screen-audio alone (no shared screen) is refused');

  t.match(await host.room.command({ type: 'mute', participantId: stu.participantId }), { ok: true });
  await stu.room.type('muted');
  const screen = await stu.peer.produceVideo({ source: 'screen', simulcast: false });
  const sound = await stu.peer.produceAudio({ source: 'screen-audio', hz: 880 });
  t.match(await stu.room.next((e) => e.type === 'producer-paused' && e.producerId === sound.id), { source: 'screen-audio', reason: 'muted-by-host' }, 'the server holds the screen\'s sound of a muted student');
  t.match(await producersOf(m.id, stu.participantId), [{ source: 'screen', paused: false }, { source: 'screen-audio', paused: true, heldBy: 'muted-by-host' }]);
  const offered = await host.room.next((e) => e.type === 'consumer-new' && e.source === 'screen-audio');
  t.equal(offered.producerPaused, true, 'the host receives it paused');
  t.match(await stu.peer.setPaused(sound, false), { ok: false, error: { code: 'muted_by_host' } }, 'and the student cannot resume it');

  t.match(await host.room.command({ type: 'allow-unmute', participantId: stu.participantId }), { ok: true });
  await stu.room.type('unmute-allowed');
  t.match(await stu.peer.setPaused(sound, false), { ok: true }, 'allowed to unmute: the sound plays');
  t.match(await host.room.command({ type: 'mute-all' }), { ok: true, muted: [stu.participantId] });
  t.match(await stu.room.next((e) => e.type === 'producer-paused' && e.producerId === sound.id), { reason: 'muted-by-host' }, 'mute-all holds it too');
  await eventually(async () => (await producersOf(m.id, stu.participantId)).find((p) => p.source === 'screen-audio')?.paused === true);

  t.match(await host.room.command({ type: 'allow-unmute', participantId: stu.participantId }), { ok: true });
  t.match(await stu.peer.setPaused(sound, false), { ok: true });
  t.equal((await call('PATCH', `/public/meetings/${m.id}`, { settings: { lectureMode: true } })).status, 200);
  t.match(await stu.room.next((e) => e.type === 'producer-paused' && e.producerId === sound.id && e.reason === 'floor'), { source: 'screen-audio' }, 'a lecture holds it without the floor');
  t.match(await stu.peer.setPaused(sound, false), { ok: false, error: { code: 'floor_required' } });

  t.match(await stu.room.command({ type: 'producer-close', producerId: screen.id }), { ok: true });
  t.match(await stu.room.next((e) => e.type === 'producer-closed' && e.producerId === sound.id), { source: 'screen-audio' }, 'the screen\'s sound ends with the screen');
  t.same(await producersOf(m.id, stu.participantId), [], 'nothing of the screen is left');
});

t.test('a host\'s own screen sound is not held by a mute of their microphone', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const cohost = await enter(t, m.id, students[1].id, 'COHOST');
  t.match(await cohost.room.command({ type: 'mute', participantId: host.participantId }), { ok: true }, 'a cohost mutes the host');
  await host.room.type('muted');
  await host.peer.produceVideo({ source: 'screen', simulcast: false });
  await host.peer.produceAudio({ source: 'screen-audio' });
  t.match(await producersOf(m.id, host.participantId), [{ source: 'screen' }, { source: 'screen-audio', paused: false, heldBy: null }], 'a teacher playing a video to the class is heard');
});

t.test('bursts of concurrent produce and transport-create: one producer per source, one transport per direction, limits, and nobody honest closed', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const flooders = await Promise.all(students.slice(0, 3).map((s) => enter(t, m.id, s.id)));
  for (const f of flooders) await f.peer.produceVideo({ simulcast: false });
  await eventually(() => flooders.every((f) => host.peer.from(f.participantId, 'camera')), 10_000);
  const errorsBefore = errorLines().length;

  // Each flooder sends 150 camera produces at once (new SSRCs and MIDs, so the worker takes each one); a
  // flooder may be closed as an abuser before all are answered.
  const acks = (
    await Promise.all(
      flooders.flatMap((f) => Array.from({ length: 150 }, (_, i) => Promise.race([f.room.command(replayProduce(f.peer.produced.get('camera')!, i + 1)), f.room.waitClosed(10_000).then(() => null)]))),
    )
  ).filter((a) => a !== null);
  const accepted = acks.filter((a) => a.ok).length;
  const refusals = new Set(acks.filter((a) => !a.ok).map((a) => a.error.code));
  t.same([...refusals], ['command_rate_limited'], 'the rest are refused for rate');
  t.ok(accepted <= 3 * (MEDIA_LIMITS.produce.capacity + 1), `${accepted} of 450 accepted: within the limits (${acks.length} answered, ${flooders.filter((f) => f.room.closed?.code === 1008).length} flooders closed as abusers)`);
  for (const f of flooders) {
    const cameras = (await producersOf(m.id, f.participantId)).filter((p) => p.source === 'camera');
    t.ok(cameras.length <= 1, `a flooder holds ${cameras.length} camera producer, whatever it sent`);
  }
  const hostConsumers = (await mediaOf(m.id)).inspect().peers.find((p) => p.participantId === host.participantId)!.consumers;
  t.ok(hostConsumers <= 3, `the host consumes at most one camera of each (${hostConsumers})`);

  // 50 sending transports at once: one is left, the rest refused for rate or replaced.
  const f = await enter(t, m.id, students[3].id);
  const made = await Promise.all(Array.from({ length: 50 }, () => f.room.command({ type: 'transport-create', direction: 'send' })));
  t.ok(made.filter((a) => a.ok).length <= MEDIA_LIMITS['transport-create'].capacity, `${made.filter((a) => a.ok).length} transports made`);
  t.same((await mediaOf(m.id)).inspect().peers.find((p) => p.participantId === f.participantId)!.transports.sort(), ['recv', 'send'], 'one transport per direction');

  t.match(await host.room.command({ type: 'ping' }), { ok: true }, 'the host\'s socket answers');
  t.equal(host.room.closed, null, 'the host was not closed as an abuser for the resumes others caused');
  t.equal(errorLines().length, errorsBefore, 'no error-level log lines');
});

t.test('produce and transport-create: the first of each source and direction free, then 20 produces and 6 transports a minute', async (t) => {
  const m = await meeting();
  await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[3].id);
  await stu.peer.produceAudio();
  // Paced at the command budget's refill (an actor-cost command every 200 ms), so only the produce limit refuses.
  let accepted = 1;
  let refusal: any = null;
  for (let i = 1; i <= 30 && !refusal; i++) {
    const ack = await stu.room.command(replayProduce(stu.peer.produced.get('mic')!, 1000 + i));
    if (ack.ok) accepted++;
    else refusal = ack;
    await new Promise((r) => setTimeout(r, 210));
  }
  t.match(refusal, { ok: false, error: { code: 'command_rate_limited', details: { limit: 'produce', retryAfterSeconds: Number } } }, 'refused by the produce limit');
  t.ok(accepted >= 21 && accepted <= 24, `the first microphone and about 20 more were accepted (${accepted})`);
  const camera = await stu.room.command({ type: 'produce', transportId: stu.peer.send!.id, kind: 'video', source: 'camera', rtpParameters: {} });
  t.not(camera.error?.code, 'command_rate_limited', 'the first camera is still free of the limit');
  for (let i = 0; i < 6; i++) t.match(await stu.room.command({ type: 'transport-create', direction: 'send' }), { ok: true }, `transport ${i + 1} beyond the first`);
  t.match(await stu.room.command({ type: 'transport-create', direction: 'send' }), { ok: false, error: { code: 'command_rate_limited', details: { limit: 'transport-create' } } });
});

t.test('a receiver whose budget is spent still resumes the consumers the server offers it, and is never struck for them', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  for (const s of students.slice(0, 3)) {
    const p = await enter(t, m.id, s.id);
    await p.peer.produceAudio();
    await p.peer.produceVideo({ simulcast: false });
    await p.peer.produceVideo({ source: 'screen', simulcast: false });
  }
  // A late joiner first takes the microphones only (a device that says it decodes audio only): its
  // receiving transport connects. Then it spends its session's budget and says it decodes video too: six
  // consumers are offered at once, and their resumes come while the budget is empty.
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: students[4].id })).body.data;
  const session = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'late' } })).body.data;
  const room = await connect(t, session.mediaUrl, session.mediaToken);
  const { participantId } = await room.type('joined');
  const late = new MediaPeer(room);
  t.teardown(() => late.close());
  await late.start({ receive: false });
  const caps = late.device.rtpCapabilities;
  const audioOnly = { codecs: caps.codecs!.filter((c) => c.kind === 'audio'), headerExtensions: caps.headerExtensions!.filter((h) => h.kind === 'audio') };
  t.match(await room.command({ type: 'media-ready', rtpCapabilities: audioOnly }), { ok: true, consumers: 3, receivesVideo: false, videoCodec: 'video/VP8' }, 'told it receives no video');
  const mine = async () => (await mediaOf(m.id)).inspect().peers.find((p) => p.participantId === participantId)!;
  await eventually(async () => late.received.size === 3 && (await mine()).pausedConsumers === 0, 10_000);
  const pings = await Promise.all(Array.from({ length: 240 }, () => room.command({ type: 'ping' })));
  t.ok(pings.some((a) => a.error?.code === 'command_rate_limited'), 'the budget is spent');
  let ready: any;
  for (;;) {
    ready = await room.command({ type: 'media-ready', rtpCapabilities: caps });
    if (ready.ok) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  t.equal(ready.consumers, 6, 'six video consumers offered at once');
  t.equal(ready.receivesVideo, true);
  const refusedBefore = room.messages.filter((x: any) => x.type === 'ack' && x.error?.code === 'command_rate_limited').length;
  await eventually(async () => (await mine()).consumers === 9 && late.received.size === 9, 10_000);
  await late.settled();
  t.equal(room.messages.filter((x: any) => x.type === 'ack' && x.error?.code === 'command_rate_limited').length, refusedBefore, 'no resume was refused');
  t.equal((await mine()).pausedConsumers, 0, 'all nine offered consumers were resumed');
  t.equal(room.closed, null, 'and the receiver was not closed');
  t.match(await host.room.command({ type: 'consumer-ready', consumerId: 'nope' }), { ok: false, error: { code: 'not_found' } }, 'a ready of an unknown consumer is refused');
});

t.test('a ready or close of a consumer whose producer is closing, or a view racing it, answers not_found or ok, never a server error', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  await stu.peer.produceAudio();
  const errorsBefore = errorLines().length;
  const codes = new Set<string>();
  for (let i = 1; i <= 15; i++) {
    // a produce and a close cost the student 11 of the command budget, which refills at 50 a second: pace the
    // trials so the close racing the others is never the one refused for rate (seen on a fast CI run: the
    // fifteen trials took 250 ms and the student's close came back command_rate_limited)
    await new Promise((r) => setTimeout(r, 250));
    let made = await stu.room.command(replayProduce(stu.peer.produced.get('mic')!, 2000 + i));
    while (!made.ok && made.error.code === 'command_rate_limited') {
      await new Promise((r) => setTimeout(r, made.error.details.retryAfterSeconds * 1000 + 10));
      made = await stu.room.command(replayProduce(stu.peer.produced.get('mic')!, 2000 + i));
    }
    t.ok(made.ok, `produce ${i}`, { answer: made });
    const offer = await host.room.next((e) => e.type === 'consumer-new' && e.producerId === made.producerId);
    // the close first: the worker drops the consumer before this process hears of it
    const close = stu.room.command({ type: 'producer-close', producerId: made.producerId });
    const racing = [
      host.room.command({ type: 'consumer-ready', consumerId: offer.consumerId }),
      host.room.command({ type: 'view', tiles: [{ participantId: stu.participantId, source: 'camera', width: 320, height: 180 }] }),
      host.room.command({ type: 'view', tiles: [] }),
      host.room.command({ type: 'consumer-close', consumerId: offer.consumerId }),
    ];
    for (const a of await Promise.all([close, ...racing])) codes.add(a.ok ? 'ok' : a.error.code);
  }
  t.ok([...codes].every((c) => c === 'ok' || c === 'not_found'), `answers: ${[...codes].join(', ')}`);
  t.equal(errorLines().length, errorsBefore, 'no error-level log lines');
});

t.test('a host\'s mute racing a student\'s new or resumed microphone leaves it held', async (t) => {
  const m = await meeting();
  await enter(t, m.id, teacher.id, 'HOST');
  const people = await Promise.all(students.slice(0, 4).map((s) => enter(t, m.id, s.id)));
  // one cohost for each student, so that no one's command budget runs out over the trials
  const cohosts = await Promise.all(
    people.map(async (_, i) => enter(t, m.id, (await call('POST', '/public/users', { externalId: `h${i}`, fullName: `Cohost ${i}`, role: 'TEACHER' })).body.data.id, 'COHOST')),
  );
  for (const p of people) await p.peer.produceAudio();
  let trial = 0;
  for (const [i, p] of people.entries()) {
    const host = cohosts[i]!;
    for (let k = 0; k < 10; k++) {
      trial++;
      const delay = trial % 10;
      t.match(await host.room.command({ type: 'allow-unmute', participantId: p.participantId }), { ok: true });
      const request = k % 2 === 0 ? replayProduce(p.peer.produced.get('mic')!, 3000 + trial) : { type: 'producer-resume', producerId: (await producersOf(m.id, p.participantId)).find((x) => x.source === 'mic')!.producerId };
      if (k % 2 === 1) await p.room.command({ type: 'producer-pause', producerId: request.producerId });
      const sent = p.room.command(request);
      await new Promise((r) => setTimeout(r, delay));
      const muted = await host.room.command({ type: 'mute', participantId: p.participantId });
      t.ok(muted.ok, `trial ${trial}: muted`);
      await sent;
      const held = await eventually(async () => (await producersOf(m.id, p.participantId)).find((x) => x.source === 'mic' && x.paused), 3000).catch(() => null);
      t.ok(held, `trial ${trial} (${k % 2 === 0 ? 'produce' : 'resume'}, mute ${delay} ms later): the microphone is held`);
    }
  }
});

t.test('a VIEWER gets no sending transport', async (t) => {
  const m = await meeting();
  await enter(t, m.id, teacher.id, 'HOST');
  const viewer = await enter(t, m.id, students[2].id, 'VIEWER');
  t.match(await viewer.room.command({ type: 'transport-create', direction: 'send' }), { ok: false, error: { code: 'produce_not_allowed' } });
  t.same((await mediaOf(m.id)).inspect().peers.find((p) => p.participantId === viewer.participantId)!.transports, ['recv']);
});

t.test('a producer a receiver cannot consume is not remembered as consumed', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[1].id);
  // The student's device says it decodes audio only.
  const caps = stu.peer.device.rtpCapabilities;
  const audioOnly = { codecs: caps.codecs!.filter((c) => c.kind === 'audio'), headerExtensions: caps.headerExtensions!.filter((h) => h.kind === 'audio') };
  t.match(await stu.room.command({ type: 'media-ready', rtpCapabilities: audioOnly }), { ok: true });
  for (let i = 0; i < 3; i++) {
    const cam = await host.peer.produceVideo({ simulcast: false });
    await host.room.command({ type: 'producer-close', producerId: cam.id });
  }
  await host.peer.produceAudio();
  await eventually(async () => (await mediaOf(m.id)).inspect().peers.find((p) => p.participantId === stu.participantId)!.consumers === 1);
  const peer = (await mediaOf(m.id)).inspect().peers.find((p) => p.participantId === stu.participantId)!;
  t.equal(peer.consuming, peer.consumers, 'only what it consumes is remembered');
});
