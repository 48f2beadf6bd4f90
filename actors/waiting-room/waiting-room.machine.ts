import { assertEvent, emit, enqueueActions, not, setup } from 'xstate';
import { iso, refusal, type ActorErrorCode } from '../../src/core/actor-effects.ts';
import type {
  EntryView,
  WaitingEntry,
  WaitingEventData,
  WaitingListEntry,
  WaitingRoomContext,
  WaitingRoomEffect,
  WaitingRoomEvent,
  WaitingRoomInput,
  WaitingStatus,
} from './waiting-room.types.ts';

/** Stored beside every persisted snapshot; bump it when a snapshot of the previous version would not restore. */
export const WAITING_ROOM_MACHINE_VERSION = 1;
/** A WAITING entry nobody admitted or denied this long after it arrived becomes EXPIRED. */
export const WAITING_EXPIRY_MS = 30 * 60_000;

export const WAITING_TIMERS = { expire: (queueId: string) => `expire:${queueId}` } as const;
const EXPIRE_PREFIX = 'expire:';

/** The entry an event is about: the queueId it names, or the one its expiry timer names. */
function entryOf(c: WaitingRoomContext, e: WaitingRoomEvent): WaitingEntry | undefined {
  if ('queueId' in e) return c.entries[e.queueId];
  if (e.type === 'TIMER' && e.name.startsWith(EXPIRE_PREFIX)) return c.entries[e.name.slice(EXPIRE_PREFIX.length)];
  return undefined;
}

function eventData(c: WaitingRoomContext, x: WaitingEntry): WaitingEventData {
  return {
    meetingId: c.meeting.meetingId,
    externalMeetingId: c.meeting.externalMeetingId,
    kind: c.meeting.kind,
    queueId: x.queueId,
    user: x.user,
    requestedAt: iso(x.requestedAt),
    admittedAt: x.admittedAt === null ? null : iso(x.admittedAt),
    admittedBy: x.admittedBy,
  };
}

export const entryView = (x: WaitingEntry): EntryView => ({
  ok: true,
  queueId: x.queueId,
  status: x.status,
  requestedAt: iso(x.requestedAt),
  admittedAt: x.admittedAt === null ? null : iso(x.admittedAt),
});

export function waitingList(entries: WaitingRoomContext['entries']): WaitingListEntry[] {
  return Object.values(entries)
    .filter((x) => x.status === 'WAITING')
    .sort((a, b) => a.requestedAt - b.requestedAt || (a.queueId < b.queueId ? -1 : 1))
    .map((x) => ({ queueId: x.queueId, userId: x.user.id, name: x.user.name, role: x.user.role, requestedAt: iso(x.requestedAt) }));
}

const hostsMessage = (entries: WaitingRoomContext['entries']): WaitingRoomEffect => ({
  type: 'send',
  to: { role: 'hosts' },
  message: { type: 'waiting-room', entries: waitingList(entries) },
});

const refuse = (code: ActorErrorCode, message: string) => ({ type: 'refuse', params: { code, message } }) as const;
const R = {
  notFound: refuse('not_found', 'No waiting-room entry with this queueId.'),
  invalidState: refuse('invalid_state', 'Only a WAITING entry can be admitted or denied.'),
  ended: refuse('meeting_ended', 'The meeting has ended or was cancelled.'),
};

export const waitingRoomMachine = setup({
  types: {
    context: {} as WaitingRoomContext,
    events: {} as WaitingRoomEvent,
    input: {} as WaitingRoomInput,
    emitted: {} as WaitingRoomEffect,
  },
  guards: {
    known: ({ context, event }) => entryOf(context, event) !== undefined,
    statusIs: ({ context, event }, params: { status: WaitingStatus }) => entryOf(context, event)?.status === params.status,
    expiryDue: ({ context, event }) => {
      const x = entryOf(context, event);
      return event.type === 'TIMER' && x !== undefined && x.status === 'WAITING' && event.at >= x.requestedAt + WAITING_EXPIRY_MS;
    },
  },
  actions: {
    refuse: emit(({ context, event }, params: { code: ActorErrorCode; message: string }) => {
      const x = entryOf(context, event);
      const details: Record<string, unknown> =
        params.code === 'invalid_state' && x ? { queueId: x.queueId, status: x.status }
        : params.code === 'not_found' && 'queueId' in event ? { queueId: event.queueId }
        : {};
      return refusal(params.code, params.message, details);
    }),

    replyEntry: emit(({ context, event }) => {
      const x = entryOf(context, event);
      return x ? { type: 'reply' as const, body: entryView(x) } : refusal('not_found', 'No waiting-room entry with this queueId.');
    }),

    replyOk: emit({ type: 'reply', body: { ok: true } }),

    replyList: emit(({ context }) => ({ type: 'reply' as const, body: { ok: true as const, entries: waitingList(context.entries) } })),

    enqueue: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'ENQUEUE');
      const e = event;
      const x: WaitingEntry = {
        queueId: e.queueId,
        sessionId: e.sessionId,
        user: e.user,
        status: 'WAITING',
        requestedAt: e.at,
        admittedAt: null,
        admittedBy: null,
        updatedAt: e.at,
      };
      const entries = { ...context.entries, [x.queueId]: x };
      enqueue.assign({ entries });
      enqueue.emit({ type: 'timer.set', name: WAITING_TIMERS.expire(x.queueId), dueAt: e.at + WAITING_EXPIRY_MS });
      enqueue.emit({ type: 'outbox', eventType: 'participant.waiting', data: eventData(context, x) });
      enqueue.emit(hostsMessage(entries));
      enqueue.emit({ type: 'reply', body: entryView(x) });
    }),

    /**
     * A WAITING entry leaves the queue: ADMITTED (participant.admitted), DENIED, EXPIRED (its timer) or LEFT.
     * The entry's own connection hears the outcome, the hosts get the new list, and a request gets the entry back.
     */
    settle: enqueueActions(({ context, event, enqueue }, params: { status: Exclude<WaitingStatus, 'WAITING'> }) => {
      assertEvent(event, ['ADMIT', 'DENY', 'LEAVE', 'TIMER']);
      const e = event;
      const before = entryOf(context, e);
      if (!before || before.status !== 'WAITING') return;
      const x: WaitingEntry = {
        ...before,
        status: params.status,
        updatedAt: e.at,
        ...(e.type === 'ADMIT' ? { admittedAt: e.at, admittedBy: e.by } : {}),
      };
      const entries = { ...context.entries, [x.queueId]: x };
      enqueue.assign({ entries });
      if (e.type !== 'TIMER') enqueue.emit({ type: 'timer.cancel', name: WAITING_TIMERS.expire(x.queueId) });
      if (x.status === 'ADMITTED') enqueue.emit({ type: 'outbox', eventType: 'participant.admitted', data: eventData(context, x) });
      const to = { queue: x.queueId };
      if (x.status === 'ADMITTED') enqueue.emit({ type: 'send', to, message: { type: 'admitted', queueId: x.queueId } });
      if (x.status === 'DENIED') enqueue.emit({ type: 'send', to, message: { type: 'denied', queueId: x.queueId } });
      if (x.status === 'EXPIRED') enqueue.emit({ type: 'send', to, message: { type: 'expired', queueId: x.queueId, reason: 'timeout' } });
      enqueue.emit(hostsMessage(entries));
      if (e.type !== 'TIMER') enqueue.emit({ type: 'reply', body: entryView(x) });
    }),

    /** The meeting is over: everyone still WAITING is EXPIRED and told why. */
    close: enqueueActions(({ context, event, enqueue }) => {
      assertEvent(event, 'MEETING_ENDED');
      const { at } = event;
      const entries = { ...context.entries };
      const waiting = Object.values(context.entries)
        .filter((x) => x.status === 'WAITING')
        .sort((a, b) => a.requestedAt - b.requestedAt || (a.queueId < b.queueId ? -1 : 1));
      for (const x of waiting) {
        entries[x.queueId] = { ...x, status: 'EXPIRED', updatedAt: at };
        enqueue.emit({ type: 'timer.cancel', name: WAITING_TIMERS.expire(x.queueId) });
        enqueue.emit({ type: 'send', to: { queue: x.queueId }, message: { type: 'expired', queueId: x.queueId, reason: 'meeting_ended' } });
      }
      enqueue.assign({ entries });
      enqueue.emit({ type: 'reply', body: { ok: true } });
    }),
  },
}).createMachine({
  id: 'waiting-room',
  context: ({ input }) => ({ meeting: { ...input }, entries: {} }),
  initial: 'open',
  states: {
    open: {
      on: {
        ENQUEUE: [{ guard: 'known', actions: 'replyEntry' }, { actions: 'enqueue' }],
        ADMIT: [
          { guard: not('known'), actions: R.notFound },
          { guard: { type: 'statusIs', params: { status: 'WAITING' } }, actions: { type: 'settle', params: { status: 'ADMITTED' } } },
          { guard: { type: 'statusIs', params: { status: 'ADMITTED' } }, actions: 'replyEntry' },
          { actions: R.invalidState },
        ],
        DENY: [
          { guard: not('known'), actions: R.notFound },
          { guard: { type: 'statusIs', params: { status: 'WAITING' } }, actions: { type: 'settle', params: { status: 'DENIED' } } },
          { guard: { type: 'statusIs', params: { status: 'DENIED' } }, actions: 'replyEntry' },
          { actions: R.invalidState },
        ],
        LEAVE: [
          { guard: not('known'), actions: R.notFound },
          { guard: { type: 'statusIs', params: { status: 'WAITING' } }, actions: { type: 'settle', params: { status: 'LEFT' } } },
          { actions: 'replyEntry' },
        ],
        STATUS: [{ guard: not('known'), actions: R.notFound }, { actions: 'replyEntry' }],
        LIST: { actions: 'replyList' },
        TIMER: { guard: 'expiryDue', actions: { type: 'settle', params: { status: 'EXPIRED' } } },
        MEETING_ENDED: { target: 'closed', actions: 'close' },
      },
    },
    // Not XState `final`: entries must keep answering STATUS (clients poll it) after the meeting is over.
    closed: {
      tags: ['closed'],
      on: {
        ENQUEUE: [{ guard: 'known', actions: 'replyEntry' }, { actions: R.ended }],
        ADMIT: [
          { guard: not('known'), actions: R.notFound },
          { guard: { type: 'statusIs', params: { status: 'ADMITTED' } }, actions: 'replyEntry' },
          { actions: R.invalidState },
        ],
        DENY: [
          { guard: not('known'), actions: R.notFound },
          { guard: { type: 'statusIs', params: { status: 'DENIED' } }, actions: 'replyEntry' },
          { actions: R.invalidState },
        ],
        LEAVE: [{ guard: not('known'), actions: R.notFound }, { actions: 'replyEntry' }],
        STATUS: [{ guard: not('known'), actions: R.notFound }, { actions: 'replyEntry' }],
        LIST: { actions: 'replyList' },
        MEETING_ENDED: { actions: 'replyOk' },
      },
    },
  },
});

export type WaitingRoomMachine = typeof waitingRoomMachine;
