import { useState } from 'preact/hooks';
import * as api from '../api.ts';
import { when } from '../format.ts';
import { ErrorNote, useAction, useFlash, useLoad } from '../ui/common.tsx';

/** GET /orgs/:orgId/recordings/:id/notes: what the console reviews. */
interface NotesReview {
  notesId: string;
  language: string;
  createdAt: string;
  durationSeconds: number;
  summary: { overview: string; bullets: string[] };
  chapters: { title: string; startSeconds: number }[];
  quizQuestionCount: number;
  generated: { summary: { overview: string; bullets: string[] }; chapters: { title: string; startSeconds: number }[] };
  edited: { by: string | null; at: string } | null;
  hidden: boolean;
  transcript: string;
}

const clock = (s: number) => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
const chaptersText = (cs: NotesReview['chapters']) => cs.map((c) => `${clock(c.startSeconds)} ${c.title}`).join('\n');

/** `m:ss Title` (or `h:mm:ss Title`) per line; the lines that do not start with a time are reported. */
export function parseChapters(text: string): { chapters: NotesReview['chapters']; bad: string[] } {
  const chapters: NotesReview['chapters'] = [];
  const bad: string[] = [];
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const m = /^(?:(\d+):)?(\d{1,2}):(\d{2})\s+(.+)$/.exec(line);
    if (!m) bad.push(line);
    else chapters.push({ startSeconds: Number(m[1] ?? 0) * 3600 + Number(m[2]) * 60 + Number(m[3]), title: m[4]!.trim() });
  }
  return { chapters, bad };
}

/** GET /orgs/:orgId/recordings/:id/notes/runs: each making of the notes, newest first. */
interface NotesRun {
  id: string;
  jobId: string;
  status: 'RUNNING' | 'READY' | 'FAILED';
  manual: boolean;
  failureReason: string | null;
  lastAttemptError: string | null;
  createdAt: string;
  finishedAt: string | null;
}

interface NotesState {
  review: NotesReview | null;
  latest: NotesRun | null;
  /** Why the organization's recordings get no notes now (GET /orgs/:orgId), asked only when nothing was ever made. */
  unavailable: string | null;
}

async function loadNotes(path: string): Promise<NotesState> {
  const [review, runs] = await Promise.all([
    api.get<NotesReview>(path).catch((err: unknown) => {
      if (err instanceof api.ApiError && err.status === 404 && err.code === 'not_found') return null;
      throw err;
    }),
    api.get<NotesRun[]>(`${path}/runs`),
  ]);
  const latest = runs[0] ?? null;
  const unavailable = latest ? null : (await api.get<{ aiNotesUnavailable: string | null }>(api.org())).aiNotesUnavailable;
  return { review, latest, unavailable };
}

/** Where the making of the notes stands: under way, or why the last one failed, or why there are none. */
function RunStatus({ state: { review, latest, unavailable } }: { state: NotesState }) {
  if (latest?.status === 'RUNNING')
    return (
      <p class="muted small">
        The transcript and notes are being made (since {when(latest.createdAt)}, job {latest.jobId}){review ? '; the notes below are shown until they are ready' : ''}.
        {latest.lastAttemptError && <span class="bad-text"> The last attempt failed and will be tried again: {latest.lastAttemptError}</span>}
      </p>
    );
  if (latest?.status === 'FAILED')
    return (
      <p class="small bad-text">
        Making the notes failed {when(latest.finishedAt ?? latest.createdAt)}: {latest.failureReason}
        {review ? ' The notes below are from an earlier making.' : ' Make notes again when the cause is fixed.'}
      </p>
    );
  if (!review && !latest)
    return <p class="muted small">This recording has no transcript or notes. {unavailable ?? 'None were made for it (AI notes were off when it was recorded): make notes again to make them.'}</p>;
  return null;
}

/**
 * A recording's notes as a teacher or admin reviews them before students see them: the summary and
 * chapters edited in place, kept from the player page while they are not right, and the transcript
 * to check them against; above them, a making under way or why the last one failed.
 */
export function NotesEditor({ recordingId }: { recordingId: string }) {
  const path = `${api.org()}/recordings/${api.enc(recordingId)}/notes`;
  const [load, , set] = useLoad(() => loadNotes(path), path);
  if (load.state === 'loading') return <p class="muted small" role="status">Loading the notes…</p>;
  if (load.state === 'error') return <ErrorNote error={load.error} />;
  const state = load.data;
  return (
    <>
      <RunStatus state={state} />
      {state.review && <NotesForm review={state.review} path={path} onSaved={(review) => set({ ...state, review })} />}
    </>
  );
}

function NotesForm({ review: r, path, onSaved }: { review: NotesReview; path: string; onSaved: (r: NotesReview) => void }) {
  const [overview, setOverview] = useState(r.summary.overview);
  const [bullets, setBullets] = useState(r.summary.bullets.join('\n'));
  const [chapters, setChapters] = useState(chaptersText(r.chapters));
  const [hidden, setHidden] = useState(r.hidden);
  const [problem, setProblem] = useState<string | null>(null);
  const action = useAction();
  const [flash, say] = useFlash();
  const id = r.notesId;

  const submit = (e: Event) => {
    e.preventDefault();
    const parsed = parseChapters(chapters);
    if (parsed.bad.length) {
      setProblem(`Each chapter is a time and a title, like "4:30 The water cycle": ${parsed.bad.map((b) => `"${b}"`).join(', ')}`);
      return;
    }
    setProblem(null);
    void action.run(async () => {
      const saved = await api.patch<NotesReview>(path, {
        summary: { overview: overview.trim(), bullets: bullets.split('\n').map((b) => b.trim()).filter(Boolean) },
        chapters: parsed.chapters,
        hidden,
      });
      onSaved(saved);
      say(saved.hidden ? 'Notes saved. They are hidden from viewers until you show them.' : 'Notes saved. Viewers of the recording see them now.');
    });
  };

  return (
    <form class="form notes-editor" onSubmit={submit} aria-labelledby={`${id}-h`}>
      <h3 id={`${id}-h`}>Notes</h3>
      <p class="muted small">
        Made {when(r.createdAt)} in {r.language}
        {r.edited ? `; edited by ${r.edited.by ?? 'an admin'} ${when(r.edited.at)}` : ''}. {r.quizQuestionCount} quiz questions drafted. Making the notes again starts from the engine's notes.
      </p>
      <label>
        <span>Overview</span>
        <textarea name="overview" rows={3} maxLength={1000} required value={overview} onInput={(e) => setOverview((e.target as HTMLTextAreaElement).value)} />
      </label>
      <label>
        <span>Key points, one per line</span>
        <textarea name="bullets" rows={5} value={bullets} onInput={(e) => setBullets((e.target as HTMLTextAreaElement).value)} />
      </label>
      <label>
        <span>Chapters, one per line: the time it starts, then its title</span>
        <textarea name="chapters" rows={5} value={chapters} onInput={(e) => setChapters((e.target as HTMLTextAreaElement).value)} aria-describedby={`${id}-ch`} spellcheck={false} />
        <span class="hint" id={`${id}-ch`}>
          Like "0:00 Welcome" and "4:30 The water cycle", in order, within the recording ({clock(r.durationSeconds)}).
        </span>
      </label>
      <label class="check">
        <input type="checkbox" name="hidden" checked={hidden} onChange={(e) => setHidden((e.target as HTMLInputElement).checked)} />
        <span>Hide the summary and chapters from viewers (the captions still show)</span>
      </label>
      {problem && (
        <p class="error-note" role="alert">
          {problem}
        </p>
      )}
      {action.error && <ErrorNote error={action.error} />}
      {!problem && flash}
      <div class="form-actions">
        <button class="btn primary" type="submit" disabled={action.busy}>
          Save notes
        </button>
      </div>
      <details>
        <summary>Transcript</summary>
        <pre class="transcript">{r.transcript}</pre>
      </details>
    </form>
  );
}
