import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { assertError } from '../helpers/assert.ts';
import { connect, eventually, type RoomClient } from '../helpers/ws.ts';

// Who a room lets in: a host locks it, it fills up, or the organization has as many meetings live as its
// plan allows. Refused at the exchange (the link's page says why) and again at the room join.
const clock = new ManualClock(Date.parse('2026-11-04T09:00:00Z'));
const node = await startTestNode(t, { clock });

async function school(plan: 'free' | 'pro' = 'pro') {
  const base = await newSchool(node, plan);
  const { tenant, call } = base;
  const user = (externalId: string, role = 'STUDENT') => base.user(externalId, externalId, role);
  const teacher = await user('teacher', 'TEACHER');
  const meeting = async (settings: Record<string, unknown> = {}) =>
    (await call('POST', '/public/meetings', { title: 'Room', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 40, settings })).body.data;
  const exchange = async (meetingId: string, userId: string, role = 'PARTICIPANT') => {
    const link = (await call('POST', `/public/meetings/${meetingId}/join-links`, { userId, role })).body.data;
    return api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${Math.random()}` } });
  };
  const enter = async (meetingId: string, userId: string, role = 'PARTICIPANT'): Promise<RoomClient> => {
    const r = await exchange(meetingId, userId, role);
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    const c = await connect(t, r.body.data.mediaUrl, r.body.data.mediaToken);
    await c.type('joined');
    return c;
  };
  return { tenant, call, user, teacher, meeting, exchange, enter };
}

t.test('a host locks the room: newcomers are refused at the exchange and at the room join, hosts still get in', async (t) => {
  const s = await school();
  const m = await s.meeting();
  const host = await s.enter(m.id, s.teacher.id, 'HOST');
  const [amy, ben, cat] = [await s.user('amy'), await s.user('ben'), await s.user('cat')];
  const amyWs = await s.enter(m.id, amy.id);
  const benEarly = await s.exchange(m.id, ben.id); // exchanged before the lock, joins after it
  t.equal(benEarly.status, 200);

  t.match(await amyWs.command({ type: 'lock', locked: true }), { ok: false, error: { code: 'forbidden' } }, 'a student cannot lock');
  t.match(await host.command({ type: 'lock', locked: true }), { ok: true, locked: true });
  t.match(await amyWs.type('locked'), { locked: true }, 'everyone hears it');

  const refused = await s.exchange(m.id, cat.id);
  assertError(t, refused, 403, 'meeting_locked');
  const benWs = await connect(t, benEarly.body.data.mediaUrl, benEarly.body.data.mediaToken);
  t.match(await benWs.type('error'), { error: { code: 'meeting_locked' } }, 'refused at the room join too');
  t.equal((await benWs.waitClosed()).code, 4004);
  const cohost = await s.enter(m.id, (await s.user('co', 'TEACHER')).id, 'COHOST');
  t.match(cohost.messages.length >= 0 && (await s.call('GET', `/public/meetings/${m.id}`)).body.data, { status: 'LIVE' }, 'a cohost got in');

  // someone already in reconnects through a lock
  amyWs.ws.terminate();
  t.match(await host.command({ type: 'lock', locked: false }), { ok: true, locked: false });
  await eventually(async () => (await s.exchange(m.id, cat.id)).status === 200);
  const benAgain = await connect(t, benEarly.body.data.mediaUrl, benEarly.body.data.mediaToken);
  t.match(await benAgain.type('joined'), { locked: false }, 'unlocked: in');
});

t.test('maxParticipants: a full room refuses newcomers with meeting_full until someone leaves; it is at most the plan cap', async (t) => {
  const s = await school('free');
  assertError(t, await s.call('POST', '/public/meetings', { title: 'Big', type: 'MEETING', hostUserId: s.teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 40, settings: { maxParticipants: 101 } }), 400, 'validation_failed');
  assertError(t, await s.call('POST', '/public/meetings', { title: 'Tiny', type: 'MEETING', hostUserId: s.teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 40, settings: { maxParticipants: 1 } }), 400, 'validation_failed');
  const m = await s.meeting({ maxParticipants: 2 });
  t.equal(m.settings.maxParticipants, 2);
  await s.enter(m.id, s.teacher.id, 'HOST');
  const [amy, ben] = [await s.user('amy'), await s.user('ben')];
  const amyWs = await s.enter(m.id, amy.id);
  assertError(t, await s.exchange(m.id, ben.id), 409, 'meeting_full');
  const co = await s.enter(m.id, (await s.user('co', 'TEACHER')).id, 'COHOST'); // past the cap: a cohost gets in
  amyWs.ws.send(JSON.stringify({ type: 'leave' }));
  await amyWs.waitClosed();
  assertError(t, await s.exchange(m.id, ben.id), 409, 'meeting_full'); // the cohost counts: still two
  co.ws.send(JSON.stringify({ type: 'leave' }));
  await co.waitClosed();
  await eventually(async () => (await s.exchange(m.id, ben.id)).status === 200);
  t.pass('room for one more once someone left');
  const patched = await s.call('PATCH', `/public/meetings/${m.id}`, { settings: { maxParticipants: null } });
  t.equal(patched.body.data.settings.maxParticipants, null, 'cleared: the plan cap alone');
});

t.test("the plan's live meetings: a meeting that would start past the limit is refused at the exchange and at the room join", async (t) => {
  const s = await school('free'); // two live at once
  const [m1, m2, m3] = [await s.meeting(), await s.meeting(), await s.meeting()];
  const student = await s.user('sam');
  const early = await s.exchange(m3.id, student.id); // exchanged while nothing was live
  t.equal(early.status, 200);
  const h1 = await s.enter(m1.id, s.teacher.id, 'HOST');
  await s.enter(m2.id, s.teacher.id, 'HOST');
  const refused = await s.exchange(m3.id, s.teacher.id, 'HOST');
  assertError(t, refused, 403, 'plan_limit_reached');
  t.match(refused.body.error.details, { limit: 2, live: 2, plan: 'free' });
  const ws = await connect(t, early.body.data.mediaUrl, early.body.data.mediaToken);
  t.match(await ws.type('error'), { error: { code: 'plan_limit_reached' } });
  t.equal((await s.call('GET', `/public/meetings/${m3.id}`)).body.data.status, 'SCHEDULED', 'it did not start');
  t.match((await s.exchange(m1.id, student.id)).body.data, { mediaToken: /./ }, 'joining a meeting already live is not limited');

  h1.ws.send(JSON.stringify({ type: 'end' }));
  await h1.waitClosed();
  await s.enter(m3.id, s.teacher.id, 'HOST');
  t.equal((await s.call('GET', `/public/meetings/${m3.id}`)).body.data.status, 'LIVE', 'one ended: the third starts');
});
