import { useState } from 'preact/hooks';
import { RECORDING_STATUSES } from '../../../src/core/recording.ts';
import * as api from '../api.ts';
import { bytes, duration, when } from '../format.ts';
import { href, setQuery } from '../router.ts';
import { Badge, ConfirmButton, Empty, ErrorNote, Filters, FilterSelect, Loaded, PageHead, Pager, useAction, useLoad } from '../ui/common.tsx';
import { NotesEditor } from './recording-notes.tsx';

export interface Recording {
  id: string;
  meetingId: string;
  externalMeetingId: string | null;
  status: (typeof RECORDING_STATUSES)[number];
  phase: string | null;
  automatic: boolean;
  startedAt: string;
  endedAt: string | null;
  durationSeconds: number | null;
  fileSizeBytes: number | null;
  failureReason: string | null;
  deletedAt: string | null;
}

interface Playback {
  url: string;
  audioUrl: string;
  embedUrl: string;
  expiresAt: string;
}

/**
 * One recording: play it (a short-lived playback link: the player page framed here, with the captions,
 * chapters and summary when the recording has notes; the page may be framed by this server), make its
 * notes again, and delete it.
 */
export function RecordingRow({ recording: r, onChanged }: { recording: Recording; onChanged: () => void }) {
  const [links, setLinks] = useState<Playback | null>(null);
  const [queued, setQueued] = useState<string | null>(null);
  const [editing, setEditing] = useState(false);
  const play = useAction();
  const notes = useAction();
  return (
    <li class="card-item">
      <div class="card-main">
        <p class="strong">
          {when(r.startedAt)} <Badge value={r.status} />
          {r.phase && <span class="muted small"> {r.phase.toLowerCase()}</span>}
        </p>
        <p class="muted small">
          {duration(r.durationSeconds)} · {bytes(r.fileSizeBytes)} · {r.automatic ? 'automatic' : 'started by a host'} · meeting <a href={href(`/meetings/${r.meetingId}`)}>{r.externalMeetingId ?? r.meetingId}</a>
        </p>
        {r.failureReason && <p class="small bad-text">{r.failureReason}</p>}
      </div>
      <div class="card-actions">
        {r.status === 'READY' && (
          <button type="button" class="btn small" disabled={play.busy} aria-label={`Play the recording of ${when(r.startedAt)}`} onClick={() => play.run(async () => setLinks(await api.post<Playback>(`/public/recordings/${api.enc(r.id)}/playback`, {})))}>
            Play
          </button>
        )}
        {r.status === 'READY' && (
          <button type="button" class="btn small" aria-expanded={editing} aria-label={`Notes of the recording of ${when(r.startedAt)}`} onClick={() => setEditing(!editing)}>
            Notes
          </button>
        )}
        {r.status === 'READY' && (
          <button
            type="button"
            class="btn small"
            disabled={notes.busy}
            aria-label={`Make notes again for the recording of ${when(r.startedAt)}`}
            onClick={() =>
              notes.run(async () => {
                const job = await api.post<{ id: string }>(`/public/recordings/${api.enc(r.id)}/notes`);
                setQueued(`Making the transcript and notes again (job ${job.id}); the player page shows them when they are ready.`);
              })
            }
          >
            Make notes again
          </button>
        )}
        {r.status !== 'DELETED' && (
          <ConfirmButton
            small
            danger
            label="Delete"
            ariaLabel={`Delete the recording of ${when(r.startedAt)}`}
            title="Delete this recording?"
            body={<p>Its files are removed for good and recording.deleted is sent to your webhooks. A recording still being captured is stopped first.</p>}
            confirmLabel="Delete recording"
            onConfirm={async () => {
              await api.del(`/public/recordings/${api.enc(r.id)}`);
              onChanged();
            }}
          />
        )}
      </div>
      {play.error && <ErrorNote error={play.error} />}
      {notes.error && <ErrorNote error={notes.error} />}
      {queued && (
        <p class="flash card-note" role="status">
          {queued}
        </p>
      )}
      {editing && (
        <div class="player">
          <NotesEditor recordingId={r.id} />
        </div>
      )}
      {links && (
        <div class="player">
          <iframe class="player-frame" src={links.embedUrl} title="Recording player: the video, its captions, chapters and summary" allow="fullscreen" />
          <p class="small">
            <a href={links.embedUrl} target="_blank" rel="noopener noreferrer">
              Open the player page
            </a>{' '}
            · <a href={links.audioUrl}>audio only</a> · links work until {when(links.expiresAt)}
          </p>
        </div>
      )}
    </li>
  );
}

export function Recordings({ query }: { query: URLSearchParams }) {
  const f = { status: query.get('status') ?? '', meetingId: query.get('meetingId') ?? '', cursor: query.get('cursor') };
  const [load, reload] = useLoad(() => api.list<Recording>('/public/recordings', { ...f, limit: 25 }), JSON.stringify(f));
  const [meeting, setMeeting] = useState(f.meetingId);
  const filtered = Boolean(f.status || f.meetingId);
  return (
    <>
      <PageHead title="Recordings" sub="Cloud recordings of your meetings and classes, newest first." />
      <Filters active={[f.status, f.meetingId].filter(Boolean).length}>
        <FilterSelect name="status" label="Status" options={RECORDING_STATUSES} value={f.status} onChange={(v) => setQuery({ status: v })} />
        <form
          class="filter search"
          role="search"
          onSubmit={(e) => {
            e.preventDefault();
            setQuery({ meetingId: meeting.trim() || null });
          }}
        >
          <label for="r-meeting">Meeting id or external id</label>
          <span class="search-row">
            <input id="r-meeting" name="meetingId" value={meeting} onInput={(e) => setMeeting((e.target as HTMLInputElement).value)} spellcheck={false} />
            <button class="btn small" type="submit">
              Find
            </button>
          </span>
        </form>
        {filtered && (
          <a class="btn small clear" href={href('/recordings')}>
            Clear filters
          </a>
        )}
      </Filters>
      <Loaded load={load} what="recordings" retry={reload}>
        {(page) =>
          page.data.length === 0 ? (
            <Empty title={filtered ? 'No recording matches these filters.' : 'No recordings yet.'}>{filtered ? 'Clear a filter to see more.' : 'A host starts recording in the room, or a meeting records automatically when its settings say so.'}</Empty>
          ) : (
            <>
              <ul class="cards">
                {page.data.map((r) => (
                  <RecordingRow key={r.id} recording={r} onChanged={reload} />
                ))}
              </ul>
              <Pager nextCursor={page.nextCursor} count={page.data.length} />
            </>
          )
        }
      </Loaded>
    </>
  );
}
