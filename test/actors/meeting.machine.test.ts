import t from 'tap';
import { createActor, type SnapshotFrom } from 'xstate';
import {
  EMPTY_GRACE_MS,
  MEETING_MACHINE_VERSION,
  MEETING_TIMERS,
  meetingMachine,
  NO_SHOW_GRACE_MS,
  RECONNECT_GRACE_MS,
} from '../../actors/meeting/meeting.machine.ts';
import { meetingEvent, meetingInput } from '../../actors/meeting/meeting.schemas.ts';
import type { MeetingEffect, MeetingInput, RoomRole } from '../../actors/meeting/meeting.types.ts';
import { meetingEventData, type MeetingRow } from '../../src/services/meetings.ts';

const T0 = Date.parse('2026-01-05T09:00:00Z');
const MIN = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const baseInput: MeetingInput = {
  meetingId: 'mtg_1',
  orgId: 'org_1',
  externalMeetingId: 'ext-m-1',
  kind: 'CLASS',
  title: 'Algebra',
  type: 'CLASSROOM',
  slug: 'abc-defg-hjk',
  hostUserId: 'usr_teacher',
  classId: 'cls_1',
  externalClassId: 'ext-c-1',
  courseId: null,
  batchId: 'b-1',
  scheduledStart: iso(T0),
  scheduledEnd: iso(T0 + 60 * MIN),
  settings: { muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, recordAutomatically: false, waitingRoom: false },
  planMaxMinutes: 40,
  status: 'SCHEDULED',
};

/** An actor that records what it emits; `send` validates the event like the host does and returns the effects it caused. */
function room(input: Partial<MeetingInput> = {}, snapshot?: SnapshotFrom<typeof meetingMachine>) {
  // On restore XState ignores input; the types ask for it anyway.
  const actor = createActor(meetingMachine, { input: meetingInput.parse({ ...baseInput, ...input }), ...(snapshot ? { snapshot } : {}) });
  let effects: MeetingEffect[] = [];
  actor.on('*', (e) => effects.push(e));
  actor.start();
  return {
    actor,
    send(event: Record<string, unknown>): MeetingEffect[] {
      effects = [];
      actor.send(meetingEvent.parse(event));
      if (effects.filter((e) => e.type === 'reply').length > 1) throw new Error(`${String(event.type)}: more than one reply`);
      if (actor.getSnapshot().status !== 'active') throw new Error(`${String(event.type)}: the actor is ${actor.getSnapshot().status}`);
      return effects;
    },
    get state() {
      return actor.getSnapshot().value;
    },
    get context() {
      return actor.getSnapshot().context;
    },
  };
}

const users = {
  teacher: { id: 'usr_teacher', externalId: 't-1', name: 'Ada', email: 'ada@example.com', role: 'TEACHER' },
  alice: { id: 'usr_alice', externalId: 's-1', name: 'Alice', email: null, role: 'STUDENT' },
  bob: { id: 'usr_bob', externalId: 's-2', name: 'Bob', email: 'bob@example.com', role: 'STUDENT' },
  carol: { id: 'usr_carol', externalId: 't-2', name: 'Carol', email: null, role: 'TEACHER' },
} as const;
type Who = keyof typeof users;

/** A person's voter key, as the rooms service makes it (an HMAC in src/services/polls.ts): one per person, whatever their session. */
const vk = (who: Who) => `voter-key-of-${who}`.padEnd(22, '0');

const join = (who: Who, at: number, o: { roomRole?: RoomRole; pid?: string; conn?: string; device?: string; voter?: string | null } = {}) => ({
  type: 'JOIN',
  participantId: o.pid ?? `par_${who}`,
  sessionId: `ses_${o.pid ?? who}`,
  user: users[who],
  roomRole: o.roomRole ?? (who === 'teacher' ? 'HOST' : 'PARTICIPANT'),
  device: o.device ?? 'web',
  connectionId: o.conn ?? `conn_${o.pid ?? who}_1`,
  ...(o.voter === null ? {} : { voter: o.voter ?? vk(who) }),
  at,
});

const ofType = <T extends MeetingEffect['type']>(effects: MeetingEffect[], type: T) =>
  effects.filter((e): e is Extract<MeetingEffect, { type: T }> => e.type === type);
const outbox = (effects: MeetingEffect[]) => ofType(effects, 'outbox').map((e) => e.eventType);
const reply = (effects: MeetingEffect[]) => {
  const replies = ofType(effects, 'reply');
  if (replies.length > 1) throw new Error('more than one reply');
  return replies[0]?.body as Record<string, any> | undefined;
};
const timers = (effects: MeetingEffect[]) =>
  effects.filter((e) => e.type === 'timer.set' || e.type === 'timer.cancel').map((e) => (e.type === 'timer.set' ? `set ${e.name}@${e.dueAt - T0}` : `cancel ${e.name}`));

/** A LIVE room: the teacher (HOST) at T0, Alice at T0+1min. */
function liveRoom(input: Partial<MeetingInput> = {}) {
  const r = room(input);
  r.send({ type: 'INIT', at: T0 - 10 * MIN });
  r.send(join('teacher', T0));
  r.send(join('alice', T0 + MIN));
  return r;
}

t.test('exports', async (t) => {
  t.equal(MEETING_MACHINE_VERSION, 2);
  t.equal(RECONNECT_GRACE_MS, 15_000);
  t.equal(EMPTY_GRACE_MS, 60_000);
  t.equal(NO_SHOW_GRACE_MS, 3_600_000);
});

t.test('INIT in scheduled arms the no-show timer at scheduledEnd + 1 hour', async (t) => {
  const r = room();
  t.equal(r.state, 'scheduled');
  const fx = r.send({ type: 'INIT', at: T0 - 60 * MIN });
  t.same(timers(fx), [`set no-show@${60 * MIN + NO_SHOW_GRACE_MS}`]);
  t.same(reply(fx), { ok: true, status: 'SCHEDULED', endedReason: null });
});

t.test('the first JOIN starts the meeting: meeting.started, plan-cap timer, participant.joined, roster, reply', async (t) => {
  const r = room();
  const at = T0 + 2 * MIN;
  const fx = r.send(join('teacher', at, { device: 'android' }));
  t.equal(r.state, 'live');
  t.equal(r.context.status, 'LIVE');
  t.equal(r.context.startedAt, at);
  t.same(outbox(fx), ['meeting.started', 'participant.joined']);
  const started = ofType(fx, 'outbox')[0]!.data;
  t.strictSame(started, {
    meetingId: 'mtg_1',
    externalMeetingId: 'ext-m-1',
    kind: 'CLASS',
    title: 'Algebra',
    type: 'CLASSROOM',
    status: 'LIVE',
    slug: 'abc-defg-hjk',
    hostUserId: 'usr_teacher',
    classId: 'cls_1',
    externalClassId: 'ext-c-1',
    courseId: null,
    batchId: 'b-1',
    scheduledStart: iso(T0),
    scheduledEnd: iso(T0 + 60 * MIN),
    startedAt: iso(at),
    endedAt: null,
    durationSeconds: null,
  });
  t.strictSame(ofType(fx, 'outbox')[1]!.data, {
    meetingId: 'mtg_1',
    externalMeetingId: 'ext-m-1',
    kind: 'CLASS',
    participantId: 'par_teacher',
    user: users.teacher,
    device: 'android',
    joinedAt: iso(at),
    leftAt: null,
    durationSeconds: null,
  });
  t.same(timers(fx), ['cancel no-show', `set plan-cap@${2 * MIN + 40 * MIN}`]);
  const roster = [
    { participantId: 'par_teacher', userId: 'usr_teacher', name: 'Ada', roomRole: 'HOST', joinedAt: iso(at), micLocked: false, floor: false, askedToUnmute: false, enteredMuted: false, handRaisedAt: null, connected: true },
  ];
  t.strictSame(ofType(fx, 'send'), [{ type: 'send', to: { all: true }, message: { type: 'roster', rev: 1, participants: roster } }]);
  t.strictSame(reply(fx), {
    ok: true,
    participantId: 'par_teacher',
    roster,
    settings: { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, chat: 'everyone', privateChatToHosts: true },
    rev: 1,
    media: null,
    locked: false,
    spotlight: null,
    classroom: { polls: [], pollResults: [], answeredPolls: [], questions: [], upvotedQuestions: [], ownQuestions: [] },
    recording: null,
  });
});

t.test('later JOINs add participants without a second meeting.started', async (t) => {
  const r = liveRoom();
  const fx = r.send(join('bob', T0 + 3 * MIN));
  t.same(outbox(fx), ['participant.joined']);
  t.same(timers(fx), []);
  const roster = ofType(fx, 'send')[0]!.message;
  t.same(roster.type === 'roster' && roster.participants.map((p) => p.participantId), ['par_teacher', 'par_alice', 'par_bob']);
  t.same(reply(fx)?.roster.length, 3);
});

t.test('muteOnEntry: everyone but hosts and cohosts enters muted; settings are in the join reply', async (t) => {
  const r = room({ settings: { ...baseInput.settings, muteOnEntry: true, lectureMode: true } });
  r.send(join('teacher', T0));
  r.send(join('carol', T0 + 1, { roomRole: 'COHOST' }));
  r.send(join('alice', T0 + 2, { roomRole: 'PARTICIPANT' }));
  const fx = r.send(join('bob', T0 + 3, { roomRole: 'VIEWER' }));
  const body = reply(fx)!;
  t.same(
    body.roster.map((p: { name: string; enteredMuted: boolean; micLocked: boolean }) => [p.name, p.enteredMuted, p.micLocked]),
    [['Ada', false, false], ['Carol', false, false], ['Alice', true, false], ['Bob', true, false]],
    'entering muted is not a lock: the participant may unmute',
  );
  t.strictSame(body.settings, { waitingRoom: false, muteOnEntry: true, lectureMode: true, allowStudentScreenShare: false, chat: 'everyone', privateChatToHosts: true });
});

t.test('a reconnect within the grace emits no leave/join pair', async (t) => {
  const r = liveRoom();
  const drop = T0 + 5 * MIN;
  let fx = r.send({ type: 'DISCONNECT', participantId: 'par_alice', connectionId: 'conn_alice_1', at: drop });
  t.same(timers(fx), [`set reconnect:par_alice@${5 * MIN + RECONNECT_GRACE_MS}`]);
  t.same(outbox(fx), []);
  const during = ofType(fx, 'send')[0]!.message;
  t.same(during.type === 'roster' && during.participants.map((p) => [p.participantId, p.connected]), [['par_teacher', true], ['par_alice', false]], 'the roster shows the participant as reconnecting');
  t.same(reply(fx), undefined, 'DISCONNECT is fire-and-forget');

  fx = r.send(join('alice', drop + 10_000, { conn: 'conn_alice_2' }));
  t.same(outbox(fx), [], 'no participant.joined for a reconnect');
  t.same(timers(fx), ['cancel reconnect:par_alice']);
  const back = ofType(fx, 'send')[0]!.message;
  t.same(back.type === 'roster' && back.participants.map((p) => p.connected), [true, true], 'and back');
  t.equal(reply(fx)?.ok, true);
  t.equal(reply(fx)?.participantId, 'par_alice');
  t.same(r.context.participants.par_alice!.connections, ['conn_alice_2']);
  t.equal(r.context.participants.par_alice!.joinedAt, T0 + MIN, 'joinedAt kept');

  fx = r.send({ type: 'TIMER', name: 'reconnect:par_alice', at: drop + RECONNECT_GRACE_MS });
  t.same(fx, [], 'a stale reconnect timer changes nothing');
  t.ok(r.context.participants.par_alice);
});

t.test('a second socket of the same session replaces the first (one live socket per session and device)', async (t) => {
  const r = liveRoom();
  let fx = r.send(join('alice', T0 + 2 * MIN, { conn: 'conn_alice_2' }));
  t.same(r.context.participants.par_alice!.connections, ['conn_alice_2']);
  t.strictSame(ofType(fx, 'disconnect'), [{ type: 'disconnect', participantId: 'par_alice', code: 'replaced', connectionIds: ['conn_alice_1'] }]);
  t.same(outbox(fx), [], 'no webhook');
  fx = r.send({ type: 'DISCONNECT', participantId: 'par_alice', connectionId: 'conn_alice_1', at: T0 + 3 * MIN });
  t.same(fx, [], 'the replaced socket closing starts no grace');
  t.same(r.send({ type: 'DISCONNECT', participantId: 'par_nobody', connectionId: 'x', at: T0 + 3 * MIN }), [], 'unknown participant ignored');
});

t.test('the reconnect grace running out makes the participant leave at the time of the drop', async (t) => {
  const r = liveRoom();
  const drop = T0 + 11 * MIN;
  r.send({ type: 'DISCONNECT', participantId: 'par_alice', connectionId: 'conn_alice_1', at: drop });
  t.same(r.send({ type: 'TIMER', name: 'reconnect:par_alice', at: drop + 1000 }), [], 'an early timer is ignored');
  const fx = r.send({ type: 'TIMER', name: 'reconnect:par_alice', at: drop + RECONNECT_GRACE_MS + 5 });
  t.same(outbox(fx), ['participant.left']);
  const left = ofType(fx, 'outbox')[0]!.data;
  t.match(left, { participantId: 'par_alice', joinedAt: iso(T0 + MIN), leftAt: iso(drop), durationSeconds: 600 });
  t.same(ofType(fx, 'disconnect'), [], 'nothing left to close');
  t.same(timers(fx), []);
  t.equal(ofType(fx, 'send').length, 1, 'roster broadcast');
  t.same(reply(fx), undefined);
  t.notOk(r.context.participants.par_alice);
});

t.test('LEAVE: participant.left at once; the last one out starts the empty-room grace', async (t) => {
  const r = liveRoom();
  let fx = r.send({ type: 'LEAVE', participantId: 'par_alice', at: T0 + 10 * MIN });
  t.same(outbox(fx), ['participant.left']);
  t.match(ofType(fx, 'outbox')[0]!.data, { leftAt: iso(T0 + 10 * MIN), durationSeconds: 540 });
  t.same(ofType(fx, 'disconnect'), [{ type: 'disconnect', participantId: 'par_alice', code: 'left' }], 'her other tabs close');
  t.same(timers(fx), []);
  t.same(reply(fx), { ok: true, left: ['par_alice'] });

  fx = r.send({ type: 'LEAVE', participantId: 'par_teacher', at: T0 + 12 * MIN });
  t.same(timers(fx), [`set empty-grace@${12 * MIN + EMPTY_GRACE_MS}`]);
  t.equal(r.state, 'live');
  t.equal(r.context.emptySince, T0 + 12 * MIN);

  fx = r.send({ type: 'LEAVE', participantId: 'par_teacher', at: T0 + 12 * MIN + 1 });
  t.same(fx, [{ type: 'reply', body: { ok: true, left: [] } }], 'leaving twice is fine');
});

t.test('joining during the empty-room grace cancels it', async (t) => {
  const r = liveRoom();
  r.send({ type: 'LEAVE', participantId: 'par_alice', at: T0 + 10 * MIN });
  r.send({ type: 'LEAVE', participantId: 'par_teacher', at: T0 + 10 * MIN });
  const fx = r.send(join('bob', T0 + 10 * MIN + 30_000));
  t.same(timers(fx), ['cancel empty-grace']);
  t.same(outbox(fx), ['participant.joined']);
  t.equal(r.context.emptySince, null);
  t.same(r.send({ type: 'TIMER', name: 'empty-grace', at: T0 + 11 * MIN }), [], 'a stale grace timer is ignored');
  t.equal(r.state, 'live');
});

t.test('the empty-room grace running out ends the meeting ROOM_FINISHED', async (t) => {
  const r = liveRoom();
  r.send({ type: 'LEAVE', participantId: 'par_alice', at: T0 + 19 * MIN });
  r.send({ type: 'LEAVE', participantId: 'par_teacher', at: T0 + 20 * MIN });
  const fx = r.send({ type: 'TIMER', name: 'empty-grace', at: T0 + 21 * MIN });
  t.equal(r.state, 'ended');
  t.ok(r.actor.getSnapshot().hasTag('closed'));
  t.equal(r.actor.getSnapshot().status, 'active', 'still answers');
  t.same(outbox(fx), ['meeting.ended']);
  t.match(ofType(fx, 'outbox')[0]!.data, {
    status: 'ENDED',
    startedAt: iso(T0),
    endedAt: iso(T0 + 20 * MIN),
    durationSeconds: 1200,
    endedReason: 'ROOM_FINISHED',
  });
  t.same(timers(fx), ['cancel plan-cap', 'cancel empty-grace', `set attendance-settle@${26 * MIN}`], 'attendance settles 5 minutes after the end is known');
  t.same(reply(fx), undefined);
  t.match(r.context, { status: 'ENDED', endedReason: 'ROOM_FINISHED', endedAt: T0 + 20 * MIN });
});

t.test('the plan cap ends the meeting PLAN_LIMIT; everyone still in leaves and is disconnected', async (t) => {
  const r = liveRoom();
  r.send({ type: 'DISCONNECT', participantId: 'par_alice', connectionId: 'conn_alice_1', at: T0 + 39 * MIN + 55_000 });
  t.same(r.send({ type: 'TIMER', name: 'plan-cap', at: T0 + 39 * MIN }), [], 'before the cap: ignored');
  const fx = r.send({ type: 'TIMER', name: 'plan-cap', at: T0 + 40 * MIN + 200 });
  t.equal(r.state, 'ended');
  t.same(outbox(fx), ['participant.left', 'participant.left', 'meeting.ended']);
  const [teacherLeft, aliceLeft, ended] = ofType(fx, 'outbox').map((e) => e.data);
  t.match(teacherLeft, { participantId: 'par_teacher', leftAt: iso(T0 + 40 * MIN), durationSeconds: 2400 });
  t.match(aliceLeft, { participantId: 'par_alice', leftAt: iso(T0 + 39 * MIN + 55_000) }, 'left when her connection dropped');
  t.match(ended, { endedReason: 'PLAN_LIMIT', endedAt: iso(T0 + 40 * MIN), durationSeconds: 2400 });
  t.same(ofType(fx, 'disconnect'), [
    { type: 'disconnect', participantId: 'par_teacher', code: 'meeting_ended' },
    { type: 'disconnect', participantId: 'par_alice', code: 'meeting_ended' },
  ]);
  t.same(timers(fx), ['cancel plan-cap', 'cancel reconnect:par_alice', `set attendance-settle@${45 * MIN + 200}`]);
  t.same(ofType(fx, 'attendance'), [
    { type: 'attendance', participantId: 'par_teacher', userId: users.teacher.id, joinedAt: T0, leftAt: T0 + 40 * MIN },
    { type: 'attendance', participantId: 'par_alice', userId: users.alice.id, joinedAt: T0 + MIN, leftAt: T0 + 39 * MIN + 55_000 },
  ], 'every stay still open ends with the meeting (at the drop for someone in the reconnect grace)');
  t.same(r.context.participants, {});
});

t.test('END by a host or through the API ends it HOST_ENDED; anyone else is refused', async (t) => {
  const r = liveRoom();
  let fx = r.send({ type: 'END', by: 'par_alice', at: T0 + 5 * MIN });
  t.equal(r.state, 'live');
  t.match(reply(fx), { ok: false, error: { code: 'forbidden' } });
  t.equal(fx.length, 1);
  fx = r.send({ type: 'END', by: 'par_stranger', at: T0 + 5 * MIN });
  t.match(reply(fx), { ok: false, error: { code: 'forbidden' } });

  fx = r.send({ type: 'END', by: 'par_teacher', at: T0 + 30 * MIN });
  t.equal(r.state, 'ended');
  t.same(outbox(fx), ['participant.left', 'participant.left', 'meeting.ended']);
  t.match(ofType(fx, 'outbox')[2]!.data, { endedReason: 'HOST_ENDED', durationSeconds: 1800, endedAt: iso(T0 + 30 * MIN) });
  t.same(ofType(fx, 'disconnect').map((d) => d.code), ['meeting_ended', 'meeting_ended']);
  const told = fx.findIndex((e) => e.type === 'send' && (e.message as { type: string }).type === 'ended');
  t.match(fx[told], { to: { all: true }, message: { type: 'ended', reason: 'HOST_ENDED' } }, 'everyone is told why');
  t.ok(told < fx.findIndex((e) => e.type === 'disconnect'), 'before their sockets close');
  t.same(reply(fx), { ok: true, status: 'ENDED', endedReason: 'HOST_ENDED' });

  fx = r.send({ type: 'END', byApi: true, at: T0 + 31 * MIN });
  t.same(fx, [{ type: 'reply', body: { ok: true, status: 'ENDED', endedReason: 'HOST_ENDED' } }], 'ending again: no second event');

  fx = r.send(join('bob', T0 + 32 * MIN));
  t.same(fx, [
    { type: 'reply', body: { ok: false, error: { code: 'meeting_ended', message: 'The meeting has ended or was cancelled.', details: { status: 'ENDED' } } } },
  ]);
  t.match(reply(r.send({ type: 'CANCEL', at: T0 + 33 * MIN })), { ok: false, error: { code: 'invalid_state' } });
  t.match(reply(r.send({ type: 'UPDATE', title: 'x', at: T0 + 33 * MIN })), { ok: false, error: { code: 'invalid_state' } });
});

t.test('END through the API; END of a scheduled meeting is invalid_state', async (t) => {
  const s = room();
  t.match(reply(s.send({ type: 'END', byApi: true, at: T0 })), { ok: false, error: { code: 'invalid_state', details: { status: 'SCHEDULED' } } });
  const r = liveRoom();
  const fx = r.send({ type: 'END', byApi: true, at: T0 + 2 * MIN });
  t.equal(r.state, 'ended');
  t.match(ofType(fx, 'outbox').at(-1)!.data, { endedReason: 'HOST_ENDED' });
});

t.test('REMOVE: host only; the removed participant leaves, is disconnected and may not come back', async (t) => {
  const r = liveRoom();
  r.send(join('carol', T0 + 2 * MIN, { roomRole: 'COHOST' }));
  t.match(reply(r.send({ type: 'REMOVE', participantId: 'par_carol', by: 'par_alice', at: T0 + 3 * MIN })), { ok: false, error: { code: 'forbidden' } });
  t.match(reply(r.send({ type: 'REMOVE', participantId: 'par_teacher', by: 'par_carol', at: T0 + 3 * MIN })), { ok: false, error: { code: 'forbidden' } }, 'a cohost cannot remove the host');
  t.match(reply(r.send({ type: 'REMOVE', participantId: 'par_nobody', by: 'par_teacher', at: T0 + 3 * MIN })), {
    ok: false,
    error: { code: 'not_found', details: { participantId: 'par_nobody' } },
  });

  const fx = r.send({ type: 'REMOVE', participantId: 'par_alice', by: 'par_carol', at: T0 + 4 * MIN });
  t.same(outbox(fx), ['participant.left']);
  t.match(ofType(fx, 'outbox')[0]!.data, { participantId: 'par_alice', leftAt: iso(T0 + 4 * MIN), durationSeconds: 180 });
  t.same(ofType(fx, 'disconnect'), [{ type: 'disconnect', participantId: 'par_alice', code: 'removed' }]);
  const roster = ofType(fx, 'send')[0]!.message;
  t.same(roster.type === 'roster' && roster.participants.map((p) => p.participantId), ['par_teacher', 'par_carol']);
  t.same(reply(fx), { ok: true, left: ['par_alice'] });

  const back = r.send(join('alice', T0 + 5 * MIN));
  t.match(reply(back), { ok: false, error: { code: 'participant_removed' } });
  t.equal(back.length, 1);
  t.notOk(r.context.participants.par_alice);
});

t.test('MUTE locks a microphone until ALLOW_UNMUTE; ASK_UNMUTE tells the hosts; only hosts mute and allow', async (t) => {
  const r = liveRoom();
  let fx = r.send({ type: 'MUTE', participantId: 'par_alice', by: 'par_teacher', at: T0 + 2 * MIN });
  t.same(ofType(fx, 'send').map((e) => [e.to, e.message.type]), [[{ participantId: 'par_alice' }, 'muted'], [{ all: true }, 'roster']]);
  t.equal(r.context.participants.par_alice!.micLocked, true);
  t.match(reply(fx), { ok: true });
  fx = r.send({ type: 'MUTE', participantId: 'par_teacher', by: 'par_alice', at: T0 + 2 * MIN });
  t.same(ofType(fx, 'send'), []);
  t.match(reply(fx), { ok: false, error: { code: 'forbidden' } }, 'RoomAccess refuses a student');
  fx = r.send({ type: 'ASK_UNMUTE', participantId: 'par_alice', at: T0 + 3 * MIN });
  t.strictSame(ofType(fx, 'send')[0], { type: 'send', to: { role: 'hosts' }, message: { type: 'unmute-requested', participantId: 'par_alice', name: 'Alice' } });
  t.same(ofType(r.send({ type: 'ASK_UNMUTE', participantId: 'par_alice', at: T0 + 3 * MIN }), 'send'), [], 'asking again does not repeat the request');
  t.match(reply(r.send({ type: 'ALLOW_UNMUTE', participantId: 'par_alice', by: 'par_alice', at: T0 + 4 * MIN })), { ok: false, error: { code: 'forbidden' } });
  fx = r.send({ type: 'ALLOW_UNMUTE', participantId: 'par_alice', by: 'par_teacher', at: T0 + 4 * MIN });
  t.same(ofType(fx, 'send').map((e) => e.message.type), ['unmute-allowed', 'roster']);
  t.match(r.context.participants.par_alice, { micLocked: false, askedToUnmute: false, floor: false }, 'no floor outside lecture mode');
  t.match(reply(r.send({ type: 'MUTE', participantId: 'par_x', by: 'par_teacher', at: T0 })), { error: { code: 'not_found' } });
  t.match(reply(room().send({ type: 'MUTE', participantId: 'par_x', by: 'par_y', at: T0 })), { error: { code: 'invalid_state' } });
});

t.test('MUTE_ALL locks every microphone but the hosts\' and cohosts\'', async (t) => {
  const r = liveRoom();
  r.send(join('carol', T0 + 2 * MIN, { roomRole: 'COHOST' }));
  r.send(join('bob', T0 + 3 * MIN));
  const fx = r.send({ type: 'MUTE_ALL', by: 'par_carol', at: T0 + 4 * MIN });
  t.strictSame(reply(fx), { ok: true, muted: ['par_alice', 'par_bob'] });
  t.same(ofType(fx, 'send').map((e) => [e.to, e.message.type]), [[{ participantId: 'par_alice' }, 'muted'], [{ participantId: 'par_bob' }, 'muted'], [{ all: true }, 'roster']]);
  t.same(Object.values(r.context.participants).map((p) => [p.participantId, p.micLocked]), [['par_teacher', false], ['par_alice', true], ['par_carol', false], ['par_bob', true]]);
  t.strictSame(reply(r.send({ type: 'MUTE_ALL', by: 'par_carol', at: T0 + 5 * MIN })), { ok: true, muted: [] }, 'again: nobody left to mute');
  t.match(reply(r.send({ type: 'MUTE_ALL', by: 'par_bob', at: T0 + 5 * MIN })), { ok: false, error: { code: 'forbidden' } });
});

t.test('lecture mode: FLOOR gives and takes the floor; ALLOW_UNMUTE gives it too', async (t) => {
  const r = liveRoom({ settings: { ...baseInput.settings, lectureMode: true } });
  let fx = r.send({ type: 'FLOOR', participantId: 'par_alice', by: 'par_teacher', give: true, at: T0 + 2 * MIN });
  t.strictSame(ofType(fx, 'send')[0], { type: 'send', to: { participantId: 'par_alice' }, message: { type: 'floor', give: true, by: 'par_teacher' } });
  t.equal(r.context.participants.par_alice!.floor, true);
  r.send({ type: 'FLOOR', participantId: 'par_alice', by: 'par_teacher', give: false, at: T0 + 3 * MIN });
  t.equal(r.context.participants.par_alice!.floor, false);
  r.send({ type: 'ALLOW_UNMUTE', participantId: 'par_alice', by: 'par_teacher', at: T0 + 4 * MIN });
  t.equal(r.context.participants.par_alice!.floor, true);
  t.match(reply(r.send({ type: 'FLOOR', participantId: 'par_teacher', by: 'par_alice', give: true, at: T0 })), { error: { code: 'forbidden' } });
});

t.test('PLACE_MEDIA: the first JOIN that offers a place places the media; re-placing is compare-and-set on the revision', async (t) => {
  const r = room();
  let fx = r.send({ ...join('teacher', T0), media: { nodeId: 'm-a', worker: 0 } });
  t.strictSame(reply(fx)!.media, { nodeId: 'm-a', worker: 0, rev: 1 });
  t.ok(ofType(fx, 'send').some((e) => e.message.type === 'media'), 'everyone hears where the media is');
  fx = r.send({ ...join('alice', T0 + 1), media: { nodeId: 'm-b', worker: 1 } });
  t.strictSame(reply(fx)!.media, { nodeId: 'm-a', worker: 0, rev: 1 }, 'a later JOIN does not move it');
  fx = r.send({ type: 'PLACE_MEDIA', rev: 1, to: { nodeId: 'm-b', worker: 1 }, at: T0 + 2 });
  t.strictSame(reply(fx), { ok: true, media: { nodeId: 'm-b', worker: 1, rev: 2 } });
  t.strictSame(ofType(fx, 'send'), [{ type: 'send', to: { all: true }, message: { type: 'media', media: { nodeId: 'm-b', worker: 1, rev: 2 } } }]);
  fx = r.send({ type: 'PLACE_MEDIA', rev: 1, to: { nodeId: 'm-c', worker: 0 }, at: T0 + 3 });
  t.strictSame(reply(fx), { ok: true, media: { nodeId: 'm-b', worker: 1, rev: 2 } }, 'a stale revision loses: nodes racing to re-place agree on one');
  t.same(ofType(fx, 'send'), []);
  t.match(reply(r.send({ type: 'ROOM_STATE', at: T0 + 4 })), { ok: true, status: 'LIVE', media: { rev: 2 }, roster: [{ participantId: 'par_teacher' }, { participantId: 'par_alice' }] });
  fx = r.send({ type: 'END', by: 'par_teacher', at: T0 + 5 });
  t.ok(ofType(fx, 'send').some((e) => e.message.type === 'media' && e.message.media === null), 'ending the room closes its media');
  t.equal(r.context.media, null);
});

t.test('DEACTIVATE_USER: every participant of that user leaves and is disconnected', async (t) => {
  const r = liveRoom();
  r.send(join('alice', T0 + 2 * MIN, { pid: 'par_alice_phone', device: 'ios' }));
  r.send(join('bob', T0 + 2 * MIN));
  const fx = r.send({ type: 'DEACTIVATE_USER', userId: 'usr_alice', at: T0 + 6 * MIN });
  t.same(outbox(fx), ['participant.left', 'participant.left']);
  t.same(ofType(fx, 'disconnect'), [
    { type: 'disconnect', participantId: 'par_alice', code: 'user_deactivated' },
    { type: 'disconnect', participantId: 'par_alice_phone', code: 'user_deactivated' },
  ]);
  t.equal(ofType(fx, 'send').length, 1, 'one roster broadcast');
  t.same(reply(fx), { ok: true, left: ['par_alice', 'par_alice_phone'] });
  t.same(Object.keys(r.context.participants), ['par_teacher', 'par_bob']);
  t.same(reply(r.send({ type: 'DEACTIVATE_USER', userId: 'usr_alice', at: T0 + 7 * MIN })), { ok: true, left: [] });
});

t.test('CANCEL: a scheduled meeting is cancelled; a live one is not', async (t) => {
  const r = room();
  r.send({ type: 'INIT', at: T0 - 60 * MIN });
  let fx = r.send({ type: 'CANCEL', at: T0 - 30 * MIN });
  t.equal(r.state, 'cancelled');
  t.same(outbox(fx), ['meeting.cancelled']);
  const data = ofType(fx, 'outbox')[0]!.data;
  t.match(data, { status: 'CANCELLED', startedAt: null, endedAt: null, durationSeconds: null });
  t.notOk('endedReason' in data, 'endedReason only on ENDED');
  t.same(timers(fx), ['cancel no-show']);
  t.same(reply(fx), { ok: true, status: 'CANCELLED', endedReason: null });
  t.equal(r.context.cancelledAt, T0 - 30 * MIN);

  fx = r.send({ type: 'CANCEL', at: T0 - 29 * MIN });
  t.same(fx, [{ type: 'reply', body: { ok: true, status: 'CANCELLED', endedReason: null } }], 'cancelling again: no second event');
  t.match(reply(r.send(join('alice', T0))), { ok: false, error: { code: 'meeting_ended', details: { status: 'CANCELLED' } } });
  t.match(reply(r.send({ type: 'END', byApi: true, at: T0 })), { ok: false, error: { code: 'invalid_state' } });

  const live = liveRoom();
  t.match(reply(live.send({ type: 'CANCEL', at: T0 + 2 * MIN })), { ok: false, error: { code: 'invalid_state', details: { status: 'LIVE' } } });
  t.equal(live.state, 'live');
});

t.test('no-show: a scheduled meeting nobody started ends TIMEOUT, silently', async (t) => {
  const r = room();
  r.send({ type: 'INIT', at: T0 - 60 * MIN });
  const due = T0 + 60 * MIN + NO_SHOW_GRACE_MS;
  t.same(r.send({ type: 'TIMER', name: 'no-show', at: due - 1 }), [], 'early: ignored');
  t.same(r.send({ type: 'TIMER', name: 'plan-cap', at: due }), [], 'other timers mean nothing while scheduled');
  const fx = r.send({ type: 'TIMER', name: 'no-show', at: due + 50 });
  t.same(fx, [], 'no webhook: TIMEOUT is declared but not sent');
  t.equal(r.state, 'expired');
  t.ok(r.actor.getSnapshot().hasTag('closed'));
  t.match(r.context, { status: 'ENDED', endedReason: 'TIMEOUT', endedAt: due, startedAt: null });
  t.match(reply(r.send(join('teacher', due + MIN))), { ok: false, error: { code: 'meeting_ended' } });
  t.same(reply(r.send({ type: 'END', byApi: true, at: due + MIN })), { ok: true, status: 'ENDED', endedReason: 'TIMEOUT' });
});

t.test('UPDATE moves the no-show deadline with the schedule; a stale no-show timer is then ignored', async (t) => {
  const r = room();
  r.send({ type: 'INIT', at: T0 - 60 * MIN });
  const fx = r.send({ type: 'UPDATE', scheduledStart: iso(T0 + 24 * 60 * MIN), scheduledEnd: iso(T0 + 25 * 60 * MIN), title: 'Algebra II', at: T0 });
  t.same(timers(fx), [`set no-show@${25 * 60 * MIN + NO_SHOW_GRACE_MS}`]);
  t.same(reply(fx), { ok: true });
  t.same(r.send({ type: 'TIMER', name: 'no-show', at: T0 + 60 * MIN + NO_SHOW_GRACE_MS }), []);
  t.equal(r.state, 'scheduled');
  const started = r.send(join('teacher', T0 + 24 * 60 * MIN));
  t.match(ofType(started, 'outbox')[0]!.data, { title: 'Algebra II', scheduledStart: iso(T0 + 24 * 60 * MIN) });
});

t.test('UPDATE in a live room: new settings go to everyone, a new plan cap re-arms its timer', async (t) => {
  const r = liveRoom();
  const fx = r.send({ type: 'UPDATE', settings: { allowStudentScreenShare: true }, planMaxMinutes: 300, at: T0 + 5 * MIN });
  t.same(timers(fx), [`set plan-cap@${300 * MIN}`]);
  t.same(ofType(fx, 'send'), [
    { type: 'send', to: { all: true }, message: { type: 'settings', rev: 3, settings: { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: true, chat: 'everyone', privateChatToHosts: true } } },
  ]);
  t.same(r.send({ type: 'TIMER', name: 'plan-cap', at: T0 + 40 * MIN }), [], 'the old cap no longer ends it');
  t.equal(r.state, 'live');
  t.same(ofType(r.send({ type: 'UPDATE', settings: { recordAutomatically: true }, at: T0 + 6 * MIN }), 'send'), [], 'no client-visible change, no message');
});

t.test('created from a LIVE row: INIT arms the plan cap from startedAt and the empty-room grace', async (t) => {
  const r = room({ status: 'LIVE', startedAt: iso(T0) });
  t.equal(r.state, 'live');
  const fx = r.send({ type: 'INIT', at: T0 + 10 * MIN });
  t.same(timers(fx), [`set plan-cap@${40 * MIN}`, `set empty-grace@${10 * MIN + EMPTY_GRACE_MS}`]);
  const end = r.send({ type: 'TIMER', name: 'empty-grace', at: T0 + 11 * MIN });
  t.equal(r.state, 'ended');
  t.match(ofType(end, 'outbox')[0]!.data, { endedReason: 'ROOM_FINISHED', durationSeconds: 600 });
});

t.test('created from ENDED and CANCELLED rows', async (t) => {
  const ended = room({ status: 'ENDED', startedAt: iso(T0), endedAt: iso(T0 + MIN), endedReason: 'HOST_ENDED' });
  t.equal(ended.state, 'ended');
  t.match(reply(ended.send(join('alice', T0 + 2 * MIN))), { error: { code: 'meeting_ended' } });
  t.equal(room({ status: 'ENDED', endedReason: 'TIMEOUT', endedAt: iso(T0) }).state, 'expired');
  t.equal(room({ status: 'CANCELLED' }).state, 'cancelled');
});

t.test('meeting.* data has the keys and values of meetingEventData in src/services/meetings.ts', async (t) => {
  const r = liveRoom({ externalMeetingId: null, kind: 'MEETING', type: 'MEETING', classId: null, externalClassId: null, batchId: null });
  const fx = r.send({ type: 'END', by: 'par_teacher', at: T0 + 25 * MIN + 499 });
  const fromMachine = ofType(fx, 'outbox').find((e) => e.eventType === 'meeting.ended')!.data;
  const row: MeetingRow = {
    id: 'mtg_1',
    orgId: 'org_1',
    externalId: null,
    slug: 'abc-defg-hjk',
    kind: 'MEETING',
    title: 'Algebra',
    classId: null,
    batchId: null,
    hostUserId: 'usr_teacher',
    scheduledStart: new Date(T0),
    durationMinutes: 60,
    settings: { chat: 'everyone', privateChatToHosts: true, ...baseInput.settings, maxParticipants: null },
    accessMode: 'ORG_MEMBERS',
    locked: false,
    atCapacity: false,
    status: 'ENDED',
    startedAt: new Date(T0),
    endedAt: new Date(T0 + 25 * MIN + 499),
    endedReason: 'HOST_ENDED',
    cancelledAt: null,
    createdAt: new Date(T0 - 1000),
    updatedAt: new Date(T0),
    externalClassId: null,
    courseId: null,
  };
  t.strictSame(fromMachine, meetingEventData(row));
});

t.test('snapshot round trip mid-meeting: JSON, restore, continue with identical results', async (t) => {
  const a = liveRoom({ settings: { ...baseInput.settings, muteOnEntry: true } });
  a.send(join('bob', T0 + 2 * MIN));
  a.send({ type: 'DISCONNECT', participantId: 'par_bob', connectionId: 'conn_bob_1', at: T0 + 3 * MIN });
  a.send({ type: 'REMOVE', participantId: 'par_alice', by: 'par_teacher', at: T0 + 4 * MIN });

  const persisted = a.actor.getPersistedSnapshot();
  const json = JSON.stringify(persisted);
  // XState's own output/error are undefined (dropped by JSON); everything the machine keeps is plain JSON.
  t.strictSame(JSON.parse(json).context, a.context, 'the context is plain JSON');
  t.match(JSON.parse(json), { status: 'active', value: 'live', children: {} });
  const b = room({}, JSON.parse(json));
  t.equal(b.state, 'live');
  t.strictSame(b.context, a.context);

  const rest: Record<string, unknown>[] = [
    join('alice', T0 + 5 * MIN),
    join('bob', T0 + 3 * MIN + 5000, { conn: 'conn_bob_2' }),
    join('carol', T0 + 6 * MIN, { roomRole: 'COHOST' }),
    { type: 'DISCONNECT', participantId: 'par_carol', connectionId: 'conn_carol_1', at: T0 + 7 * MIN },
    { type: 'TIMER', name: 'reconnect:par_carol', at: T0 + 7 * MIN + RECONNECT_GRACE_MS },
    { type: 'MUTE', participantId: 'par_bob', by: 'par_teacher', at: T0 + 8 * MIN },
    { type: 'LEAVE', participantId: 'par_bob', at: T0 + 9 * MIN },
    { type: 'LEAVE', participantId: 'par_teacher', at: T0 + 10 * MIN },
    { type: 'TIMER', name: 'empty-grace', at: T0 + 11 * MIN },
  ];
  for (const event of rest) t.strictSame(b.send(event), a.send(event), `${event.type} ${String(event.participantId ?? event.name ?? '')}`);
  t.equal(b.state, 'ended');
  t.strictSame(b.actor.getPersistedSnapshot(), a.actor.getPersistedSnapshot());
});

t.test('the machine never reads the clock', async (t) => {
  const now = Date.now;
  Date.now = () => {
    throw new Error('Date.now() called');
  };
  t.teardown(() => {
    Date.now = now;
  });
  const r = liveRoom();
  r.send({ type: 'DISCONNECT', participantId: 'par_alice', connectionId: 'conn_alice_1', at: T0 + 2 * MIN });
  r.send({ type: 'TIMER', name: 'reconnect:par_alice', at: T0 + 3 * MIN });
  r.send({ type: 'END', by: 'par_teacher', at: T0 + 4 * MIN });
  t.equal(r.state, 'ended');
});

t.test('zod schemas refuse malformed events and input', async (t) => {
  const ok = join('alice', T0);
  t.ok(meetingEvent.safeParse(ok).success);
  const bad: [string, unknown][] = [
    ['unknown type', { type: 'EXPLODE', at: T0 }],
    ['no at', { type: 'LEAVE', participantId: 'p' }],
    ['at as a string', { type: 'LEAVE', participantId: 'p', at: iso(T0) }],
    ['negative at', { type: 'LEAVE', participantId: 'p', at: -1 }],
    ['fractional at', { type: 'LEAVE', participantId: 'p', at: 1.5 }],
    ['JOIN without connectionId', { ...ok, connectionId: undefined }],
    ['JOIN with a bad room role', { ...ok, roomRole: 'OWNER' }],
    ['JOIN with a bad device', { ...ok, device: 'fax' }],
    ['JOIN with a bad org role', { ...ok, user: { ...users.alice, role: 'GUEST' } }],
    ['JOIN with an empty participantId', { ...ok, participantId: '' }],
    ['END with neither by nor byApi', { type: 'END', at: T0 }],
    ['END with both', { type: 'END', by: 'p', byApi: true, at: T0 }],
    ['END with byApi false', { type: 'END', byApi: false, at: T0 }],
    ['REMOVE without by', { type: 'REMOVE', participantId: 'p', at: T0 }],
    ['TIMER without name', { type: 'TIMER', at: T0 }],
    ['UPDATE with a bad date', { type: 'UPDATE', scheduledEnd: 'tomorrow', at: T0 }],
    ['not an object', 'JOIN'],
  ];
  for (const [name, value] of bad) t.notOk(meetingEvent.safeParse(value).success, name);

  t.ok(meetingInput.safeParse(baseInput).success);
  t.notOk(meetingInput.safeParse({ ...baseInput, status: 'PAUSED' }).success, 'unknown status');
  t.notOk(meetingInput.safeParse({ ...baseInput, planMaxMinutes: 0 }).success, 'plan cap must be positive');
  t.notOk(meetingInput.safeParse({ ...baseInput, scheduledEnd: 'soon' }).success, 'scheduledEnd must be ISO');
});

t.test('attendance: every stay is an effect, a reconnect within the grace is not a leave, and the settle timer finalizes once', async (t) => {
  const r = room({ attendanceSettleMinutes: 7 });
  r.send({ type: 'INIT', at: T0 - 10 * MIN });
  let fx = r.send(join('teacher', T0));
  t.same(ofType(fx, 'attendance'), [{ type: 'attendance', participantId: 'par_teacher', userId: users.teacher.id, joinedAt: T0, leftAt: null }]);
  r.send(join('alice', T0 + MIN));
  fx = r.send({ type: 'DISCONNECT', participantId: 'par_alice', connectionId: 'conn_alice_1', at: T0 + 5 * MIN });
  t.same(ofType(fx, 'attendance'), [], 'a dropped connection is not a leave yet');
  fx = r.send(join('alice', T0 + 5 * MIN + 10_000, { conn: 'conn_alice_2' }));
  t.same(ofType(fx, 'attendance'), [], 'a reconnect within the grace continues the stay');
  fx = r.send({ type: 'LEAVE', participantId: 'par_alice', at: T0 + 10 * MIN });
  t.same(ofType(fx, 'attendance'), [{ type: 'attendance', participantId: 'par_alice', userId: users.alice.id, joinedAt: T0 + MIN, leftAt: T0 + 10 * MIN }]);
  fx = r.send(join('alice', T0 + 12 * MIN, { conn: 'conn_alice_3' }));
  t.same(ofType(fx, 'attendance'), [{ type: 'attendance', participantId: 'par_alice', userId: users.alice.id, joinedAt: T0 + 12 * MIN, leftAt: null }], 'coming back is a new stay');

  fx = r.send({ type: 'END', by: 'par_teacher', at: T0 + 30 * MIN });
  t.same(ofType(fx, 'attendance').map((e) => e.leftAt), [T0 + 30 * MIN, T0 + 30 * MIN]);
  t.same(timers(fx).at(-1), `set attendance-settle@${37 * MIN}`, "the organization's settle window");
  t.same(r.send({ type: 'TIMER', name: 'plan-cap', at: T0 + 37 * MIN }), [], 'another timer after the end changes nothing');

  fx = r.send({ type: 'TIMER', name: 'attendance-settle', at: T0 + 37 * MIN });
  t.same(fx, [{ type: 'attendance.finalize' }]);
  t.equal(r.context.attendanceFinalizedAt, T0 + 37 * MIN);
  t.equal(r.state, 'ended');
  t.same(r.send({ type: 'TIMER', name: 'attendance-settle', at: T0 + 38 * MIN }), [], 'a repeated timer finalizes nothing again');

  // a snapshot taken before attendance existed (no settle fields) still settles, on the default window
  const old = JSON.parse(JSON.stringify(liveRoom().actor.getPersistedSnapshot()));
  delete old.context.attendanceSettleMs;
  delete old.context.attendanceFinalizedAt;
  const restored = room({}, old);
  fx = restored.send({ type: 'END', byApi: true, at: T0 + 20 * MIN });
  t.same(timers(fx).at(-1), `set attendance-settle@${25 * MIN}`);
  t.same(restored.send({ type: 'TIMER', name: 'attendance-settle', at: T0 + 25 * MIN }), [{ type: 'attendance.finalize' }]);
});

t.test('a meeting that never went live has no attendance to settle', async (t) => {
  const r = room();
  r.send({ type: 'INIT', at: T0 - 10 * MIN });
  r.send({ type: 'TIMER', name: 'no-show', at: T0 + 60 * MIN + 60 * MIN });
  t.equal(r.state, 'expired');
  t.same(r.send({ type: 'TIMER', name: 'attendance-settle', at: T0 + 200 * MIN }), []);
});

t.test('LOCK: hosts lock and unlock; nobody new gets in meanwhile, hosts and people already in do', async (t) => {
  const r = liveRoom();
  t.match(reply(r.send({ type: 'LOCK', by: 'par_alice', locked: true, at: T0 + 2 * MIN })), { ok: false, error: { code: 'forbidden' } }, 'students cannot');
  let fx = r.send({ type: 'LOCK', by: 'par_teacher', locked: true, at: T0 + 2 * MIN });
  t.same(reply(fx), { ok: true, locked: true });
  t.same(ofType(fx, 'send'), [{ type: 'send', to: { all: true }, message: { type: 'locked', locked: true, by: 'par_teacher' } }]);
  t.same(ofType(r.send({ type: 'LOCK', by: 'par_teacher', locked: true, at: T0 + 2 * MIN }), 'send'), [], 'locking again tells nobody');

  fx = r.send(join('bob', T0 + 3 * MIN));
  t.match(reply(fx), { ok: false, error: { code: 'meeting_locked' } });
  t.same(outbox(fx), [], 'no participant.joined');
  t.notOk('par_bob' in r.context.participants);
  fx = r.send(join('alice', T0 + 3 * MIN, { conn: 'conn_alice_2' }));
  t.match(reply(fx), { ok: true, participantId: 'par_alice', locked: true }, 'someone already in reconnects');
  fx = r.send(join('bob', T0 + 3 * MIN, { pid: 'par_bob_cohost', roomRole: 'COHOST' }));
  t.match(reply(fx), { ok: true, locked: true }, 'a cohost gets in');

  r.send({ type: 'LOCK', by: 'par_teacher', locked: false, at: T0 + 4 * MIN });
  t.match(reply(r.send(join('bob', T0 + 5 * MIN))), { ok: true, locked: false });
  t.match(reply(r.send({ type: 'ROOM_STATE', at: T0 + 5 * MIN })), { locked: false });
});

t.test('a full room refuses newcomers: the lower of the meeting setting and the plan cap; hosts still get in', async (t) => {
  const r = liveRoom({ maxParticipants: 3, planMaxParticipants: 100 });
  t.match(reply(r.send(join('bob', T0 + 2 * MIN))), { ok: true }, 'the third');
  const fx = r.send(join('bob', T0 + 2 * MIN, { pid: 'par_bob_2' }));
  t.match(reply(fx), { ok: false, error: { code: 'meeting_full', details: { limit: 3 } } });
  t.match(reply(r.send(join('teacher', T0 + 2 * MIN, { pid: 'par_teacher_2', roomRole: 'HOST' }))), { ok: true }, 'a host gets in past the cap');
  r.send({ type: 'LEAVE', participantId: 'par_bob', at: T0 + 3 * MIN });
  r.send({ type: 'LEAVE', participantId: 'par_teacher_2', at: T0 + 3 * MIN });
  t.match(reply(r.send(join('bob', T0 + 4 * MIN, { pid: 'par_bob_2' }))), { ok: true }, 'room again once people left');
  r.send({ type: 'UPDATE', maxParticipants: null, at: T0 + 5 * MIN });
  t.match(reply(r.send(join('bob', T0 + 5 * MIN, { pid: 'par_bob_3' }))), { ok: true }, 'the setting cleared: the plan cap alone');

  const byPlan = liveRoom({ maxParticipants: null, planMaxParticipants: 2 });
  t.match(reply(byPlan.send(join('bob', T0 + 2 * MIN))), { ok: false, error: { code: 'meeting_full', details: { limit: 2 } } });
});

t.test('a join the plan does not allow to start the meeting is refused and starts nothing', async (t) => {
  const r = room();
  r.send({ type: 'INIT', at: T0 - 10 * MIN });
  const fx = r.send({ ...join('teacher', T0), planAllowsStart: false });
  t.match(reply(fx), { ok: false, error: { code: 'plan_limit_reached' } });
  t.same(outbox(fx), []);
  t.equal(r.state, 'scheduled');
  t.match(reply(r.send({ ...join('teacher', T0 + MIN), planAllowsStart: true })), { ok: true });
  t.equal(r.state, 'live');
  t.match(reply(r.send({ ...join('alice', T0 + MIN), planAllowsStart: false })), { ok: true }, 'a live meeting is not started again: the flag does not matter');
});

// ---- polls and Q&A: who is kept, and for how long --------------------------------------------------

const openPoll = (pollId: string, at: number, o: { anonymous?: boolean; pollType?: string; options?: string[]; correct?: number[] } = {}) => ({
  type: 'OPEN_POLL',
  pollId,
  by: 'par_teacher',
  question: 'Which one?',
  pollType: o.pollType ?? 'MULTIPLE_CHOICE',
  anonymous: o.anonymous ?? false,
  options: o.options ?? ['A', 'B', 'C'],
  correct: o.correct ?? [],
  at,
});
const answer = (pollId: string, who: Who, choices: number[], at: number, o: { pid?: string; text?: string } = {}) => ({
  type: 'ANSWER_POLL',
  pollId,
  participantId: o.pid ?? `par_${who}`,
  voter: vk(who),
  choices,
  text: o.text ?? null,
  at,
});
const ask = (questionId: string, who: Who, anonymous: boolean, at: number) => ({ type: 'ASK_QUESTION', questionId, participantId: `par_${who}`, voter: vk(who), text: `A question of ${who}`, anonymous, at });
const upvote = (questionId: string, who: Who, at: number, pid = `par_${who}`) => ({ type: 'UPVOTE_QUESTION', questionId, participantId: pid, voter: vk(who), at });
const namesOf = (...whos: Who[]) => whos.flatMap((w) => [users[w].id, users[w].name, users[w].externalId]);

t.test('anonymous items keep voter keys and no one; a second vote and upvoting one\'s own are refused, by key', async (t) => {
  const r = liveRoom();
  r.send(join('bob', T0 + 2 * MIN));
  r.send(openPoll('pol_1', T0 + 3 * MIN, { anonymous: true }));
  t.same(reply(r.send(answer('pol_1', 'alice', [2], T0 + 4 * MIN))), { ok: true });
  t.same(reply(r.send(answer('pol_1', 'bob', [1, 0], T0 + 5 * MIN))), { ok: true });
  t.match(reply(r.send(answer('pol_1', 'alice', [0], T0 + 6 * MIN, { pid: 'par_alice_phone' }))), { ok: false, error: { code: 'not_found' } }, 'no such participant yet');
  r.send(join('alice', T0 + 6 * MIN, { pid: 'par_alice_phone', device: 'ios' }));
  t.match(reply(r.send(answer('pol_1', 'alice', [0], T0 + 6 * MIN, { pid: 'par_alice_phone' }))), { ok: false, error: { code: 'invalid_state' } }, 'one answer per person, from any device');
  t.same(r.context.polls![0]!.answers, [
    { voter: vk('bob'), user: null, choices: [0, 1], text: null, at: null },
    { voter: vk('alice'), user: null, choices: [2], text: null, at: null },
  ], 'by content, no person, no time');

  const asked = reply(r.send(ask('qst_1', 'alice', true, T0 + 7 * MIN)))!;
  t.same(asked.question.askedBy, null);
  t.match(r.context.questions![0], { askedBy: null, asker: vk('alice') });
  t.match(reply(r.send(upvote('qst_1', 'alice', T0 + 8 * MIN, 'par_alice_phone'))), { ok: false, error: { code: 'forbidden' } }, 'not one\'s own, from any device');
  t.same(reply(r.send(upvote('qst_1', 'bob', T0 + 8 * MIN))), { ok: true, upvotes: 1 });
  t.same(reply(r.send(upvote('qst_1', 'bob', T0 + 9 * MIN))), { ok: true, upvotes: 1 }, 'once each');
  t.same(r.context.questions![0]!.upvoters, [vk('bob')]);
  const kept = JSON.stringify([r.context.polls, r.context.questions]);
  for (const trace of namesOf('alice', 'bob')) t.notOk(kept.includes(trace!), `polls and questions hold no ${trace}`);

  const own = (fx: MeetingEffect[]) => {
    const c = reply(fx)!.classroom;
    return [c.answeredPolls, c.ownQuestions, c.upvotedQuestions];
  };
  t.same(own(r.send(join('alice', T0 + 10 * MIN, { pid: 'par_alice_laptop' }))), [['pol_1'], ['qst_1'], []], 'a join with her key finds her own');
  t.same(own(r.send(join('bob', T0 + 10 * MIN, { conn: 'conn_bob_2' }))), [['pol_1'], [], ['qst_1']]);
  t.same(own(r.send(join('carol', T0 + 10 * MIN, { voter: null }))), [[], [], []], 'a join without a key finds no anonymous item its own');

  const fx = r.send({ type: 'CLOSE_POLL', pollId: 'pol_1', by: 'par_teacher', share: false, at: T0 + 11 * MIN });
  const closed = ofType(fx, 'outbox')[0]!;
  t.equal(closed.eventType, 'poll.closed');
  t.same((closed.data as any).responses, [
    { user: null, choices: [0, 1], text: null, respondedAt: iso(T0 + 11 * MIN) },
    { user: null, choices: [2], text: null, respondedAt: iso(T0 + 11 * MIN) },
  ]);
  t.same(r.context.polls![0]!.answers, [], 'its answers leave the actor once written');
});

t.test('named items keep their people, and their voter keys only to tell people apart', async (t) => {
  const r = liveRoom();
  r.send(openPoll('pol_1', T0 + 2 * MIN, { pollType: 'SINGLE_CHOICE', correct: [1] }));
  r.send(answer('pol_1', 'alice', [1], T0 + 3 * MIN));
  t.same(r.context.polls![0]!.answers, [{ voter: vk('alice'), user: { id: 'usr_alice', externalId: 's-1', name: 'Alice', role: 'STUDENT' }, choices: [1], text: null, at: T0 + 3 * MIN }]);
  const asked = reply(r.send(ask('qst_1', 'alice', false, T0 + 4 * MIN)))!;
  t.same(asked.question.askedBy, { participantId: 'par_alice', name: 'Alice' });
  t.match(reply(r.send(upvote('qst_1', 'alice', T0 + 5 * MIN))), { ok: false, error: { code: 'forbidden' } });
  const fx = r.send({ type: 'CLOSE_POLL', pollId: 'pol_1', by: 'par_teacher', share: true, at: T0 + 6 * MIN });
  t.same((ofType(fx, 'outbox')[0]!.data as any).responses, [{ user: { id: 'usr_alice', externalId: 's-1', name: 'Alice', role: 'STUDENT' }, choices: [1], text: null, correct: true, respondedAt: iso(T0 + 3 * MIN) }]);
});

t.test('the end leaves no polls, questions or people in the snapshot; attendance still settles', async (t) => {
  const r = liveRoom();
  r.send(openPoll('pol_1', T0 + 2 * MIN));
  r.send(answer('pol_1', 'alice', [0], T0 + 3 * MIN));
  r.send(ask('qst_1', 'alice', false, T0 + 4 * MIN));
  const fx = r.send({ type: 'END', by: 'par_teacher', at: T0 + 10 * MIN });
  t.match(ofType(fx, 'poll'), [{ poll: { pollId: 'pol_1', status: 'CLOSED', answers: [{ user: { id: 'usr_alice' } }] } }], 'the open poll is written with its answers as it closes');
  t.same(outbox(fx), ['participant.left', 'participant.left', 'poll.closed', 'meeting.ended']);
  const persisted = JSON.stringify(r.actor.getPersistedSnapshot());
  for (const trace of namesOf('alice')) t.notOk(persisted.includes(trace!), `the ended snapshot holds no ${trace}`);
  t.same([r.context.polls, r.context.questions, r.context.participants], [[], [], {}]);
  t.same(r.send({ type: 'TIMER', name: 'attendance-settle', at: T0 + 15 * MIN }), [{ type: 'attendance.finalize' }]);
});

t.test('an erase timer: the person\'s name leaves the roster, answers and questions, in memory; others\' stay', async (t) => {
  const r = liveRoom();
  r.send(join('bob', T0 + 2 * MIN));
  r.send(openPoll('pol_1', T0 + 3 * MIN));
  r.send(answer('pol_1', 'alice', [0], T0 + 4 * MIN));
  r.send(answer('pol_1', 'bob', [1], T0 + 4 * MIN));
  r.send(ask('qst_1', 'alice', false, T0 + 5 * MIN));
  r.send(ask('qst_2', 'bob', false, T0 + 5 * MIN));
  r.send(ask('qst_3', 'alice', false, T0 + 5 * MIN));
  r.send({ type: 'DISMISS_QUESTION', questionId: 'qst_3', by: 'par_teacher', at: T0 + 6 * MIN });
  const rev = r.context.rev;

  const fx = r.send({ type: 'TIMER', name: MEETING_TIMERS.erase('usr_alice'), at: T0 + 7 * MIN });
  const text = JSON.stringify(r.actor.getPersistedSnapshot());
  t.notOk(text.includes('Alice'), 'no Alice in the snapshot');
  t.ok(text.includes('Bob'), 'Bob stays');
  t.same(r.context.participants.par_alice!.user, { ...users.alice, name: 'Deleted user', email: null });
  t.match(r.context.polls![0]!.answers, [{ user: { id: 'usr_alice', name: 'Deleted user' } }, { user: { id: 'usr_bob', name: 'Bob' } }], 'her answer counts, without her name');
  t.match(r.context.questions, [{ askedBy: { user: { id: 'usr_alice', name: 'Deleted user' } } }, { askedBy: { user: { name: 'Bob' } } }, { askedBy: { user: { name: 'Deleted user' } } }]);
  const sends = ofType(fx, 'send').map((e) => e.message);
  t.match(sends, [{ type: 'roster', rev: rev + 1 }, { type: 'question', question: { questionId: 'qst_1', askedBy: { name: 'Deleted user' } } }], 'the room hears the new roster and the question it still shows');
  t.equal(sends.length, 2);
  t.same(outbox(fx), [], 'no event');
  const again = r.send({ type: 'TIMER', name: MEETING_TIMERS.erase('usr_alice'), at: T0 + 8 * MIN });
  t.same(again, [], 'again: nothing left to do');
  t.equal(r.context.rev, rev + 1);

  // an ended snapshot written before the end trimmed it still has its questions: the timer scrubs those too
  const old = JSON.parse(JSON.stringify(liveRoom().actor.getPersistedSnapshot()));
  const ended = room({}, old);
  ended.send(ask('qst_9', 'alice', false, T0 + 5 * MIN));
  ended.send({ type: 'END', by: 'par_teacher', at: T0 + 6 * MIN });
  const legacy = JSON.parse(JSON.stringify(ended.actor.getPersistedSnapshot()));
  legacy.context.questions = r.context.questions!.map((q) => (q.askedBy?.user.id === 'usr_alice' ? { ...q, askedBy: { ...q.askedBy, user: { ...q.askedBy.user, name: 'Alice' } } } : q));
  const restored = room({}, legacy);
  t.equal(restored.state, 'ended');
  t.same(restored.send({ type: 'TIMER', name: MEETING_TIMERS.erase('usr_alice'), at: T0 + 9 * MIN }), [], 'nothing to tell an ended room');
  t.notOk(JSON.stringify(restored.actor.getPersistedSnapshot()).includes('Alice'), 'no Alice in it');
  t.same(restored.send({ type: 'TIMER', name: 'attendance-settle', at: T0 + 11 * MIN }), [{ type: 'attendance.finalize' }], 'and still settles');
});

t.test('a snapshot from before voter keys (user ids as voters, an anonymous question\'s named asker) still knows its people', async (t) => {
  const a = liveRoom();
  a.send(join('bob', T0 + 2 * MIN));
  a.send(openPoll('pol_1', T0 + 3 * MIN, { anonymous: true }));
  const old = JSON.parse(JSON.stringify(a.actor.getPersistedSnapshot()));
  old.context.polls[0].answers = [{ voter: 'usr_alice', user: null, choices: [1], text: null, at: T0 + 4 * MIN }];
  old.context.questions = [
    { questionId: 'qst_1', text: 'Mine', anonymous: true, askedBy: { participantId: 'par_alice', user: { id: 'usr_alice', externalId: 's-1', name: 'Alice', role: 'STUDENT' } }, askedAt: T0 + 4 * MIN, upvoters: ['usr_bob'], upvotes: 1, status: 'OPEN', answer: null, answeredLive: false, answeredBy: null, answeredAt: null, dismissedAt: null },
  ];
  const r = room({}, old);
  t.match(reply(r.send(answer('pol_1', 'alice', [0], T0 + 5 * MIN))), { ok: false, error: { code: 'invalid_state' } }, 'a second vote');
  t.match(reply(r.send(upvote('qst_1', 'alice', T0 + 5 * MIN))), { ok: false, error: { code: 'forbidden' } }, 'her own question');
  t.same(reply(r.send(upvote('qst_1', 'bob', T0 + 5 * MIN))), { ok: true, upvotes: 1 }, 'an upvote once');
  const c = reply(r.send(join('alice', T0 + 6 * MIN, { conn: 'conn_alice_2' })))!.classroom;
  t.same([c.answeredPolls, c.ownQuestions], [['pol_1'], ['qst_1']]);
  t.equal(c.questions[0].askedBy, null, 'shown as anonymous');
  const fx = r.send({ type: 'CLOSE_POLL', pollId: 'pol_1', by: 'par_teacher', share: false, at: T0 + 7 * MIN });
  t.same((ofType(fx, 'outbox')[0]!.data as any).responses, [{ user: null, choices: [1], text: null, respondedAt: iso(T0 + 7 * MIN) }]);
});
