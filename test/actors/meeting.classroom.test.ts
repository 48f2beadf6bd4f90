import fc from 'fast-check';
import t from 'tap';
import { answerProblem, draftProblem, isCorrect, pollOptions, POLL_LIMITS, POLL_TYPES } from '../../src/core/classroom.ts';
import { byContent, classroomState, classroomStep, eraseFromClassroom, questionAnsweredData, respondedAt, voterFor } from '../../actors/meeting/meeting.classroom.ts';
import { meetingEvent, meetingInput } from '../../actors/meeting/meeting.schemas.ts';
import type { MeetingContext, Participant, PollClosedData } from '../../actors/meeting/meeting.types.ts';
import { initialMeetingContext } from '../../actors/meeting/meeting.views.ts';
import { voterHash } from '../../src/services/polls.ts';

// The rules of polls and quizzes, as pure functions: what a host may draft, what an answer may be, and grading;
// and who polls and Q&A keep: voter keys, anonymous items, erasure.

t.test('drafts: option counts per type, distinct options, quizzes only where answers can be graded', async (t) => {
  t.same(pollOptions('YES_NO', ['ignored']), ['Yes', 'No']);
  t.same(pollOptions('TRUE_FALSE', []), ['True', 'False']);
  t.same(pollOptions('FREE_TEXT', ['x']), []);
  t.equal(draftProblem({ type: 'SINGLE_CHOICE', options: ['A'], correct: [] })?.field, 'options');
  t.equal(draftProblem({ type: 'MULTIPLE_CHOICE', options: Array.from({ length: POLL_LIMITS.maxOptions + 1 }, (_, i) => `o${i}`), correct: [] })?.field, 'options');
  t.equal(draftProblem({ type: 'SINGLE_CHOICE', options: ['Same', ' same '], correct: [] })?.field, 'options', 'options must differ');
  t.equal(draftProblem({ type: 'FREE_TEXT', options: ['A'], correct: [] })?.field, 'options');
  t.equal(draftProblem({ type: 'FREE_TEXT', options: [], correct: [0] })?.field, 'correct');
  t.equal(draftProblem({ type: 'YES_NO', options: [], correct: [0, 1] })?.field, 'correct', 'one correct option for a yes/no quiz');
  t.equal(draftProblem({ type: 'SINGLE_CHOICE', options: ['A', 'B'], correct: [2] })?.field, 'correct', 'an index past the options');
  t.equal(draftProblem({ type: 'MULTIPLE_CHOICE', options: ['A', 'B', 'C'], correct: [0, 0] })?.field, 'correct', 'each once');
  t.equal(draftProblem({ type: 'MULTIPLE_CHOICE', options: ['A', 'B', 'C'], correct: [0, 2] }), null);
  t.equal(draftProblem({ type: 'TRUE_FALSE', options: [], correct: [1] }), null);
  t.equal(draftProblem({ type: 'FREE_TEXT', options: [], correct: [] }), null);
});

t.test('answers: choices within the options, one for the one-answer types, text only for free text', async (t) => {
  const single = { type: 'SINGLE_CHOICE' as const, options: ['A', 'B', 'C'] };
  const multi = { type: 'MULTIPLE_CHOICE' as const, options: ['A', 'B', 'C'] };
  const free = { type: 'FREE_TEXT' as const, options: [] };
  t.equal(answerProblem(single, [1], null), null);
  t.ok(answerProblem(single, [0, 1], null));
  t.ok(answerProblem(single, [], null));
  t.ok(answerProblem(single, [3], null));
  t.ok(answerProblem(single, [1], 'text'));
  t.equal(answerProblem(multi, [0, 2], null), null);
  t.ok(answerProblem(multi, [2, 2], null));
  t.ok(answerProblem(multi, [], null));
  t.equal(answerProblem(free, [], 'An answer'), null);
  t.ok(answerProblem(free, [], '   '));
  t.ok(answerProblem(free, [0], 'x'));
  t.ok(answerProblem(free, [], 'x'.repeat(POLL_LIMITS.answerChars + 1)));
});

t.test('grading: correct exactly when the chosen set is the correct set; polls are not graded', async (t) => {
  t.equal(isCorrect([], [0]), null);
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1 }), fc.uniqueArray(fc.integer({ min: 0, max: 9 })), (correct, chosen) => {
      const same = correct.length === chosen.length && [...correct].sort().join() === [...chosen].sort().join();
      return isCorrect(correct, chosen) === same;
    }),
  );
  fc.assert(
    fc.property(fc.constantFrom(...POLL_TYPES), fc.array(fc.string({ minLength: 1, maxLength: 5 }), { maxLength: 12 }), (type, options) => {
      // every draft the rules accept yields options an answer can name
      const problem = draftProblem({ type, options, correct: [] });
      if (problem) return true;
      const made = pollOptions(type, options);
      return type === 'FREE_TEXT' ? made.length === 0 : made.length >= 2 && answerProblem({ type, options: made }, [0], null) === null;
    }),
  );
  t.pass('checked');
});

// ---- who polls and Q&A keep (actors/meeting/meeting.classroom.ts), as pure steps over a context ------

const T0 = Date.parse('2026-01-05T09:00:00Z');
const person = (id: string, name: string) => ({ id, externalId: `ext-${id}`, name, email: `${id}@school.example`, role: 'STUDENT' as const });
const key = (id: string) => voterHash(Buffer.alloc(32, 7), 'mtg_1', id);

/** A live room's context: a host and three students. */
function context(): MeetingContext {
  const c = initialMeetingContext(
    meetingInput.parse({
      meetingId: 'mtg_1', orgId: 'org_1', externalMeetingId: null, kind: 'MEETING', title: 'T', type: 'MEETING', slug: 's', hostUserId: 'usr_host',
      classId: null, externalClassId: null, courseId: null, batchId: null, scheduledStart: new Date(T0).toISOString(), scheduledEnd: new Date(T0 + 3_600_000).toISOString(),
      settings: { muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, recordAutomatically: false, waitingRoom: false }, planMaxMinutes: 60, status: 'LIVE', startedAt: new Date(T0).toISOString(),
    }),
  );
  const p = (id: string, user: ReturnType<typeof person>, roomRole: 'HOST' | 'PARTICIPANT'): [string, Participant] =>
    [id, { participantId: id, sessionId: `ses_${id}`, user, roomRole, device: 'web', joinedAt: T0, connections: ['c'], disconnectedAt: null, micLocked: false, floor: false, askedToUnmute: false, enteredMuted: false }];
  c.participants = Object.fromEntries([p('par_host', person('usr_host', 'Hana Host'), 'HOST'), p('par_a', person('usr_a', 'Ann'), 'PARTICIPANT'), p('par_b', person('usr_b', 'Bo'), 'PARTICIPANT'), p('par_c', person('usr_c', 'Cy'), 'PARTICIPANT')]);
  return c;
}
const step = (c: MeetingContext, e: Record<string, unknown>) => {
  const out = classroomStep(c, meetingEvent.parse({ at: T0, ...e }) as Parameters<typeof classroomStep>[1]);
  if ('refuse' in out) return { refused: out.refuse.code };
  if (out.polls) c.polls = out.polls;
  if (out.questions) c.questions = out.questions;
  return out;
};

t.test('voter keys: one per person and meeting, 128 bits, nothing to compute without the key', async (t) => {
  const k = Buffer.alloc(32, 1);
  t.equal(voterHash(k, 'mtg_1', 'usr_a'), voterHash(k, 'mtg_1', 'usr_a'), 'the same person, the same key, whatever their session');
  t.match(voterHash(k, 'mtg_1', 'usr_a'), /^[A-Za-z0-9_-]{22}$/);
  t.not(voterHash(k, 'mtg_1', 'usr_a'), voterHash(k, 'mtg_1', 'usr_b'));
  t.not(voterHash(k, 'mtg_1', 'usr_a'), voterHash(k, 'mtg_2', 'usr_a'), 'another meeting: unlinkable');
  t.not(voterHash(k, 'mtg_1', 'usr_a'), voterHash(Buffer.alloc(32, 2), 'mtg_1', 'usr_a'), 'another server secret: another key');
  t.not(voterHash(k, 'mtg_1\nusr', '_a'), voterHash(k, 'mtg_1', 'usr\n_a'.replace('\n', '')), 'the parts do not run into each other');
});

t.test('an anonymous poll keeps its answers by content whatever the order they came in: no person, no time', async (t) => {
  fc.assert(
    fc.property(fc.shuffledSubarray(['par_a', 'par_b', 'par_c'], { minLength: 3, maxLength: 3 }), fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 2 }), { minLength: 1 }), { minLength: 3, maxLength: 3 }), (order, choices) => {
      const c = context();
      step(c, { type: 'OPEN_POLL', pollId: 'pol_1', by: 'par_host', question: 'Q', pollType: 'MULTIPLE_CHOICE', anonymous: true, options: ['A', 'B', 'C'], correct: [] });
      const byPerson: Record<string, number[]> = { par_a: choices[0]!, par_b: choices[1]!, par_c: choices[2]! };
      order.forEach((pid, i) => step(c, { type: 'ANSWER_POLL', pollId: 'pol_1', participantId: pid, voter: key(c.participants[pid]!.user.id!), choices: byPerson[pid], text: null, at: T0 + i * 1000 }));
      const answers = c.polls![0]!.answers;
      const sorted = [...answers].sort(byContent);
      return JSON.stringify(answers) === JSON.stringify(sorted) && answers.every((a) => a.user === null && a.at === null);
    }),
  );
  // the same three answers, in two orders: one and the same poll
  const poll = (order: string[]) => {
    const c = context();
    step(c, { type: 'OPEN_POLL', pollId: 'pol_1', by: 'par_host', question: 'Q', pollType: 'FREE_TEXT', anonymous: true, options: [], correct: [] });
    order.forEach((pid, i) => step(c, { type: 'ANSWER_POLL', pollId: 'pol_1', participantId: pid, voter: key(c.participants[pid]!.user.id!), choices: [], text: `text of ${pid === 'par_a' ? 'z' : pid}`, at: T0 + i }));
    return c;
  };
  const one = poll(['par_a', 'par_b', 'par_c']);
  const other = poll(['par_c', 'par_a', 'par_b']);
  t.strictSame(one.polls![0]!.answers, other.polls![0]!.answers, 'while open (only the latest texts hosts see live keep their order)');
  const closed = step(one, { type: 'CLOSE_POLL', pollId: 'pol_1', by: 'par_host', share: false, at: T0 + 60_000 });
  const closedOther = step(other, { type: 'CLOSE_POLL', pollId: 'pol_1', by: 'par_host', share: false, at: T0 + 60_000 });
  t.strictSame(closed, closedOther, 'and what closing writes and sends is the same');
  const event = ('effects' in closed ? closed.effects : []).find((e) => e.type === 'outbox')!;
  t.same((event as { data: PollClosedData }).data.responses.map((r) => [r.text, r.respondedAt]), [
    ['text of par_b', new Date(T0 + 60_000).toISOString()],
    ['text of par_c', new Date(T0 + 60_000).toISOString()],
    ['text of z', new Date(T0 + 60_000).toISOString()],
  ]);
  t.same(one.polls![0]!.texts, ['text of par_b', 'text of par_c', 'text of z'], 'the texts hosts keep seeing are sorted too');
});

t.test('respondedAt: a named answer\'s own time, an anonymous one\'s the close', async (t) => {
  t.equal(respondedAt({ anonymous: false, closedAt: 9 }, { at: 3 }), 3);
  t.equal(respondedAt({ anonymous: true, closedAt: 9 }, { at: 3 }), 9, 'an answer kept with a time before 0016');
  t.equal(respondedAt({ anonymous: true, closedAt: 9 }, { at: null }), 9);
});

t.test('an anonymous question: no asker, the asker\'s key; they see it as theirs and cannot upvote it', async (t) => {
  const c = context();
  const asked = step(c, { type: 'ASK_QUESTION', questionId: 'qst_1', participantId: 'par_a', voter: key('usr_a'), text: 'Why?', anonymous: true });
  t.match(asked, { reply: { question: { askedBy: null } } });
  t.match(c.questions![0], { askedBy: null, asker: key('usr_a') });
  t.same(step(c, { type: 'UPVOTE_QUESTION', questionId: 'qst_1', participantId: 'par_a', voter: key('usr_a') }), { refused: 'forbidden' });
  t.match(step(c, { type: 'UPVOTE_QUESTION', questionId: 'qst_1', participantId: 'par_b', voter: key('usr_b') }), { reply: { upvotes: 1 } });
  const mine = (pid: string, voter: string | undefined) => classroomState(c, voterFor(pid, c.participants[pid]!.user, voter), 'PARTICIPANT');
  t.same(mine('par_a', key('usr_a')).ownQuestions, ['qst_1']);
  t.same(mine('par_b', key('usr_b')).upvotedQuestions, ['qst_1']);
  t.same(mine('par_a', undefined).ownQuestions, [], 'without a key, nothing anonymous is anyone\'s');
  t.notOk(JSON.stringify(c.questions).match(/usr_|Ann|Bo\b/), 'no id or name kept');
  t.match(questionAnsweredData(c, { ...c.questions![0]!, answeredAt: T0, answeredBy: 'usr_host' }), { askedBy: null });
});

t.test('erasing a person: their name leaves answers and questions, once; ids and everyone else stay', async (t) => {
  const c = context();
  step(c, { type: 'OPEN_POLL', pollId: 'pol_1', by: 'par_host', question: 'Q', pollType: 'YES_NO', anonymous: false, options: ['Yes', 'No'], correct: [] });
  step(c, { type: 'ANSWER_POLL', pollId: 'pol_1', participantId: 'par_a', voter: key('usr_a'), choices: [0], text: null });
  step(c, { type: 'ANSWER_POLL', pollId: 'pol_1', participantId: 'par_b', voter: key('usr_b'), choices: [1], text: null });
  step(c, { type: 'ASK_QUESTION', questionId: 'qst_1', participantId: 'par_a', voter: key('usr_a'), text: 'Mine', anonymous: false });
  step(c, { type: 'ASK_QUESTION', questionId: 'qst_2', participantId: 'par_b', voter: key('usr_b'), text: 'Bo\'s', anonymous: false });
  const erased = eraseFromClassroom(c, 'usr_a');
  t.same(erased.polls[0]!.answers.map((a) => a.user && [a.user.id, a.user.name]), [['usr_a', 'Deleted user'], ['usr_b', 'Bo']]);
  t.same(erased.questions.map((q) => q.askedBy && [q.askedBy.user.id, q.askedBy.user.name]), [['usr_a', 'Deleted user'], ['usr_b', 'Bo']]);
  t.match(erased.effects, [{ type: 'send', to: { all: true }, message: { type: 'question', question: { questionId: 'qst_1', askedBy: { name: 'Deleted user' } } } }]);
  t.equal(erased.effects.length, 1);
  t.same(eraseFromClassroom({ ...c, polls: erased.polls, questions: erased.questions }, 'usr_a').effects, [], 'twice: nothing more');
});
