import { emit, enqueueActions, not, setup } from 'xstate';
import { iso, refusal, type ActorErrorCode, type DisconnectCode } from '../effects.ts';
import { byJoin, clientSettings, initialMeetingContext, meetingData, participantData, roster, rosterMessage } from './meeting.views.ts';
import type { EndedReason, MeetingContext, MeetingEffect, MeetingEvent, MeetingInput, Participant, RoomRole } from './meeting.types.ts';

export { initialMeetingContext, meetingData, roster } from './meeting.views.ts';

/** Stored beside every persisted snapshot; bump it when a snapshot of the previous version would not restore. */
export const MEETING_MACHINE_VERSION = 1;
/** A participant whose last connection dropped leaves after this long unless a connection comes back. */
export const RECONNECT_GRACE_MS = 15_000;
/** A LIVE room that stays empty this long ends with ROOM_FINISHED. */
export const EMPTY_GRACE_MS = 60_000;
/** A SCHEDULED meeting nobody started this long after its scheduled end ends with TIMEOUT (no webhook). */
export const NO_SHOW_GRACE_MS = 60 * 60_000;

export const MEETING_TIMERS = {
  planCap: 'plan-cap',
  emptyGrace: 'empty-grace',
  noShow: 'no-show',
  reconnect: (participantId: string) => `reconnect:${participantId}`,
} as const;
const RECONNECT_PREFIX = 'reconnect:';

type Ev<T extends MeetingEvent['type']> = Extract<MeetingEvent, { type: T }>;

/** Narrows the event of an action bound to one event type; a mismatch is a bug in the machine. */
function only<T extends MeetingEvent['type']>(event: MeetingEvent, ...types: T[]): Ev<T> {
  if (!(types as string[]).includes(event.type)) throw new Error(`meeting machine: ${types.join('|')} action ran for ${event.type}`);
  return event as Ev<T>;
}

const isHostRole = (role: RoomRole): boolean => role === 'HOST' || role === 'COHOST';
const noShowAt = (c: MeetingContext): number => Math.max(Date.parse(c.meeting.scheduledEnd), c.noShowFloor ?? 0) + NO_SHOW_GRACE_MS;

const refuse = (code: ActorErrorCode, message: string) => ({ type: 'refuse', params: { code, message } }) as const;
const R = {
  forbidden: refuse('forbidden', 'Only a host or cohost of the room may do this.'),
  outranked: refuse('forbidden', 'A cohost cannot remove a host.'),
  notFound: refuse('not_found', 'No such participant in the room.'),
  removed: refuse('participant_removed', 'A host removed this participant from the meeting.'),
  ended: refuse('meeting_ended', 'The meeting has ended or was cancelled.'),
  notLive: refuse('invalid_state', 'The meeting is not live.'),
  cancelLive: refuse('invalid_state', 'A LIVE meeting cannot be cancelled; end it instead.'),
  endScheduled: refuse('invalid_state', 'A SCHEDULED meeting cannot be ended; cancel it instead.'),
  endCancelled: refuse('invalid_state', 'A CANCELLED meeting cannot be ended.'),
  cancelEnded: refuse('invalid_state', 'An ENDED meeting cannot be cancelled.'),
  updateClosed: refuse('invalid_state', 'An ENDED or CANCELLED meeting cannot be changed.'),
};

/** ENDED (by any reason, including the no-show TIMEOUT): refuse the room, answer repeats. */
const endedHandlers = {
  INIT: { actions: 'replyStatus' },
  JOIN: { actions: R.ended },
  END: { actions: 'replyStatus' },
  CANCEL: { actions: R.cancelEnded },
  REMOVE: { actions: R.ended },
  MUTE_REQUEST: { actions: R.ended },
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
    byIsHost: ({ context, event }) => {
      if (event.type === 'END' && event.byApi) return true;
      if (event.type !== 'END' && event.type !== 'REMOVE' && event.type !== 'MUTE_REQUEST') return false;
      const by = event.by === undefined ? undefined : context.participants[event.by];
      return by !== undefined && isHostRole(by.roomRole);
    },
    targetPresent: ({ context, event }) => 'participantId' in event && event.participantId in context.participants,
    targetOutranksBy: ({ context, event }) =>
      event.type === 'REMOVE' && context.participants[event.participantId]?.roomRole === 'HOST' && context.participants[event.by]?.roomRole === 'COHOST',
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
    reconnectDue: ({ context, event }) => {
      if (event.type !== 'TIMER' || !event.name.startsWith(RECONNECT_PREFIX)) return false;
      const p = context.participants[event.name.slice(RECONNECT_PREFIX.length)];
      return p !== undefined && p.connections.length === 0 && p.disconnectedAt !== null && event.at >= p.disconnectedAt + RECONNECT_GRACE_MS;
    },
  },
  actions: {
    refuse: emit(({ context, event }, params: { code: ActorErrorCode; message: string }) => {
      const details: Record<string, unknown> =
        params.code === 'not_found' && 'participantId' in event ? { participantId: event.participantId }
        : params.code === 'invalid_state' || params.code === 'meeting_ended' ? { status: context.status }
        : {};
      return refusal(params.code, params.message, details);
    }),

    /** INIT: arm every timer the current state needs (the host sends it after creating the actor from a row). */
    armTimers: enqueueActions(({ context, event, enqueue }) => {
      const { at } = only(event, 'INIT');
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
        if (p.disconnectedAt !== null) enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.reconnect(p.participantId), dueAt: p.disconnectedAt + RECONNECT_GRACE_MS });
      }
      enqueue.assign({ startedAt, planCapAt, emptySince, emptyGraceAt });
    }),

    /** The first JOIN of a SCHEDULED meeting starts it. */
    startMeeting: enqueueActions(({ context, event, enqueue }) => {
      const { at } = only(event, 'JOIN');
      const started = { status: 'LIVE' as const, startedAt: at, planCapAt: at + context.planMaxMinutes * 60_000 };
      enqueue.assign(started);
      enqueue.emit({ type: 'outbox', eventType: 'meeting.started', data: meetingData({ ...context, ...started }) });
      enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.noShow });
      enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.planCap, dueAt: started.planCapAt });
    }),

    addParticipant: enqueueActions(({ context, event, enqueue }) => {
      const e = only(event, 'JOIN');
      const p: Participant = {
        participantId: e.participantId,
        sessionId: e.sessionId,
        user: e.user,
        roomRole: e.roomRole,
        device: e.device,
        joinedAt: e.at,
        connections: [e.connectionId],
        disconnectedAt: null,
        muted: context.settings.muteOnEntry && !isHostRole(e.roomRole),
      };
      const participants = { ...context.participants, [p.participantId]: p };
      enqueue.assign({ participants, emptySince: null, emptyGraceAt: null });
      if (context.emptyGraceAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.emptyGrace });
      enqueue.emit({ type: 'outbox', eventType: 'participant.joined', data: participantData(context, p, null) });
      enqueue.emit(rosterMessage(participants));
    }),

    /** JOIN of a participant already in the room: another connection or a reconnect within the grace. No webhook. */
    reattach: enqueueActions(({ context, event, enqueue }) => {
      const e = only(event, 'JOIN');
      const p = context.participants[e.participantId];
      if (!p) return;
      if (p.disconnectedAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.reconnect(p.participantId) });
      const connections = p.connections.includes(e.connectionId) ? p.connections : [...p.connections, e.connectionId];
      enqueue.assign({ participants: { ...context.participants, [p.participantId]: { ...p, connections, disconnectedAt: null } } });
    }),

    replyJoined: emit(({ context, event }) => ({
      type: 'reply' as const,
      body: { ok: true as const, participantId: only(event, 'JOIN').participantId, roster: roster(context), settings: clientSettings(context) },
    })),

    /** A connection dropped; the last one starts the reconnect grace. */
    detach: enqueueActions(({ context, event, enqueue }) => {
      const e = only(event, 'DISCONNECT');
      const p = context.participants[e.participantId];
      if (!p || !p.connections.includes(e.connectionId)) return;
      const connections = p.connections.filter((c) => c !== e.connectionId);
      const disconnectedAt = connections.length === 0 ? e.at : null;
      enqueue.assign({ participants: { ...context.participants, [p.participantId]: { ...p, connections, disconnectedAt } } });
      if (disconnectedAt !== null) enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.reconnect(p.participantId), dueAt: disconnectedAt + RECONNECT_GRACE_MS });
    }),

    /**
     * LEAVE, REMOVE, DEACTIVATE_USER and an expired reconnect grace: the participants concerned leave the LIVE
     * room (participant.left each), their connections are closed with `code`, and an emptied room starts its grace.
     */
    dropParticipants: enqueueActions(({ context, event, enqueue }, params: { code: DisconnectCode | null }) => {
      const e = only(event, 'LEAVE', 'REMOVE', 'DEACTIVATE_USER', 'TIMER');
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
        enqueue.emit({ type: 'outbox', eventType: 'participant.left', data: participantData(context, p, leftAt) });
        if (params.code && (p.connections.length > 0 || params.code !== 'left')) {
          enqueue.emit({ type: 'disconnect', participantId: p.participantId, code: params.code });
        }
        if (p.disconnectedAt !== null && e.type !== 'TIMER') enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.reconnect(p.participantId) });
      }
      if (leaving.length > 0) {
        enqueue.assign({ participants });
        if (e.type === 'REMOVE') enqueue.assign({ removedSessions: [...context.removedSessions, ...leaving.map((p) => p.sessionId)] });
        if (Object.keys(participants).length === 0) {
          const emptyGraceAt = e.at + EMPTY_GRACE_MS;
          enqueue.assign({ emptySince: lastLeftAt, emptyGraceAt });
          enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.emptyGrace, dueAt: emptyGraceAt });
        }
        enqueue.emit(rosterMessage(participants));
      }
      if (e.type !== 'TIMER') enqueue.emit({ type: 'reply', body: { ok: true, left: leaving.map((p) => p.participantId) } });
    }),

    replyNoneLeft: emit({ type: 'reply', body: { ok: true, left: [] } }),

    sendMuteRequest: enqueueActions(({ event, enqueue }) => {
      const e = only(event, 'MUTE_REQUEST');
      enqueue.emit({ type: 'send', to: { participantId: e.participantId }, message: { type: 'mute-request', by: e.by } });
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
        enqueue.emit({ type: 'outbox', eventType: 'participant.left', data: participantData(context, p, Math.min(p.disconnectedAt ?? endedAt, endedAt)) });
      }
      const ended = {
        status: 'ENDED' as const,
        endedAt,
        endedReason: params.reason,
        participants: {},
        planCapAt: null,
        emptySince: null,
        emptyGraceAt: null,
      };
      enqueue.assign(ended);
      // The plan cap is the background worker's doing: its meeting.ended is delivered whatever the plan (spec, webhook rule 3).
      enqueue.emit({ type: 'outbox', eventType: 'meeting.ended', data: meetingData({ ...context, ...ended }), ...(params.reason === 'PLAN_LIMIT' ? { background: true } : {}) });
      for (const p of present) enqueue.emit({ type: 'disconnect', participantId: p.participantId, code: 'meeting_ended' });
      enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.planCap });
      if (context.emptyGraceAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.emptyGrace });
      for (const p of present) {
        if (p.disconnectedAt !== null) enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.reconnect(p.participantId) });
      }
    }),

    /** SCHEDULED, nobody came: ENDED with TIMEOUT and no webhook (the spec declares TIMEOUT but never sends it). */
    expireNoShow: enqueueActions(({ context, event, enqueue }) => {
      enqueue.assign({ status: 'ENDED', endedReason: 'TIMEOUT', endedAt: Math.min(event.at, noShowAt(context)) });
    }),

    cancelMeeting: enqueueActions(({ context, event, enqueue }) => {
      const cancelled = { status: 'CANCELLED' as const, cancelledAt: only(event, 'CANCEL').at };
      enqueue.assign(cancelled);
      enqueue.emit({ type: 'outbox', eventType: 'meeting.cancelled', data: meetingData({ ...context, ...cancelled }) });
      enqueue.emit({ type: 'timer.cancel', name: MEETING_TIMERS.noShow });
    }),

    replyStatus: emit(({ context }) => ({ type: 'reply' as const, body: { ok: true as const, status: context.status, endedReason: context.endedReason } })),

    /** UPDATE: the row changed; re-arm the deadlines that depend on it and tell the room about new settings. */
    applyUpdate: enqueueActions(({ context, event, enqueue }) => {
      const e = only(event, 'UPDATE');
      const meeting = {
        ...context.meeting,
        ...(e.title !== undefined ? { title: e.title } : {}),
        ...(e.hostUserId !== undefined ? { hostUserId: e.hostUserId } : {}),
        ...(e.scheduledStart !== undefined ? { scheduledStart: iso(Date.parse(e.scheduledStart)) } : {}),
        ...(e.scheduledEnd !== undefined ? { scheduledEnd: iso(Date.parse(e.scheduledEnd)) } : {}),
      };
      const settings = { ...context.settings };
      for (const [k, v] of Object.entries(e.settings ?? {}) as [keyof typeof settings, boolean | undefined][]) if (v !== undefined) settings[k] = v;
      const planMaxMinutes = e.planMaxMinutes ?? context.planMaxMinutes;
      const noShowFloor = e.notBefore !== undefined ? Date.parse(e.notBefore) : context.noShowFloor;
      const next = { ...context, meeting, settings, planMaxMinutes, noShowFloor };
      enqueue.assign({ meeting, settings, planMaxMinutes, noShowFloor });
      if (context.status === 'SCHEDULED' && noShowAt(next) !== noShowAt(context)) {
        enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.noShow, dueAt: noShowAt(next) });
      }
      if (context.status === 'LIVE' && context.startedAt !== null && planMaxMinutes !== context.planMaxMinutes) {
        const planCapAt = context.startedAt + planMaxMinutes * 60_000;
        enqueue.assign({ planCapAt });
        enqueue.emit({ type: 'timer.set', name: MEETING_TIMERS.planCap, dueAt: planCapAt });
      }
      const before = clientSettings(context);
      const after = clientSettings(next);
      if (context.status === 'LIVE' && JSON.stringify(before) !== JSON.stringify(after)) {
        enqueue.emit({ type: 'send', to: { all: true }, message: { type: 'settings', settings: after } });
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
        JOIN: { target: 'live', actions: ['startMeeting', 'addParticipant', 'replyJoined'] },
        CANCEL: { target: 'cancelled', actions: ['cancelMeeting', 'replyStatus'] },
        END: { actions: R.endScheduled },
        REMOVE: { actions: R.notLive },
        MUTE_REQUEST: { actions: R.notLive },
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
          { guard: 'joinIsKnown', actions: ['reattach', 'replyJoined'] },
          { actions: ['addParticipant', 'replyJoined'] },
        ],
        DISCONNECT: { actions: 'detach' },
        LEAVE: { actions: { type: 'dropParticipants', params: { code: 'left' } } },
        DEACTIVATE_USER: { actions: { type: 'dropParticipants', params: { code: 'user_deactivated' } } },
        REMOVE: [
          { guard: not('byIsHost'), actions: R.forbidden },
          { guard: not('targetPresent'), actions: R.notFound },
          { guard: 'targetOutranksBy', actions: R.outranked },
          { actions: { type: 'dropParticipants', params: { code: 'removed' } } },
        ],
        MUTE_REQUEST: [
          { guard: not('byIsHost'), actions: R.forbidden },
          { guard: not('targetPresent'), actions: R.notFound },
          { actions: 'sendMuteRequest' },
        ],
        END: [
          { guard: 'byIsHost', target: 'ended', actions: [{ type: 'endMeeting', params: { reason: 'HOST_ENDED' } }, 'replyStatus'] },
          { actions: R.forbidden },
        ],
        CANCEL: { actions: R.cancelLive },
        UPDATE: { actions: 'applyUpdate' },
        TIMER: [
          { guard: 'planCapDue', target: 'ended', actions: { type: 'endMeeting', params: { reason: 'PLAN_LIMIT' } } },
          { guard: 'emptyGraceDue', target: 'ended', actions: { type: 'endMeeting', params: { reason: 'ROOM_FINISHED' } } },
          { guard: 'reconnectDue', actions: { type: 'dropParticipants', params: { code: null } } },
        ],
      },
    },
    // The end states are not XState `final`: a done actor drops every event, and these must still answer
    // (JOIN refused with meeting_ended, END/CANCEL repeated idempotently). The host recognises them by the tag.
    ended: { tags: ['closed'], on: endedHandlers },
    /** Ended without ever going live (no-show); status ENDED, endedReason TIMEOUT. */
    expired: { tags: ['closed'], on: endedHandlers },
    cancelled: {
      tags: ['closed'],
      on: {
        INIT: { actions: 'replyStatus' },
        JOIN: { actions: R.ended },
        END: { actions: R.endCancelled },
        CANCEL: { actions: 'replyStatus' },
        REMOVE: { actions: R.ended },
        MUTE_REQUEST: { actions: R.ended },
        LEAVE: { actions: 'replyNoneLeft' },
        DEACTIVATE_USER: { actions: 'replyNoneLeft' },
        UPDATE: { actions: R.updateClosed },
      },
    },
  },
});

export type MeetingMachine = typeof meetingMachine;
