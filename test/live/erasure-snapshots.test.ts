import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { connect, eventually, type RoomClient } from '../helpers/ws.ts';
import { actorRows } from '../helpers/actor-state.ts';

// DELETE /users/me and the meeting actors: a person's name leaves every snapshot of their organization's
// meetings that still holds it (a live room's, in the actor's memory too, and an ended meeting's), and every
// delta row of those actors, whether or not they are in the room when they delete their account. Their
// named answers and questions keep counting, as "Deleted user".
const T0 = Date.parse('2026-11-07T09:00:00Z');
const MIN = 60_000;
const clock = new ManualClock(T0);
const node = await startTestNode(t, { clock });
const sql = node.app.sql;

/**
 * The meeting actor as Postgres holds it: `text`, its snapshot row and every delta row after it, as they
 * are stored (a name in a delta is as kept as one in the snapshot); `context`, the state they replay to.
 */
async function snapshotOf(meetingId: string): Promise<{ text: string; context: any }> {
  const { state, text } = await actorRows(sql, `meeting:${meetingId}`);
  return { text, context: state.context };
}

async function school() {
  const { tenant, call, user, events } = await newSchool(node);
  const teacher = await user('t-1', 'Tina Teacher', 'TEACHER');
  const meeting = (await call('POST', '/public/meetings', { title: 'History', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60 })).body.data;
  const enter = async (userId: string, role = 'PARTICIPANT'): Promise<{ ws: RoomClient; joined: any; accessToken: string }> => {
    const link = (await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId, role })).body.data;
    const r = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${userId}-${Math.random()}` } });
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    const ws = await connect(t, r.body.data.mediaUrl, r.body.data.mediaToken);
    return { ws, joined: await ws.type('joined'), accessToken: r.body.data.accessToken };
  };
  const student = (externalId: string, name: string) => user(externalId, name, 'STUDENT', { email: `${externalId}@school.example` });
  return { tenant, call, teacher, meeting, enter, student, events };
}

t.test('a live room: the name leaves its snapshot and its actor, for someone in the room and for someone who left it', async (t) => {
  const s = await school();
  const host = (await s.enter(s.teacher.id, 'HOST')).ws;
  const amy = await s.student('s-amy', 'Amy Adams');
  const ben = await s.student('s-ben', 'Ben Bell');
  const amyIn = await s.enter(amy.id);
  const benIn = await s.enter(ben.id);

  const { poll } = await host.command({ type: 'open-poll', question: 'When did the war end?', pollType: 'SINGLE_CHOICE', options: ['1918', '1945'], correct: [0] });
  t.match(await amyIn.ws.command({ type: 'answer-poll', pollId: poll.pollId, choices: [0] }), { ok: true });
  t.match(await benIn.ws.command({ type: 'answer-poll', pollId: poll.pollId, choices: [1] }), { ok: true });
  const amyAsks = await amyIn.ws.command({ type: 'ask-question', text: 'Which treaty ended it?' });
  const benAsks = await benIn.ws.command({ type: 'ask-question', text: 'Who signed it?' });
  t.match(await benIn.ws.command({ type: 'leave' }), { ok: true }, 'Ben leaves the room; his question and answer stay');
  const before = await snapshotOf(s.meeting.id);
  t.ok(before.text.includes('Amy Adams') && before.text.includes('Ben Bell'), 'the snapshot names them before');

  // Amy deletes her account from the room, Ben after he left it (no socket of his is anywhere)
  t.equal((await api(node, 'DELETE', '/users/me', { bearer: amyIn.accessToken })).status, 200);
  t.equal((await amyIn.ws.waitClosed()).code, 4003, 'Amy is out of the room');
  t.equal((await api(node, 'DELETE', '/users/me', { bearer: benIn.accessToken })).status, 200);
  await node.app.timers.tick();
  const amyLeft = await eventually(async () => {
    const left = (await s.events('participant.left')).filter((d) => d.user.id === amy.id);
    return left.length ? left : null;
  });
  t.match(amyLeft, [{ user: { name: 'Deleted user', email: null } }], 'her leaving the room is told without her name (the deactivation may reach the room before the erase timer)');

  const after = await snapshotOf(s.meeting.id);
  for (const trace of ['Amy Adams', 'Ben Bell', 's-amy@school.example', 's-ben@school.example']) t.notOk(after.text.includes(trace), `the snapshot and its deltas hold no ${trace}`);
  t.notOk(JSON.stringify(after.context.participants).includes(amy.id), 'Amy is no participant');
  t.match(after.context.questions, [{ questionId: amyAsks.question.questionId, askedBy: { user: { id: amy.id, name: 'Deleted user' } } }, { questionId: benAsks.question.questionId, askedBy: { user: { id: ben.id, name: 'Deleted user' } } }]);

  // the actor's memory was scrubbed too: its next transitions write no name back, and the room shows none
  t.match(await host.command({ type: 'raise-hand' }), { ok: true });
  const cal = await s.enter((await s.student('s-cal', 'Cal Cole')).id);
  t.match(cal.joined.classroom.questions, [
    { questionId: amyAsks.question.questionId, askedBy: { name: 'Deleted user' } },
    { questionId: benAsks.question.questionId, askedBy: { name: 'Deleted user' } },
  ]);
  const later = await snapshotOf(s.meeting.id);
  for (const trace of ['Amy Adams', 'Ben Bell']) t.notOk(later.text.includes(trace), `still no ${trace} after the actor's next changes`);

  // their answers count, without their names
  t.match(await host.command({ type: 'close-poll', pollId: poll.pollId }), { ok: true });
  const [closed] = await s.events('poll.closed');
  t.match(closed.responses, [
    { user: { id: amy.id, externalId: 's-amy', name: 'Deleted user' }, choices: [0], correct: true },
    { user: { id: ben.id, externalId: 's-ben', name: 'Deleted user' }, choices: [1], correct: false },
  ]);
  t.notOk(JSON.stringify(closed).match(/Amy|Ben/), 'poll.closed names neither');
  t.match((await s.call('GET', `/public/meetings/${s.meeting.id}/questions`)).body.data.questions, [{ askedBy: { id: amy.id, name: 'Deleted user' } }, { askedBy: { id: ben.id, name: 'Deleted user' } }]);
});

t.test('an ended meeting: nothing of the person is left in its snapshot', async (t) => {
  const s = await school();
  const host = (await s.enter(s.teacher.id, 'HOST')).ws;
  const dan = await s.student('s-dan', 'Dan Dune');
  const danIn = await s.enter(dan.id);
  const { poll } = await host.command({ type: 'open-poll', question: 'Was it useful?', pollType: 'YES_NO' });
  t.match(await danIn.ws.command({ type: 'answer-poll', pollId: poll.pollId, choices: [0] }), { ok: true });
  t.match(await danIn.ws.command({ type: 'ask-question', text: 'Are the slides online?' }), { ok: true });
  clock.advance(20 * MIN);
  t.match(await host.command({ type: 'end' }), { ok: true });

  t.equal((await api(node, 'DELETE', '/users/me', { bearer: danIn.accessToken })).status, 200);
  await node.app.timers.tick();
  const ended = await snapshotOf(s.meeting.id);
  t.equal(ended.context.status, 'ENDED');
  for (const trace of ['Dan Dune', 's-dan@school.example', dan.id]) t.notOk(ended.text.includes(trace), `the snapshot and its deltas hold no ${trace}`);
  t.match((await s.call('GET', `/public/meetings/${s.meeting.id}/polls`)).body.data.polls, [{ responses: [{ user: { id: dan.id, name: 'Deleted user' }, choices: [0] }] }]);
});
