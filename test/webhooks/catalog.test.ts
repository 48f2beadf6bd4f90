import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { EVENT_TYPES } from '../../src/platform/outbox.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { Receiver } from '../helpers/receiver.ts';
import { connect, eventually } from '../helpers/ws.ts';

// Every event type of the catalog is sent by something: one school's day, driven through the public API
// and the room socket, and a real receiver subscribed to everything hears each type at least once. The
// recording events, transcript.ready and insights.ready come with recordings (a later release).
const LATER = new Set(['recording.started', 'recording.ready', 'recording.failed', 'recording.deleted', 'transcript.ready', 'insights.ready']);

const T0 = Date.parse('2026-11-09T09:00:00Z');
const clock = new ManualClock(T0 - 60 * 60_000);
const node = await startTestNode(t, { clock, overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true } });

t.test('a school day sends every event type of the catalog', async (t) => {
  const receiver = await Receiver.start(t);
  const tenant = await createTenant(node, 'pro');
  const call = async (method: string, path: string, body?: unknown) => {
    const r = await api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.data;
  };
  const endpoint = await call('POST', '/public/webhooks', { url: receiver.url(), events: ['*'] });

  const teacher = await call('POST', '/public/users', { externalId: 't-1', fullName: 'Tina Teacher', role: 'TEACHER' });
  const amy = await call('POST', '/public/users', { externalId: 's-amy', fullName: 'Amy', role: 'STUDENT' });
  await call('POST', '/public/users', { externalId: 's-amy', fullName: 'Amy Adams', role: 'STUDENT' }); // user.updated
  const ben = await call('POST', '/public/users', { externalId: 's-ben', fullName: 'Ben Bell', role: 'STUDENT' });
  await call('POST', '/public/classes', { externalId: 'chem-1', name: 'Chemistry', section: 'A' });
  const cls = await call('POST', '/public/classes', { externalId: 'chem-1', name: 'Chemistry', section: 'B' }); // class.updated
  await call('POST', `/public/classes/${cls.id}/enrollments`, { userId: amy.id });
  await call('POST', `/public/classes/${cls.id}/enrollments`, { userId: ben.id });
  await call('DELETE', `/public/classes/${cls.id}/enrollments/${ben.id}`);

  const meeting = await call('POST', '/public/meetings', {
    title: 'Chemistry, week 1',
    type: 'CLASS',
    classId: cls.id,
    hostUserId: teacher.id,
    scheduledStart: new Date(T0).toISOString(),
    durationMinutes: 60,
    settings: { waitingRoom: true },
  });
  await call('PATCH', `/public/meetings/${meeting.id}`, { title: 'Chemistry, week 1: moles' });
  const spare = await call('POST', '/public/meetings', { title: 'Lab', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(T0 + 86_400_000).toISOString(), durationMinutes: 30 });
  await call('POST', `/public/meetings/${spare.id}/cancel`);

  clock.set(T0);
  const session = async (userId: string, role: string) => {
    const link = await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId, role });
    return (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${userId}` } })).body.data;
  };
  const hostSession = await session(teacher.id, 'HOST');
  const host = await connect(t, hostSession.mediaUrl, hostSession.mediaToken);
  await host.type('joined');
  const waiting = await session(amy.id, 'PARTICIPANT');
  t.equal(waiting.waitingRoom.status, 'WAITING');
  await call('POST', `/public/meetings/${meeting.id}/waiting-room/${waiting.waitingRoom.queueId}/admit`);
  const room = await api(node, 'POST', `/meetings/${meeting.slug}/token`, { bearer: waiting.accessToken, body: { queueId: waiting.waitingRoom.queueId, deviceId: `dev-${amy.id}` } });
  t.equal(room.status, 200, JSON.stringify(room.body));
  const student = await connect(t, room.body.data.mediaUrl, room.body.data.mediaToken);
  await student.type('joined');

  const { poll } = await host.command({ type: 'open-poll', question: 'Ready?', pollType: 'YES_NO' });
  t.match(await student.command({ type: 'answer-poll', pollId: poll.pollId, choices: [0] }), { ok: true });
  t.match(await host.command({ type: 'close-poll', pollId: poll.pollId }), { ok: true });
  const { question } = await student.command({ type: 'ask-question', text: 'Is a mole a number?' });
  t.match(await host.command({ type: 'answer-question', questionId: question.questionId }), { ok: true });
  student.ws.send(JSON.stringify({ type: 'leave' }));
  await student.waitClosed();
  t.match(await host.command({ type: 'end' }), { ok: true });
  clock.advance(5 * 60_000);
  await node.app.timers.tick(); // the attendance settle window
  await call('POST', `/public/users/${ben.id}/deactivate`);
  await call('POST', `/public/webhooks/${endpoint.id}/test`);

  const expected = EVENT_TYPES.filter((type) => !LATER.has(type)).sort();
  const heard = () => [...new Set(receiver.received.map((r) => r.body.type as string))].sort();
  await eventually(async () => {
    await node.app.delivery.tick();
    return heard().length >= expected.length;
  }, 15_000).catch(() => {});
  t.same(heard(), expected, 'every catalog type but the recordings\' was delivered');
  t.equal(expected.length, EVENT_TYPES.length - LATER.size);
});
