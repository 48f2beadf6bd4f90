import { DEFAULT_SETTLE_MINUTES } from '../../actors/meeting/meeting.views.ts';
import type { AttendanceStayEffect } from '../../actors/meeting/meeting.types.ts';
import { iso } from '../core/clock.ts';
import type { Db } from '../platform/db/index.ts';
import { AppError } from '../core/errors.ts';
import { newId } from '../platform/ids.ts';
import type { Outbox } from '../platform/outbox.ts';
import type { Classes } from './classes.ts';
import type { MemberUser } from './enrollments.ts';
import type { MeetingRow, Meetings } from './meetings.ts';
import type { MeetingKind } from '../core/room.ts';

/**
 * Attendance: every stay of a participant in a live room is an interval (a reconnect within the room's
 * grace is not a leave, so it is one interval). A report reconciles them per person: intervals clipped
 * to the session and unioned, gaps of at most `mergeGapSeconds` closed, a status by the organization's
 * rules. Until the settle window after the end has passed the report is PROVISIONAL (computed on
 * every read); then it is written once, FINAL, and `attendance.finalized` is sent (docs/attendance.md).
 */

export const ATTENDANCE_STATUSES = ['PRESENT', 'LATE', 'ABSENT'] as const;
export type AttendanceStatus = (typeof ATTENDANCE_STATUSES)[number];

/** An organization's rules; `attendance_rules` stores the ones it changed. */
export interface AttendanceRules {
  /** Joining more than this many minutes after the session began (the later of the scheduled and the actual start) is LATE. */
  lateAfterMinutes: number;
  /** A share of the session (0..1): anyone who attended less is ABSENT, whenever they came. */
  presentShare: number;
  /** Gaps between a person's stays up to this long count as attended (a dropped connection, a rejoin). */
  mergeGapSeconds: number;
  /** How long after the end the report stays PROVISIONAL before it is final and sent. */
  settleMinutes: number;
}

export const DEFAULT_ATTENDANCE_RULES: Readonly<AttendanceRules> = { lateAfterMinutes: 10, presentShare: 0.5, mergeGapSeconds: 120, settleMinutes: DEFAULT_SETTLE_MINUTES };
export const ATTENDANCE_RULE_LIMITS = {
  lateAfterMinutes: { min: 0, max: 1440 },
  presentShare: { min: 0, max: 1 },
  mergeGapSeconds: { min: 0, max: 3600 },
  settleMinutes: { min: 0, max: 1440 },
} as const satisfies Record<keyof AttendanceRules, { min: number; max: number }>;

export const attendanceRules = (stored: Partial<AttendanceRules> | null | undefined): AttendanceRules => ({ ...DEFAULT_ATTENDANCE_RULES, ...(stored ?? {}) });

/** A stay in the room, ms since the epoch; `leftAt` null while the person is still in. */
export interface Stay {
  joinedAt: number;
  leftAt: number | null;
}

export interface Reconciled {
  status: AttendanceStatus;
  durationSeconds: number;
  /** the merged intervals, ms */
  intervals: { joinedAt: number; leftAt: number }[];
}

/**
 * One person's attendance of a session that ran from `startedAt` to `endAt` (now, while it is live),
 * lateness counted from `lateAt`. Pure: the rules of docs/attendance.md, and nothing else.
 */
export function reconcile(session: { startedAt: number; endAt: number; lateAt: number }, rules: AttendanceRules, stays: readonly Stay[]): Reconciled {
  const clipped = stays
    .map((s) => ({ joinedAt: Math.max(s.joinedAt, session.startedAt), leftAt: Math.min(s.leftAt ?? session.endAt, session.endAt) }))
    .filter((s) => s.leftAt >= s.joinedAt)
    .sort((a, b) => a.joinedAt - b.joinedAt);
  const intervals: { joinedAt: number; leftAt: number }[] = [];
  for (const s of clipped) {
    const last = intervals.at(-1);
    if (last && s.joinedAt - last.leftAt <= rules.mergeGapSeconds * 1000) last.leftAt = Math.max(last.leftAt, s.leftAt);
    else intervals.push({ ...s });
  }
  const attendedMs = intervals.reduce((sum, i) => sum + (i.leftAt - i.joinedAt), 0);
  const sessionMs = session.endAt - session.startedAt;
  const status: AttendanceStatus =
    intervals.length === 0 || (sessionMs > 0 && attendedMs < rules.presentShare * sessionMs) ? 'ABSENT'
    : intervals[0]!.joinedAt > session.lateAt ? 'LATE'
    : 'PRESENT';
  return { status, durationSeconds: Math.round(attendedMs / 1000), intervals };
}

export interface AttendanceInterval {
  joinedAt: string;
  leftAt: string;
}

export interface AttendanceRecord {
  user: MemberUser;
  status: AttendanceStatus;
  durationSeconds: number;
  joinedAt: string | null;
  leftAt: string | null;
  intervals: AttendanceInterval[];
}

export interface AttendanceSummary {
  total: number;
  present: number;
  late: number;
  absent: number;
}

/** A meeting's attendance as the API shows it. */
export interface AttendanceReport {
  meetingId: string;
  externalMeetingId: string | null;
  kind: MeetingKind;
  title: string;
  classId: string | null;
  externalClassId: string | null;
  attendanceSessionId: string;
  status: 'PROVISIONAL' | 'FINAL';
  startedAt: string;
  endedAt: string | null;
  finalizedAt: string | null;
  summary: AttendanceSummary;
  records: AttendanceRecord[];
}

export interface ClassAttendanceQuery {
  from?: string | undefined;
  to?: string | undefined;
}

/** A class's attendance over its sessions that began in [from, to), oldest first, and each student's counts. */
export interface ClassAttendance {
  classId: string;
  externalClassId: string | null;
  from: string | null;
  to: string | null;
  sessions: AttendanceReport[];
  students: (AttendanceSummary & { user: MemberUser; durationSeconds: number })[];
}

/** Most sessions one class report covers; a longer range is refused so one request stays bounded. */
export const MAX_CLASS_SESSIONS = 500;

interface SessionRow {
  meetingId: string;
  orgId: string;
  externalId: string | null;
  kind: MeetingKind;
  title: string;
  classId: string | null;
  externalClassId: string | null;
  batchId: string | null;
  accessMode: string;
  scheduledStart: Date;
  startedAt: Date;
  endedAt: Date | null;
  attendanceRules: Partial<AttendanceRules> | null;
  sessionId: string;
  finalizedAt: Date | null;
}

const SESSION_COLUMNS = (db: Db) => db`m.id as meeting_id, m.org_id, m.external_id, m.kind, m.title, m.class_id, c.external_id as external_class_id,
  m.batch_id, m.access_mode, m.scheduled_start, m.started_at, m.ended_at, o.attendance_rules, s.id as session_id, s.finalized_at`;
const SESSION_FROM = (db: Db) => db`meetings m join organizations o on o.id = m.org_id join attendance_sessions s on s.meeting_id = m.id
  left join classes c on c.id = m.class_id`;

const summarize = (records: readonly { status: AttendanceStatus }[]): AttendanceSummary => ({
  total: records.length,
  present: records.filter((r) => r.status === 'PRESENT').length,
  late: records.filter((r) => r.status === 'LATE').length,
  absent: records.filter((r) => r.status === 'ABSENT').length,
});

const byName = (a: AttendanceRecord, b: AttendanceRecord) => a.user.name.localeCompare(b.user.name) || a.user.id.localeCompare(b.user.id);

export class Attendance {
  constructor(
    private readonly meetings: Meetings,
    private readonly classes: Classes,
  ) {}

  /** Writes a stay of the meeting's actor, in its transition's transaction; the first one opens the meeting's attendance session. */
  static async recordStay(tx: Db, orgId: string, meetingId: string, stay: AttendanceStayEffect, at: number): Promise<void> {
    if (stay.userId === null) return;
    if (stay.leftAt === null) {
      await tx`insert into attendance_sessions (id, org_id, meeting_id, created_at) values (${newId('att', at)}, ${orgId}, ${meetingId}, ${iso(at)})
        on conflict (meeting_id) do nothing`;
    }
    await tx`insert into attendance_intervals (meeting_id, participant_id, user_id, joined_at, left_at)
      values (${meetingId}, ${stay.participantId}, ${stay.userId}, ${iso(stay.joinedAt)}, ${stay.leftAt === null ? null : iso(stay.leftAt)})
      on conflict (meeting_id, participant_id, joined_at) do update set left_at = excluded.left_at`;
  }

  /**
   * The settle window of an ended meeting passed: its report is written once and `attendance.finalized`
   * sent, in the meeting actor's fenced transaction. `finalized_at` is set only where it is null, so a
   * second attempt (a repeated timer, another node after a takeover) finds nothing to do.
   */
  static async finalize(tx: Db, outbox: Outbox, meetingId: string, at: number): Promise<void> {
    const [claimed] = await tx<{ id: string }[]>`update attendance_sessions set finalized_at = ${iso(at)}
      where meeting_id = ${meetingId} and finalized_at is null returning id`;
    if (!claimed) return;
    const [row] = await tx<SessionRow[]>`select ${SESSION_COLUMNS(tx)} from ${SESSION_FROM(tx)} where m.id = ${meetingId}`;
    if (!row) return;
    const report = await Attendance.#compute(tx, row, at);
    for (const r of report.records) {
      await tx`insert into attendance_records (session_id, user_id, status, duration_seconds, joined_at, left_at, intervals)
        values (${row.sessionId}, ${r.user.id}, ${r.status}, ${r.durationSeconds}, ${r.joinedAt}, ${r.leftAt}, ${tx.json(r.intervals as never)})`;
    }
    await outbox.emit(
      tx,
      row.orgId,
      'attendance.finalized',
      {
        meetingId: report.meetingId,
        externalMeetingId: report.externalMeetingId,
        kind: report.kind,
        classId: report.classId,
        externalClassId: report.externalClassId,
        attendanceSessionId: report.attendanceSessionId,
        finalizedAt: iso(at),
        summary: report.summary,
        records: report.records,
      },
      at,
    );
  }

  /** A meeting's attendance: FINAL once written, otherwise reconciled now from its stays. */
  async ofMeeting(db: Db, orgId: string, idOrExternal: string, now: number): Promise<AttendanceReport> {
    const m = await this.meetings.get(db, orgId, idOrExternal);
    const [row] = await db<SessionRow[]>`select ${SESSION_COLUMNS(db)} from ${SESSION_FROM(db)} where m.id = ${m.id}`;
    if (!row) throw Attendance.#neverLive(m);
    return row.finalizedAt ? (await Attendance.#stored(db, [row])).get(row.sessionId)! : Attendance.#compute(db, row, now);
  }

  /** A class's sessions that began in [from, to), with each person's counts across them. */
  async ofClass(db: Db, orgId: string, idOrExternal: string, q: ClassAttendanceQuery, now: number): Promise<ClassAttendance> {
    const c = await this.classes.get(db, orgId, idOrExternal);
    const rows = await db<SessionRow[]>`select ${SESSION_COLUMNS(db)} from ${SESSION_FROM(db)}
      where m.class_id = ${c.id} and m.org_id = ${orgId}
        ${q.from ? db`and m.started_at >= ${q.from}` : db``} ${q.to ? db`and m.started_at < ${q.to}` : db``}
      order by m.started_at, m.id limit ${MAX_CLASS_SESSIONS + 1}`;
    if (rows.length > MAX_CLASS_SESSIONS) {
      throw new AppError('validation_failed', {
        message: `More than ${MAX_CLASS_SESSIONS} sessions in this range; ask for a shorter one with from and to.`,
        details: { fields: [{ field: 'from', in: 'query', code: 'too_big', message: `the range holds more than ${MAX_CLASS_SESSIONS} sessions` }] },
      });
    }
    // the final reports in one query; the few sessions not final yet are reconciled one by one
    const stored = await Attendance.#stored(db, rows.filter((r) => r.finalizedAt));
    const sessions: AttendanceReport[] = [];
    for (const row of rows) sessions.push(stored.get(row.sessionId) ?? (await Attendance.#compute(db, row, now)));
    const students = new Map<string, ClassAttendance['students'][number]>();
    for (const s of sessions) {
      for (const r of s.records) {
        const e = students.get(r.user.id) ?? { user: r.user, total: 0, present: 0, late: 0, absent: 0, durationSeconds: 0 };
        e.total++;
        e[r.status === 'PRESENT' ? 'present' : r.status === 'LATE' ? 'late' : 'absent']++;
        e.durationSeconds += r.durationSeconds;
        students.set(r.user.id, e);
      }
    }
    return {
      classId: c.id,
      externalClassId: c.externalId,
      from: q.from ?? null,
      to: q.to ?? null,
      sessions,
      students: [...students.values()].sort((a, b) => a.user.name.localeCompare(b.user.name) || a.user.id.localeCompare(b.user.id)),
    };
  }

  static #neverLive(m: MeetingRow): AppError {
    return new AppError('invalid_state', {
      message: 'The meeting has not been live, so it has no attendance yet.',
      details: { status: m.status },
    });
  }

  static #head(row: SessionRow, status: AttendanceReport['status'], records: AttendanceRecord[]): AttendanceReport {
    return {
      meetingId: row.meetingId,
      externalMeetingId: row.externalId,
      kind: row.kind,
      title: row.title,
      classId: row.classId,
      externalClassId: row.externalClassId,
      attendanceSessionId: row.sessionId,
      status,
      startedAt: row.startedAt.toISOString(),
      endedAt: row.endedAt?.toISOString() ?? null,
      finalizedAt: status === 'FINAL' ? row.finalizedAt!.toISOString() : null,
      summary: summarize(records),
      records,
    };
  }

  /** The final reports of finalized sessions, by attendance session id, read in one query. */
  static async #stored(db: Db, sessions: SessionRow[]): Promise<Map<string, AttendanceReport>> {
    const out = new Map<string, AttendanceReport>();
    if (sessions.length === 0) return out;
    const rows = await db<{ sessionId: string; userId: string; externalId: string; name: string; role: MemberUser['role']; status: AttendanceStatus; durationSeconds: number; joinedAt: Date | null; leftAt: Date | null; intervals: AttendanceInterval[] }[]>`
      select r.session_id, r.user_id, u.external_id, u.full_name as name, u.role, r.status, r.duration_seconds, r.joined_at, r.left_at, r.intervals
      from attendance_records r join users u on u.id = r.user_id where r.session_id in ${db(sessions.map((s) => s.sessionId))}`;
    const bySession = new Map<string, AttendanceRecord[]>(sessions.map((s) => [s.sessionId, []]));
    for (const r of rows) {
      bySession.get(r.sessionId)!.push({
        user: { id: r.userId, externalId: r.externalId, name: r.name, role: r.role },
        status: r.status,
        durationSeconds: r.durationSeconds,
        joinedAt: r.joinedAt?.toISOString() ?? null,
        leftAt: r.leftAt?.toISOString() ?? null,
        intervals: r.intervals,
      });
    }
    for (const s of sessions) out.set(s.sessionId, Attendance.#head(s, 'FINAL', bySession.get(s.sessionId)!.sort(byName)));
    return out;
  }

  /** Reconciles a session's stays and expected people as of `now` (the end, once it ended). */
  static async #compute(db: Db, row: SessionRow, now: number): Promise<AttendanceReport> {
    const rules = attendanceRules(row.attendanceRules);
    const startedAt = row.startedAt.getTime();
    const endAt = row.endedAt ? row.endedAt.getTime() : Math.max(now, startedAt);
    const lateAt = Math.max(startedAt, row.scheduledStart.getTime()) + rules.lateAfterMinutes * 60_000;
    const stays = await db<{ userId: string; joinedAt: Date; leftAt: Date | null }[]>`
      select user_id, joined_at, left_at from attendance_intervals where meeting_id = ${row.meetingId}`;
    // Who was expected: the class's students enrolled when the session began (of the meeting's batch,
    // when it has one), or the meeting's invitees; and everyone who came.
    const expected =
      row.classId ?
        await db<{ userId: string }[]>`select user_id from enrollments where class_id = ${row.classId}
          ${row.batchId ? db`and batch_id = ${row.batchId}` : db``}
          and enrolled_at <= ${row.startedAt} and (removed_at is null or removed_at > ${row.startedAt})`
      : row.accessMode === 'INVITED' ? await db<{ userId: string }[]>`select user_id from meeting_invitations where meeting_id = ${row.meetingId}`
      : [];
    const byUser = new Map<string, Stay[]>();
    for (const e of expected) byUser.set(e.userId, []);
    for (const s of stays) {
      const list = byUser.get(s.userId) ?? [];
      list.push({ joinedAt: s.joinedAt.getTime(), leftAt: s.leftAt?.getTime() ?? null });
      byUser.set(s.userId, list);
    }
    if (byUser.size === 0) return Attendance.#head(row, 'PROVISIONAL', []);
    const users = await db<MemberUser[]>`select id, external_id, full_name as name, role from users where id in ${db([...byUser.keys()])}`;
    const records = users.map((user): AttendanceRecord => {
      const r = reconcile({ startedAt, endAt, lateAt }, rules, byUser.get(user.id)!);
      return {
        user,
        status: r.status,
        durationSeconds: r.durationSeconds,
        joinedAt: r.intervals.length ? iso(r.intervals[0]!.joinedAt) : null,
        leftAt: r.intervals.length ? iso(r.intervals.at(-1)!.leftAt) : null,
        intervals: r.intervals.map((i) => ({ joinedAt: iso(i.joinedAt), leftAt: iso(i.leftAt) })),
      };
    });
    return Attendance.#head(row, 'PROVISIONAL', records.sort(byName));
  }
}
