import t from 'tap';
import type { ClassroomState, ClientSettings, PollView, QuestionView, RosterEntry } from '../../src/core/room.ts';
import type { ChatMessageView } from '../../src/core/chat.ts';
import type { RoomRole } from '../../src/core/room-access.ts';
import type { Session } from '../../web/room/api.ts';
import { embedEvents } from '../../web/room/embed-events.ts';
import { person } from '../helpers/roster.ts';
import { access, initialState, reduce, type Action, type State } from '../../web/room/reducer.ts';

// The room page's reducer, in Node: what the room socket says (and what the page's own commands were
// answered) in, the page's state out; and the SDK events each message means. No browser, no socket.

const session = (role: RoomRole = 'PARTICIPANT'): Session => ({
  accessToken: 'at',
  tokenType: 'Bearer',
  expiresAt: '2030-01-01T00:00:00Z',
  mediaToken: 'mt',
  mediaUrl: 'ws://127.0.0.1/api/v1/meetings/m/media',
  role,
  waitingRoom: null,
  meeting: { id: 'mtg_1', kind: 'MEETING', slug: 'm', title: 'Physics', status: 'LIVE', orgId: 'org_1', settings: { muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, recordAutomatically: false, chat: 'everyone', privateChatToHosts: true } },
  user: { id: 'usr_1', externalId: 's1', displayName: 'Sam' },
  redirectUrl: null,
});


const poll = (id: string, over: Partial<PollView> = {}): PollView => ({
  pollId: id,
  question: 'Ready?',
  type: 'YES_NO',
  anonymous: false,
  quiz: false,
  options: ['Yes', 'No'],
  status: 'OPEN',
  shared: false,
  createdAt: '2030-01-01T10:05:00Z',
  closedAt: null,
  correct: null,
  ...over,
});

const question = (id: string, over: Partial<QuestionView> = {}): QuestionView => ({
  questionId: id,
  text: 'Homework?',
  anonymous: false,
  askedBy: null,
  askedAt: '2030-01-01T10:06:00Z',
  upvotes: 0,
  status: 'OPEN',
  answer: null,
  answeredLive: false,
  answeredAt: null,
  ...over,
});

const noClassroom: ClassroomState = { polls: [], pollResults: [], answeredPolls: [], questions: [], upvotedQuestions: [], ownQuestions: [] };
const settings: ClientSettings = { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, chat: 'everyone', privateChatToHosts: true };

/** Deeply frozen, so a reducer that changed what it was given would throw. */
function frozen<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) frozen(x);
  }
  return v;
}

/** The state after these actions from `from`, each reduced from a frozen state. */
function run(from: State, ...actions: Action[]): State {
  return actions.reduce((s, a) => reduce(frozen(s), a), from);
}

/** In the room as `me` (a participant unless said), with these people. */
function inRoom(role: RoomRole = 'PARTICIPANT', roster = [person('me'), person('ann')], over: Partial<State> = {}): State {
  const s = run({ ...initialState, session: session(role), phase: 'connecting' }, {
    type: 'joined',
    recording: null, captionsUnavailable: null,
    participantId: 'me',
    roster: roster.map((p) => (p.participantId === 'me' ? { ...p, roomRole: role } : p)),
    settings,
    locked: false,
    spotlight: null,
    classroom: noClassroom,
    media: { rev: 1, available: true },
  });
  return { ...s, ...over };
}

t.test('joined: into the room with its roster, settings, lock, media revision and classroom; what this page answered stays', async (t) => {
  const before: State = { ...initialState, session: session(), phase: 'connecting', mediaRev: 3, answers: { p1: { choices: [1], text: null }, gone: { choices: [0], text: null } }, ownQuestions: ['q0'] };
  const s = run(before, {
    type: 'joined',
    recording: null, captionsUnavailable: null,
    participantId: 'me',
    roster: [person('me')],
    settings: { ...settings, lectureMode: true },
    locked: true,
    spotlight: null,
    classroom: { polls: [poll('p1'), poll('p2', { status: 'CLOSED' })], pollResults: [{ pollId: 'p2', answered: 1, votes: [1, 0], texts: [], correct: [] }], answeredPolls: ['p1', 'p3'], questions: [question('q1')], upvotedQuestions: ['q1'], ownQuestions: ['q2'] },
    media: { rev: 2, available: true },
  });
  t.equal(s.phase, 'room');
  t.equal(s.participantId, 'me');
  t.same(s.roster.map((p) => p.participantId), ['me']);
  t.equal(s.settings.lectureMode, true);
  t.equal(s.roomLocked, true);
  t.equal(s.mediaAvailable, true);
  t.equal(s.mediaRev, 3, 'a revision heard before is not forgotten');
  t.same(s.answers, { p1: { choices: [1], text: null }, p3: { choices: [], text: null } }, 'answered polls, with what this page chose when it knows');
  t.same(Object.keys(s.pollResults), ['p2']);
  t.same(s.upvoted, ['q1']);
  t.same(s.ownQuestions, ['q0', 'q2']);
});

t.test('roster: the new list; SDK events for joins (not one\'s own), hands and leaves', async (t) => {
  const before = inRoom('PARTICIPANT', [person('me'), person('ann'), person('bob')]);
  const m: Action = { type: 'roster', rev: 2, participants: [person('me'), person('ann', { handRaisedAt: '2030-01-01T10:10:00Z' }), person('cy')] };
  const after = run(before, m);
  t.same(after.roster.map((p) => p.participantId), ['me', 'ann', 'cy']);
  t.same(embedEvents(before, m, after), [
    { event: 'hand-raised', data: { participant: { id: 'ann', name: 'ann', role: 'PARTICIPANT' } } },
    { event: 'participant-joined', data: { participant: { id: 'cy', name: 'cy', role: 'PARTICIPANT' } } },
    { event: 'participant-left', data: { participant: { id: 'bob', name: 'bob', role: 'PARTICIPANT' } } },
  ]);
  const lowered = run(after, { type: 'roster', rev: 3, participants: [person('me'), person('ann'), person('cy')] });
  t.same(embedEvents(after, { type: 'roster', rev: 3, participants: lowered.roster }, lowered), [{ event: 'hand-lowered', data: { participant: { id: 'ann', name: 'ann', role: 'PARTICIPANT' } } }]);
});

t.test('joined: the Captions control is offered only where the room makes captions; a refusal later still says why', async (t) => {
  const offered = (captionsUnavailable: string | null) =>
    run({ ...initialState, session: session(), phase: 'connecting' }, { type: 'joined', recording: null, captionsUnavailable, participantId: 'me', roster: [person('me')], settings, locked: false, spotlight: null, classroom: noClassroom, media: { rev: 1, available: true } }).captions;
  t.match(offered(null), { offered: true, on: false, unavailable: null });
  t.match(offered('The standard plan does not include AI notes.'), { offered: false, on: false, unavailable: null }, 'no control, and no box until someone asks');
  const refused = run({ ...inRoom(), captions: { on: false, lines: [], unavailable: null, offered: true } }, { type: 'captions-set', on: false, unavailable: 'AI notes are switched off.' });
  t.match(refused.captions, { offered: true, unavailable: 'AI notes are switched off.' }, 'switched off during the class: the box says why');
});

t.test('joined is told to the SDK once: a reconnect joins again without it', async (t) => {
  const m: Action = { type: 'joined',
    recording: null, captionsUnavailable: null, participantId: 'me', roster: [person('me')], settings, locked: false, spotlight: null, classroom: noClassroom, media: { rev: 1, available: true } };
  const before = { ...initialState, session: session() };
  const first = run(before, m);
  t.same(embedEvents(before, m, first), [{ event: 'joined', data: { participant: { id: 'me', name: 'me', role: 'PARTICIPANT' }, meeting: { id: 'mtg_1', title: 'Physics' } } }]);
  t.same(embedEvents(first, m, run(first, m)), []);
});

t.test('settings: a student sharing a screen loses the button when sharing is turned off; a host keeps it', async (t) => {
  const allowed = { ...settings, allowStudentScreenShare: true };
  const student = run(inRoom('PARTICIPANT'), { type: 'settings', rev: 2, settings: allowed });
  t.equal(access(student).shareScreen, true);
  const sharing = { ...student, screenOn: true };
  const off = run(sharing, { type: 'settings', rev: 3, settings });
  t.equal(off.screenOn, false);
  t.equal(access(off).shareScreen, false);
  const host = run({ ...inRoom('HOST'), screenOn: true }, { type: 'settings', rev: 3, settings });
  t.equal(host.screenOn, true);
});

t.test('media: a newer placement that has media raises the revision; anything else changes nothing', async (t) => {
  const s = inRoom();
  t.equal(reduce(s, { type: 'media', rev: 1, available: true }), s, 'the same revision');
  t.equal(reduce(s, { type: 'media', rev: 5, available: false }), s, 'no media to join');
  const moved = run(s, { type: 'media', rev: 2, available: true });
  t.equal(moved.mediaRev, 2);
  t.equal(moved.mediaAvailable, true);
});

t.test('a host mutes, allows unmuting, gives and takes the floor', async (t) => {
  const asked = run({ ...inRoom(), micOn: true }, { type: 'unmute-asked' });
  t.equal(asked.askedToUnmute, true);
  const muted = run(asked, { type: 'muted', by: 'usr_t' });
  t.match(muted, { micOn: false, unmuteAllowed: false, askedToUnmute: false, notice: 'A host muted your microphone.' });
  t.match(run(muted, { type: 'unmute-allowed', by: 'usr_t' }), { unmuteAllowed: true, notice: 'A host allows you to unmute.' });
  t.match(run(muted, { type: 'floor', give: true, by: 'usr_t' }), { unmuteAllowed: true, notice: 'You have the floor: you may speak.' });
  t.match(run(muted, { type: 'floor', give: false, by: 'usr_t' }), { unmuteAllowed: false, notice: 'The floor was taken back.' });
  t.match(run(inRoom('HOST'), { type: 'unmute-requested', participantId: 'ann', name: 'Ann' }), { notice: 'Ann asks to unmute.' });
});

t.test('locked: said once per change, and told to the SDK', async (t) => {
  const s = inRoom();
  const m: Action = { type: 'locked', locked: true, by: 'usr_t' };
  const locked = run(s, m);
  t.match(locked, { roomLocked: true, notice: 'A host locked the meeting: nobody new can join.' });
  t.same(embedEvents(s, m, locked), [{ event: 'room-locked', data: {} }]);
  t.equal(reduce(locked, m), locked, 'locked again: nothing new');
  t.same(embedEvents(locked, m, locked), []);
  const unlocked = run(locked, { type: 'locked', locked: false, by: 'usr_t' });
  t.equal(unlocked.notice, 'A host unlocked the meeting.');
});

t.test('polls: a new one is announced to participants (not hosts), then replaced as it changes; results by poll', async (t) => {
  const open = poll('p1', { quiz: true, question: 'Which organelle makes ATP?' });
  const student = inRoom();
  const opened = run(student, { type: 'poll', poll: open });
  t.equal(opened.notice, 'A quiz opened: Which organelle makes ATP?');
  t.same(embedEvents(student, { type: 'poll', poll: open }, opened), [{ event: 'poll-opened', data: { poll: { id: 'p1', question: 'Which organelle makes ATP?', type: 'YES_NO', quiz: true } } }]);
  t.equal(run(inRoom('COHOST'), { type: 'poll', poll: open }).notice, null, 'a host opened it: no notice');

  const closed = { ...open, status: 'CLOSED' as const, correct: [0] };
  const after = run(opened, { type: 'poll', poll: closed });
  t.same(after.polls, [closed], 'replaced, not added');
  t.same(embedEvents(opened, { type: 'poll', poll: closed }, after), [{ event: 'poll-closed', data: { poll: { id: 'p1', question: 'Which organelle makes ATP?', type: 'YES_NO', quiz: true } } }]);
  t.same(embedEvents(after, { type: 'poll', poll: { ...closed, shared: true } }, after), [], 'shared later: no event');

  const results = { pollId: 'p1', answered: 2, votes: [2, 0], texts: [], correct: [0] };
  t.same(run(after, { type: 'poll-results', results }).pollResults, { p1: results });
  t.match(run(opened, { type: 'poll-answered', pollId: 'p1', answer: { choices: [0], text: null } }), { answers: { p1: { choices: [0], text: null } }, notice: 'Your answer was sent.' });
});

t.test('questions: asked, upvoted, answered (the asker is told), dismissed', async (t) => {
  const s = inRoom();
  const asked = run(s, { type: 'question-asked', question: question('q1') }, { type: 'question', question: question('q1') });
  t.same(asked.questions.map((q) => q.questionId), ['q1'], 'the broadcast of one\'s own question does not add it twice');
  t.same(asked.ownQuestions, ['q1']);
  const votes = run(asked, { type: 'question', question: question('q2') }, { type: 'question-upvoted', questionId: 'q2' }, { type: 'question-upvotes', questionId: 'q2', upvotes: 4 });
  t.same(votes.upvoted, ['q2']);
  t.equal(votes.questions.find((q) => q.questionId === 'q2')?.upvotes, 4);

  const answered = question('q1', { status: 'ANSWERED', answer: 'Chapter 4.', answeredAt: '2030-01-01T10:09:00Z' });
  const after = run(votes, { type: 'question', question: answered });
  t.equal(after.notice, 'A host answered your question.');
  t.same(embedEvents(votes, { type: 'question', question: answered }, after), [{ event: 'question-answered', data: { question: { id: 'q1', text: 'Homework?', answer: 'Chapter 4.', answeredLive: false, yours: true } } }]);
  const live = run(votes, { type: 'question', question: question('q2', { status: 'ANSWERED', answeredLive: true }) });
  t.equal(live.notice, null, 'another\'s question answered: no notice');
  t.same(run(after, { type: 'question-dismissed', questionId: 'q2' }).questions.map((q) => q.questionId), ['q1']);
});

t.test('who sends what, who speaks, how good each connection is, and who waits', async (t) => {
  const s = run(
    inRoom('HOST'),
    { type: 'media-state', participants: [{ participantId: 'ann', sources: { mic: 'on', camera: 'off' } }] },
    { type: 'media-state', participants: [{ participantId: 'me', sources: { mic: 'off' } }] },
    { type: 'active-speaker', participantId: 'ann' },
    { type: 'network-quality', participants: [{ participantId: 'ann', quality: 3 }, { participantId: 'me', quality: 5 }] },
    { type: 'waiting-room', entries: [{ queueId: 'wq_1', userId: 'usr_x', name: 'Xavi', role: 'STUDENT', requestedAt: '2030-01-01T10:01:00Z' }] },
  );
  t.same(s.sources, { ann: { mic: 'on', camera: 'off' }, me: { mic: 'off' } }, 'each participant\'s latest');
  t.equal(s.activeSpeaker, 'ann');
  t.same(s.quality, { ann: 3, me: 5 });
  t.same(s.waitingList.map((e) => e.name), ['Xavi']);
});

t.test('error: the room refused the join; the page says why and the SDK hears it', async (t) => {
  const s: State = { ...initialState, session: session(), phase: 'connecting' };
  const m: Action = { type: 'error', error: { code: 'meeting_locked', message: 'A host locked the meeting.' } };
  const after = run(s, m);
  t.equal(after.phase, 'error');
  t.match(after.outcome, { code: 'meeting_locked', title: 'This meeting is locked' });
  t.same(embedEvents(s, m, after), [{ event: 'error', data: { code: 'meeting_locked', message: after.outcome!.text } }]);
});

t.test('media events are the media objects\' (media.ts): the state does not change', async (t) => {
  const s = inRoom();
  t.equal(reduce(s, { type: 'consumer-closed', consumerId: 'c1' }), s);
  t.equal(reduce(s, { type: 'producer-paused', producerId: 'pr1', source: 'mic', reason: 'muted-by-host' }), s);
});

t.test('access: what the role may do, as RoomAccess decides it', async (t) => {
  const may = (role: RoomRole, allowStudentScreenShare = false) => access({ session: session(role), settings: { ...settings, allowStudentScreenShare } });
  t.match(may('HOST'), { host: true, send: true, shareScreen: true });
  t.match(may('COHOST'), { host: true, send: true, shareScreen: true });
  t.match(may('PARTICIPANT'), { host: false, send: true, shareScreen: false });
  t.match(may('PARTICIPANT', true), { shareScreen: true });
  t.match(may('VIEWER', true), { host: false, send: false, shareScreen: false });
});

t.test('the spotlight: from the join and from a host, said once; the SDK hears who speaks', async (t) => {
  const joined = run({ ...initialState, session: session(), phase: 'connecting' }, { type: 'joined',
    recording: null, captionsUnavailable: null, participantId: 'me', roster: [person('me'), person('ann')], settings, locked: false, spotlight: 'ann', classroom: noClassroom, media: { rev: 1, available: true } });
  t.equal(joined.spotlight, 'ann', 'a page that joins late sees the spotlight');
  const s = inRoom();
  const on = run(s, { type: 'spotlight', participantId: 'ann', by: 'host' });
  t.equal(on.spotlight, 'ann');
  t.equal(on.notice, 'ann is in the spotlight.');
  t.equal(run(on, { type: 'spotlight', participantId: 'ann', by: 'host' }), on, 'the same again changes nothing');
  t.match(run(s, { type: 'spotlight', participantId: 'me', by: 'host' }).notice, /put you in the spotlight/);
  t.match(run(on, { type: 'spotlight', participantId: null, by: 'host' }), { spotlight: null, notice: 'The spotlight was turned off.' });
  const m: Action = { type: 'active-speaker', participantId: 'ann' };
  const after = run(s, m);
  t.same(embedEvents(s, m, after), [{ event: 'active-speaker', data: { participant: { id: 'ann', name: 'ann', role: 'PARTICIPANT' } } }]);
  t.same(embedEvents(after, m, run(after, m)), [], 'said on a change only');
  const quiet: Action = { type: 'active-speaker', participantId: null };
  t.same(embedEvents(after, quiet, run(after, quiet)), [{ event: 'active-speaker', data: { participant: null } }]);
});

t.test('recent speakers: the most recent first, each once, and kept when nobody speaks', async (t) => {
  const s = run(inRoom(), { type: 'active-speaker', participantId: 'ann' }, { type: 'active-speaker', participantId: 'bo' }, { type: 'active-speaker', participantId: null }, { type: 'active-speaker', participantId: 'ann' });
  t.same(s.speakers, ['ann', 'bo']);
  let many = inRoom();
  for (let i = 0; i < 50; i++) many = run(many, { type: 'active-speaker', participantId: `p${i}` });
  t.equal(many.speakers.length, 32, 'a bounded list');
  t.equal(many.speakers[0], 'p49');
});

t.test('pin, layout, pages and audio only: this user\'s own choices; the SDK hears the page that shows', async (t) => {
  const s = inRoom();
  t.equal(run(s, { type: 'pin', participantId: 'ann' }).pinned, 'ann');
  t.equal(run(s, { type: 'pin', participantId: 'me' }).pinned, null, 'not oneself');
  t.equal(run(s, { type: 'set-layout', mode: 'speaker' }).layoutMode, 'speaker');
  t.equal(run(s, { type: 'set-page', page: 3 }).page, 3);
  t.equal(run(s, { type: 'set-page', page: -2 }).page, 1);
  const m: Action = { type: 'paged', page: 2, pages: 4 };
  const paged = run(s, m);
  t.same([paged.page, paged.pages], [2, 4]);
  t.same(embedEvents(s, m, paged), [{ event: 'page-changed', data: { page: 2, pages: 4 } }]);
  t.same(embedEvents(paged, m, run(paged, m)), [], 'the same page again is not an event');
  const offered = run(s, { type: 'offer-audio-only', offered: true });
  t.equal(offered.audioOnlyOffered, true);
  const taken = run(offered, { type: 'audio-only', on: true });
  t.match(taken, { audioOnly: true, audioOnlyOffered: false });
  t.equal(run(taken, { type: 'offer-audio-only', offered: true }).audioOnlyOffered, false, 'not offered while on');
  t.equal(run(taken, { type: 'audio-only', on: false }).audioOnly, false);
});

t.test('a roster heard before this page joined tells the SDK of nobody joining', async (t) => {
  const s: State = { ...initialState, session: session(), phase: 'connecting' };
  const m: Action = { type: 'roster', rev: 1, participants: [person('ann'), person('me')] };
  t.same(embedEvents(s, m, run(s, m)), [], 'neither the people already there nor oneself');
});

t.test('media-error: the page says why media cannot get through, and the SDK hears it once per change', async (t) => {
  const s0 = { ...initialState, phase: 'room' as const, participantId: 'me' };
  const s1 = reduce(s0, { type: 'media-error', code: 'relay_unreachable' });
  t.equal(s1.mediaError, 'relay_unreachable');
  t.match(embedEvents(s0, { type: 'media-error', code: 'relay_unreachable' }, s1), [{ event: 'media-error', data: { code: 'relay_unreachable', message: /blocking the class's audio and video/ } }]);
  t.equal(reduce(s1, { type: 'media-error', code: 'relay_unreachable' }), s1, 'the same again changes nothing');
  t.same(embedEvents(s1, { type: 'media-error', code: 'relay_unreachable' }, s1), [], 'and tells the SDK nothing');
  const s2 = reduce(s1, { type: 'media-error', code: null });
  t.same(embedEvents(s1, { type: 'media-error', code: null }, s2), [{ event: 'media-error', data: { code: null, message: null } }], 'cleared: said too');
});

t.test('media-health: hosts keep each person\'s health; the people list sums it up in a line', async (t) => {
  const { healthLine } = await import('../../web/room/health.ts');
  const h = (participantId: string, over: Record<string, unknown> = {}) => ({ participantId, quality: 5, error: null, relayed: false, rttMs: 40, lossDown: 0, lossUp: 0, bitrateUp: 300_000, bitrateDown: 900_000, audioOnly: false, ...over });
  const s = reduce(initialState, { type: 'media-health', participants: [h('a'), h('b', { error: 'ice_failed' }), h('c', { relayed: true })] } as Action);
  t.same(Object.keys(s.health).sort(), ['a', 'b', 'c']);
  t.equal(healthLine([{ participantId: 'a' }, { participantId: 'b' }, { participantId: 'c' }, { participantId: 'd' }], s.health, { a: 5, b: 0, c: 2, d: 4 }), 'Connections: 2 good · 1 poor · 1 cannot connect · 1 through a relay');
});

t.test('a poll open when the user joins is told to the SDK with the first joined; a reconnect tells only what changed meanwhile', async (t) => {
  const quiz = poll('p1', { quiz: true, question: 'Which organelle makes ATP?' });
  const joined = (polls: PollView[]): Action => ({ type: 'joined',
    recording: null, captionsUnavailable: null, participantId: 'me', roster: [person('me')], settings, locked: false, spotlight: null, classroom: { ...noClassroom, polls }, media: { rev: 1, available: true } });
  const before: State = { ...initialState, session: session(), phase: 'connecting' };
  const m = joined([quiz, poll('p2', { status: 'CLOSED' })]);
  const first = run(before, m);
  t.same(embedEvents(before, m, first), [
    { event: 'joined', data: { participant: { id: 'me', name: 'me', role: 'PARTICIPANT' }, meeting: { id: 'mtg_1', title: 'Physics' } } },
    { event: 'poll-opened', data: { poll: { id: 'p1', question: 'Which organelle makes ATP?', type: 'YES_NO', quiz: true } } },
  ], 'the open poll after joined; the closed one is not news');
  t.same(embedEvents(first, m, run(first, m)), [], 'a reconnect to the same polls: nothing again');

  const meanwhile = joined([{ ...quiz, status: 'CLOSED' }, poll('p2', { status: 'CLOSED' }), poll('p3')]);
  t.same(embedEvents(first, meanwhile, run(first, meanwhile)), [
    { event: 'poll-closed', data: { poll: { id: 'p1', question: 'Which organelle makes ATP?', type: 'YES_NO', quiz: true } } },
    { event: 'poll-opened', data: { poll: { id: 'p3', question: 'Ready?', type: 'YES_NO', quiz: false } } },
  ], 'polls closed and opened while the socket was down');

  const heard = run(before, { type: 'poll', poll: quiz });
  t.same(embedEvents(heard, m, run(heard, m)).map((e) => e.event), ['joined'], 'a poll already told (its message came first) is not told twice');
});

t.test('the people already in the room when the user joins are not told to the SDK as joining', async (t) => {
  const m: Action = { type: 'joined',
    recording: null, captionsUnavailable: null, participantId: 'me', roster: [person('ann'), person('me'), person('bob')], settings, locked: false, spotlight: null, classroom: noClassroom, media: { rev: 1, available: true } };
  const before: State = { ...initialState, session: session(), phase: 'connecting' };
  const first = run(before, m);
  t.same(embedEvents(before, m, first).map((e) => e.event), ['joined'], 'joined only');
  const roster: Action = { type: 'roster', rev: 2, participants: [person('ann'), person('me'), person('bob')] };
  t.same(embedEvents(first, roster, run(first, roster)), [], 'the first roster after it, with the same people: nothing');
});

const chat = (id: string, from: string, over: Partial<ChatMessageView> = {}): ChatMessageView => ({
  messageId: id,
  participantId: from,
  name: from,
  roomRole: 'PARTICIPANT',
  text: `message ${id}`,
  sentAt: '2030-01-01T10:07:00Z',
  privateWith: null,
  ...over,
});

t.test('chat: the history is not unread, later messages from others are, once each; a reconnect counts what came meanwhile; deletions go', async (t) => {
  let s = run(inRoom(), { type: 'chat-history', messages: [chat('c1', 'ann')] });
  t.same(s.chat.map((m) => m.messageId), ['c1']);
  t.equal(s.chatUnread, 0, 'what was said before joining is not unread');
  s = run(s, { type: 'chat', message: chat('c2', 'ann') }, { type: 'chat', message: chat('c2', 'ann') }, { type: 'chat', message: chat('c3', 'me') });
  t.same(s.chat.map((m) => m.messageId), ['c1', 'c2', 'c3'], 'once each (the ack and the broadcast)');
  t.equal(s.chatUnread, 1, 'one\'s own message is not unread');
  s = run(s, { type: 'chat-read' });
  t.equal(s.chatUnread, 0);
  s = run(s, { type: 'chat-history', messages: [chat('c1', 'ann'), chat('c2', 'ann'), chat('c3', 'me'), chat('c4', 'ann'), chat('c5', 'ann')] });
  t.equal(s.chatUnread, 2, 'a reconnect\'s history: what came while the socket was down is unread');
  s = run(s, { type: 'chat-deleted', messageId: 'c4' });
  t.same(s.chat.map((m) => m.messageId), ['c1', 'c2', 'c3', 'c5']);
});

t.test('chat-message: the SDK hears each new message once, private ones marked, not the history', async (t) => {
  const s = inRoom();
  t.same(embedEvents(s, { type: 'chat-history', messages: [chat('c1', 'ann')] }, run(s, { type: 'chat-history', messages: [chat('c1', 'ann')] })), []);
  const m = { type: 'chat' as const, message: chat('c2', 'ann', { name: 'Ann', privateWith: { participantId: 'me', name: 'me' } }) };
  const after = run(s, m);
  t.same(embedEvents(s, m, after), [{ event: 'chat-message', data: { message: { id: 'c2', from: { id: 'ann', name: 'Ann', role: 'PARTICIPANT' }, text: 'message c2', sentAt: '2030-01-01T10:07:00Z', private: true } } }]);
  t.same(embedEvents(after, m, run(after, m)), [], 'not twice');
});

t.test('alerts: hosts get one for a raised hand, a knock, a new question, someone refused at the locked door; each goes when it no longer stands; students get none', async (t) => {
  let s = inRoom('HOST');
  s = run(s, { type: 'roster', rev: 2, participants: [person('me', { roomRole: 'HOST' }), person('ann', { name: 'Ann', handRaisedAt: '2030-01-01T10:08:00Z' })] });
  t.match(s.alerts, [{ kind: 'hand', participantId: 'ann', name: 'Ann' }]);
  s = run(s, { type: 'waiting-room', entries: [{ queueId: 'wr1', userId: 'usr_bo', name: 'Bo', role: 'STUDENT', requestedAt: '2030-01-01T10:08:00Z' }] });
  s = run(s, { type: 'question', question: question('q1', { askedBy: { participantId: 'ann', name: 'Ann' }, text: 'Why?' }) });
  s = run(s, { type: 'knock', userId: 'usr_cy', name: 'Cy', at: '2030-01-01T10:09:00Z' });
  t.same(s.alerts.map((a) => a.kind), ['hand', 'waiting', 'question', 'knock']);
  t.equal(new Set(s.alerts.map((a) => a.key)).size, 4, 'each with its own key');
  s = run(s, { type: 'knock', userId: 'usr_cy', name: 'Cy', at: '2030-01-01T10:10:00Z' });
  t.equal(s.alerts.filter((a) => a.kind === 'knock').length, 1, 'one per person');
  s = run(s, { type: 'roster', rev: 3, participants: [person('me', { roomRole: 'HOST' }), person('ann', { name: 'Ann' })] });
  s = run(s, { type: 'waiting-room', entries: [] });
  s = run(s, { type: 'question', question: question('q1', { status: 'ANSWERED' }) });
  t.same(s.alerts.map((a) => a.kind), ['knock'], 'the hand went down, the entry was let in, the question answered');
  const key = s.alerts[0]!.key;
  t.same(run(s, { type: 'alert-gone', key }).alerts, []);

  let st = inRoom('PARTICIPANT');
  st = run(st, { type: 'roster', rev: 2, participants: [person('me'), person('ann', { handRaisedAt: '2030-01-01T10:08:00Z' })] }, { type: 'question', question: question('q2') });
  t.same(st.alerts, [], 'students get no alerts');
  let own = inRoom('HOST', [person('me'), person('ann')], { ownQuestions: ['q3'] });
  own = run(own, { type: 'roster', rev: 2, participants: [person('me', { roomRole: 'HOST', handRaisedAt: '2030-01-01T10:08:00Z' }), person('ann')] }, { type: 'question', question: question('q3') });
  t.same(own.alerts, [], 'nor does a host for their own hand or question');
});

t.test('a poll opens: it pops up for a student once; a quiz they answered says whether they were right', async (t) => {
  let s = run(inRoom(), { type: 'poll', poll: poll('p1', { quiz: true }) });
  t.equal(s.pollPrompt, 'p1');
  s = run(s, { type: 'poll-prompted' });
  t.equal(s.pollPrompt, null);
  s = run(s, { type: 'poll-answered', pollId: 'p1', answer: { choices: [1], text: null } });
  s = run(s, { type: 'poll', poll: poll('p1', { quiz: true, status: 'CLOSED', correct: [0] }) });
  t.equal(s.notice, 'Quiz closed: your answer is incorrect.');
  const right = run(inRoom(), { type: 'poll', poll: poll('p2', { quiz: true }) }, { type: 'poll-answered', pollId: 'p2', answer: { choices: [0], text: null } }, { type: 'poll', poll: poll('p2', { quiz: true, status: 'CLOSED', correct: [0] }) });
  t.equal(right.notice, 'Quiz closed: your answer is correct.');
  t.equal(run(inRoom('HOST'), { type: 'poll', poll: poll('p3') }).pollPrompt, null, 'hosts run polls; nothing pops up for them');
});

t.test('reactions float until the page lets them go', async (t) => {
  const s = run(inRoom(), { type: 'reaction', participantId: 'ann', emoji: '👏' }, { type: 'reaction', participantId: 'me', emoji: '🎉' });
  t.match(s.reactions, [{ participantId: 'ann', emoji: '👏' }, { participantId: 'me', emoji: '🎉' }]);
  t.same(run(s, { type: 'reaction-gone', key: s.reactions[0]!.key }).reactions.map((r) => r.emoji), ['🎉']);
});
