import { randomBytes } from 'node:crypto';
import t from 'tap';
import { shardOf } from '../../src/platform/cluster/cluster.ts';
import { api, createTenant, createTestDatabase, startTestNode } from '../helpers/node.ts';
import { connect, eventually } from '../helpers/ws.ts';

// Two nodes sharing one Postgres and one Redis: a room spans both, wherever its actor lives.
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const a = await startTestNode(t, { databaseUrl, redisPrefix });
const b = await startTestNode(t, { databaseUrl, redisPrefix });
const tenant = await createTenant(a);
const key = tenant.key;

t.test('sockets on two nodes share one room; host commands cross nodes', async (t) => {
  await eventually(async () => a.app.cluster.owned().size + b.app.cluster.owned().size === 64 && a.app.cluster.owned().size > 0 && b.app.cluster.owned().size > 0);
  const teacher = (await api(a, 'POST', '/public/users', { key, body: { externalId: 't', fullName: 'Teacher', role: 'TEACHER' } })).body.data;
  const student = (await api(a, 'POST', '/public/users', { key, body: { externalId: 's', fullName: 'Student', role: 'STUDENT' } })).body.data;
  const meeting = (await api(a, 'POST', '/public/meetings', { key, body: { title: 'Two nodes', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 30 } })).body.data;
  const owner = a.app.cluster.owned().has(shardOf(`meeting:${meeting.id}`)) ? 'a' : 'b';
  t.comment(`meeting actor on node ${owner}`);

  const join = async (userId: string, role: string) => {
    const link = (await api(a, 'POST', `/public/meetings/${meeting.id}/join-links`, { key, body: { userId, role } })).body.data;
    return (await api(b, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${userId}` } })).body.data;
  };
  const hs = await join(teacher.id, 'HOST');
  const ss = await join(student.id, 'PARTICIPANT');
  const host = await connect(t, hs.mediaUrl.replace(`:${b.port}`, `:${a.port}`), hs.mediaToken);
  await host.type('joined');
  const stu = await connect(t, ss.mediaUrl, ss.mediaToken);
  await stu.type('joined');
  const roster = await host.next((m) => m.type === 'roster' && m.participants.length === 2);
  t.same(roster.participants.map((p: any) => p.name).sort(), ['Student', 'Teacher'], 'the host on node a sees the student on node b');
  const participantId = roster.participants.find((p: any) => p.name === 'Student').participantId;
  t.match(await host.command({ type: 'mute', participantId }), { ok: true });
  t.match(await stu.type('muted'), { by: /^par_/ }, 'a host command reaches a socket on the other node');
  await api(b, 'POST', `/public/users/${student.id}/deactivate`, { key });
  t.equal((await stu.waitClosed()).code, 4003, 'deactivation through node b closes the socket wherever it is');
  await host.next((m) => m.type === 'roster' && m.participants.length === 1);
});

t.test('a meeting the room ends refuses new join links at once on every node (no stale cached row)', async (t) => {
  const teacher = (await api(a, 'POST', '/public/users', { key, body: { externalId: 't2', fullName: 'Teacher Two', role: 'TEACHER' } })).body.data;
  const meeting = (await api(a, 'POST', '/public/meetings', { key, body: { title: 'Cache', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 30 } })).body.data;
  const mint = (m: typeof a) => api(m, 'POST', `/public/meetings/${meeting.id}/join-links`, { key, body: { userId: teacher.id, role: 'HOST' } });
  const link = (await mint(b)).body.data;
  t.equal((await mint(a)).status, 201, 'both nodes have the meeting cached');
  const s = (await api(b, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'd-cache' } })).body.data;
  const host = await connect(t, s.mediaUrl.replace(`:${b.port}`, `:${a.port}`), s.mediaToken);
  await host.type('joined');
  t.equal((await mint(b)).status, 201, 'minted while LIVE');
  host.ws.send(JSON.stringify({ type: 'end' }));
  t.equal((await host.waitClosed()).code, 4002, 'the host ended it in the room');
  await eventually(async () => (await mint(b)).status === 410 && (await mint(a)).status === 410, 2000);
  t.equal((await mint(b)).body.error.code, 'meeting_ended', 'ended by the room (not the API): minting stops on every node at once');
});
