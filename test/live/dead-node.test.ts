import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, createTestDatabase, startTestNode } from '../helpers/node.ts';
import { connect, eventually } from '../helpers/ws.ts';

// A node that dies cannot report its sockets closed; the survivors do it for it.
const clock = new ManualClock(Date.parse('2026-10-06T10:00:00Z'));
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const a = await startTestNode(t, { databaseUrl, redisPrefix, clock });
const b = await startTestNode(t, { databaseUrl, redisPrefix, clock });
const tenant = await createTenant(a);
const key = tenant.key;

t.test('the participants of a dead node leave after the reconnect grace', async (t) => {
  await eventually(() => a.app.cluster.owned().size > 0 && b.app.cluster.owned().size > 0);
  const teacher = (await api(a, 'POST', '/public/users', { key, body: { externalId: 't', fullName: 'T', role: 'TEACHER' } })).body.data;
  const student = (await api(a, 'POST', '/public/users', { key, body: { externalId: 's', fullName: 'S', role: 'STUDENT' } })).body.data;
  const meeting = (await api(a, 'POST', '/public/meetings', { key, body: { title: 'Dead node', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2026-10-06T10:00:00Z', durationMinutes: 60 } })).body.data;
  const session = async (userId: string, role: string) => {
    const link = (await api(a, 'POST', `/public/meetings/${meeting.id}/join-links`, { key, body: { userId, role } })).body.data;
    return (await api(a, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${userId}` } })).body.data;
  };
  const hs = await session(teacher.id, 'HOST');
  const host = await connect(t, hs.mediaUrl, hs.mediaToken);
  await host.type('joined');
  const ss = await session(student.id, 'PARTICIPANT');
  const stu = await connect(t, ss.mediaUrl.replace(`:${a.port}`, `:${b.port}`), ss.mediaToken);
  const { participantId } = await stu.type('joined');
  await host.next((m) => m.type === 'roster' && m.participants.length === 2);

  // node b "dies": it leaves the cluster without a word about its sockets
  await b.app.cluster.stop();
  t.equal(await a.app.services.rooms.sweepDeadNodes(), 1, 'node a reports the dead node\'s one connection');
  await eventually(async () => (await a.app.sql`select 1 from actor_timers where name = ${`reconnect:${participantId}`}`).length);
  clock.advance(15_001);
  await eventually(async () => (await a.app.timers.tick()) >= 0 && (await a.app.sql`select 1 from outbox where type = 'participant.left' and data->>'participantId' = ${participantId}`).length);
  await host.next((m) => m.type === 'roster' && m.participants.length === 1);
  t.equal(await a.app.services.rooms.sweepDeadNodes(), 0, 'reported once');
});
