import * as api from '../api.ts';
import { count, day, duration, time, when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Badge, Empty, ErrorNote, Filters, Loaded, PageHead, useAction, useLoad } from '../ui/common.tsx';
import { Details, Fact, Ids, Stat } from '../ui/facts.tsx';
import { activeCount, DataTable, type Column } from '../ui/list.tsx';
import { PersonCell, type AttendanceRecord, type AttendanceReport, type ClassAttendance } from './attendance.tsx';
import type { Class } from './classes.tsx';

type Person = ClassAttendance['students'][number];

/** A date input's day (`2026-11-02`, in this browser's time zone) as the instant it begins, `days` later; null for anything else. */
function dayStart(value: string, days = 0): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return null;
  const t = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + days);
  return Number.isNaN(t.getTime()) ? null : t.toISOString();
}

/** A class: what the backend said of it, and its attendance across its sessions, each student against each session. */
export function ClassPage({ id, query }: { id: string; query: URLSearchParams }) {
  const [load, reload] = useLoad(() => api.get<Class>(`/public/classes/${api.enc(id)}`), id);
  return (
    <Loaded load={load} what="the class" retry={reload}>
      {(c) => (
        <>
          <PageHead title={c.name} sub={<a href={href('/classes')}>← Classes</a>} />
          <Details after={c.description && <p class="class-description">{c.description}</p>}>
            <Fact term="Section">{c.section ?? <span class="muted">none</span>}</Fact>
            <Fact term="Academic year">{c.academicYear ?? <span class="muted">none</span>}</Fact>
            <Fact term="Course">{c.courseId ? <code>{c.courseId}</code> : <span class="muted">none</span>}</Fact>
            <Fact term="Ids" small>
              <Ids id={c.id} externalId={c.externalId} />
            </Fact>
            <Fact term="Created">{when(c.createdAt)}</Fact>
          </Details>
          <ClassAttendanceSection cls={c} query={query} />
        </>
      )}
    </Loaded>
  );
}

/** GET /public/classes/:id/attendance for the days chosen (`from` and `to` in the URL, both included), and its CSV. */
function ClassAttendanceSection({ cls, query }: { cls: Class; query: URLSearchParams }) {
  const from = query.get('from') ?? '';
  const to = query.get('to') ?? '';
  const range = Object.fromEntries(Object.entries({ from: dayStart(from), to: dayStart(to, 1) }).filter((e): e is [string, string] => e[1] !== null));
  const path = `/public/classes/${api.enc(cls.id)}/attendance`;
  const [load, reload] = useLoad(() => api.get<ClassAttendance>(path, range), `${cls.id}|${from}|${to}`);
  const csv = useAction();
  const csvPath = Object.keys(range).length ? `${path}?${new URLSearchParams(range)}` : path;
  const active = activeCount([from, to]);
  const dateFilter = (name: 'from' | 'to', label: string, value: string) => (
    <label class="filter">
      <span>{label}</span>
      <input type="date" name={name} value={value} onChange={(e) => setQuery({ [name]: (e.target as HTMLInputElement).value || null })} />
    </label>
  );
  return (
    <section class="section" aria-labelledby="att-h">
      <div class="section-head">
        <h2 id="att-h">Attendance across sessions</h2>
        <button type="button" class="btn small" disabled={csv.busy} onClick={() => csv.run(() => api.download(csvPath, 'text/csv', `attendance-${cls.externalId ?? cls.id}.csv`))}>
          {csv.busy ? 'Preparing…' : 'Download CSV'}
        </button>
      </div>
      {csv.error && <ErrorNote error={csv.error} />}
      <Filters active={active} clear={href(`/classes/${cls.id}`)}>
        {dateFilter('from', 'Sessions from', from)}
        {dateFilter('to', 'Up to and including', to)}
      </Filters>
      <Loaded load={load} what="attendance" retry={reload}>
        {(a) => <AttendanceMatrix attendance={a} filtered={active > 0} />}
      </Loaded>
    </section>
  );
}

const isStudent = (p: Person) => p.user.role === 'STUDENT';
const attended = (n: { present: number; late: number }) => n.present + n.late;
const share = (part: number, whole: number) => (whole ? `${Math.round((part / whole) * 100)}%` : '—');

/** One person's mark in one session: the status and the time in the room, or a dash when they were not expected then. */
function Mark({ record }: { record: AttendanceRecord | undefined }) {
  if (!record) {
    return (
      <>
        <span class="muted" aria-hidden="true">
          —
        </span>
        <span class="sr-only">not expected</span>
      </>
    );
  }
  return (
    <>
      <Badge value={record.status} />
      {record.durationSeconds > 0 && <div class="muted small">{duration(record.durationSeconds)}</div>}
    </>
  );
}

function SessionHead({ session }: { session: AttendanceReport }) {
  return (
    <>
      <a href={href(`/meetings/${session.meetingId}`)}>
        <span class="nowrap">{day(session.startedAt)}</span> <span class="nowrap">{time(session.startedAt)}</span>
      </a>
      <span class="session-note">{session.title}</span>
      {session.status === 'PROVISIONAL' && <span class="session-note">provisional</span>}
    </>
  );
}

/** Each student (then each teacher who came) against each session, oldest first, with their counts; under each session, how many students came. */
function AttendanceMatrix({ attendance: a, filtered }: { attendance: ClassAttendance; filtered: boolean }) {
  if (a.sessions.length === 0) {
    return filtered ? (
      <Empty title="No session of this class began in these days.">Clear the dates to see every session.</Empty>
    ) : (
      <Empty title="No session of this class has been held yet.">A session is listed once a class meeting of this class has gone live; its attendance counts from the first join.</Empty>
    );
  }
  const people = [...a.students.filter(isStudent), ...a.students.filter((p) => !isStudent(p))];
  const students = a.students.filter(isStudent);
  const sum = (f: (p: Person) => number) => students.reduce((n, p) => n + f(p), 0);
  const bySession = a.sessions.map((s) => new Map(s.records.map((r) => [r.user.id, r])));
  const provisional = a.sessions.filter((s) => s.status === 'PROVISIONAL').length;
  const columns: Column<Person>[] = [
    {
      head: 'Person',
      rowHeader: true,
      class: 'person',
      cell: (p) => <PersonCell user={p.user} />,
      foot: 'Students present or late',
    },
    ...a.sessions.map(
      (s, i): Column<Person> => ({
        head: <SessionHead session={s} />,
        class: 'session',
        cell: (p) => <Mark record={bySession[i]!.get(p.user.id)} />,
        foot: (() => {
          const rs = s.records.filter((r) => r.user.role === 'STUDENT');
          return `${rs.filter((r) => r.status !== 'ABSENT').length} of ${rs.length}`;
        })(),
      }),
    ),
    { head: 'Present', class: 'num', cell: (p) => p.present },
    { head: 'Late', class: 'num', cell: (p) => p.late },
    { head: 'Absent', class: 'num', cell: (p) => p.absent },
    { head: 'Time in class', class: 'nowrap', cell: (p) => duration(p.durationSeconds) },
  ];
  return (
    <>
      <p class="muted small">
        {a.sessions.length === 1 ? `One session, ${day(a.sessions[0]!.startedAt)}.` : `${a.sessions.length} sessions from ${day(a.sessions[0]!.startedAt)} to ${day(a.sessions.at(-1)!.startedAt)}, oldest first.`}{' '}
        {provisional > 0 && `${provisional === 1 ? 'One is' : `${provisional} are`} provisional: a session's attendance is final a few minutes after it ends.`}
      </p>
      <div class="stats">
        <Stat label="Sessions" value={count(a.sessions.length)} />
        <Stat label="Students" value={count(students.length)} />
        <Stat label="Present or late" value={share(sum(attended), sum((p) => p.total))} sub={`of ${count(sum((p) => p.total))} student sessions, ${count(sum((p) => p.late))} late`} />
      </div>
      {people.length === 0 ? (
        <Empty title="Nobody was expected at these sessions, and nobody came.">Students enrolled in the class when a session began are expected at it.</Empty>
      ) : (
        <DataTable label="Attendance by person and session" variant="matrix" columns={columns} rows={people} rowKey={(p) => p.user.id} />
      )}
    </>
  );
}
