import { RoomAccess, type RoomRole } from '../../src/core/room-access.ts';
import { answerProblem, isCorrect, POLL_LIMITS, QUESTION_LIMITS } from '../../src/core/classroom.ts';
import { iso, type ActorErrorCode } from '../../src/core/actor-effects.ts';
import { ERASED_NAME } from './meeting.views.ts';
import type {
  ClassroomState,
  MeetingContext,
  MeetingEffect,
  MeetingEvent,
  MeetingReplies,
  PersonRef,
  Poll,
  PollAnswer,
  PollClosedData,
  PollResults,
  PollView,
  Question,
  QuestionAnsweredData,
  QuestionView,
  RoomUser,
} from './meeting.types.ts';

// Polls, quizzes and Q&A of a live room: pure steps from the meeting's context and one event to the new
// polls and questions, the effects (room messages, rows to write, webhooks) and the reply. The rules of
// drafts and answers are src/core/classroom.ts; who may give which command is RoomAccess (the machine's
// policy guard runs first).

type ClassroomEvent = Extract<
  MeetingEvent,
  { type: 'OPEN_POLL' | 'ANSWER_POLL' | 'CLOSE_POLL' | 'SHARE_POLL' | 'ASK_QUESTION' | 'UPVOTE_QUESTION' | 'ANSWER_QUESTION' | 'DISMISS_QUESTION' }
>;
export const CLASSROOM_EVENTS = ['OPEN_POLL', 'ANSWER_POLL', 'CLOSE_POLL', 'SHARE_POLL', 'ASK_QUESTION', 'UPVOTE_QUESTION', 'ANSWER_QUESTION', 'DISMISS_QUESTION'] as const satisfies readonly ClassroomEvent['type'][];

export type ClassroomOutcome =
  | { refuse: { code: ActorErrorCode; message: string; details?: Record<string, unknown> } }
  | { polls?: Poll[]; questions?: Question[]; effects: MeetingEffect[]; reply: MeetingReplies[ClassroomEvent['type']] };

/**
 * Who acts in polls and Q&A: `key`, their voter key from the event (meeting.schemas.ts `voter`), and
 * `legacy`, what snapshots from before 0016 keep instead (the user id; a guest's participant id), so a
 * poll or question open across that upgrade still knows its people.
 */
export interface Voter {
  key: string | undefined;
  legacy: string;
}
/** The key snapshots from before 0016 keep for a person: the user id (a guest: the participant id). */
export const voterOf = (participantId: string, u: { id: string | null }): string => u.id ?? participantId;
export const voterFor = (participantId: string, u: { id: string | null }, key: string | undefined): Voter => ({ key, legacy: voterOf(participantId, u) });
const isVoter = (v: Voter, stored: string): boolean => stored === v.key || stored === v.legacy;
/** The asker of a question: by their voter key, or (before 0016) by the named asker. */
const asked = (q: Question, v: Voter): boolean =>
  q.asker !== undefined ? isVoter(v, q.asker) : q.askedBy !== null && voterOf(q.askedBy.participantId, q.askedBy.user) === v.legacy;

/**
 * The order an anonymous poll keeps its answers in, and writes them in: by what was answered (choices,
 * then text), then by voter key, never by when. Arrival order lines up with who joined when.
 */
export function byContent(a: PollAnswer, b: PollAnswer): number {
  for (let i = 0; i < Math.min(a.choices.length, b.choices.length); i++) if (a.choices[i] !== b.choices[i]) return a.choices[i]! - b.choices[i]!;
  if (a.choices.length !== b.choices.length) return a.choices.length - b.choices.length;
  if (a.text !== b.text) return a.text === null ? -1 : b.text === null ? 1 : a.text < b.text ? -1 : 1;
  return a.voter < b.voter ? -1 : a.voter > b.voter ? 1 : 0;
}

/** When a response was given, as poll.closed and the poll's rows say: an anonymous poll's are all its close. */
export const respondedAt = (p: Pick<Poll, 'anonymous' | 'closedAt'>, a: Pick<PollAnswer, 'at'>): number => (p.anonymous || a.at === null ? p.closedAt! : a.at);
const person = (u: RoomUser): PersonRef => ({ id: u.id, externalId: u.externalId, name: u.name, role: u.role });
const no = (code: ActorErrorCode, message: string, details: Record<string, unknown> = {}): ClassroomOutcome => ({ refuse: { code, message, details } });
const toAll = (message: Extract<MeetingEffect, { type: 'send' }>['message']): MeetingEffect => ({ type: 'send', to: { all: true }, message });
const toHosts = (message: Extract<MeetingEffect, { type: 'send' }>['message']): MeetingEffect => ({ type: 'send', to: { role: 'hosts' }, message });

// ---- views ------------------------------------------------------------------------------------

export const pollView = (p: Poll): PollView => ({
  pollId: p.pollId,
  question: p.question,
  type: p.type,
  anonymous: p.anonymous,
  quiz: p.correct.length > 0,
  options: p.options,
  status: p.status,
  shared: p.shared,
  createdAt: iso(p.createdAt),
  closedAt: p.closedAt === null ? null : iso(p.closedAt),
  correct: p.status === 'CLOSED' ? p.correct : null,
});

/**
 * A poll's results; `forHosts`: with who answered a named poll while it is open (user ids), so hosts see
 * who has not. Never in an anonymous poll's, nor in the copy shared with everyone.
 */
export const pollResults = (p: Poll, forHosts = false): PollResults => ({
  pollId: p.pollId,
  answered: p.answered,
  votes: p.votes,
  texts: p.texts,
  correct: p.correct,
  ...(forHosts && !p.anonymous ? { answeredBy: p.answers.flatMap((a) => (a.user?.id ? [a.user.id] : [])) } : {}),
});

/** The results to those who see them: the hosts (with who answered), and everyone once shared. */
const resultsEffects = (p: Poll): MeetingEffect[] => [...(p.shared ? [toAll({ type: 'poll-results', results: pollResults(p) })] : []), toHosts({ type: 'poll-results', results: pollResults(p, true) })];

export const questionView = (q: Question): QuestionView => ({
  questionId: q.questionId,
  text: q.text,
  anonymous: q.anonymous,
  askedBy: q.anonymous || q.askedBy === null ? null : { participantId: q.askedBy.participantId, name: q.askedBy.user.name },
  askedAt: iso(q.askedAt),
  upvotes: q.upvotes,
  status: q.status === 'ANSWERED' ? 'ANSWERED' : 'OPEN',
  answer: q.answer,
  answeredLive: q.answeredLive,
  answeredAt: q.answeredAt === null ? null : iso(q.answeredAt),
});

/** What a participant joining (or rejoining) sees of the room's polls and questions. */
export function classroomState(c: MeetingContext, voter: Voter, role: RoomRole): ClassroomState {
  const polls = c.polls ?? [];
  const questions = (c.questions ?? []).filter((q) => q.status !== 'DISMISSED');
  return {
    polls: polls.map(pollView),
    pollResults: polls.filter((p) => RoomAccess.isHost(role) || p.shared).map((p) => pollResults(p, RoomAccess.isHost(role))),
    answeredPolls: polls.filter((p) => p.answers.some((a) => isVoter(voter, a.voter))).map((p) => p.pollId),
    questions: questions.map(questionView),
    upvotedQuestions: questions.filter((q) => q.upvoters.some((u) => isVoter(voter, u))).map((q) => q.questionId),
    ownQuestions: questions.filter((q) => asked(q, voter)).map((q) => q.questionId),
  };
}

// ---- webhook data -------------------------------------------------------------------------------

export function pollClosedData(c: MeetingContext, p: Poll): PollClosedData {
  const quiz = p.correct.length > 0;
  return {
    pollId: p.pollId,
    meetingId: c.meeting.meetingId,
    externalMeetingId: c.meeting.externalMeetingId,
    kind: c.meeting.kind,
    question: p.question,
    type: p.type,
    anonymous: p.anonymous,
    quiz,
    options: p.options.map((text, index) => ({ index, text, votes: p.votes[index] ?? 0, ...(quiz ? { correct: p.correct.includes(index) } : {}) })),
    answered: p.answered,
    responses: p.answers.map((a) => ({ user: a.user, choices: a.choices, text: a.text, ...(quiz ? { correct: isCorrect(p.correct, a.choices) === true } : {}), respondedAt: iso(respondedAt(p, a)) })),
    createdAt: iso(p.createdAt),
    createdBy: p.createdBy,
    closedAt: iso(p.closedAt!),
    closedBy: p.closedBy,
  };
}

export function questionAnsweredData(c: MeetingContext, q: Question): QuestionAnsweredData {
  return {
    questionId: q.questionId,
    meetingId: c.meeting.meetingId,
    externalMeetingId: c.meeting.externalMeetingId,
    kind: c.meeting.kind,
    text: q.text,
    anonymous: q.anonymous,
    askedBy: q.anonymous ? null : (q.askedBy?.user.id ?? null),
    answeredBy: q.answeredBy,
    answer: q.answer,
    answeredLive: q.answeredLive,
    askedAt: iso(q.askedAt),
    answeredAt: iso(q.answeredAt!),
    upvotes: q.upvotes,
  };
}

// ---- steps --------------------------------------------------------------------------------------

const replace = <T>(list: T[], i: number, v: T): T[] => list.map((x, j) => (j === i ? v : x));
const userOf = (c: MeetingContext, participantId: string): string | null => c.participants[participantId]?.user.id ?? null;

/** A poll closing: its row and answers are written, poll.closed is sent, and its answers leave the actor's memory. */
function close(c: MeetingContext, p: Poll, at: number, by: string | null, share: boolean): { poll: Poll; effects: MeetingEffect[] } {
  // sorted again here for answers kept in arrival order by snapshots from before 0016; the texts hosts keep seeing too
  const anonymous = p.anonymous ? { answers: [...p.answers].sort(byContent), texts: [...p.texts].sort() } : {};
  const closed: Poll = { ...p, ...anonymous, status: 'CLOSED', closedAt: at, closedBy: by, shared: p.shared || share };
  const effects: MeetingEffect[] = [
    { type: 'poll', poll: closed },
    { type: 'outbox', eventType: 'poll.closed', data: pollClosedData(c, closed) },
  ];
  const kept = { ...closed, answers: [] };
  effects.push(toAll({ type: 'poll', poll: pollView(kept) }), (kept.shared ? toAll : toHosts)({ type: 'poll-results', results: pollResults(kept) }));
  return { poll: kept, effects };
}

/** The meeting ended: its open poll closes (closedBy null); what that writes and sends (the room is gone, it hears nothing). */
export function closeOpenPolls(c: MeetingContext, at: number): MeetingEffect[] {
  return (c.polls ?? []).filter((p) => p.status === 'OPEN').flatMap((p) => close(c, p, at, null, false).effects.filter((e) => e.type !== 'send'));
}

/**
 * A person deleted their account: their name leaves the room's polls and questions (their named answers
 * and questions stay, as ERASED_NAME, and keep counting); a live room hears the questions that changed.
 * Their user id stays, as it does in every table: it names a user whose personal data is gone.
 */
export function eraseFromClassroom(c: MeetingContext, userId: string): { polls: Poll[]; questions: Question[]; effects: MeetingEffect[] } {
  const named = (u: PersonRef | null | undefined): u is PersonRef => u?.id === userId && u.name !== ERASED_NAME;
  const scrub = (u: PersonRef): PersonRef => (named(u) ? { ...u, name: ERASED_NAME } : u);
  const polls = (c.polls ?? []).map((p) => (p.answers.some((a) => named(a.user)) ? { ...p, answers: p.answers.map((a) => (a.user ? { ...a, user: scrub(a.user) } : a)) } : p));
  const effects: MeetingEffect[] = [];
  const questions = (c.questions ?? []).map((q) => {
    if (!q.askedBy || !named(q.askedBy.user)) return q;
    const next: Question = { ...q, askedBy: { ...q.askedBy, user: scrub(q.askedBy.user) } };
    if (next.status !== 'DISMISSED') effects.push(toAll({ type: 'question', question: questionView(next) }));
    return next;
  });
  return { polls, questions, effects };
}

export function classroomStep(c: MeetingContext, e: ClassroomEvent): ClassroomOutcome {
  const polls = c.polls ?? [];
  const questions = c.questions ?? [];
  const pollAt = 'pollId' in e ? polls.findIndex((p) => p.pollId === e.pollId) : -1;
  const poll = polls[pollAt];
  const questionAt = 'questionId' in e ? questions.findIndex((q) => q.questionId === e.questionId) : -1;
  const question = questions[questionAt];
  const noPoll = () => no('not_found', 'No such poll in this meeting.', { pollId: 'pollId' in e ? e.pollId : null });
  const noQuestion = () => no('not_found', 'No such question in this meeting.', { questionId: 'questionId' in e ? e.questionId : null });

  switch (e.type) {
    case 'OPEN_POLL': {
      if (polls.some((p) => p.status === 'OPEN')) return no('invalid_state', 'A poll is open; close it before opening another.', { pollId: polls.find((p) => p.status === 'OPEN')!.pollId });
      if (polls.length >= POLL_LIMITS.perMeeting) return no('invalid_state', `A meeting holds at most ${POLL_LIMITS.perMeeting} polls.`, { limit: POLL_LIMITS.perMeeting });
      const p: Poll = {
        pollId: e.pollId,
        question: e.question,
        type: e.pollType,
        anonymous: e.anonymous,
        options: e.options,
        correct: e.correct,
        status: 'OPEN',
        shared: false,
        createdBy: userOf(c, e.by),
        closedBy: null,
        createdAt: e.at,
        closedAt: null,
        votes: e.options.map(() => 0),
        answered: 0,
        texts: [],
        answers: [],
      };
      return { polls: [...polls, p], effects: [{ type: 'poll', poll: p }, toAll({ type: 'poll', poll: pollView(p) }), ...resultsEffects(p)], reply: { ok: true, poll: pollView(p) } };
    }
    case 'ANSWER_POLL': {
      if (!poll) return noPoll();
      if (poll.status !== 'OPEN') return no('invalid_state', 'The poll is closed.', { pollId: poll.pollId });
      const who = c.participants[e.participantId]!;
      const voter = voterFor(e.participantId, who.user, e.voter);
      if (RoomAccess.isHost(who.roomRole)) return no('forbidden', 'Hosts and cohosts run polls; the participants answer them.');
      if (poll.answers.some((a) => isVoter(voter, a.voter))) return no('invalid_state', 'You already answered this poll.', { pollId: poll.pollId });
      const problem = answerProblem(poll, e.choices, e.text);
      if (problem) return no('validation_failed', problem, { fields: [{ field: poll.type === 'FREE_TEXT' ? 'text' : 'choices', in: 'message', code: 'invalid', message: problem }] });
      const text = poll.type === 'FREE_TEXT' ? e.text!.trim() : null;
      const choices = [...e.choices].sort((a, b) => a - b);
      const answer: PollAnswer = poll.anonymous ? { voter: e.voter, user: null, choices, text, at: null } : { voter: e.voter, user: person(who.user), choices, text, at: e.at };
      const next: Poll = {
        ...poll,
        votes: poll.votes.map((v, i) => (e.choices.includes(i) ? v + 1 : v)),
        answered: poll.answered + 1,
        texts: text === null ? poll.texts : [...poll.texts, text].slice(-POLL_LIMITS.liveTexts),
        answers: poll.anonymous ? [...poll.answers, answer].sort(byContent) : [...poll.answers, answer],
      };
      const effects = resultsEffects(next);
      return { polls: replace(polls, pollAt, next), effects, reply: { ok: true } };
    }
    case 'CLOSE_POLL': {
      if (!poll) return noPoll();
      if (poll.status !== 'OPEN') {
        // a repeat: answered as done; `share` still shares
        if (!e.share || poll.shared) return { effects: [], reply: { ok: true, poll: pollView(poll), results: pollResults(poll) } };
        return share(poll);
      }
      const r = close(c, poll, e.at, userOf(c, e.by), e.share);
      return { polls: replace(polls, pollAt, r.poll), effects: r.effects, reply: { ok: true, poll: pollView(r.poll), results: pollResults(r.poll) } };
    }
    case 'SHARE_POLL': {
      if (!poll) return noPoll();
      if (poll.status !== 'CLOSED') return no('invalid_state', 'Results are shared once the poll is closed.', { pollId: poll.pollId });
      if (poll.shared) return { effects: [], reply: { ok: true, poll: pollView(poll), results: pollResults(poll) } };
      return share(poll);
    }
    case 'ASK_QUESTION': {
      if (questions.length >= QUESTION_LIMITS.perMeeting) return no('invalid_state', `A meeting holds at most ${QUESTION_LIMITS.perMeeting} questions.`, { limit: QUESTION_LIMITS.perMeeting });
      const who = c.participants[e.participantId]!;
      const q: Question = {
        questionId: e.questionId,
        text: e.text.trim(),
        anonymous: e.anonymous,
        askedBy: e.anonymous ? null : { participantId: e.participantId, user: person(who.user) },
        asker: e.voter,
        askedAt: e.at,
        upvoters: [],
        upvotes: 0,
        status: 'OPEN',
        answer: null,
        answeredLive: false,
        answeredBy: null,
        answeredAt: null,
        dismissedAt: null,
      };
      return { questions: [...questions, q], effects: [{ type: 'question', question: q }, toAll({ type: 'question', question: questionView(q) })], reply: { ok: true, question: questionView(q) } };
    }
    case 'UPVOTE_QUESTION': {
      if (!question || question.status === 'DISMISSED') return noQuestion();
      if (question.status !== 'OPEN') return no('invalid_state', 'The question was answered.', { questionId: question.questionId });
      const voter = voterFor(e.participantId, c.participants[e.participantId]!.user, e.voter);
      if (asked(question, voter)) return no('forbidden', 'You cannot upvote your own question.');
      if (question.upvoters.some((u) => isVoter(voter, u))) return { effects: [], reply: { ok: true, upvotes: question.upvotes } };
      const next: Question = { ...question, upvoters: [...question.upvoters, e.voter], upvotes: question.upvotes + 1 };
      return {
        questions: replace(questions, questionAt, next),
        effects: [{ type: 'question', question: next }, toAll({ type: 'question-upvotes', questionId: next.questionId, upvotes: next.upvotes })],
        reply: { ok: true, upvotes: next.upvotes },
      };
    }
    case 'ANSWER_QUESTION': {
      if (!question || question.status === 'DISMISSED') return noQuestion();
      if (question.status !== 'OPEN') return no('invalid_state', 'The question was answered already.', { questionId: question.questionId });
      const next: Question = { ...question, status: 'ANSWERED', answer: e.answer?.trim() || null, answeredLive: e.answer === null, answeredBy: userOf(c, e.by), answeredAt: e.at, upvoters: [] };
      return {
        questions: replace(questions, questionAt, next),
        effects: [
          { type: 'question', question: next },
          { type: 'outbox', eventType: 'question.answered', data: questionAnsweredData(c, next) },
          toAll({ type: 'question', question: questionView(next) }),
        ],
        reply: { ok: true, question: questionView(next) },
      };
    }
    case 'DISMISS_QUESTION': {
      if (!question) return noQuestion();
      if (question.status === 'DISMISSED') return { effects: [], reply: { ok: true } };
      if (question.status !== 'OPEN') return no('invalid_state', 'An answered question stays answered.', { questionId: question.questionId });
      const next: Question = { ...question, status: 'DISMISSED', answeredBy: userOf(c, e.by), dismissedAt: e.at, upvoters: [] };
      return {
        questions: replace(questions, questionAt, next),
        effects: [{ type: 'question', question: next }, toAll({ type: 'question-dismissed', questionId: next.questionId })],
        reply: { ok: true },
      };
    }
  }

  function share(p: Poll): ClassroomOutcome {
    const next = { ...p, shared: true };
    return {
      polls: replace(polls, pollAt, next),
      effects: [{ type: 'poll', poll: next }, toAll({ type: 'poll', poll: pollView(next) }), toAll({ type: 'poll-results', results: pollResults(next) })],
      reply: { ok: true, poll: pollView(next), results: pollResults(next) },
    };
  }
}
