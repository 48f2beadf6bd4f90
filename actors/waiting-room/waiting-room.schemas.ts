import { z } from 'zod';
import { at, id, roomUser } from '../meeting/meeting.schemas.ts';
import { WAITING_STATUSES } from '../../src/core/room.ts';

/** What the host builds from the meeting row to create the actor. */
export const waitingRoomInput = z.object({
  meetingId: id,
  orgId: id,
  externalMeetingId: id.nullable(),
  kind: z.enum(['MEETING', 'CLASS']),
});

const ev = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) => z.object({ type: z.literal(type), at, ...shape });

/** Someone arrived at a meeting with a waiting room; queueId is the entry's id. */
export const enqueueEvent = ev('ENQUEUE', { queueId: id, sessionId: id, user: roomUser });
/** A host let them in; `by` is the host's user id (the host layer checks that they may), null when the public API did. */
export const admitEvent = ev('ADMIT', { queueId: id, by: id.nullable() });
export const denyEvent = ev('DENY', { queueId: id, by: id.nullable() });
/** The waiting person gave up (closed the page, pressed leave). */
export const leaveEvent = ev('LEAVE', { queueId: id });
export const statusEvent = ev('STATUS', { queueId: id });
/** Who waits now, oldest first (the public API's list; a read that changes nothing). */
export const listEvent = ev('LIST', {});
export const timerEvent = ev('TIMER', { name: z.string().min(1).max(300) });
/** The meeting ended or was cancelled: nobody else gets in. */
export const meetingEndedEvent = ev('MEETING_ENDED', {});

export const waitingRoomEvent = z.discriminatedUnion('type', [
  enqueueEvent,
  admitEvent,
  denyEvent,
  leaveEvent,
  statusEvent,
  listEvent,
  timerEvent,
  meetingEndedEvent,
]);
