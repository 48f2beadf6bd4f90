import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iso, type Clock } from '../core/clock.ts';
import { AppError } from '../core/errors.ts';
import { planHas, type PlanName } from '../core/plans.ts';
import { toPlainText, toWebVtt, wordCount, type ClassTranscript, type ClassTranscriptSegment } from '../core/transcript.ts';
import { supportsLanguage, TranscriptionError, type TranscriptionEngine } from '../platform/ai/asr.ts';
import { NOTES_LIMITS, type LectureNotes, type NotesEngine } from '../platform/ai/notes.ts';

export type { LectureNotes };
export { NOTES_LIMITS };
import type { Db, Sql } from '../platform/db/index.ts';
import { afterCommit, inTx } from '../platform/db/tx.ts';
import { newId } from '../platform/ids.ts';
import type { Logger } from '../platform/logger.ts';
import type { Outbox } from '../platform/outbox.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import type { Storage } from '../platform/storage/index.ts';
import { depacketizeTrack } from '../../media/recording/depacketize.ts';
import { readManifest } from '../../media/recording/format.ts';
import { PermanentJobError, type JobRow } from './jobs.ts';
import { fetchSegment, savedSegments } from './recordings.ts';

/** What one participant's track said, on the recording's timeline (a run's step, kept as it finishes). */
interface TrackTranscript {
  speaker: string;
  segments: Omit<ClassTranscriptSegment, 'speaker'>[];
}

interface NotesRow {
  id: string;
  orgId: string;
  recordingId: string;
  jobId: string;
  status: 'RUNNING' | 'READY' | 'FAILED';
  manual: boolean;
  language: string;
  tracks: Record<string, TrackTranscript>;
  transcript: ClassTranscript | null;
  wordCount: number | null;
  durationMs: number | null;
  notes: LectureNotes | null;
  editedNotes: LectureNotes | null;
  editedBy: string | null;
  editedAt: Date | null;
  failureReason: string | null;
  /** A RUNNING run's job retries after this error (the engine refused or timed out); null otherwise. */
  lastAttemptError: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/** One making of a recording's transcript and notes, as the console lists them. */
export interface NotesRun {
  id: string;
  jobId: string;
  status: NotesRow['status'];
  /** Asked for (POST /public/recordings/:id/notes), not made after recording.ready. */
  manual: boolean;
  language: string;
  wordCount: number | null;
  /** Why a FAILED run failed, as a person reads it; null otherwise. */
  failureReason: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/** A recording's notes as the player page and the console read them. */
export interface CurrentNotes {
  notesId: string;
  transcript: ClassTranscript;
  /** What is shown: as edited, or as made. */
  notes: LectureNotes;
  /** As the engine made them. */
  generated: LectureNotes;
  edited: { by: string | null; at: Date } | null;
  /** Not shown to viewers until a person has reviewed them. */
  hidden: boolean;
  nameOf: (speaker: string) => string;
  createdAt: Date;
}

/** What the console's review changes. */
export interface NotesReview {
  summary?: LectureNotes['summary'] | undefined;
  chapters?: LectureNotes['chapters'] | undefined;
  hidden?: boolean | undefined;
}

/** A speaker whose account the attendance does not know (it always should). */
const UNKNOWN_SPEAKER = 'Speaker';

/** Why an organization's recordings get no transcript and notes, said to a person (the console shows it); null: they do. */
export type NotesUnavailable = string | null;

export interface RecordingNotesOptions {
  sql: Sql;
  clock: Clock;
  outbox: Outbox;
  storage: Storage;
  bus: Bus;
  log: Logger;
  /** The configured engines; `asr` null when this server has no usable transcription engine (`unconfigured` says why). */
  asr: TranscriptionEngine | null;
  notes: NotesEngine;
  unconfigured?: string;
}

/**
 * Transcripts and lecture notes of READY recordings (docs/ai-notes.md). A run is queued with
 * recording.ready (when the server has an engine, the organization has AI notes switched on, its plan
 * has `ai_notes` and the engine does its language) or by a regeneration; the `recording.notes` job
 * transcribes each participant's microphone track apart (so each line says who spoke), merges them on
 * the recording's timeline, writes the notes, and sends transcript.ready and insights.ready (background
 * events: whatever the plan's webhooks) in the transaction that makes the run READY. Each step's result
 * is kept, so a run taken over after a crash goes on from there and sends its events once.
 */
export class RecordingNotes {
  readonly #o: RecordingNotesOptions;

  constructor(o: RecordingNotesOptions) {
    this.#o = o;
  }

  /** Why an organization with these settings gets no notes; null when it does. */
  unavailable(org: { plan: PlanName; aiNotes: boolean; language: string }): NotesUnavailable {
    if (!planHas(org.plan, 'ai_notes')) return `The ${org.plan} plan does not include AI notes.`;
    if (!org.aiNotes) return 'AI notes are switched off for this organization.';
    if (!this.#o.asr) return `This server has no transcription engine: ${this.#o.unconfigured ?? 'none is configured'}.`;
    if (!supportsLanguage(this.#o.asr, org.language)) return `The server's transcription engine (${this.#o.asr.name}) cannot transcribe "${org.language}"; it does ${this.#o.asr.languages().join(', ')}.`;
    return null;
  }

  async #org(db: Db, orgId: string): Promise<{ plan: PlanName; aiNotes: boolean; language: string }> {
    const [org] = await db<{ plan: PlanName; aiNotes: boolean; language: string }[]>`select plan, ai_notes, language from organizations where id = ${orgId}`;
    if (!org) throw new AppError('not_found', { message: `No organization ${orgId}.` });
    return org;
  }

  async #queue(db: Db, orgId: string, recordingId: string, language: string, manual: boolean, at: number): Promise<JobRow> {
    const notesId = newId('nts', at);
    const [job] = await db<JobRow[]>`insert into jobs (id, org_id, kind, status, input, total, created_at)
      values (${newId('job', at)}, ${orgId}, 'recording.notes', 'QUEUED', ${db.json({ recordingId, notesId })}, 1, ${iso(at)}) returning *`;
    await db`insert into recording_notes (id, org_id, recording_id, job_id, status, manual, language, created_at)
      values (${notesId}, ${orgId}, ${recordingId}, ${job!.id}, 'RUNNING', ${manual}, ${language}, ${iso(at)})`;
    afterCommit(db, () => void this.#o.bus.publish('jobs', {}));
    return job!;
  }

  /** In the transaction that makes a recording READY: its run, when the organization gets notes. */
  async afterReady(tx: Db, orgId: string, recordingId: string, at: number): Promise<void> {
    const org = await this.#org(tx, orgId);
    const why = this.unavailable(org);
    if (why) {
      this.#o.log.info({ orgId, recordingId, why }, 'no transcript or notes for this recording');
      return;
    }
    await this.#queue(tx, orgId, recordingId, org.language, false, at);
  }

  /** POST /public/recordings/:id/notes: a new run of a READY recording (the earlier notes stay until it is READY), or the run under way. */
  async regenerate(db: Db, orgId: string, recordingId: string): Promise<JobRow> {
    const [r] = await db<{ status: string }[]>`select status from recordings where id = ${recordingId} and org_id = ${orgId}`;
    if (!r) throw new AppError('recording_not_found', { details: { id: recordingId } });
    if (r.status !== 'READY') throw new AppError('invalid_state', { message: `Only a READY recording has notes; this one is ${r.status}.`, details: { status: r.status } });
    const org = await this.#org(db, orgId);
    if (!planHas(org.plan, 'ai_notes')) throw new AppError('plan_feature_unavailable', { message: `The ${org.plan} plan does not include AI notes.`, details: { feature: 'ai_notes', plan: org.plan } });
    const why = this.unavailable(org);
    if (why) throw new AppError('ai_notes_unavailable', { message: why });
    // one run at a time per recording: asking again while one runs answers that run's job (a burst of
    // requests cannot queue hours of transcription)
    const [running] = await db<JobRow[]>`select j.* from recording_notes n join jobs j on j.id = n.job_id
      where n.recording_id = ${recordingId} and n.status = 'RUNNING' and j.status in ('QUEUED', 'RUNNING') order by n.created_at desc limit 1`;
    if (running) return running;
    return this.#queue(db, orgId, recordingId, org.language, true, this.#o.clock.now());
  }

  // ---- the job -------------------------------------------------------------------------------------

  async #row(id: string): Promise<NotesRow | null> {
    const [n] = await this.#o.sql<NotesRow[]>`select n.* from recording_notes n join recordings r on r.id = n.recording_id
      where n.id = ${id} and r.status = 'READY'`;
    return n ?? null;
  }

  /**
   * The `recording.notes` job: transcribes each microphone track not transcribed yet (kept one by one),
   * merges them, writes the notes, and makes the run READY with its two events. A recording deleted
   * meanwhile (its runs go with it) ends the job with nothing sent. An engine that refuses the audio or
   * the language for good fails the run at once (PermanentJobError); one that may work later is retried.
   */
  async run(input: Record<string, unknown>, signal: AbortSignal): Promise<void> {
    const notesId = String(input.notesId);
    try {
      await this.#steps(notesId, signal);
    } catch (err) {
      // a recording deleted while a step read its files (they go after the deletion commits) ends the
      // job with nothing sent, as at any other step; a retry would wait for a run that is gone
      if (!signal.aborted && !(await this.#row(notesId))) return;
      throw err;
    }
  }

  async #steps(notesId: string, signal: AbortSignal): Promise<void> {
    let n = await this.#row(notesId);
    if (!n || n.status !== 'RUNNING') return;
    const asr = this.#o.asr;
    if (!asr) throw new PermanentJobError(`no transcription engine: ${this.#o.unconfigured ?? 'none is configured'}`);
    const [rec] = await this.#o.sql<{ meetingId: string; durationSeconds: number | null }[]>`select meeting_id, duration_seconds from recordings where id = ${n.recordingId}`;
    if (!rec) return;
    const durationMs = (rec.durationSeconds ?? 0) * 1000;

    if (!n.transcript) {
      const work = await mkdtemp(join(tmpdir(), `aula-notes-${n.recordingId}-`));
      try {
        let offsetMs = 0;
        for (const saved of await savedSegments(this.#o.storage, n.orgId, n.recordingId)) {
          const dir = await fetchSegment(this.#o.storage, n.orgId, n.recordingId, saved, work);
          const m = await readManifest(dir);
          let endMs = m.durationMs ?? 0;
          for (const [i, t] of m.tracks.entries()) {
            if (t.kind !== 'audio' || t.source !== 'mic') continue;
            const key = `${m.segment}/${t.trackId}`;
            const path = join(work, `s${m.segment}-a${i}.ogg`);
            const media = await depacketizeTrack(dir, t, [{ path }], signal);
            endMs = Math.max(endMs, media.endMs ?? 0);
            if (n.tracks[key]) continue; // transcribed by an earlier attempt
            const w = media.written[0];
            let heard: TrackTranscript = { speaker: t.participantId, segments: [] };
            if (w && w.startMs !== null && !media.problem) {
              const at = offsetMs + w.startMs;
              try {
                const tr = await asr.transcribe(path, { language: n.language, signal });
                heard = {
                  speaker: t.participantId,
                  segments: tr.segments
                    .filter((s) => s.text.trim())
                    .map((s) => ({
                      startMs: Math.round(at + s.startMs),
                      endMs: Math.round(at + s.endMs),
                      text: s.text.trim(),
                      ...(s.words?.length ? { words: s.words.map((x) => ({ startMs: Math.round(at + x.startMs), endMs: Math.round(at + x.endMs), word: x.word })) } : {}),
                    })),
                };
              } catch (err) {
                if (signal.aborted) throw err;
                if (err instanceof TranscriptionError && !err.retryable) throw new PermanentJobError(`The transcription engine (${asr.name}) failed: ${err.message}`, { cause: err });
                throw err;
              }
            }
            // this track's step is kept; a run deleted meanwhile (its recording deleted) ends here
            const kept = await this.#o.sql`update recording_notes set tracks = tracks || ${this.#o.sql.json({ [key]: heard } as never)}
              where id = ${notesId} and status = 'RUNNING' returning id`;
            if (!kept.length) return;
            n.tracks[key] = heard;
          }
          offsetMs += endMs;
        }
      } finally {
        await rm(work, { recursive: true, force: true });
      }
      const transcript = await this.#merge(n, rec.meetingId, durationMs || Object.values(n.tracks).reduce((a, t) => Math.max(a, t.segments.at(-1)?.endMs ?? 0), 0));
      const kept = await this.#o.sql`update recording_notes set transcript = ${this.#o.sql.json(transcript as never)}, word_count = ${wordCount(transcript)},
          duration_ms = ${transcript.durationMs}, transcribed_at = ${iso(this.#o.clock.now())}
        where id = ${notesId} and status = 'RUNNING' returning id`;
      if (!kept.length) return;
      n = (await this.#row(notesId)) ?? null;
      if (!n || !n.transcript) return;
    }

    const transcript = n.transcript!;
    if (!transcript.segments.length) throw new PermanentJobError('No speech was heard in the recording: there is nothing to make a transcript or notes from.');
    const names = await this.names(this.#o.sql, transcript);
    let notes: LectureNotes;
    try {
      notes = await this.#o.notes.notes(
        { language: transcript.language, durationMs: transcript.durationMs, segments: transcript.segments.map((s) => ({ ...s, speaker: names(s.speaker) })) },
        { language: transcript.language, signal },
      );
    } catch (err) {
      if (signal.aborted) throw err;
      throw new Error(`The notes engine (${this.#o.notes.name}) failed: ${(err as Error).message}`, { cause: err });
    }
    const now = this.#o.clock.now();
    await inTx(this.#o.sql, async (tx) => {
      const [row] = await tx<NotesRow[]>`update recording_notes set status = 'READY', notes = ${tx.json(notes as never)}, finished_at = ${iso(now)},
          engines = ${tx.json({ transcription: asr.name, notes: this.#o.notes.name })}
        where id = ${notesId} and status = 'RUNNING' and exists (select 1 from recordings r where r.id = recording_id and r.status = 'READY') returning *`;
      if (!row) return;
      const [m] = await tx<{ kind: string }[]>`select kind from meetings where id = ${rec.meetingId}`;
      const base = { recordingId: row.recordingId, meetingId: rec.meetingId, kind: m?.kind ?? 'MEETING', language: transcript.language };
      await this.#o.outbox.emit(tx, row.orgId, 'transcript.ready', { ...base, wordCount: row.wordCount }, now, { background: true });
      await this.#o.outbox.emit(
        tx,
        row.orgId,
        'insights.ready',
        {
          ...base,
          summary: notes.summary,
          chapters: notes.chapters,
          quizQuestionCount: notes.quiz.length,
          durationSeconds: Math.round(transcript.durationMs / 1000),
        },
        now,
        { background: true },
      );
    });
  }

  /** The job gave up (or failed for good): the run is FAILED with the reason; nothing is sent. */
  async gaveUp(input: Record<string, unknown>, why: string): Promise<void> {
    await this.#o.sql`update recording_notes set status = 'FAILED', failure_reason = ${why}, finished_at = ${iso(this.#o.clock.now())}
      where id = ${String(input.notesId)} and status = 'RUNNING'`;
    this.#o.log.warn({ notesId: input.notesId, why }, 'transcript and notes failed');
  }

  /** The tracks merged on one timeline, each segment with its speaker (and the speaker's account, from the attendance). */
  async #merge(n: NotesRow, meetingId: string, durationMs: number): Promise<ClassTranscript> {
    const segments: ClassTranscriptSegment[] = [];
    const ids = new Set<string>();
    for (const t of Object.values(n.tracks)) {
      ids.add(t.speaker);
      for (const s of t.segments) segments.push({ ...s, speaker: t.speaker });
    }
    segments.sort((a, b) => a.startMs - b.startMs || a.endMs - b.endMs);
    const users = ids.size
      ? await this.#o.sql<{ participantId: string; userId: string }[]>`select distinct participant_id, user_id from attendance_intervals
          where meeting_id = ${meetingId} and participant_id in ${this.#o.sql([...ids])}`
      : [];
    const byParticipant = new Map(users.map((u) => [u.participantId, u.userId]));
    return { language: n.language, durationMs, speakers: [...ids].map((id) => ({ id, userId: byParticipant.get(id) ?? null })), segments };
  }

  /**
   * The speakers' names as they are now: from their accounts (a deleted account reads "Deleted user"),
   * or as the room showed them when the attendance did not know the account.
   */
  async names(db: Db, t: ClassTranscript): Promise<(speaker: string) => string> {
    const userIds = t.speakers.map((s) => s.userId).filter((u): u is string => u !== null);
    const rows = userIds.length ? await db<{ id: string; fullName: string }[]>`select id, full_name from users where id in ${db(userIds)}` : [];
    const byUser = new Map(rows.map((r) => [r.id, r.fullName]));
    const bySpeaker = new Map(t.speakers.map((s) => [s.id, (s.userId ? byUser.get(s.userId) : undefined) ?? UNKNOWN_SPEAKER]));
    return (speaker) => bySpeaker.get(speaker) ?? UNKNOWN_SPEAKER;
  }

  // ---- reading (the player page, the console) --------------------------------------------------------

  /**
   * The newest READY run of a recording: its transcript and notes (as a person edited them, when they
   * did), with the speakers' names as they are now; `hidden`: not to be shown to viewers yet.
   */
  async current(db: Db, orgId: string, recordingId: string): Promise<CurrentNotes | null> {
    const [n] = await db<(NotesRow & { notesHidden: boolean })[]>`select n.*, r.notes_hidden from recording_notes n join recordings r on r.id = n.recording_id
      where n.org_id = ${orgId} and n.recording_id = ${recordingId} and n.status = 'READY' and r.status = 'READY'
      order by n.created_at desc, n.id desc limit 1`;
    if (!n || !n.transcript || !n.notes) return null;
    return {
      notesId: n.id,
      transcript: n.transcript,
      notes: n.editedNotes ?? n.notes,
      generated: n.notes,
      edited: n.editedAt ? { by: n.editedBy, at: n.editedAt } : null,
      hidden: n.notesHidden,
      nameOf: await this.names(db, n.transcript),
      createdAt: n.createdAt,
    };
  }

  /**
   * A recording's runs, newest first: what the console shows beside the notes (a run under way, or why
   * the last one FAILED). recording_not_found when the recording is not the organization's.
   */
  async runs(db: Db, orgId: string, recordingId: string, limit = 20): Promise<NotesRun[]> {
    const [r] = await db<{ id: string }[]>`select id from recordings where id = ${recordingId} and org_id = ${orgId}`;
    if (!r) throw new AppError('recording_not_found');
    const rows = await db<(Pick<NotesRow, 'id' | 'jobId' | 'status' | 'manual' | 'language' | 'wordCount' | 'failureReason' | 'createdAt' | 'finishedAt'> & { jobError: string | null })[]>`
      select n.id, n.job_id, n.status, n.manual, n.language, n.word_count, n.failure_reason, n.created_at, n.finished_at, j.error as job_error
      from recording_notes n left join jobs j on j.id = n.job_id
      where n.org_id = ${orgId} and n.recording_id = ${recordingId} order by n.created_at desc, n.id desc limit ${limit}`;
    return rows.map((n) => ({
      id: n.id,
      jobId: n.jobId,
      status: n.status,
      manual: n.manual,
      language: n.language,
      wordCount: n.wordCount,
      failureReason: n.status === 'FAILED' ? (n.failureReason ?? n.jobError ?? 'The run failed without a reason.') : null,
      lastAttemptError: n.status === 'RUNNING' ? n.jobError : null,
      createdAt: n.createdAt,
      finishedAt: n.finishedAt,
    }));
  }

  /**
   * The console's review: the current run's summary and chapters as a person wants them, and whether
   * viewers see the notes. not_found while the recording has no notes. A regeneration starts from the
   * model's notes again; `hidden` stays with the recording.
   */
  async review(db: Db, orgId: string, recordingId: string, change: NotesReview, by: string): Promise<CurrentNotes> {
    const c = await this.current(db, orgId, recordingId);
    if (!c) throw new AppError('not_found', { message: 'This recording has no transcript and notes yet.' });
    const now = iso(this.#o.clock.now());
    if (change.summary || change.chapters) {
      const edited: LectureNotes = { ...c.notes, ...(change.summary ? { summary: change.summary } : {}), ...(change.chapters ? { chapters: change.chapters } : {}) };
      const bad = edited.chapters.find((x, i) => (x.startSeconds > 0 && x.startSeconds * 1000 >= c.transcript.durationMs) || (i > 0 && x.startSeconds <= edited.chapters[i - 1]!.startSeconds));
      if (bad) throw new AppError('validation_failed', { details: { fields: [{ field: 'chapters', in: 'body', code: 'custom', message: `chapters start in increasing order inside the recording (${Math.round(c.transcript.durationMs / 1000)} s); "${bad.title}" at ${bad.startSeconds} s does not` }] } });
      await db`update recording_notes set edited_notes = ${db.json(edited as never)}, edited_by = ${by}, edited_at = ${now} where id = ${c.notesId}`;
    }
    if (change.hidden !== undefined) await db`update recordings set notes_hidden = ${change.hidden} where id = ${recordingId} and org_id = ${orgId}`;
    return (await this.current(db, orgId, recordingId))!;
  }

  /** The transcript as a file: WebVTT captions or plain text. */
  async transcriptFile(db: Db, orgId: string, recordingId: string, format: 'vtt' | 'txt'): Promise<string | null> {
    const c = await this.current(db, orgId, recordingId);
    if (!c) return null;
    return format === 'vtt' ? toWebVtt(c.transcript, c.nameOf) : toPlainText(c.transcript, c.nameOf);
  }
}
