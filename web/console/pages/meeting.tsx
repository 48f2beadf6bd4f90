import * as api from '../api.ts';
import { duration, when } from '../format.ts';
import { href } from '../router.ts';
import { Badge, ConfirmButton, Empty, ErrorNote, Loaded, PageHead, useAction, useFlash, useLoad } from '../ui/common.tsx';
import { Details, Fact, Ids } from '../ui/facts.tsx';
import { DataTable, type Column } from '../ui/list.tsx';
import { PersonCell, type AttendanceRecord, type AttendanceReport } from './attendance.tsx';
import type { Class } from './classes.tsx';
import type { Meeting } from './meetings.tsx';
import { type Recording, RecordingRow } from './recordings.tsx';

/**
 * Ends a live room: the admin surface's route (recorded in the audit log as the admin's act) where the
 * server has it, otherwise the public API's, which the admin's session may call as well.
 */
async function endMeeting(id: string): Promise<Meeting> {
  try {
    return await api.post<Meeting>(api.org(`/meetings/${api.enc(id)}/end`));
  } catch (e) {
    if (!(e instanceof api.ApiError) || e.code !== 'route_not_found') throw e;
    return api.post<Meeting>(`/public/meetings/${api.enc(id)}/end`);
  }
}

/** A meeting: its status and times, end (or cancel) it, its attendance with the CSV, its recordings. */
export function MeetingPage({ id }: { id: string }) {
  const path = `/public/meetings/${api.enc(id)}`;
  const [load, reload, set] = useLoad(() => api.get<Meeting>(path), id);
  const [flash, say] = useFlash();
  return (
    <Loaded load={load} what="the meeting" retry={reload}>
      {(m) => (
        <>
          <PageHead title={m.title} sub={<a href={href('/meetings')}>← Meetings</a>}>
            {m.status === 'LIVE' && (
              <ConfirmButton
                label="End meeting"
                title="End this meeting for everyone?"
                body={<p>Everyone in the room is disconnected now, and the meeting cannot be started again. Its attendance is settled and recordings in progress are finished.</p>}
                confirmLabel="End meeting now"
                danger
                onConfirm={async () => {
                  set(await endMeeting(m.id));
                  say('The meeting has ended.');
                }}
              />
            )}
            {m.status === 'SCHEDULED' && (
              <ConfirmButton
                label="Cancel meeting"
                title="Cancel this meeting?"
                body={<p>Its join links stop working and meeting.cancelled is sent. A cancelled meeting cannot be scheduled again.</p>}
                confirmLabel="Cancel meeting"
                danger
                onConfirm={async () => {
                  set(await api.post<Meeting>(`${path}/cancel`));
                  say('The meeting is cancelled.');
                }}
              />
            )}
          </PageHead>
          {flash}
          <Details>
            <Fact term="Status">
              <Badge value={m.status} />
              {m.endedReason && <span class="muted small"> {m.endedReason.replaceAll('_', ' ').toLowerCase()}</span>}
            </Fact>
            <Fact term="Kind">{m.kind === 'CLASS' ? 'Class session' : 'Meeting'}</Fact>
            <Fact term="Scheduled">
              {when(m.scheduledStart)}, {m.durationMinutes} min
            </Fact>
            <Fact term="Started">{when(m.startedAt)}</Fact>
            <Fact term="Ended">
              {when(m.endedAt ?? m.cancelledAt)}
              {m.durationSeconds !== null && <span class="muted"> ({duration(m.durationSeconds)})</span>}
            </Fact>
            {m.classId && (
              <Fact term="Class">
                <ClassLink id={m.classId} />
              </Fact>
            )}
            <Fact term="Access">{m.access.mode.replaceAll('_', ' ').toLowerCase()}</Fact>
            <Fact term="Ids" small>
              <Ids id={m.id} externalId={m.externalId} />
            </Fact>
            <Fact term="Settings" small>
              {[m.settings.waitingRoom && 'waiting room', m.settings.muteOnEntry && 'muted on entry', m.settings.recordAutomatically && 'recorded automatically', m.settings.lectureMode && 'lecture mode', `chat: ${m.settings.chat.toLowerCase()}`].filter(Boolean).join(', ')}
            </Fact>
          </Details>
          {m.status === 'SCHEDULED' || m.status === 'CANCELLED' ? null : <AttendanceSection meeting={m} />}
          {m.status !== 'SCHEDULED' && m.status !== 'CANCELLED' && <PollsAndQuestions meetingId={m.id} />}
          <MeetingRecordings meetingId={m.id} />
        </>
      )}
    </Loaded>
  );
}

const ATTENDANCE_COLUMNS: Column<AttendanceRecord>[] = [
  { head: 'Person', cell: (r) => <PersonCell user={r.user} /> },
  { head: 'Status', cell: (r) => <Badge value={r.status} /> },
  { head: 'Time in the room', cell: (r) => duration(r.durationSeconds) },
  { head: 'Joined', class: 'nowrap', cell: (r) => when(r.joinedAt) },
];

/** The class a session belongs to, by name once read, to its page (its attendance across sessions). */
function ClassLink({ id }: { id: string }) {
  const [load] = useLoad(() => api.get<Class>(`/public/classes/${api.enc(id)}`), id);
  return <a href={href(`/classes/${id}`)}>{load.state === 'ok' ? load.data.name : 'The class and its attendance'}</a>;
}

function AttendanceSection({ meeting }: { meeting: Meeting }) {
  const path = `/public/meetings/${api.enc(meeting.id)}/attendance`;
  const [load, reload] = useLoad(() => api.get<AttendanceReport>(path), `${meeting.id}|${meeting.status}`);
  const csv = useAction();
  return (
    <section class="section" aria-labelledby="att-h">
      <div class="section-head">
        <h2 id="att-h">Attendance</h2>
        <button type="button" class="btn small" disabled={csv.busy} onClick={() => csv.run(() => api.download(path, 'text/csv', `attendance-${meeting.externalId ?? meeting.id}.csv`))}>
          {csv.busy ? 'Preparing…' : 'Download CSV'}
        </button>
      </div>
      {csv.error && <ErrorNote error={csv.error} />}
      <Loaded load={load} what="attendance" retry={reload}>
        {(a) => (
          <>
            <p class="muted small">
              {a.status === 'FINAL' ? `Final since ${when(a.finalizedAt)}.` : 'Provisional: it becomes final a few minutes after the meeting ends.'} {a.summary.present} present, {a.summary.late} late, {a.summary.absent} absent of {a.summary.total}.
            </p>
            {a.records.length === 0 ? <Empty title="Nobody attended." /> : <DataTable label="Attendance" columns={ATTENDANCE_COLUMNS} rows={a.records} rowKey={(r) => r.user.id} />}
          </>
        )}
      </Loaded>
    </section>
  );
}

function MeetingRecordings({ meetingId }: { meetingId: string }) {
  const [load, reload] = useLoad(() => api.list<Recording>(`/public/meetings/${api.enc(meetingId)}/recordings`, { limit: 20 }), meetingId);
  return (
    <section class="section" aria-labelledby="rec-h">
      <h2 id="rec-h">Recordings</h2>
      <Loaded load={load} what="recordings" retry={reload}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty title="No recordings of this meeting." />
          ) : (
            <ul class="cards">
              {page.data.map((r) => (
                <RecordingRow key={r.id} recording={r} onChanged={reload} />
              ))}
            </ul>
          )
        }
      </Loaded>
    </section>
  );
}

interface Polls {
  polls: { pollId: string; question: string; type: string; quiz: boolean; status: string; options: { index: number; text: string; votes: number | null; correct?: boolean }[]; answered: number | null; createdAt: string }[];
}
interface Questions {
  questions: { questionId: string; text: string; askedBy: { name: string } | null; upvotes: number; status: string; answer: string | null; answeredLive: boolean }[];
}

/** What the class said besides attendance: its polls and quizzes (with the votes once closed) and its Q&A. */
function PollsAndQuestions({ meetingId }: { meetingId: string }) {
  const base = `/public/meetings/${api.enc(meetingId)}`;
  const [load, reload] = useLoad(() => Promise.all([api.get<Polls>(`${base}/polls`), api.get<Questions>(`${base}/questions`)]), meetingId);
  return (
    <section class="section" aria-labelledby="pq-h">
      <h2 id="pq-h">Polls and questions</h2>
      <Loaded load={load} what="polls and questions" retry={reload}>
        {([p, q]) =>
          p.polls.length === 0 && q.questions.length === 0 ? (
            <Empty title="No polls or questions in this meeting." />
          ) : (
            <ul class="cards">
              {p.polls.map((poll) => (
                <li key={poll.pollId} class="card-item">
                  <div class="card-main">
                    <p class="strong">
                      {poll.quiz ? 'Quiz' : 'Poll'}: {poll.question} <Badge value={poll.status} />
                    </p>
                    <p class="muted small">
                      {poll.answered !== null ? `${poll.answered} answered` : 'open'}
                      {poll.options.length > 0 && ' · '}
                      {poll.options.map((o) => `${o.text}${o.votes !== null ? ` ${o.votes}` : ''}${o.correct ? ' ✓' : ''}`).join(' · ')}
                    </p>
                  </div>
                </li>
              ))}
              {q.questions.map((x) => (
                <li key={x.questionId} class="card-item">
                  <div class="card-main">
                    <p class="strong">
                      “{x.text}” <Badge value={x.status} />
                    </p>
                    <p class="muted small">
                      {x.askedBy?.name ?? 'anonymous'} · {x.upvotes} {x.upvotes === 1 ? 'upvote' : 'upvotes'}
                      {x.answer ? ` · answered: ${x.answer}` : x.answeredLive ? ' · answered live' : ''}
                    </p>
                  </div>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
    </section>
  );
}
