import t, { type Test } from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { connect, eventually } from '../helpers/ws.ts';

// A host's controls of a class at the room protocol: the spotlight (one person big on every page) and
// turning a student's camera off. Real WebRTC (mediasoup-client on libwebrtc), one node, one worker.
const node = await startTestNode(t);
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const user = async (externalId: string, fullName: string, role: string) => (await call('POST', '/public/users', { externalId, fullName, role })).body.data;
const teacher = await user('t', 'Tina Teacher', 'TEACHER');
const helper = await user('h', 'Hal Helper', 'TEACHER');
const [sam, ana, lee] = [await user('s1', 'Sam', 'STUDENT'), await user('s2', 'Ana', 'STUDENT'), await user('s3', 'Lee', 'STUDENT')];
const meeting = async () => (await call('POST', '/public/meetings', { title: 'Controls', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
const enter = (t: Test, meetingId: string, userId: string, role = 'PARTICIPANT') => enterRoom(t, node, tenant.key, meetingId, userId, role);

t.test('spotlight: a host puts one person big on every page; everyone hears it, a late joiner is told; students cannot', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const a = await enter(t, m.id, sam.id);
  t.equal(host.joined.spotlight, null, 'nobody at first');
  t.match(await a.room.command({ type: 'spotlight', participantId: a.participantId }), { ok: false, error: { code: 'forbidden' } }, 'a student cannot put themself in the spotlight');
  t.match(await host.room.command({ type: 'spotlight', participantId: 'par_nobody' }), { ok: false, error: { code: 'not_found' } });
  t.match(await host.room.command({ type: 'spotlight', participantId: a.participantId }), { ok: true, participantId: a.participantId });
  t.match(await a.room.next((e) => e.type === 'spotlight'), { participantId: a.participantId });
  const late = await enter(t, m.id, ana.id);
  t.equal(late.joined.spotlight, a.participantId, 'a late joiner is told in joined');
  t.match(await host.room.command({ type: 'spotlight', participantId: null }), { ok: true, participantId: null });
  t.match(await late.room.next((e) => e.type === 'spotlight' && e.participantId === null), { by: String });
  const repeats = late.room.messages.filter((x: any) => x.type === 'spotlight').length;
  await host.room.command({ type: 'spotlight', participantId: null });
  await new Promise((r) => setTimeout(r, 200));
  t.equal(late.room.messages.filter((x: any) => x.type === 'spotlight').length, repeats, 'the same again tells nobody');
});

t.test('stop-camera: a host turns a student\'s camera off on the server; the student may turn it on again; students and cohosts (of a host) cannot', async (t) => {
  const m = await meeting();
  const host = await enter(t, m.id, teacher.id, 'HOST');
  const cohost = await enter(t, m.id, helper.id, 'COHOST');
  const a = await enter(t, m.id, lee.id);
  const b = await enter(t, m.id, ana.id);
  await host.peer.produceVideo({ simulcast: false });
  const camera = await a.peer.produceVideo({ simulcast: false });
  const cameraOf = async (participantId: string) =>
    (await node.app.media!.rooms.room(m.id))!.inspect().peers.find((p) => p.participantId === participantId)!.producers.find((p) => p.source === 'camera');
  await eventually(async () => (await cameraOf(a.participantId)) !== undefined, 5000);

  t.match(await b.room.command({ type: 'stop-camera', participantId: a.participantId }), { ok: false, error: { code: 'forbidden' } }, 'a student cannot');
  t.match(await cohost.room.command({ type: 'stop-camera', participantId: host.participantId }), { ok: false, error: { code: 'forbidden' } }, 'a cohost cannot stop a host\'s camera');
  t.match(await host.room.command({ type: 'stop-camera', participantId: 'par_nobody' }), { ok: false, error: { code: 'not_found' } });
  t.match(await host.room.command({ type: 'stop-camera', participantId: a.participantId }), { ok: true });
  t.match(await a.room.next((e) => e.type === 'producer-closed' && e.producerId === camera.id), { source: 'camera', reason: 'stopped-by-host' }, 'the student is told why');
  t.equal(await cameraOf(a.participantId), undefined, 'the camera producer is gone on the server');
  await eventually(() => b.peer.events.some((e) => e.type === 'consumer-closed'), 5000);
  t.pass('the others\' consumers of it closed');
  t.match(await host.room.command({ type: 'stop-camera', participantId: a.participantId }), { ok: false, error: { code: 'not_found' } }, 'no camera: nothing to stop');
  await a.peer.produceVideo({ simulcast: false });
  await eventually(async () => (await cameraOf(a.participantId)) !== undefined, 5000);
  t.pass('the student turns it on again');
  t.match(await cohost.room.command({ type: 'stop-camera', participantId: a.participantId }), { ok: true }, 'a cohost can stop a student\'s');
});

t.test('a student\'s socket cannot spotlight or stop cameras even before its node knows the room (refused where the room is)', async (t) => {
  const m = await meeting();
  await enter(t, m.id, teacher.id, 'HOST');
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId: sam.id })).body.data;
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'raw' } })).body.data;
  const room = await connect(t, s.mediaUrl, s.mediaToken);
  await room.type('joined');
  t.match(await room.command({ type: 'spotlight', participantId: null }), { ok: false, error: { code: 'forbidden' } });
  t.match(await room.command({ type: 'stop-camera', participantId: 'par_x' }), { ok: false, error: { code: 'forbidden' } });
});
