/** Attendance as the API answers it (docs/attendance.md), what the console reads of it: a meeting's report, and a class's across its sessions. */

export type AttendanceStatus = 'PRESENT' | 'LATE' | 'ABSENT';

export interface AttendancePerson {
  id: string;
  externalId: string;
  name: string;
  role: string;
}

export interface AttendanceRecord {
  user: AttendancePerson;
  status: AttendanceStatus;
  durationSeconds: number;
  joinedAt: string | null;
}

export interface Counts {
  total: number;
  present: number;
  late: number;
  absent: number;
}

/** GET /public/meetings/:id/attendance, and each session of a class's. */
export interface AttendanceReport {
  meetingId: string;
  title: string;
  status: 'PROVISIONAL' | 'FINAL';
  startedAt: string;
  finalizedAt: string | null;
  summary: Counts;
  records: AttendanceRecord[];
}

/** GET /public/classes/:id/attendance: the sessions that began in [from, to), oldest first, and each person's counts over them. */
export interface ClassAttendance {
  sessions: AttendanceReport[];
  students: (Counts & { user: AttendancePerson; durationSeconds: number })[];
}

/** A person in an attendance table: the name, with the role and the backend's id under it. */
export function PersonCell({ user }: { user: AttendancePerson }) {
  return (
    <>
      {user.name}
      <div class="muted small">
        {user.role.toLowerCase()} · {user.externalId}
      </div>
    </>
  );
}
