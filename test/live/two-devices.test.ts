import t from 'tap';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { connect } from '../helpers/ws.ts';

// One person on two devices (a laptop and a phone, each with its own join link): two participants, both
// in the room, each with its own socket; leaving on one keeps the other in.
const node = await startTestNode(t, { redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 'td-t', fullName: 'Tess Host', role: 'TEACHER' })).body.data;
const student = (await call('POST', '/public/users', { externalId: 'td-s', fullName: 'Sol Student', role: 'STUDENT' })).body.data;
const m = (await call('POST', '/public/meetings', { title: 'Two devices', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2030-11-24T09:00:00Z', durationMinutes: 60 })).body.data;

async function enter(userId: string, deviceId: string, role = 'PARTICIPANT') {
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId, role })).body.data;
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId } })).body.data;
  const room = await connect(t, s.mediaUrl, s.mediaToken);
  const joined = await room.type('joined');
  return { room, id: joined.participantId as string };
}

t.test('the same student on a laptop and a phone is two participants; leaving one keeps the other', async (t) => {
  const host = await enter(teacher.id, 'laptop-t', 'HOST');
  const laptop = await enter(student.id, 'laptop-s');
  const phone = await enter(student.id, 'phone-s');
  t.not(laptop.id, phone.id, 'two participants');
  const both = await host.room.next((msg) => msg.type === 'roster' && msg.participants.filter((p: any) => p.name === 'Sol Student' && p.connected).length === 2);
  t.ok(both, 'the host sees both devices');
  t.match(await laptop.room.command({ type: 'leave' }), { ok: true, left: [laptop.id] }, 'leave is answered before the socket closes');
  t.match(await laptop.room.waitClosed(), { code: 4000, reason: 'left' }, 'then it closes with 4000');
  const after = await host.room.next((msg) => msg.type === 'roster' && msg.rev > both.rev && !msg.participants.some((p: any) => p.participantId === laptop.id));
  t.ok(after.participants.some((p: any) => p.participantId === phone.id), 'the phone is still in');
  t.match(await phone.room.command({ type: 'ping' }), { ok: true }, 'and its socket still answers');
});
