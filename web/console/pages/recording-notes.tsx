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

/**
 * A recording's notes as a teacher or admin reviews them before students see them: the summary and
 * chapters edited in place, kept from the player page while they are not right, and the transcript
 * to check them against.
 */
export function NotesEditor({ recordingId }: { recordingId: string }) {
  const path = `${api.org()}/recordings/${api.enc(recordingId)}/notes`;
  const [load, , set] = useLoad(() => api.get<NotesReview>(path), path);
  if (load.state === 'loading') return <p class="muted small" role="status">Loading the notes…</p>;
  if (load.state === 'error') return <ErrorNote error={load.error} />;
  return <NotesForm review={load.data} path={path} onSaved={set} />;
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
