import { z } from 'zod';
import {
  ATTENDANCE_RULE_LIMITS,
  ATTENDANCE_STATUSES,
  type AttendanceRecord,
  type AttendanceReport,
  type AttendanceRules,
  type AttendanceSummary,
  type ClassAttendance,
  type ClassAttendanceQuery,
} from '../../src/services/attendance.ts';
import { MEETING_KINDS } from '../../src/core/room.ts';
import { isoDate, schemaOf } from './common.ts';
import { memberUser } from './enrollments.ts';

const summary = schemaOf<AttendanceSummary>()(
  z.object({ total: z.number().int(), present: z.number().int(), late: z.number().int(), absent: z.number().int() }),
);

const attendanceRecord = schemaOf<AttendanceRecord>()(
  z.object({
    user: memberUser,
    status: z.enum(ATTENDANCE_STATUSES),
    durationSeconds: z.number().int().describe('Time attended: the merged intervals, within the session.'),
    joinedAt: z.string().nullable().describe('First join; null for someone expected who never came.'),
    leftAt: z.string().nullable().describe('Last leave (while the meeting is live: now).'),
    intervals: z.array(z.object({ joinedAt: z.string(), leftAt: z.string() })).describe('The stays in the room, unioned, short gaps merged.'),
  }),
);

export const attendanceReport = schemaOf<AttendanceReport>()(
  z.object({
    meetingId: z.string(),
    externalMeetingId: z.string().nullable(),
    kind: z.enum(MEETING_KINDS),
    title: z.string(),
    classId: z.string().nullable(),
    externalClassId: z.string().nullable(),
    attendanceSessionId: z.string(),
    status: z.enum(['PROVISIONAL', 'FINAL']).describe('PROVISIONAL until the settle window after the end has passed; FINAL never changes again.'),
    startedAt: z.string(),
    endedAt: z.string().nullable(),
    finalizedAt: z.string().nullable(),
    summary,
    records: z.array(attendanceRecord),
  }),
);

export const classAttendanceQuery = schemaOf<ClassAttendanceQuery>()(
  z
    .strictObject({
      from: isoDate.optional().describe('Sessions that began at or after this instant.'),
      to: isoDate.optional().describe('Sessions that began before this instant.'),
    })
    .refine((q) => !q.from || !q.to || Date.parse(q.from) < Date.parse(q.to), { message: 'from must be before to', path: ['to'] }),
);

export const classAttendance = schemaOf<ClassAttendance>()(
  z.object({
    classId: z.string(),
    externalClassId: z.string().nullable(),
    from: z.string().nullable(),
    to: z.string().nullable(),
    sessions: z.array(attendanceReport),
    students: z.array(summary.extend({ user: memberUser, durationSeconds: z.number().int() })).describe("Each person's counts over the sessions."),
  }),
);

const rule = (k: keyof AttendanceRules, int: boolean) => {
  const n = int ? z.number().int() : z.number();
  return n.min(ATTENDANCE_RULE_LIMITS[k].min).max(ATTENDANCE_RULE_LIMITS[k].max);
};

export const attendanceRules = schemaOf<AttendanceRules>()(
  z.strictObject({
    lateAfterMinutes: rule('lateAfterMinutes', true).describe('Joining more than this many minutes after the session began is LATE.'),
    presentShare: rule('presentShare', false).describe('Attending less than this share of the session (0 to 1) is ABSENT.'),
    mergeGapSeconds: rule('mergeGapSeconds', true).describe('Gaps between stays up to this long count as attended.'),
    settleMinutes: rule('settleMinutes', true).describe('Minutes after the end before the report is FINAL and attendance.finalized is sent.'),
  }),
);
