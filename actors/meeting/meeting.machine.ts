import { isDeepStrictEqual } from 'node:util';
import { and, assertEvent, emit, enqueueActions, not, setup } from 'xstate';
import { RoomAccess, type HostCommand } from '../../src/core/room-access.ts';
import { iso, refusal, type ActorErrorCode, type DisconnectCode } from '../../src/core/actor-effects.ts';
import { CLASSROOM_EVENTS, classroomState, classroomStep, closeOpenPolls, eraseFromClassroom, voterFor } from './meeting.classroom.ts';
import { RECORDING_EVENTS, recordingStep, roomRecording, startRecording, stopRecording } from './meeting.recording.ts';
import {
  byJoin,
  clientSettings,
  DEFAULT_SETTLE_MINUTES,
  ERASE_TIMER_PREFIX,
  ERASED_NAME,
  occupancy,
  initialMeetingContext,
  meetingData,
  participantData,
  roster,
  rosterMessage,
} from './meeting.views.ts';
import type { EndedReason, MeetingContext, MeetingEffect, MeetingEvent, MeetingInput, Participant } from './meeting.types.ts';

export { DEFAULT_SETTLE_MINUTES, forgetsHistory, initialMeetingContext, meetingData, occupancy, roster } from './meeting.views.ts';

/** Stored beside every persisted snapshot; bump it when a snapshot of the previous version would not restore. */
export const MEETING_MACHINE_VERSION = 2;
/** A participant whose last connection dropped leaves after this long unless a connection comes back. */
export const RECONNECT_GRACE_MS = 15_000;
/** The room's reconnect grace: its node's setting (AULA_ROOM_GRACE_SECONDS), or the default. */
const graceOf = (c: MeetingContext): number => c.reconnectGraceMs ?? RECONNECT_GRACE_MS;
/** A LIVE room that stays empty this long ends with ROOM_FINISHED. */
export const EMPTY_GRACE_MS = 60_000;
/** A SCHEDULED meeting nobody started this long after its scheduled end ends with TIMEOUT (no webhook). */
export const NO_SHOW_GRACE_MS = 60 * 60_000;

export const MEETING_TIMERS = {
  planCap: 'plan-cap',
  emptyGrace: 'empty-grace',
  noShow: 'no-show',
  attendanceSettle: 'attendance-settle',
  reconnect: (participantId: string) => `reconnect:${participantId}`,
  /** Set by a person's erasure, not by the actor (ERASE_TIMER_PREFIX). */
  erase: (userId: string) => `${ERASE_TIMER_PREFIX}${userId}`,
} as const;
const RECONNECT_PREFIX = 'reconnect:';
/** The hosts hear of one person refused at the locked door at most this often. */
export const KNOCK_INTERVAL_MS = 60_000;


/** The host command an event is, for RoomAccess. */
const COMMANDS: Partial<Record<MeetingEvent['type'], HostCommand>> = {
  END: 'end',
  REMOVE: 'remove',
  MUTE: 'mute',
  MUTE_ALL: 'mute',
  ALLOW_UNMUTE: 'allow-unmute',
  ALLOW_UNMUTE_ALL: 'allow-unmute',
  START_RECORDING: 'record',
  STOP_RECORDING: 'record',
  PAUSE_RECORDING: 'record',
  FLOOR: 'floor',
  LOWER_ALL_HANDS: 'lower-hand',
  LOCK: 'lock',
  SPOTLIGHT: 'spotlight',
  OPEN_POLL: 'poll',
  CLOSE_POLL: 'poll',
  SHARE_POLL: 'poll',
  ANSWER_QUESTION: 'answer-question',
  DISMISS_QUESTION: 'answer-question',
};

/** RoomAccess's answer to a host command event (null: allowed). The public API's END is checked by its scope instead. */
function commandDecision(c: MeetingContext, e: MeetingEvent) {
  if (e.type === 'HAND' && e.participantId === e.by) return null; // one's own hand
  if (e.type === 'HAND' && e.raise) return { code: 'forbidden' as const, message: 'Only the participant raises their own hand.' };
  const command = e.type === 'HAND' ? 'lower-hand' : COMMANDS[e.type];
  if (!command || ('byApi' in e && e.byApi)) return null;
  const by = 'by' in e && e.by !== undefined ? c.participants[e.by] : undefined;
  if (!by) return { code: 'forbidden' as const, message: 'Only a host or cohost of the room may do this.' };
  const target = 'participantId' in e && e.participantId !== null ? c.participants[e.participantId] : undefined;
  return RoomAccess.command(command, by.roomRole, target?.roomRole);
}

const admission = (c: MeetingContext, e: MeetingEvent) => (e.type === 'JOIN' ? RoomAccess.admits(e.roomRole, occupancy(c)) : null);

/** Replaces one participant, bumps the room revision and tells everyone the new roster. */
function withParticipant(c: MeetingContext, p: Participant) {
  const participants = { ...c.participants, [p.participantId]: p };
  const rev = c.rev + 1;
  return { assign: { participants, rev }, roster: rosterMessage(participants, rev) };
}
/** The attendance effect of a participant's stay: it began (leftAt null) or ended. */
const stay = (p: Participant, leftAt: number | null) => ({ type: 'attendance' as const, participantId: p.participantId, userId: p.user.id, joinedAt: p.joinedAt, leftAt });
const noShowAt = (c: MeetingContext): number => Math.max(Date.parse(c.meeting.scheduledEnd), c.noShowFloor ?? 0) + NO_SHOW_GRACE_MS;

const refuse = (code: ActorErrorCode, message: string) => ({ type: 'refuse', params: { code, message } }) as const;
const R = {
  notFound: refuse('not_found', 'No such participant in the room.'),
  removed: refuse('participant_removed', 'A host removed this participant from the meeting.'),
  ended: refuse('meeting_ended', 'The meeting has ended or was cancelled.'),
  notLive: refuse('invalid_state', 'The meeting is not live.'),
  planLimit: refuse('plan_limit_reached', 'The organization has as many meetings live as its plan allows; end one first.'),
  cancelLive: refuse('invalid_state', 'A LIVE meeting cannot be cancelled; end it instead.'),
  endScheduled: refuse('invalid_state', 'A SCHEDULED meeting cannot be ended; cancel it instead.'),
  endCancelled: refuse('invalid_state', 'A CANCELLED meeting cannot be ended.'),
  cancelEnded: refuse('invalid_state', 'An ENDED meeting cannot be cancelled.'),
  updateClosed: refuse('invalid_state', 'An ENDED or CANCELLED meeting cannot be changed.'),
};

/** Outside a LIVE room, the commands about people and media in it are refused alike; its state is still readable. */
const notInRoom = (refusal: ReturnType<typeof refuse>) =>
  ({
    REMOVE: { actions: refusal },
    MUTE: { actions: refusal },
    MUTE_ALL: { actions: refusal },
    ALLOW_UNMUTE: { actions: refusal },
    ALLOW_UNMUTE_ALL: { actions: refusal },
    KNOCK: { actions: 'replyNotTold' },
    ...Object.fromEntries(RECORDING_EVENTS.map((type) => [type, { actions: refusal }])),
    ASK_UNMUTE: { actions: refusal },
    HAND: { actions: refusal },
    LOWER_ALL_HANDS: { actions: refusal },
    FLOOR: { actions: refusal },
    LOCK: { actions: refusal },
    SPOTLIGHT: { actions: refusal },
    ...Object.fromEntries(CLASSROOM_EVENTS.map((type) => [type, { actions: refusal }])),
    PLACE_MEDIA: { actions: refusal },
    ROOM_STATE: { actions: 'replyRoomState' },
  }) as const;

/** ENDED (by any reason, including the no-show TIMEOUT): refuse the room, answer repeats. */
const endedHandlers = {
  INIT: { actions: 'replyStatus' },
  JOIN: { actions: R.ended },
  END: { actions: 'replyStatus' },
  CANCEL: { actions: R.cancelEnded },
  ...notInRoom(R.ended),
  LEAVE: { actions: 'replyNoneLeft' },
  DEACTIVATE_USER: { actions: 'replyNoneLeft' },
  UPDATE: { actions: R.updateClosed },
} as const;

export const meetingMachine = setup({
  types: {
    context: {} as MeetingContext,
    events: {} as MeetingEvent,
    input: {} as MeetingInput,
    emitted: {} as MeetingEffect,
  },
  guards: {
    bootLive: ({ context }) => context.status === 'LIVE',
    bootExpired: ({ context }) => context.status === 'ENDED' && context.endedReason === 'TIMEOUT',
    bootEnded: ({ context }) => context.status === 'ENDED',
    bootCancelled: ({ context }) => context.status === 'CANCELLED',
    joinIsRemovedSession: ({ context, event }) => event.type === 'JOIN' && context.removedSessions.includes(event.sessionId),
    joinIsKnown: ({ context, event }) => event.type === 'JOIN' && event.participantId in context.participants,
    roomRefusesJoin: ({ context, event }) => admission(context, event) !== null,
    planRefusesStart: ({ event }) => event.type === 'JOIN' && event.planAllowsStart === false,
    policyRefuses: ({ context, event }) => commandDecision(context, event) !== null,
    targetPresent: ({ context, event }) => 'participantId' in event && event.participantId !== null && event.participantId in context.participants,
    placementCurrent: ({ context, event }) => event.type === 'PLACE_MEDIA' && (context.media?.rev ?? 0) === event.rev,
    // Every timer is checked against the context's own deadline, so a stale TIMER (the deadline moved, or the
    // condition went away after the host had already fired it) changes nothing.
    planCapDue: ({ context, event }) => event.type === 'TIMER' && event.name === MEETING_TIMERS.planCap && context.planCapAt !== null && event.at >= context.planCapAt,
    emptyGraceDue: ({ context, event }) =>
      event.type === 'TIMER' &&
      event.name === MEETING_TIMERS.emptyGrace &&
      context.emptyGraceAt !== null &&
      event.at >= context.emptyGraceAt &&
      Object.keys(context.participants).length === 0,
    noShowDue: ({ context, event }) => event.type === 'TIMER' && event.name === MEETING_TIMERS.noShow && event.at >= noShowAt(context),
    settleDue: ({ context, event }) =>
      event.type === 'TIMER' && event.name === MEETING_TIMERS.attendanceSettle && (context.attendanceFinalizedAt ?? null) === null && context.endedAt !== null,
    erasing: ({ event }) => event.type === 'TIMER' && event.name.startsWith(ERASE_TIMER_PREFIX),
    reconnectDue: ({ context, event }) => {
      if (event.type !== 'TIMER' || !event.name.startsWith(RECONNECT_PREFIX)) return false;
      const p = context.participants[event.name.slice(RECONNECT_PREFIX.length)];
      return p !== undefined && p.connections.length === 0 && p.disconnectedAt !== null && event.at >= p.disconnectedAt + graceOf(context);
    },
  },
  actions: {
    /** RoomAccess refused a host command. */
    refusePolicy: emit(({ context, event }) => {
      const d = commandDecision(context, event)!;
      return refusal(d.code, d.message);
    }),

    /** RoomAccess refused someone new: the room is locked or full. */
    refuseAdmission: emit(({ context, event }) => {
      const d = admission(context, event)!;
      return refusal(d.code, d.message, d.code === 'meeting_full' ? { limit: occupancy(context).cap } : {});
    }),

    /** LOCK: nobody new gets in while it holds (hosts and cohosts do); everyone hears it. */
    lock: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'LOCK');
      const e = event;
      if ((context.locked ?? false) !== e.locked) {
        enqueue.assign({ locked: e.locked });
        enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'locked', locked: e.locked, by: e.by } });
      }
      enqueue.emit({ type: 'reply', body: { ok: true, locked: e.locked } });
    }),

    /** SPOTLIGHT: one person big on every page, or nobody; everyone hears it. */
    spotlight: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'SPOTLIGHT');
      const e = event;
      if ((context.spotlight ?? null) !== e.participantId) {
        enqueue.assign({ spotlight: e.participantId });
        enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'spotlight', participantId: e.participantId, by: e.by } });
      }
      enqueue.emit({ type: 'reply', body: { ok: true, participantId: e.participantId } });
    }),

    /** Polls, quizzes and Q&A (meeting.classroom.ts): a refusal, or new polls and questions with their effects. */
    classroom: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, CLASSROOM_EVENTS);
      const out = classroomStep(context, event);
      if ('refuse' in out) {
        enqueue.emit(refusal(out.refuse.code, out.refuse.message, out.refuse.details ?? {}));
        return;
      }
      if (out.polls) enqueue.assign({ polls: out.polls });
      if (out.questions) enqueue.assign({ questions: out.questions });
      for (const e of out.effects) enqueue.emit(e);
      enqueue.emit({ type: 'reply', body: out.reply });
    }),

    recording: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, RECORDING_EVENTS);
      const out = recordingStep(context, event);
      if ('refuse' in out) {
        enqueue.emit(refusal(out.refuse.code, out.refuse.message, out.refuse.details ?? {}));
        return;
      }
      enqueue.assign({ recording: out.recording });
      for (const e of out.effects) enqueue.emit(e);
      enqueue.emit({ type: 'reply', body: out.reply });
    }),

    refuse: emit(({ context, event }, params: { code: ActorErrorCode; message: string }) => {
      const details: Record<string, unknown> =
        params.code === 'not_found' && 'participantId' in event ? { participantId: event.participantId }
        : params.code === 'invalid_state' || params.code === 'meeting_ended' ? { status: context.status }
        : {};
      return refusal(params.code, params.message, details);
    }),

    /** INIT: arm every timer the current state needs (the host sends it after creating the actor from a row). */
    armTimers: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'INIT');
      const { at } = event;
      if (context.status === 'SCHEDULED') enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.noShow, dueAt: noShowAt(context) });
      if (context.status !== 'LIVE') return;
      const startedAt = context.startedAt ?? at;
      const planCapAt = startedAt + context.planMaxMinutes * 60_000;
      enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.planCap, dueAt: planCapAt });
      let { emptySince, emptyGraceAt } = context;
      if (Object.keys(context.participants).length === 0) {
        emptySince ??= at;
        emptyGraceAt ??= at + EMPTY_GRACE_MS;
        enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.emptyGrace, dueAt: emptyGraceAt });
      }
      for (const p of Object.values(context.participants).sort(byJoin)) {
        if (p.disconnectedAt !== null) enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.reconnect(p.participantId), dueAt: p.disconnectedAt + graceOf(context) });
      }
      enqueue.assign({ startedAt, planCapAt, emptySince, emptyGraceAt });
    }),

    /** The first JOIN of a SCHEDULED meeting starts it. */
    startMeeting: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'JOIN');
      const { at } = event;
      const started = { status: 'LIVE' as const, startedAt: at, planCapAt: at + context.planMaxMinutes * 60_000 };
      enqueue.assign(started);
      enqueue.emit({ type: 'outbox', eventType: 'meeting.started', data: meetingData({ ...context, ...started }) });
      // settings.recordAutomatically: the recording starts with the class (the join carries its id when the plan records)
      if (context.settings.recordAutomatically && event.recordingId && !context.recording) {
        const auto = startRecording(context, event.recordingId, at, null, true);
        enqueue.assign({ recording: auto.recording });
        for (const e of auto.effects) enqueue.emit(e);
      }
      enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.noShow });
      enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.planCap, dueAt: started.planCapAt });
    }),

    addParticipant: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'JOIN');
      const e = event;
      const p: Participant = {
        participantId: e.participantId,
        sessionId: e.sessionId,
        user: e.user,
        roomRole: e.roomRole,
        device: e.device,
        joinedAt: e.at,
        connections: [e.connectionId],
        disconnectedAt: null,
        micLocked: false,
        floor: false,
        askedToUnmute: false,
        enteredMuted: RoomAccess.entersMuted(e.roomRole, context.settings),
        handRaisedAt: null,
      };
      const next = withParticipant(context, p);
      enqueue.assign({ ...next.assign, emptySince: null, emptyGraceAt: null });
      if (context.emptyGraceAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.emptyGrace });
      enqueue.emit({ type: 'outbox', eventType: 'participant.joined', data: participantData(context, p, null) });
      enqueue.emit(stay(p, null));
      enqueue.emit(next.roster);
    }),

    /** A JOIN that offers a media placement while the room has none places it there (the room going LIVE). */
    adoptMedia: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'JOIN');
      const e = event;
      if (context.media || !e.media) return;
      const media = { ...e.media, rev: 1 };
      enqueue.assign({ media });
      enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'media', media } });
    }),

    /** PLACE_MEDIA with the current revision: the room's media moves (clients reconnect their transports). */
    placeMedia: enqueueActions(({ event, enqueue }) => {
      assertEvent(event, 'PLACE_MEDIA');
      const e = event;
      const media = { ...e.to, rev: e.rev + 1 };
      enqueue.assign({ media });
      enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'media', media } });
    }),

    replyMedia: emit(({ context }) => ({ type: 'reply' as const, body: { ok: true as const, media: context.media } })),

    replyRoomState: emit(({ context }) => ({
      type: 'reply' as const,
      body: { ok: true as const, status: context.status, rev: context.rev, roster: roster(context), settings: clientSettings(context), media: context.media, locked: context.locked ?? false, recording: roomRecording(context.recording) },
    })),

    /**
     * JOIN of a participant already in the room: a reconnect within the grace, or another socket of the same
     * session, which replaces the ones open before (one live socket per session and device). No webhook.
     */
    reattach: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'JOIN');
      const e = event;
      const p = context.participants[e.participantId];
      if (!p || p.connections.includes(e.connectionId)) return;
      if (p.disconnectedAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.reconnect(p.participantId) });
      if (p.connections.length > 0) enqueue.emit({ type: 'disconnect', participantId: p.participantId, code: 'replaced', connectionIds: p.connections });
      const next = withParticipant(context, { ...p, connections: [e.connectionId], disconnectedAt: null });
      enqueue.assign(next.assign);
      if (p.connections.length === 0) enqueue.emit(next.roster);
    }),

    replyJoined: emit(({ context, event }) => {
      assertEvent(event, 'JOIN');
      const e = event;
      return {
        type: 'reply' as const,
        body: {
          ok: true as const,
          participantId: e.participantId,
          roster: roster(context),
          settings: clientSettings(context),
          rev: context.rev,
          media: context.media,
          locked: context.locked ?? false,
          spotlight: context.spotlight ?? null,
          classroom: classroomState(context, voterFor(e.participantId, e.user, e.voter), e.roomRole),
          recording: roomRecording(context.recording),
        },
      };
    }),

    /** A connection dropped; the last one starts the reconnect grace. */
    detach: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'DISCONNECT');
      const e = event;
      const p = context.participants[e.participantId];
      if (!p || !p.connections.includes(e.connectionId)) return;
      const connections = p.connections.filter((c) => c !== e.connectionId);
      const disconnectedAt = connections.length === 0 ? e.at : null;
      const next = withParticipant(context, { ...p, connections, disconnectedAt });
      enqueue.assign(next.assign);
      if (disconnectedAt !== null) {
        enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.reconnect(p.participantId), dueAt: disconnectedAt + graceOf(context) });
        enqueue.emit(next.roster);
      }
    }),

    /**
     * LEAVE, REMOVE, DEACTIVATE_USER and an expired reconnect grace: the participants concerned leave the LIVE
     * room (participant.left each), their connections are closed with `code`, and an emptied room starts its grace.
     */
    dropParticipants: enqueueActions(({ context, event, enqueue }, params: { code: DisconnectCode | null }) => {
      assertEvent(event, ['LEAVE', 'REMOVE', 'DEACTIVATE_USER', 'TIMER']);
      const e = event;
      const all = Object.values(context.participants).sort(byJoin);
      const leaving =
        e.type === 'DEACTIVATE_USER' ? all.filter((p) => p.user.id === e.userId)
        : e.type === 'TIMER' ? all.filter((p) => MEETING_TIMERS.reconnect(p.participantId) === e.name)
        : all.filter((p) => p.participantId === e.participantId);
      const participants = { ...context.participants };
      let lastLeftAt = 0;
      for (const p of leaving) {
        // Someone whose connection dropped left when it dropped, not when the grace ran out.
        const leftAt = e.type === 'TIMER' ? Math.min(p.disconnectedAt ?? e.at, e.at) : e.at;
        lastLeftAt = Math.max(lastLeftAt, leftAt);
        delete participants[p.participantId];
        // an erased person's leaving is told without their name, though the erase timer has not reached this actor yet
        const told = e.type === 'DEACTIVATE_USER' && e.erased ? { ...p, user: { ...p.user, name: ERASED_NAME, email: null } } : p;
        enqueue.emit({ type: 'outbox', eventType: 'participant.left', data: participantData(context, told, leftAt) });
        enqueue.emit(stay(p, leftAt));
        if (params.code && (p.connections.length > 0 || params.code !== 'left')) {
          enqueue.emit({ type: 'disconnect', participantId: p.participantId, code: params.code });
        }
        if (p.disconnectedAt !== null && e.type !== 'TIMER') enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.reconnect(p.participantId) });
      }
      if (leaving.length > 0) {
        enqueue.assign({ participants, rev: context.rev + 1 });
        if (e.type === 'REMOVE') enqueue.assign({ removedSessions: [...context.removedSessions, ...leaving.map((p) => p.sessionId)] });
        if (Object.keys(participants).length === 0) {
          const emptyGraceAt = e.at + EMPTY_GRACE_MS;
          enqueue.assign({ emptySince: lastLeftAt, emptyGraceAt });
          enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.emptyGrace, dueAt: emptyGraceAt });
        }
        enqueue.emit(rosterMessage(participants, context.rev + 1));
      }
      if (e.type !== 'TIMER') enqueue.emit({ type: 'reply', body: { ok: true, left: leaving.map((p) => p.participantId) } });
    }),

    replyNoneLeft: emit({ type: 'reply', body: { ok: true, left: [] } }),

    /** MUTE: the microphone is locked; the media rooms pauses it and refuses to resume it (RoomAccess.send). */
    mute: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'MUTE');
      const e = event;
      const p = context.participants[e.participantId]!;
      const next = withParticipant(context, { ...p, micLocked: true, askedToUnmute: false });
      enqueue.assign(next.assign);
      enqueue.emit({ type: 'send', to: { participantId: p.participantId }, message: { type: 'muted', by: e.by } });
      enqueue.emit(next.roster);
      enqueue.emit({ type: 'reply', body: { ok: true } });
    }),

    /** MUTE_ALL: every participant but hosts and cohosts is locked, each told; one roster. */
    muteAll: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'MUTE_ALL');
      const e = event;
      const targets = Object.values(context.participants).filter((p) => !RoomAccess.isHost(p.roomRole) && !p.micLocked).sort(byJoin);
      if (targets.length) {
        const participants = { ...context.participants };
        for (const p of targets) participants[p.participantId] = { ...p, micLocked: true, askedToUnmute: false };
        const rev = context.rev + 1;
        enqueue.assign({ participants, rev });
        for (const p of targets) enqueue.emit({ type: 'send', to: { participantId: p.participantId }, message: { type: 'muted', by: e.by } });
        enqueue.emit(rosterMessage(participants, rev));
      }
      enqueue.emit({ type: 'reply', body: { ok: true, muted: targets.map((p) => p.participantId) } });
    }),

    /** ALLOW_UNMUTE: the lock is lifted (in lecture mode the floor is given too); the participant unmutes themselves. */
    allowUnmute: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'ALLOW_UNMUTE');
      const e = event;
      const p = context.participants[e.participantId]!;
      const floor = p.floor || (context.settings.lectureMode && !RoomAccess.isHost(p.roomRole));
      const next = withParticipant(context, { ...p, micLocked: false, askedToUnmute: false, floor });
      enqueue.assign(next.assign);
      enqueue.emit({ type: 'send', to: { participantId: p.participantId }, message: { type: 'unmute-allowed', by: e.by } });
      enqueue.emit(next.roster);
      enqueue.emit({ type: 'reply', body: { ok: true } });
    }),

    /** ALLOW_UNMUTE_ALL: every lock lifted, each told; one roster. */
    allowUnmuteAll: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'ALLOW_UNMUTE_ALL');
      const e = event;
      const targets = Object.values(context.participants).filter((p) => p.micLocked).sort(byJoin);
      if (targets.length) {
        const participants = { ...context.participants };
        for (const p of targets) participants[p.participantId] = { ...p, micLocked: false, askedToUnmute: false };
        const rev = context.rev + 1;
        enqueue.assign({ participants, rev });
        for (const p of targets) enqueue.emit({ type: 'send', to: { participantId: p.participantId }, message: { type: 'unmute-allowed', by: e.by } });
        enqueue.emit(rosterMessage(participants, rev));
      }
      enqueue.emit({ type: 'reply', body: { ok: true, allowed: targets.map((p) => p.participantId) } });
    }),

    /** KNOCK: the hosts hear that someone was kept out of the locked room, once a minute per person at most. */
    knock: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'KNOCK');
      const at = event.at;
      const knocks = Object.fromEntries(Object.entries(context.knocks ?? {}).filter(([, t]) => at - t < KNOCK_INTERVAL_MS));
      const told = context.locked === true && knocks[event.userId] === undefined;
      if (told) {
        knocks[event.userId] = at;
        enqueue.emit({ type: 'send', to: { role: 'hosts' }, message: { type: 'knock', userId: event.userId, name: event.name, at: iso(at) } });
      }
      enqueue.assign({ knocks });
      enqueue.emit({ type: 'reply', body: { ok: true, told } });
    }),

    replyNotTold: enqueueActions(({ enqueue }) => enqueue.emit({ type: 'reply', body: { ok: true, told: false } })),

    askUnmute: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'ASK_UNMUTE');
      const p = context.participants[event.participantId]!;
      if (!p.askedToUnmute) {
        const next = withParticipant(context, { ...p, askedToUnmute: true });
        enqueue.assign(next.assign);
        enqueue.emit({ type: 'send', to: { role: 'hosts' }, message: { type: 'unmute-requested', participantId: p.participantId, name: p.user.name } });
        enqueue.emit(next.roster);
      }
      enqueue.emit({ type: 'reply', body: { ok: true } });
    }),

    /** HAND: up keeps the first time it went up (the order hosts see); down clears it. */
    hand: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'HAND');
      const e = event;
      const p = context.participants[e.participantId]!;
      const was = p.handRaisedAt ?? null;
      const now = e.raise ? (was ?? e.at) : null;
      if (now !== was) {
        const next = withParticipant(context, { ...p, handRaisedAt: now });
        enqueue.assign(next.assign);
        enqueue.emit(next.roster);
      }
      enqueue.emit({ type: 'reply', body: { ok: true, raisedAt: now === null ? null : iso(now), lowered: !e.raise && was !== null ? [p.participantId] : [] } });
    }),

    lowerAllHands: enqueueActions(({ context, enqueue }) => {
      const raised = Object.values(context.participants).filter((p) => (p.handRaisedAt ?? null) !== null).sort(byJoin);
      if (raised.length) {
        const participants = { ...context.participants };
        for (const p of raised) participants[p.participantId] = { ...p, handRaisedAt: null };
        const rev = context.rev + 1;
        enqueue.assign({ participants, rev });
        enqueue.emit(rosterMessage(participants, rev));
      }
      enqueue.emit({ type: 'reply', body: { ok: true, lowered: raised.map((p) => p.participantId) } });
    }),

    floor: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'FLOOR');
      const e = event;
      const p = context.participants[e.participantId]!;
      const next = withParticipant(context, { ...p, floor: e.give, askedToUnmute: e.give ? false : p.askedToUnmute });
      enqueue.assign(next.assign);
      enqueue.emit({ type: 'send', to: { participantId: p.participantId }, message: { type: 'floor', give: e.give, by: e.by } });
      enqueue.emit(next.roster);
      enqueue.emit({ type: 'reply', body: { ok: true } });
    }),

    /** LIVE to ENDED: everyone still in leaves and is disconnected, every timer of the room is dropped. */
    endMeeting: enqueueActions(({ context, event, enqueue }, params: { reason: EndedReason }) => {
      const { at } = event;
      const endedAt =
        params.reason === 'PLAN_LIMIT' ? Math.min(at, context.planCapAt ?? at)
        : params.reason === 'ROOM_FINISHED' ? Math.min(at, context.emptySince ?? at)
        : at;
      const present = Object.values(context.participants).sort(byJoin);
      for (const p of present) {
        const leftAt = Math.min(p.disconnectedAt ?? endedAt, endedAt);
        enqueue.emit({ type: 'outbox', eventType: 'participant.left', data: participantData(context, p, leftAt) });
        enqueue.emit(stay(p, leftAt));
      }
      // its polls and questions are in their tables once these effects are written: the ended snapshot keeps no people
      for (const e of closeOpenPolls(context, endedAt)) enqueue.emit(e);
      // a recording in progress stops with the class (the media node saves it as the room's media closes)
      if (context.recording) for (const e of stopRecording(context.recording, endedAt)) enqueue.emit(e);
      const ended = {
        recording: null,
        polls: [],
        questions: [],
        status: 'ENDED' as const,
        endedAt,
        endedReason: params.reason,
        participants: {},
        planCapAt: null,
        emptySince: null,
        emptyGraceAt: null,
        media: null,
        rev: context.rev + 1,
      };
      enqueue.assign(ended);
      // The media rooms close the room's media on either of these.
      enqueue.emit(rosterMessage({}, ended.rev));
      if (context.media) enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'media', media: null } });
      // The plan cap is the background worker's doing: its meeting.ended is delivered whatever the plan (spec, webhook rule 3).
      enqueue.emit({ type: 'outbox', eventType: 'meeting.ended', data: meetingData({ ...context, ...ended }), ...(params.reason === 'PLAN_LIMIT' ? { background: true } : {}) });
      // why, before the sockets close: the page tells the person and its embedding customer (the SDK's meeting-ended)
      if (present.length) enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'ended', reason: params.reason } });
      for (const p of present) enqueue.emit({ type: 'disconnect', participantId: p.participantId, code: 'meeting_ended' });
      enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.planCap });
      if (context.emptyGraceAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.emptyGrace });
      for (const p of present) {
        if (p.disconnectedAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.reconnect(p.participantId) });
      }
      // Attendance stays provisional for the settle window, then it is final (finalizeAttendance).
      enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.attendanceSettle, dueAt: at + (context.attendanceSettleMs ?? DEFAULT_SETTLE_MINUTES * 60_000) });
    }),

    /**
     * The person of an erase timer deleted their account: their name and email leave the actor's memory and
     * so its snapshot (the room's roster and questions show ERASED_NAME), in any state that may hold them.
     */
    erasePerson: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'TIMER');
      const userId = event.name.slice(ERASE_TIMER_PREFIX.length);
      const live = context.status === 'LIVE';
      const theirs = Object.values(context.participants).filter((p) => p.user.id === userId && (p.user.name !== ERASED_NAME || p.user.email !== null));
      if (theirs.length) {
        const participants = { ...context.participants };
        for (const p of theirs) participants[p.participantId] = { ...p, user: { ...p.user, name: ERASED_NAME, email: null } };
        enqueue.assign({ participants, rev: context.rev + 1 });
        if (live) enqueue.emit(rosterMessage(participants, context.rev + 1));
      }
      const classroom = eraseFromClassroom(context, userId);
      enqueue.assign({ polls: classroom.polls, questions: classroom.questions });
      if (live) for (const e of classroom.effects) enqueue.emit(e);
    }),

    /** The settle window passed: the host writes the final report and sends attendance.finalized, once. */
    finalizeAttendance: enqueueActions(({ event, enqueue }) => {
      enqueue.assign({ attendanceFinalizedAt: event.at });
      enqueue.emit({ type: 'attendance.finalize' });
    }),

    /** SCHEDULED, nobody came: ENDED with TIMEOUT and no webhook (the spec declares TIMEOUT but never sends it). */
    expireNoShow: enqueueActions(({ context, event, enqueue }) => {
      enqueue.assign({ status: 'ENDED', endedReason: 'TIMEOUT', endedAt: Math.min(event.at, noShowAt(context)) });
    }),

    cancelMeeting: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'CANCEL');
      const cancelled = { status: 'CANCELLED' as const, cancelledAt: event.at };
      enqueue.assign(cancelled);
      enqueue.emit({ type: 'outbox', eventType: 'meeting.cancelled', data: meetingData({ ...context, ...cancelled }) });
      enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.noShow });
    }),

    replyStatus: emit(({ context }) => ({ type: 'reply' as const, body: { ok: true as const, status: context.status, endedReason: context.endedReason } })),

    /** UPDATE: the row changed; re-arm the deadlines that depend on it and tell the room about new settings. */
    applyUpdate: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'UPDATE');
      const e = event;
      const meeting = {
        ...context.meeting,
        ...(e.title !== undefined ? { title: e.title } : {}),
        ...(e.hostUserId !== undefined ? { hostUserId: e.hostUserId } : {}),
        ...(e.scheduledStart !== undefined ? { scheduledStart: iso(Date.parse(e.scheduledStart)) } : {}),
        ...(e.scheduledEnd !== undefined ? { scheduledEnd: iso(Date.parse(e.scheduledEnd)) } : {}),
      };
      // only the settings the update names change (undefined: not named)
      const settings = { ...context.settings, ...Object.fromEntries(Object.entries(e.settings ?? {}).filter(([, v]) => v !== undefined)) };
      const planMaxMinutes = e.planMaxMinutes ?? context.planMaxMinutes;
      if (e.maxParticipants !== undefined) enqueue.assign({ maxParticipants: e.maxParticipants });
      const noShowFloor = e.notBefore !== undefined ? Date.parse(e.notBefore) : context.noShowFloor;
      const next = { ...context, meeting, settings, planMaxMinutes, noShowFloor };
      enqueue.assign({ meeting, settings, planMaxMinutes, noShowFloor });
      const before = clientSettings(context);
      const after = clientSettings(next);
      const settingsChanged = !isDeepStrictEqual(before, after);
      if (settingsChanged) enqueue.assign({ rev: context.rev + 1 });
      if (context.status === 'SCHEDULED' && noShowAt(next) !== noShowAt(context)) {
        enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.noShow, dueAt: noShowAt(next) });
      }
      if (context.status === 'LIVE' && context.startedAt !== null && planMaxMinutes !== context.planMaxMinutes) {
        const planCapAt = context.startedAt + planMaxMinutes * 60_000;
        enqueue.assign({ planCapAt });
        enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.planCap, dueAt: planCapAt });
      }
      if (context.status === 'LIVE' && settingsChanged) {
        enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'settings', rev: context.rev + 1, settings: after } });
      }
      enqueue.emit({ type: 'reply', body: { ok: true } });
    }),
  },
}).createMachine({
  id: 'meeting',
  context: ({ input }) => initialMeetingContext(input),
  initial: 'boot',
  states: {
    // Picks the state of the row the actor is created from; never seen in a snapshot.
    boot: {
      always: [
        { guard: 'bootLive', target: 'live' },
        { guard: 'bootExpired', target: 'expired' },
        { guard: 'bootEnded', target: 'ended' },
        { guard: 'bootCancelled', target: 'cancelled' },
        { target: 'scheduled' },
      ],
    },
    scheduled: {
      on: {
        INIT: { actions: ['armTimers', 'replyStatus'] },
        JOIN: [
          { guard: 'planRefusesStart', actions: R.planLimit },
          { target: 'live', actions: ['startMeeting', 'addParticipant', 'adoptMedia', 'replyJoined'] },
        ],
        CANCEL: { target: 'cancelled', actions: ['cancelMeeting', 'replyStatus'] },
        END: { actions: R.endScheduled },
        ...notInRoom(R.notLive),
        LEAVE: { actions: 'replyNoneLeft' },
        DEACTIVATE_USER: { actions: 'replyNoneLeft' },
        UPDATE: { actions: 'applyUpdate' },
        TIMER: { guard: 'noShowDue', target: 'expired', actions: 'expireNoShow' },
      },
    },
    live: {
      on: {
        INIT: { actions: ['armTimers', 'replyStatus'] },
        JOIN: [
          { guard: 'joinIsRemovedSession', actions: R.removed },
          { guard: 'joinIsKnown', actions: ['reattach', 'adoptMedia', 'replyJoined'] },
          { guard: 'roomRefusesJoin', actions: 'refuseAdmission' },
          { actions: ['addParticipant', 'adoptMedia', 'replyJoined'] },
        ],
        DISCONNECT: { actions: 'detach' },
        LEAVE: { actions: { type: 'dropParticipants', params: { code: 'left' } } },
        DEACTIVATE_USER: { actions: { type: 'dropParticipants', params: { code: 'user_deactivated' } } },
        REMOVE: [
          { guard: 'policyRefuses', actions: 'refusePolicy' },
          { guard: not('targetPresent'), actions: R.notFound },
          { actions: { type: 'dropParticipants', params: { code: 'removed' } } },
        ],
        MUTE: [
          { guard: 'policyRefuses', actions: 'refusePolicy' },
          { guard: not('targetPresent'), actions: R.notFound },
          { actions: 'mute' },
        ],
        MUTE_ALL: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'muteAll' }],
        ALLOW_UNMUTE: [
          { guard: 'policyRefuses', actions: 'refusePolicy' },
          { guard: not('targetPresent'), actions: R.notFound },
          { actions: 'allowUnmute' },
        ],
        ALLOW_UNMUTE_ALL: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'allowUnmuteAll' }],
        KNOCK: { actions: 'knock' },
        START_RECORDING: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'recording' }],
        STOP_RECORDING: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'recording' }],
        PAUSE_RECORDING: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'recording' }],
        FLOOR: [
          { guard: 'policyRefuses', actions: 'refusePolicy' },
          { guard: not('targetPresent'), actions: R.notFound },
          { actions: 'floor' },
        ],
        ASK_UNMUTE: [{ guard: not('targetPresent'), actions: R.notFound }, { actions: 'askUnmute' }],
        HAND: [
          { guard: 'policyRefuses', actions: 'refusePolicy' },
          { guard: not('targetPresent'), actions: R.notFound },
          { actions: 'hand' },
        ],
        LOWER_ALL_HANDS: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'lowerAllHands' }],
        LOCK: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'lock' }],
        SPOTLIGHT: [
          { guard: 'policyRefuses', actions: 'refusePolicy' },
          { guard: and([({ event }) => event.type === 'SPOTLIGHT' && event.participantId !== null, not('targetPresent')]), actions: R.notFound },
          { actions: 'spotlight' },
        ],
        OPEN_POLL: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'classroom' }],
        CLOSE_POLL: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'classroom' }],
        SHARE_POLL: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'classroom' }],
        ANSWER_QUESTION: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'classroom' }],
        DISMISS_QUESTION: [{ guard: 'policyRefuses', actions: 'refusePolicy' }, { actions: 'classroom' }],
        ANSWER_POLL: [{ guard: not('targetPresent'), actions: R.notFound }, { actions: 'classroom' }],
        ASK_QUESTION: [{ guard: not('targetPresent'), actions: R.notFound }, { actions: 'classroom' }],
        UPVOTE_QUESTION: [{ guard: not('targetPresent'), actions: R.notFound }, { actions: 'classroom' }],
        PLACE_MEDIA: [{ guard: 'placementCurrent', actions: ['placeMedia', 'replyMedia'] }, { actions: 'replyMedia' }],
        ROOM_STATE: { actions: 'replyRoomState' },
        END: [
          { guard: 'policyRefuses', actions: 'refusePolicy' },
          { target: 'ended', actions: [{ type: 'endMeeting', params: { reason: 'HOST_ENDED' } }, 'replyStatus'] },
        ],
        CANCEL: { actions: R.cancelLive },
        UPDATE: { actions: 'applyUpdate' },
        TIMER: [
          { guard: 'erasing', actions: 'erasePerson' },
          { guard: 'planCapDue', target: 'ended', actions: { type: 'endMeeting', params: { reason: 'PLAN_LIMIT' } } },
          { guard: 'emptyGraceDue', target: 'ended', actions: { type: 'endMeeting', params: { reason: 'ROOM_FINISHED' } } },
          { guard: 'reconnectDue', actions: { type: 'dropParticipants', params: { code: null } } },
        ],
      },
    },
    // The end states are not XState `final`: a done actor drops every event, and these must still answer
    // (JOIN refused with meeting_ended, END/CANCEL repeated idempotently). The host recognises them by the tag.
    ended: {
      tags: ['closed'],
      on: {
        ...endedHandlers,
        TIMER: [
          // an ended snapshot keeps no people (endMeeting); one written before it learned that may
          { guard: 'erasing', actions: 'erasePerson' },
          { guard: 'settleDue', actions: 'finalizeAttendance' },
        ],
      },
    },
    /** Ended without ever going live (no-show); status ENDED, endedReason TIMEOUT. */
    expired: { tags: ['closed'], on: endedHandlers },
    cancelled: {
      tags: ['closed'],
      on: {
        INIT: { actions: 'replyStatus' },
        JOIN: { actions: R.ended },
        END: { actions: R.endCancelled },
        CANCEL: { actions: 'replyStatus' },
        ...notInRoom(R.ended),
        LEAVE: { actions: 'replyNoneLeft' },
        DEACTIVATE_USER: { actions: 'replyNoneLeft' },
        UPDATE: { actions: R.updateClosed },
      },
    },
  },
});

export type MeetingMachine = typeof meetingMachine;
