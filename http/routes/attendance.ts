import type { AttendanceRecord, AttendanceReport } from '../../src/services/attendance.ts';
import { csv, wantsCsv, type CsvValue } from '../csv.ts';
import { route } from '../route.ts';
import { attendanceReport, classAttendance, classAttendanceQuery } from '../schemas/attendance.ts';
import { idParam } from '../schemas/common.ts';

const tag = 'Attendance';

/** One CSV row per person per session: the report's records, flattened (intervals as `joinedAt/leftAt` pairs joined by spaces). */
const CSV_HEADER = ['meetingId', 'externalMeetingId', 'attendanceSessionId', 'reportStatus', 'userId', 'externalUserId', 'name', 'role', 'status', 'durationSeconds', 'joinedAt', 'leftAt', 'intervals'];
const csvRows = (r: AttendanceReport): CsvValue[][] =>
  r.records.map((x: AttendanceRecord) => [
    r.meetingId,
    r.externalMeetingId,
    r.attendanceSessionId,
    r.status,
    x.user.id,
    x.user.externalId,
    x.user.name,
    x.user.role,
    x.status,
    x.durationSeconds,
    x.joinedAt,
    x.leftAt,
    x.intervals.map((i) => `${i.joinedAt}/${i.leftAt}`).join(' '),
  ]);
const asCsv = (reports: AttendanceReport[]) => ({ data: null, raw: { contentType: 'text/csv; charset=utf-8', body: csv(CSV_HEADER, reports.flatMap(csvRows)) } });

const CSV_NOTE = 'With `Accept: text/csv` the same records as CSV, one row per person (and session), intervals as `joinedAt/leftAt` pairs separated by spaces.';

export const attendanceRoutes = [
  route(
    {
      method: 'get',
      path: '/public/meetings/:id/attendance',
      tag,
      auth: 'apiKey',
      scope: 'meetings:read',
      summary: "A meeting's attendance: PROVISIONAL from its first join until the settle window after its end, then FINAL.",
      description: `Everyone expected (the class's students enrolled when the session began, or the meeting's invitees) and everyone who came, each PRESENT, LATE or ABSENT by the organization's rules (docs/attendance.md). ${CSV_NOTE} A meeting that has not been live answers invalid_state.`,
      params: idParam,
      response: attendanceReport,
      alternates: ['text/csv'],
      errors: ['meeting_not_found', 'invalid_state'],
    },
    async ({ app, db, apiKey, params, req }) => {
      const report = await app.services.attendance.ofMeeting(db, apiKey!.orgId, params.id, app.clock.now());
      return wantsCsv(req.headers.accept) ? asCsv([report]) : { data: report };
    },
  ),
  route(
    {
      method: 'get',
      path: '/public/classes/:id/attendance',
      tag,
      auth: 'apiKey',
      scope: ['classes:read', 'meetings:read'],
      summary: "A class's attendance across its sessions that began in [from, to), oldest first, with each person's counts.",
      description: `At most 500 sessions per request; a longer range is refused (validation_failed). ${CSV_NOTE}`,
      params: idParam,
      query: classAttendanceQuery,
      response: classAttendance,
      alternates: ['text/csv'],
      errors: ['class_not_found'],
    },
    async ({ app, db, apiKey, params, query, req }) => {
      const report = await app.services.attendance.ofClass(db, apiKey!.orgId, params.id, query, app.clock.now());
      return wantsCsv(req.headers.accept) ? asCsv(report.sessions) : { data: report };
    },
  ),
];
