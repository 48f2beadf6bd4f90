import { z } from 'zod';
import type { ENDED_REASONS, MeetingStatus } from '../../src/services/meetings.ts';
import type { RoomRole } from '../../src/services/tokens.ts';
import type { UserRole } from '../../src/services/users.ts';

// Local copies keep this module free of the services' runtime imports; `satisfies` keeps them in step.
export const MEETING_STATUSES = ['SCHEDULED', 'LIVE', 'ENDED', 'CANCELLED'] as const satisfies readonly MeetingStatus[];
export const MEETING_ENDED_REASONS = ['HOST_ENDED', 'ROOM_FINISHED', 'PLAN_LIMIT', 'API', 'TIMEOUT'] as const satisfies typeof ENDED_REASONS;
export const ROOM_ROLES = ['HOST', 'COHOST', 'PARTICIPANT', 'VIEWER'] as const satisfies readonly RoomRole[];
export const USER_ROLES = ['TEACHER', 'STUDENT', 'ADMIN'] as const satisfies readonly UserRole[];
export const DEVICES = ['web', 'android', 'ios', 'unknown'] as const;

export const id = z.string().min(1).max(255);
/** Milliseconds since the epoch, stamped by the host from its injected clock. */
export const at = z.number().int().nonnegative();
const isoTime = z.iso.datetime();

/** A person as webhook payloads show them: id and externalId are null for guests. */
export const roomUser = z.object({
  id: id.nullable(),
  externalId: id.nullable(),
  name: z.string().min(1).max(300),
  email: z.string().max(320).nullable(),
  role: z.enum(USER_ROLES),
});

export const roomSettings = z.object({
  muteOnEntry: z.boolean(),
  lectureMode: z.boolean(),
  allowStudentScreenShare: z.boolean(),
  recordAutomatically: z.boolean(),
  waitingRoom: z.boolean(),
});

/** What the host builds from the meeting row to create the actor. */
export const meetingInput = z.object({
  meetingId: id,
  orgId: id,
  externalMeetingId: id.nullable(),
  kind: z.enum(['MEETING', 'CLASS']),
  title: z.string(),
  type: z.string(),
  slug: z.string(),
  hostUserId: id,
  classId: id.nullable(),
  externalClassId: id.nullable(),
  courseId: id.nullable(),
  batchId: id.nullable(),
  scheduledStart: isoTime,
  scheduledEnd: isoTime,
  settings: roomSettings,
  planMaxMinutes: z.number().int().positive(),
  status: z.enum(MEETING_STATUSES),
  startedAt: isoTime.nullable().optional(),
  endedAt: isoTime.nullable().optional(),
  endedReason: z.enum(MEETING_ENDED_REASONS).nullable().optional(),
  /** When the schedule was last set (the row's updatedAt): a meeting scheduled in the past still gets its grace from then. */
  notBefore: isoTime.optional(),
});

const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => z.object({ type: z.literal(type), at, ...shape });

/** Sent once by the host after creating the actor from a row: arms the timers the current state needs. */
export const initEvent = ev('INIT', {});
/** A media-gateway connection opened for a participant; the same participantId again is a reconnect. */
export const joinEvent = ev('JOIN', {
  participantId: id,
  sessionId: id,
  user: roomUser,
  roomRole: z.enum(ROOM_ROLES),
  device: z.enum(DEVICES),
  connectionId: id,
});
/** A connection dropped (not an explicit leave). */
export const disconnectEvent = ev('DISCONNECT', { participantId: id, connectionId: id });
export const leaveEvent = ev('LEAVE', { participantId: id });
export const removeEvent = ev('REMOVE', { participantId: id, by: id });
export const muteRequestEvent = ev('MUTE_REQUEST', { participantId: id, by: id });
/** Ends the room for everyone: `by` a HOST or COHOST participant, or `byApi` (the public API). */
export const endEvent = ev('END', { by: id.optional(), byApi: z.literal(true).optional() }).refine(
  (e) => (e.by === undefined) !== (e.byApi === undefined),
  { message: 'give exactly one of by and byApi' },
);
export const cancelEvent = ev('CANCEL', {});
export const deactivateUserEvent = ev('DEACTIVATE_USER', { userId: id });
/** The meeting row changed (PATCH, plan change): keeps the room's copy current. */
export const updateEvent = ev('UPDATE', {
  title: z.string().optional(),
  hostUserId: id.optional(),
  scheduledStart: isoTime.optional(),
  scheduledEnd: isoTime.optional(),
  settings: roomSettings.partial().optional(),
  planMaxMinutes: z.number().int().positive().optional(),
  notBefore: isoTime.optional(),
});
export const timerEvent = ev('TIMER', { name: z.string().min(1).max(300) });

export const meetingEvent = z.discriminatedUnion('type', [
  initEvent,
  joinEvent,
  disconnectEvent,
  leaveEvent,
  removeEvent,
  muteRequestEvent,
  endEvent,
  cancelEvent,
  deactivateUserEvent,
  updateEvent,
  timerEvent,
]);
