import type { EntryView } from '../../../actors/waiting-room/waiting-room.types.ts';
import type { Db } from '../../platform/db/index.ts';
import { readMeeting, toMeetingRecord, type MeetingRow } from '../meetings.ts';

/**
 * What the commands routed to actors answer over HTTP (cancel and end: the meeting; admit and deny: the
 * waiting entry). One definition each, used twice: by the route on the first run, and by the actor's
 * definition in the transaction of the command's change, which stores it as the idempotent answer
 * (IdempotencyMode `actor`).
 */
export function meetingAnswer(m: MeetingRow) {
  return { data: toMeetingRecord(m) };
}

/** The meeting as it stands in `db` (in the actor's transaction: after its projection). */
export async function meetingAnswerOf(db: Db, orgId: string, meetingId: string) {
  return meetingAnswer(await readMeeting(db, orgId, meetingId));
}

export function waitingEntryAnswer(entry: EntryView) {
  return { data: { queueId: entry.queueId, status: entry.status, requestedAt: entry.requestedAt, admittedAt: entry.admittedAt } };
}
