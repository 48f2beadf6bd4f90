import t, { type Test } from 'tap';
import { MAX_OFFERS, REOFFER_MS } from '../../media/room.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';

// Media events cross the server's bus at most once. A lost one must not leave a consumer paused and
// counted forever, nor a room's media open after its class: events to a participant are numbered (a
// gap: media-resync), an unanswered offer is made again, and each room checks itself with its meeting.
// Real WebRTC (mediasoup-client on libwebrtc), one node, one worker; a loss is a message the client
// drops on arrival, as if the bus had lost it.
const node = await startTestNode(t);
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
const students = await Promise.all(['Sam', 'Ana'].map(async (n) => (await call('POST', '/public/users', { externalId: n, fullName: n, role: 'STUDENT' })).body.data));
const meeting = async () => (await call('POST', '/public/meetings', { title: 'Lossy', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
const enter = (t: Test, meetingId: string, userId: string, role = 'PARTICIPANT') => enterRoom(t, node, tenant.key, meetingId, userId, role);
const roomOf = async (meetingId: string) => (await node.app.media!.rooms.room(meetingId))!;
const receivedBy = async (meetingId: string, participantId: string) => (await roomOf(meetingId)).inspect().peers.find((p) => p.participantId === participantId)?.received ?? [];

t.test('a lost consumer-new followed by another event: the gap in seq brings a media-resync, and the consumer is taken', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  stu.peer.losses.push((e) => e.type === 'consumer-new');
  const mic = await host.peer.produceAudio();
  await eventually(async () => (await receivedBy(m.id, stu.participantId)).some((c) => c.producerId === mic.id), 5000);
  t.notOk(stu.peer.from(host.participantId, 'mic'), 'the offer was lost');
  await host.peer.produceVideo({ simulcast: false });
  await eventually(() => stu.peer.from(host.participantId, 'mic') && stu.peer.from(host.participantId, 'camera'), 10_000);
  t.equal(stu.peer.resyncs, 1, 'one media-resync');
  await eventually(async () => (await receivedBy(m.id, stu.participantId)).every((c) => c.ready && !c.paused), 5000);
  t.pass('both consumers answered and sent');
});

t.test('a lost consumer-new with nothing after it: offered again; a client that never answers has it closed after the last offer', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  const other = await enter(t, m.id, students[1].id);
  stu.peer.losses.push((e) => e.type === 'consumer-new');
  for (let i = 0; i < MAX_OFFERS; i++) other.peer.losses.push((e) => e.type === 'consumer-new');
  const mic = await host.peer.produceAudio();
  const room = await roomOf(m.id);
  const offered = async (pid: string) => (await receivedBy(m.id, pid)).find((c) => c.producerId === mic.id);
  await eventually(async () => (await offered(stu.participantId)) && (await offered(other.participantId)), 5000);
  let now = performance.now();
  room.reofferUnanswered(now + REOFFER_MS / 2);
  t.notOk(stu.peer.from(host.participantId, 'mic'), 'not before REOFFER_MS');
  room.reofferUnanswered((now += REOFFER_MS + 1));
  await eventually(() => stu.peer.from(host.participantId, 'mic'), 5000);
  await eventually(async () => (await offered(stu.participantId))?.ready === true, 5000);
  t.pass('offered again, taken and answered');
  // the other's second offer went with the one above; the rest up to MAX_OFFERS, all lost
  for (let i = 2; i < MAX_OFFERS; i++) room.reofferUnanswered((now += REOFFER_MS + 1));
  await new Promise((r) => setTimeout(r, 200));
  t.ok(await offered(other.participantId), `still offered after ${MAX_OFFERS} offers`);
  room.reofferUnanswered((now += REOFFER_MS + 1));
  await eventually(async () => (await offered(other.participantId)) === undefined, 5000);
  t.pass('then closed, not kept paused for a client that will not take it');
  t.ok(await offered(stu.participantId), 'the one that answered keeps its consumer');
  // the page shows it is alive again (a phone back from the background says what it shows): it is offered the microphone anew
  await other.peer.view([]);
  await eventually(async () => (await offered(other.participantId))?.ready === true, 5000);
  await eventually(() => other.peer.from(host.participantId, 'mic'), 5000);
  t.pass('a new offer, taken: nobody stays without a voice for the rest of the class');
});

t.test('a room whose last roster was lost closes at its next check with the meeting', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const stu = await enter(t, m.id, students[0].id);
  await host.peer.produceAudio();
  const rooms = node.app.media!.rooms;
  const deliver = rooms.onRoomMessage.bind(rooms);
  // the bus loses every room message for this meeting from now on
  rooms.onRoomMessage = (meetingId, msg) => (meetingId === m.id ? undefined : deliver(meetingId, msg));
  t.teardown(() => {
    rooms.onRoomMessage = deliver;
  });
  for (const p of [stu, host]) t.match(await p.room.command({ type: 'leave' }), { ok: true });
  const room = await roomOf(m.id);
  t.equal(room.closed, false, 'still open: it never heard that everyone left');
  await rooms.reconcile();
  t.equal(room.closed, true, 'closed at its check with the meeting');
  t.equal(await rooms.room(m.id), null);
});

t.test('a page working through a join rush\'s offers keeps them all: a round in which it answered strikes none', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const other = await enter(t, m.id, students[1].id);
  await host.peer.produceAudio();
  await host.peer.produceVideo({ simulcast: false });
  await other.peer.produceAudio();
  await other.peer.produceVideo({ simulcast: false });
  // a page that joins the media and is slow to answer: its answers are made here, one per round
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: students[0].id })).body.data;
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'slow' } })).body.data;
  const { connect } = await import('../helpers/ws.ts');
  const slow = await connect(t, s.mediaUrl, s.mediaToken);
  const joined = await slow.type('joined');
  const join = await slow.command({ type: 'media-join' });
  t.match(await slow.command({ type: 'transport-create', direction: 'recv' }), { ok: true });
  t.match(await slow.command({ type: 'media-ready', rtpCapabilities: join.routerRtpCapabilities }), { ok: true });
  const room = await roomOf(m.id);
  const offers = async () => (await receivedBy(m.id, joined.participantId)).filter((c) => !c.ready);
  await eventually(async () => (await offers()).length === 4, 5000);
  const consumerIds = (await offers()).map((c) => c.consumerId);
  let now = performance.now();
  room.reofferUnanswered((now += REOFFER_MS + 1));
  // one answer per round, for more rounds than MAX_OFFERS
  for (const id of consumerIds.slice(0, 3)) {
    await room.consumerReady(joined.participantId, id);
    room.reofferUnanswered((now += REOFFER_MS + 1));
  }
  t.equal((await offers()).length, 1, `the last offer is kept after ${MAX_OFFERS + 1} rounds: the page answered in each`);
  for (let i = 0; i < MAX_OFFERS; i++) room.reofferUnanswered((now += REOFFER_MS + 1));
  await eventually(async () => (await offers()).length === 0, 5000);
  t.equal((await receivedBy(m.id, joined.participantId)).length, 3, 'once the page stopped answering, the last one was struck and closed');
});
