import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { connect, type RoomClient } from '../helpers/ws.ts';
import { actorRows } from '../helpers/actor-state.ts';

// Polls, quizzes and Q&A through the real room: a host opens and closes, students answer, ask and upvote
// over the room socket; the meeting actor decides; poll.closed and question.answered are written with the
// change; the public API reads it all back.
const T0 = Date.parse('2026-11-05T09:00:00Z');
const clock = new ManualClock(T0);
const node = await startTestNode(t, { clock });
const sql = node.app.sql;
const MIN = 60_000;

/** The meeting actor's state as Postgres holds it (its snapshot with the deltas after it), as text to search. */
async function snapshotText(meetingId: string): Promise<string> {
  return JSON.stringify((await actorRows(sql, `meeting:${meetingId}`)).state);
}

async function school() {
  const { tenant, call, user, events } = await newSchool(node);
  const teacher = await user('t-1', 'Tina Teacher', 'TEACHER');
  const meeting = (await call('POST', '/public/meetings', { title: 'Biology', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60 })).body.data;
  const enter = async (userId: string, role = 'PARTICIPANT'): Promise<{ ws: RoomClient; joined: any }> => {
    const link = (await call('POST', `/public/meetings/${meeting.id}/join-links`, { userId, role })).body.data;
    const r = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${userId}-${Math.random()}` } });
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    const ws = await connect(t, r.body.data.mediaUrl, r.body.data.mediaToken);
    return { ws, joined: await ws.type('joined') };
  };
  return { tenant, call, user, teacher, meeting, enter, events };
}

t.test('a quiz: hosts open it and see answers live, students answer once, closing grades and shares it, poll.closed and the API carry every answer', async (t) => {
  const s = await school();
  const host = (await s.enter(s.teacher.id, 'HOST')).ws;
  const [amy, ben, cal] = [await s.user('s-amy', 'Amy Adams'), await s.user('s-ben', 'Ben Bell'), await s.user('s-cal', 'Cal Cole')];
  const amyWs = (await s.enter(amy.id)).ws;
  const benWs = (await s.enter(ben.id)).ws;
  const calWs = (await s.enter(cal.id)).ws;

  const draft = { question: 'Which organelle makes ATP?', pollType: 'SINGLE_CHOICE', options: ['Nucleus', 'Mitochondrion', 'Ribosome'], correct: [1] };
  t.match(await amyWs.command({ type: 'open-poll', ...draft }), { ok: false, error: { code: 'forbidden' } }, 'a student cannot open a poll');
  t.match(await host.command({ type: 'open-poll', question: 'Q', pollType: 'SINGLE_CHOICE', options: ['Only one'] }), { ok: false, error: { code: 'validation_failed', details: { fields: [{ field: 'options' }] } } });
  t.match(await host.command({ type: 'open-poll', question: 'Q', pollType: 'FREE_TEXT', correct: [0] }), { ok: false, error: { code: 'validation_failed', details: { fields: [{ field: 'correct' }] } } }, 'free text cannot be a quiz');
  t.match(await host.command({ type: 'open-poll', question: 'Q', pollType: 'SINGLE_CHOICE', options: ['A', 'B'], correct: [0, 1] }), { ok: false, error: { code: 'validation_failed' } }, 'one correct option for single choice');

  const opened = await host.command({ type: 'open-poll', ...draft });
  t.match(opened, { ok: true, poll: { question: draft.question, type: 'SINGLE_CHOICE', quiz: true, status: 'OPEN', options: draft.options, correct: null } });
  const pollId = opened.poll.pollId;
  t.match(pollId, /^pol_/);
  const seen = await amyWs.type('poll');
  t.match(seen.poll, { pollId, status: 'OPEN', correct: null }, 'students see the question, not the answer');
  t.match(await host.command({ type: 'open-poll', question: 'Another', pollType: 'YES_NO' }), { ok: false, error: { code: 'invalid_state', details: { pollId } } }, 'one open poll at a time');

  t.match(await host.command({ type: 'answer-poll', pollId, choices: [1] }), { ok: false, error: { code: 'forbidden' } }, 'hosts do not answer');
  t.match(await amyWs.command({ type: 'answer-poll', pollId, choices: [5] }), { ok: false, error: { code: 'validation_failed' } });
  t.match(await amyWs.command({ type: 'answer-poll', pollId, choices: [0, 1] }), { ok: false, error: { code: 'validation_failed' } }, 'single choice takes one');
  t.match(await amyWs.command({ type: 'answer-poll', pollId, choices: [1] }), { ok: true });
  t.match(await amyWs.command({ type: 'answer-poll', pollId, choices: [0] }), { ok: false, error: { code: 'invalid_state' } }, 'one answer each');
  t.match(await benWs.command({ type: 'answer-poll', pollId, choices: [0] }), { ok: true });
  const live = await host.next((m) => m.type === 'poll-results' && m.results.answered === 2);
  t.same(live.results.votes, [1, 1, 0], 'hosts see the votes as they come');
  t.notOk(amyWs.messages.some((m) => m.type === 'poll-results'), 'students do not, while it is open');

  // the actor dropped from memory and rebuilt from its snapshot still knows who answered
  t.ok(node.app.actors.passivateIdle(0) >= 1);
  t.match(await benWs.command({ type: 'answer-poll', pollId, choices: [1] }), { ok: false, error: { code: 'invalid_state' } }, 'after passivation too');
  // someone who rejoins sees the open poll and that they answered it
  const amyAgain = await s.enter(amy.id);
  t.match(amyAgain.joined.classroom, { polls: [{ pollId, status: 'OPEN' }], answeredPolls: [pollId], pollResults: [] });

  t.match(await amyWs.command({ type: 'close-poll', pollId }), { ok: false, error: { code: 'forbidden' } });
  const closed = await host.command({ type: 'close-poll', pollId, share: true });
  t.match(closed, { ok: true, poll: { status: 'CLOSED', shared: true, correct: [1] }, results: { answered: 2, votes: [1, 1, 0], correct: [1] } });
  t.match((await calWs.next((m) => m.type === 'poll' && m.poll.status === 'CLOSED')).poll, { correct: [1], shared: true }, 'everyone learns the answer');
  t.match((await calWs.type('poll-results')).results, { votes: [1, 1, 0] }, 'and sees the shared results');
  t.match(await calWs.command({ type: 'answer-poll', pollId, choices: [1] }), { ok: false, error: { code: 'invalid_state' } }, 'too late');

  const [event] = await s.events('poll.closed');
  t.match(event, {
    pollId,
    meetingId: s.meeting.id,
    question: draft.question,
    type: 'SINGLE_CHOICE',
    anonymous: false,
    quiz: true,
    options: [
      { index: 0, text: 'Nucleus', votes: 1, correct: false },
      { index: 1, text: 'Mitochondrion', votes: 1, correct: true },
      { index: 2, text: 'Ribosome', votes: 0, correct: false },
    ],
    answered: 2,
    closedBy: s.teacher.id,
    createdBy: s.teacher.id,
  });
  t.match(
    event.responses.map((r: any) => [r.user.externalId, r.choices, r.correct]),
    [['s-amy', [1], true], ['s-ben', [0], false]],
    'each response names its person and is graded',
  );

  const listed = await s.call('GET', `/public/meetings/${s.meeting.id}/polls`);
  t.equal(listed.status, 200);
  t.match(listed.body.data.polls[0], { pollId, status: 'CLOSED', answered: 2, options: [{ votes: 1 }, { votes: 1, correct: true }, { votes: 0 }] });
  t.match(listed.body.data.quizScores, [
    { user: { externalId: 's-amy', name: 'Amy Adams' }, quizzes: 1, answered: 1, correct: 1 },
    { user: { externalId: 's-ben' }, quizzes: 1, answered: 1, correct: 0 },
  ]);
  t.equal(listed.body.data.quizScores.length, 2, 'Cal answered nothing: no score');
});

t.test('an anonymous free-text poll: listed without results while open, no names anywhere, closed by the meeting ending', async (t) => {
  const s = await school();
  const host = (await s.enter(s.teacher.id, 'HOST')).ws;
  const amy = await s.user('s-amy', 'Amy Adams');
  const amyWs = (await s.enter(amy.id)).ws;
  const { poll } = await host.command({ type: 'open-poll', question: 'What was unclear today?', pollType: 'FREE_TEXT', anonymous: true });
  t.match(await amyWs.command({ type: 'answer-poll', pollId: poll.pollId, choices: [0] }), { ok: false, error: { code: 'validation_failed' } }, 'free text takes text');
  t.match(await amyWs.command({ type: 'answer-poll', pollId: poll.pollId, text: '  Osmosis  ' }), { ok: true });
  t.match((await host.next((m) => m.type === 'poll-results' && m.results.answered === 1)).results, { texts: ['Osmosis'], votes: [] });

  const open = await s.call('GET', `/public/meetings/${s.meeting.id}/polls`);
  t.match(open.body.data.polls, [{ pollId: poll.pollId, status: 'OPEN', answered: null, responses: [] }], 'open: no results yet');

  t.match(await host.command({ type: 'end' }), { ok: true });
  const [event] = await s.events('poll.closed');
  t.match(event, { pollId: poll.pollId, anonymous: true, quiz: false, closedBy: null, answered: 1, responses: [{ user: null, text: 'Osmosis', choices: [] }] });
  t.notOk('correct' in event.responses[0], 'a poll is not graded');
  const listed = await s.call('GET', `/public/meetings/${s.meeting.id}/polls`);
  t.match(listed.body.data.polls, [{ status: 'CLOSED', closedBy: null, responses: [{ user: null, text: 'Osmosis' }] }]);
  t.same(listed.body.data.quizScores, []);
  const [stored] = await sql`select count(*)::int as n from poll_responses where poll_id = ${poll.pollId} and user_id is not null`;
  t.equal(stored!.n, 0, 'an anonymous poll stores no one');
});

t.test('Q&A: students ask (anonymously or not) and upvote, hosts answer in text or live, or dismiss; question.answered and the API', async (t) => {
  const s = await school();
  const host = (await s.enter(s.teacher.id, 'HOST')).ws;
  const [amy, ben] = [await s.user('s-amy', 'Amy Adams'), await s.user('s-ben', 'Ben Bell')];
  const amyWs = (await s.enter(amy.id)).ws;
  const benWs = (await s.enter(ben.id)).ws;

  const named = await amyWs.command({ type: 'ask-question', text: 'Is the exam open book?' });
  t.match(named, { ok: true, question: { text: 'Is the exam open book?', anonymous: false, askedBy: { name: 'Amy Adams' }, upvotes: 0, status: 'OPEN' } });
  const anon = await amyWs.command({ type: 'ask-question', text: 'Can we have more examples?', anonymous: true });
  t.match(anon.question, { anonymous: true, askedBy: null });
  const heard = await benWs.next((m) => m.type === 'question' && m.question.questionId === anon.question.questionId);
  t.equal(heard.question.askedBy, null, 'nobody learns who asked an anonymous question');

  t.match(await amyWs.command({ type: 'upvote-question', questionId: anon.question.questionId }), { ok: false, error: { code: 'forbidden' } }, 'not your own');
  t.match(await benWs.command({ type: 'upvote-question', questionId: anon.question.questionId }), { ok: true, upvotes: 1 });
  t.match(await benWs.command({ type: 'upvote-question', questionId: anon.question.questionId }), { ok: true, upvotes: 1 }, 'once each');
  t.match(await host.next((m) => m.type === 'question-upvotes'), { questionId: anon.question.questionId, upvotes: 1 });

  const benAgain = await s.enter(ben.id);
  t.match(benAgain.joined.classroom, { upvotedQuestions: [anon.question.questionId], ownQuestions: [] });
  t.equal(benAgain.joined.classroom.questions.length, 2);

  t.match(await benWs.command({ type: 'answer-question', questionId: named.question.questionId, answer: 'Yes' }), { ok: false, error: { code: 'forbidden' } });
  t.match(await host.command({ type: 'answer-question', questionId: named.question.questionId, answer: 'Yes, one sheet of notes.' }), { ok: true, question: { status: 'ANSWERED', answer: 'Yes, one sheet of notes.', answeredLive: false } });
  t.match(await host.command({ type: 'answer-question', questionId: anon.question.questionId }), { ok: true, question: { status: 'ANSWERED', answer: null, answeredLive: true } });
  t.match(await host.command({ type: 'answer-question', questionId: anon.question.questionId }), { ok: false, error: { code: 'invalid_state' } }, 'answered once');
  t.match(await benWs.command({ type: 'upvote-question', questionId: named.question.questionId }), { ok: false, error: { code: 'invalid_state' } }, 'no upvotes once answered');

  const third = await benWs.command({ type: 'ask-question', text: 'Off topic: lunch?' });
  t.match(await host.command({ type: 'dismiss-question', questionId: third.question.questionId }), { ok: true });
  t.match(await amyWs.next((m) => m.type === 'question-dismissed'), { questionId: third.question.questionId }, 'it leaves the room');
  t.match(await host.command({ type: 'answer-question', questionId: third.question.questionId, answer: 'x' }), { ok: false, error: { code: 'not_found' } });

  const answered = await s.events('question.answered');
  t.equal(answered.length, 2, 'one event per answer');
  t.match(answered[0], { questionId: named.question.questionId, meetingId: s.meeting.id, text: 'Is the exam open book?', askedBy: amy.id, answeredBy: s.teacher.id, answer: 'Yes, one sheet of notes.', answeredLive: false, upvotes: 0 });
  t.match(answered[1], { questionId: anon.question.questionId, askedBy: null, answer: null, answeredLive: true, upvotes: 1 });

  const listed = await s.call('GET', `/public/meetings/${s.meeting.id}/questions`);
  t.equal(listed.status, 200);
  t.match(listed.body.data.questions, [
    { questionId: named.question.questionId, askedBy: { externalId: 's-amy' }, status: 'ANSWERED', answer: 'Yes, one sheet of notes.' },
    { questionId: anon.question.questionId, askedBy: null, anonymous: true, status: 'ANSWERED', answeredLive: true, upvotes: 1 },
    { questionId: third.question.questionId, status: 'DISMISSED', answeredBy: s.teacher.id },
  ]);
  const [stored] = await sql`select asked_by from questions where id = ${anon.question.questionId}`;
  t.equal(stored!.askedBy, null, 'an anonymous question stores no asker');
  t.equal((await s.call('GET', '/public/meetings/mtg_00000000000000000000000000/questions')).status, 404);
});

t.test('an anonymous poll and an anonymous question keep no one: not in the snapshot, the tables or poll.closed; a second vote and upvoting one\'s own are still refused', async (t) => {
  const s = await school();
  const host = (await s.enter(s.teacher.id, 'HOST')).ws;
  const [amy, ben] = [await s.user('s-amy', 'Amy Adams'), await s.user('s-ben', 'Ben Bell')];
  const amyWs = (await s.enter(amy.id)).ws;
  const benWs = (await s.enter(ben.id)).ws;

  const { poll } = await host.command({ type: 'open-poll', question: 'Did the lab make sense?', pollType: 'MULTIPLE_CHOICE', options: ['Yes', 'Partly', 'No'], anonymous: true });
  clock.advance(MIN);
  t.match(await amyWs.command({ type: 'answer-poll', pollId: poll.pollId, choices: [2] }), { ok: true });
  clock.advance(MIN);
  t.match(await benWs.command({ type: 'answer-poll', pollId: poll.pollId, choices: [1, 0] }), { ok: true });
  t.match(await amyWs.command({ type: 'answer-poll', pollId: poll.pollId, choices: [0] }), { ok: false, error: { code: 'invalid_state' } }, 'one answer each');
  const { question } = await amyWs.command({ type: 'ask-question', text: 'Can we redo the titration?', anonymous: true });
  t.match(await amyWs.command({ type: 'upvote-question', questionId: question.questionId }), { ok: false, error: { code: 'forbidden' } }, 'not one\'s own');
  t.match(await benWs.command({ type: 'upvote-question', questionId: question.questionId }), { ok: true, upvotes: 1 });

  // while they are in the room they are its participants; what they answered and asked names no one
  const { context: live } = (await actorRows(sql, `meeting:${s.meeting.id}`)).state;
  const items = JSON.stringify([live.polls, live.questions]);
  for (const trace of [amy.id, ben.id, 'Amy Adams', 'Ben Bell', 's-amy', 's-ben']) t.notOk(items.includes(trace), `the open poll and the question hold no ${trace}`);
  t.match(await amyWs.command({ type: 'leave' }), { ok: true });
  t.match(await benWs.command({ type: 'leave' }), { ok: true });
  const stored = await snapshotText(s.meeting.id);
  t.ok(stored.includes(question.questionId) && stored.includes(poll.pollId), 'the snapshot holds the poll and the question');
  for (const trace of [amy.id, ben.id, 'Amy Adams', 'Ben Bell', 's-amy', 's-ben']) t.notOk(stored.includes(trace), `once they left, the snapshot holds no ${trace}`);

  // rebuilt from that snapshot, the actor still knows Amy's answer and question as hers, and no one else's
  t.ok(node.app.actors.passivateIdle(0) >= 1);
  const amyBack = await s.enter(amy.id);
  t.match(amyBack.joined.classroom, { answeredPolls: [poll.pollId], ownQuestions: [question.questionId], upvotedQuestions: [] });
  t.match(await amyBack.ws.command({ type: 'answer-poll', pollId: poll.pollId, choices: [1] }), { ok: false, error: { code: 'invalid_state' } }, 'a second vote after rejoining');
  t.match(await amyBack.ws.command({ type: 'upvote-question', questionId: question.questionId }), { ok: false, error: { code: 'forbidden' } }, 'her own question after rejoining');
  const benBack = await s.enter(ben.id);
  t.match(benBack.joined.classroom, { answeredPolls: [poll.pollId], ownQuestions: [], upvotedQuestions: [question.questionId] });
  const cal = await s.enter((await s.user('s-cal', 'Cal Cole')).id);
  t.match(cal.joined.classroom, { answeredPolls: [], ownQuestions: [], upvotedQuestions: [] });
  t.equal(cal.joined.classroom.questions[0].askedBy, null);

  clock.advance(MIN);
  t.match(await host.command({ type: 'close-poll', pollId: poll.pollId }), { ok: true });
  const [event] = await s.events('poll.closed');
  const closedAt = new Date(clock.now()).toISOString();
  t.equal(event.closedAt, closedAt);
  t.strictSame(
    event.responses,
    [
      { user: null, choices: [0, 1], text: null, respondedAt: closedAt },
      { user: null, choices: [2], text: null, respondedAt: closedAt },
    ],
    'responses in the order of their content, not of their arrival, and no time of their own',
  );
  const listed = await s.call('GET', `/public/meetings/${s.meeting.id}/polls`);
  t.strictSame(listed.body.data.polls[0].responses, event.responses, 'the API shows the same');
  const rows = await sql<{ seq: number; userId: string | null; respondedAt: Date }[]>`select seq, user_id, responded_at from poll_responses where poll_id = ${poll.pollId} order by seq`;
  t.same(rows.map((r) => [r.seq, r.userId, r.respondedAt.toISOString()]), [[0, null, closedAt], [1, null, closedAt]], 'stored without a person, an order or a time');

  t.match(await host.command({ type: 'answer-question', questionId: question.questionId, answer: 'Next week.' }), { ok: true });
  const [answered] = await s.events('question.answered');
  t.match(answered, { questionId: question.questionId, anonymous: true, askedBy: null, upvotes: 1 });
  const [asked] = await sql`select asked_by from questions where id = ${question.questionId}`;
  t.equal(asked!.askedBy, null);
});

t.test('an ended meeting\'s snapshot keeps no one: polls and questions are in their tables, attendance still settles', async (t) => {
  const s = await school();
  const host = (await s.enter(s.teacher.id, 'HOST')).ws;
  const amy = await s.user('s-amy', 'Amy Adams');
  const amyWs = (await s.enter(amy.id)).ws;
  const { poll } = await host.command({ type: 'open-poll', question: '2 + 2?', pollType: 'SINGLE_CHOICE', options: ['3', '4'], correct: [1] });
  t.match(await amyWs.command({ type: 'answer-poll', pollId: poll.pollId, choices: [1] }), { ok: true });
  t.match(await host.command({ type: 'close-poll', pollId: poll.pollId }), { ok: true });
  const second = await host.command({ type: 'open-poll', question: 'Ready?', pollType: 'YES_NO' });
  t.match(await amyWs.command({ type: 'answer-poll', pollId: second.poll.pollId, choices: [0] }), { ok: true });
  const named = await amyWs.command({ type: 'ask-question', text: 'Is there homework?' });
  const anon = await amyWs.command({ type: 'ask-question', text: 'Can you slow down?', anonymous: true });
  t.match(await host.command({ type: 'upvote-question', questionId: anon.question.questionId }), { ok: true });

  clock.advance(10 * MIN);
  t.match(await host.command({ type: 'end' }), { ok: true });
  const row = await actorRows(sql, `meeting:${s.meeting.id}`);
  const context = row.state.context;
  t.equal(context.status, 'ENDED');
  t.same([context.polls ?? [], context.questions ?? [], context.participants], [[], [], {}], 'no polls, questions or people left in it');
  // the end wrote the whole state and dropped the deltas: nothing from before it is in any row
  for (const trace of [amy.id, 'Amy Adams', 's-amy', 'Is there homework?', 'Ready?']) t.notOk(row.text.includes(trace), `the snapshot and its deltas hold no ${trace}`);

  // everything is in the tables
  const polls = (await s.call('GET', `/public/meetings/${s.meeting.id}/polls`)).body.data.polls;
  t.match(polls, [
    { pollId: poll.pollId, status: 'CLOSED', responses: [{ user: { id: amy.id, name: 'Amy Adams' }, choices: [1], correct: true }] },
    { pollId: second.poll.pollId, status: 'CLOSED', closedBy: null, responses: [{ user: { id: amy.id }, choices: [0] }] },
  ]);
  t.match((await s.call('GET', `/public/meetings/${s.meeting.id}/questions`)).body.data.questions, [
    { questionId: named.question.questionId, askedBy: { id: amy.id, name: 'Amy Adams' }, status: 'OPEN' },
    { questionId: anon.question.questionId, askedBy: null, upvotes: 1 },
  ]);

  // what the ended actor still does: settle attendance, once, when its window has passed
  clock.advance(5 * MIN);
  await node.app.timers.tick();
  const finalized = await s.events('attendance.finalized');
  t.equal(finalized.length, 1, 'attendance.finalized after the settle window');
  t.equal((await s.call('GET', `/public/meetings/${s.meeting.id}/attendance`)).body.data.status, 'FINAL');
});

t.test('rate limits: one student cannot flood the class with questions or hands', async (t) => {
  const s = await school();
  await s.enter(s.teacher.id, 'HOST');
  const amyWs = (await s.enter((await s.user('s-amy', 'Amy Adams')).id)).ws;
  for (let i = 0; i < 3; i++) t.match(await amyWs.command({ type: 'ask-question', text: `Question ${i}` }), { ok: true });
  const refused = await amyWs.command({ type: 'ask-question', text: 'One more' });
  t.match(refused, { ok: false, error: { code: 'command_rate_limited', details: { limit: 'ask-question' } } });
  t.ok(refused.error.details.retryAfterSeconds > 0);
  const hands = [];
  for (let i = 0; i < 5; i++) hands.push(await amyWs.command({ type: i % 2 ? 'lower-hand' : 'raise-hand' }));
  t.same(hands.map((h) => h.ok), [true, true, true, true, false], 'raising and lowering share one budget');
  t.match(hands[4], { error: { code: 'command_rate_limited', details: { limit: 'hand' } } });
  t.match(await amyWs.command({ type: 'ping' }), { ok: true }, 'the socket itself is fine');
});
