import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, startTestNode } from '../helpers/node.ts';
import { connect } from '../helpers/ws.ts';

// Raised hands over real room sockets: first raised first, your own hand only, hosts lower one or all.
const clock = new ManualClock(Date.parse('2026-11-24T09:00:00Z'));
const node = await startTestNode(t, { clock, redis: false });
const tenant = await createTenant(node);
const call = (method: string, path: string, body?: unknown) => api(node, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const teacher = (await call('POST', '/public/users', { externalId: 'h-t', fullName: 'Hana Host', role: 'TEACHER' })).body.data;
const s1 = (await call('POST', '/public/users', { externalId: 'h-s1', fullName: 'Ada One', role: 'STUDENT' })).body.data;
const s2 = (await call('POST', '/public/users', { externalId: 'h-s2', fullName: 'Bo Two', role: 'STUDENT' })).body.data;
const m = (await call('POST', '/public/meetings', { title: 'Hands', type: 'MEETING', hostUserId: teacher.id, scheduledStart: '2026-11-24T09:00:00Z', durationMinutes: 60 })).body.data;

async function enter(userId: string, role = 'PARTICIPANT') {
  const link = (await call('POST', `/public/meetings/${m.id}/join-links`, { userId, role })).body.data;
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${userId}-${Math.random()}` } })).body.data;
  const room = await connect(t, s.mediaUrl, s.mediaToken);
  const joined = await room.type('joined');
  return { room, id: joined.participantId as string, joined };
}
const hands = (roster: any[]) => roster.filter((p) => p.handRaisedAt).sort((a, b) => a.handRaisedAt.localeCompare(b.handRaisedAt)).map((p) => p.name);

t.test('students raise hands in order; only hosts lower others; the host lowers one, then all', async (t) => {
  const host = await enter(teacher.id, 'HOST');
  const one = await enter(s1.id);
  const two = await enter(s2.id);

  const first = await one.room.command({ type: 'raise-hand' });
  t.match(first, { ok: true, raisedAt: '2026-11-24T09:00:00.000Z' });
  const seen = await host.room.next((msg) => msg.type === 'roster' && hands(msg.participants).length === 1);
  t.same(hands(seen.participants), ['Ada One']);
  clock.advance(5000);
  t.match(await two.room.command({ type: 'raise-hand' }), { ok: true, raisedAt: '2026-11-24T09:00:05.000Z' });
  clock.advance(5000);
  t.match(await one.room.command({ type: 'raise-hand' }), { raisedAt: '2026-11-24T09:00:00.000Z' }, 'raising again keeps the first time');
  const both = await host.room.next((msg) => msg.type === 'roster' && hands(msg.participants).length === 2);
  t.same(hands(both.participants), ['Ada One', 'Bo Two'], 'first raised first');

  const refused = await two.room.command({ type: 'lower-hand', participantId: one.id });
  t.match(refused, { ok: false, error: { code: 'forbidden' } }, 'a student cannot lower another hand');
  t.match(await host.room.command({ type: 'lower-hand', participantId: one.id }), { ok: true, lowered: [one.id] });
  await two.room.next((msg) => msg.type === 'roster' && hands(msg.participants).join() === 'Bo Two');
  t.pass('everyone sees only the other hand up');
  t.match(await two.room.command({ type: 'lower-all-hands' }), { ok: false, error: { code: 'forbidden' } }, 'nor all of them');
  await one.room.command({ type: 'raise-hand' });
  const all = await host.room.command({ type: 'lower-all-hands' });
  t.same([...all.lowered].sort(), [one.id, two.id].sort(), 'both hands lowered');
  await one.room.next((msg) => msg.type === 'roster' && msg.rev > 0 && hands(msg.participants).length === 0 && msg.participants.length === 3);
  t.match(await one.room.command({ type: 'lower-hand' }), { ok: true, lowered: [] }, 'lowering a hand that is down changes nothing');
});
