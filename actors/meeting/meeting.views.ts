import { ERASED_NAME } from '../../src/core/domain.ts';
import type { Occupancy } from '../../src/core/room-access.ts';
import { iso } from '../../src/core/actor-effects.ts';
import { CHAT_DEFAULTS } from '../../src/core/chat.ts';
import type {
  ClientSettings,
  MeetingContext,
  MeetingEffect,
  MeetingEventData,
  MeetingInput,
  Participant,
  ParticipantEventData,
  RosterEntry,
} from './meeting.types.ts';

// Pure functions from the meeting machine's context to what it shows: its initial context, webhook data,
// the roster and the settings clients see.

/** Attendance settles this long after the end unless the organization says otherwise (src/services/attendance.ts). */
export const DEFAULT_SETTLE_MINUTES = 5;

/**
 * The durable timer `erase:<userId>` that a person's erasure (src/services/users.ts `erase`) sets, due at
 * once, on every meeting actor that may remember them: it is written in the erasure's transaction and
 * fired by whichever node owns the actor, so no actor keeps the name, in memory or in its snapshot.
 */
export const ERASE_TIMER_PREFIX = 'erase:';

const closed = (status: string) => status === 'ENDED' || status === 'CANCELLED';

/**
 * Transitions after which the meeting's persisted history (the deltas since its last whole snapshot,
 * src/platform/runtime/actor-state.ts) must go, the whole state written instead: a person's erasure (no
 * earlier delta may still name them), the meeting's end (its snapshot keeps no one, and neither may what
 * led up to it), and an answer to an anonymous poll (the deltas' order would be the order the answers
 * arrived in, which the poll never keeps).
 */
export function forgetsHistory(event: { type: string; name?: unknown; pollId?: unknown }, before: MeetingContext, after: MeetingContext): boolean {
  if (event.type === 'TIMER') return typeof event.name === 'string' && event.name.startsWith(ERASE_TIMER_PREFIX);
  if (closed(after.status)) return !closed(before.status);
  if (event.type !== 'ANSWER_POLL') return false;
  const poll = after.polls?.find((p) => p.pollId === event.pollId);
  return !!poll?.anonymous && poll.answered !== before.polls?.find((p) => p.pollId === event.pollId)?.answered;
}
export { ERASED_NAME };

const ms = (s: string | null | undefined): number | null => (s == null ? null : Date.parse(s));

/** Roster order: by join time, then id, so every node renders the same list. */
export const byJoin = (a: Participant, b: Participant): number => a.joinedAt - b.joinedAt || (a.participantId < b.participantId ? -1 : 1);

export function initialMeetingContext(input: MeetingInput): MeetingContext {
  const startedAt = ms(input.startedAt);
  // the input is the meeting's facts and its state; the facts are kept as they came, the times normalized
  const { settings: _s, planMaxMinutes: _p, status: _st, startedAt: _sa, endedAt: _ea, endedReason: _er, notBefore: _nb, attendanceSettleMinutes: _as, reconnectGraceSeconds: _rg, maxParticipants: _mp, planMaxParticipants: _pmp, ...facts } = input;
  return {
    meeting: { ...facts, scheduledStart: iso(Date.parse(input.scheduledStart)), scheduledEnd: iso(Date.parse(input.scheduledEnd)) },
    settings: { ...input.settings },
    planMaxMinutes: input.planMaxMinutes,
    noShowFloor: ms(input.notBefore),
    status: input.status,
    startedAt,
    endedAt: ms(input.endedAt),
    endedReason: input.endedReason ?? null,
    cancelledAt: null,
    planCapAt: input.status === 'LIVE' && startedAt !== null ? startedAt + input.planMaxMinutes * 60_000 : null,
    emptySince: null,
    emptyGraceAt: null,
    participants: {},
    removedSessions: [],
    media: null,
    rev: 0,
    attendanceSettleMs: (input.attendanceSettleMinutes ?? DEFAULT_SETTLE_MINUTES) * 60_000,
    ...(input.reconnectGraceSeconds !== undefined ? { reconnectGraceMs: input.reconnectGraceSeconds * 1000 } : {}),
    attendanceFinalizedAt: null,
    locked: false,
    maxParticipants: input.maxParticipants ?? null,
    ...(input.planMaxParticipants !== undefined ? { planMaxParticipants: input.planMaxParticipants } : {}),
  };
}

/** Who is in the room, for RoomAccess.admits: the cap is the meeting's maxParticipants or the plan's, the lower. */
export function occupancy(c: MeetingContext): Occupancy {
  const cap = Math.min(c.maxParticipants ?? Infinity, c.planMaxParticipants ?? Infinity);
  return { locked: c.locked ?? false, full: Object.keys(c.participants).length >= cap, cap: Number.isFinite(cap) ? cap : null };
}

/** data of meeting.* events, from the actor's context or (src/services/meetings.ts) from the meeting's row. */
export function meetingData(c: Pick<MeetingContext, 'meeting' | 'status' | 'startedAt' | 'endedAt' | 'endedReason'>): MeetingEventData {
  const m = c.meeting;
  return {
    meetingId: m.meetingId,
    externalMeetingId: m.externalMeetingId,
    kind: m.kind,
    title: m.title,
    type: m.type,
    status: c.status,
    slug: m.slug,
    hostUserId: m.hostUserId,
    classId: m.classId,
    externalClassId: m.externalClassId,
    courseId: m.courseId,
    batchId: m.batchId,
    scheduledStart: m.scheduledStart,
    scheduledEnd: m.scheduledEnd,
    startedAt: c.startedAt === null ? null : iso(c.startedAt),
    endedAt: c.endedAt === null ? null : iso(c.endedAt),
    durationSeconds: c.startedAt !== null && c.endedAt !== null ? Math.round((c.endedAt - c.startedAt) / 1000) : null,
    ...(c.status === 'ENDED' ? { endedReason: c.endedReason } : {}),
  };
}

export function participantData(c: MeetingContext, p: Participant, leftAt: number | null): ParticipantEventData {
  return {
    meetingId: c.meeting.meetingId,
    externalMeetingId: c.meeting.externalMeetingId,
    kind: c.meeting.kind,
    participantId: p.participantId,
    user: p.user,
    device: p.device,
    joinedAt: iso(p.joinedAt),
    leftAt: leftAt === null ? null : iso(leftAt),
    durationSeconds: leftAt === null ? null : Math.max(0, Math.round((leftAt - p.joinedAt) / 1000)),
  };
}

export function roster(c: Pick<MeetingContext, 'participants'>): RosterEntry[] {
  return Object.values(c.participants)
    .sort(byJoin)
    .map((p) => ({
      participantId: p.participantId,
      userId: p.user.id,
      name: p.user.name,
      roomRole: p.roomRole,
      joinedAt: iso(p.joinedAt),
      micLocked: p.micLocked,
      floor: p.floor,
      askedToUnmute: p.askedToUnmute,
      enteredMuted: p.enteredMuted,
      handRaisedAt: p.handRaisedAt == null ? null : iso(p.handRaisedAt),
      connected: p.connections.length > 0,
    }));
}

export const clientSettings = (c: Pick<MeetingContext, 'settings'>): ClientSettings => ({
  waitingRoom: c.settings.waitingRoom,
  muteOnEntry: c.settings.muteOnEntry,
  lectureMode: c.settings.lectureMode,
  allowStudentScreenShare: c.settings.allowStudentScreenShare,
  chat: c.settings.chat ?? CHAT_DEFAULTS.chat,
  privateChatToHosts: c.settings.privateChatToHosts ?? CHAT_DEFAULTS.privateChatToHosts,
});

/** The roster to everyone, stamped with the room revision it was made at. */
export const rosterMessage = (participants: MeetingContext['participants'], rev: number): MeetingEffect => ({
  type: 'send',
  to: { all: true },
  message: { type: 'roster', rev, participants: roster({ participants }) },
});

