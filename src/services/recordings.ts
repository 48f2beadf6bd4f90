import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { iso, type Clock } from '../core/clock.ts';
import { AppError } from '../core/errors.ts';
import { PLANS, planHas, type PlanName } from '../core/plans.ts';
import { RECORDING_LIMITS, type RecordingPhase, type RecordingStatus } from '../core/recording.ts';
import type { Db, Sql } from '../platform/db/index.ts';
import { afterCommit, inTx } from '../platform/db/tx.ts';
import { newId } from '../platform/ids.ts';
import type { Logger } from '../platform/logger.ts';
import type { Outbox } from '../platform/outbox.ts';
import type { Bus } from '../platform/cluster/bus.ts';
import type { Storage } from '../platform/storage/index.ts';
import { recordingData } from '../../actors/meeting/meeting.recording.ts';
import type { RecordingSavedEffect } from '../../actors/meeting/meeting.types.ts';
import type { MeetingFacts } from '../../actors/meeting/meeting.types.ts';
import { compose } from '../../media/recording/compose.ts';
import { MANIFEST, readManifest } from '../../media/recording/format.ts';
import { decodeCursor, encodeCursor, type PageQuery } from './common.ts';
import type { Meetings, MeetingRow } from './meetings.ts';
import type { RoomClients } from './live/clients.ts';

/** How long after a recording stops its composition waits, so the media node has saved the last segment. */
export const CAPTURE_SAVE_MS = 10_000;
/** How long a composition waits for a segment still being saved (a node slow to upload) before it composes what it has. */
const SEGMENT_WAIT_MS = 120_000;
export const PLAYBACK_KEY_PURPOSE = 'aula/recording-playback/v1';

/** The files of a READY recording: the video, and the audio alone (low bandwidth). */
export const RECORDING_FILES = { video: { name: 'video.mp4', contentType: 'video/mp4' }, audio: { name: 'audio.m4a', contentType: 'audio/mp4' } } as const;
export type RecordingFile = keyof typeof RECORDING_FILES;
/** What a playback link may open: a file, the player page, or the transcript (captions and text, docs/ai-notes.md). */
export type SignedResource = RecordingFile | 'player' | 'transcript';

interface RecordingRow {
  id: string;
  orgId: string;
  meetingId: string;
  status: RecordingStatus;
  phase: RecordingPhase | null;
  automatic: boolean;
  startedBy: string | null;
  startedAt: Date;
  endedAt: Date | null;
  pausedAt: Date | null;
  pausedMs: string | number;
  segments: number;
  durationSeconds: number | null;
  fileSizeBytes: string | number | null;
  audioSizeBytes: string | number | null;
  mimeType: string | null;
  failureReason: string | null;
  deletedAt: Date | null;
  externalMeetingId?: string | null;
}

/** A recording as the API shows it (payloads of recording.* carry the spec's subset, never a URL). */
export interface RecordingRecord {
  id: string;
  meetingId: string;
  externalMeetingId: string | null;
  status: RecordingStatus;
  /** While RECORDING: capturing the class, or (stopped) being composed. Null once READY, FAILED or DELETED. */
  phase: RecordingPhase | null;
  automatic: boolean;
  paused: boolean;
  startedAt: string;
  endedAt: string | null;
  durationSeconds: number | null;
  fileSizeBytes: number | null;
  mimeType: string | null;
  failureReason: string | null;
  deletedAt: string | null;
}

export interface RecordingListQuery extends PageQuery {
  meetingId?: string | undefined;
  status?: RecordingStatus | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));

export const toRecordingRecord = (r: RecordingRow): RecordingRecord => ({
  id: r.id,
  meetingId: r.meetingId,
  externalMeetingId: r.externalMeetingId ?? null,
  status: r.status,
  phase: r.status === 'RECORDING' ? r.phase : null,
  automatic: r.automatic,
  paused: r.pausedAt !== null,
  startedAt: r.startedAt.toISOString(),
  endedAt: r.endedAt?.toISOString() ?? null,
  durationSeconds: r.durationSeconds,
  fileSizeBytes: num(r.fileSizeBytes),
  mimeType: r.mimeType,
  failureReason: r.failureReason,
  deletedAt: r.deletedAt?.toISOString() ?? null,
});

/** Where a recording's files are kept: its raw segments, then its video and audio. */
export const recordingPrefix = (orgId: string, recordingId: string) => `recordings/${orgId}/${recordingId}`;
const rawPrefix = (orgId: string, recordingId: string) => `${recordingPrefix(orgId, recordingId)}/raw`;
const fileKey = (orgId: string, recordingId: string, file: RecordingFile) => `${recordingPrefix(orgId, recordingId)}/${RECORDING_FILES[file].name}`;

/** A recording's segments saved whole (with their manifest), in order: the segment's number and its files. */
export async function savedSegments(storage: Storage, orgId: string, recordingId: string): Promise<[number, string[]][]> {
  const prefix = rawPrefix(orgId, recordingId);
  const segments = new Map<number, string[]>();
  for (const k of await storage.list(prefix)) {
    const [seg, file] = k.slice(prefix.length + 1).split('/');
    if (seg === undefined || file === undefined) continue;
    segments.set(Number(seg), [...(segments.get(Number(seg)) ?? []), file]);
  }
  return [...segments.entries()].filter(([, files]) => files.includes(MANIFEST)).sort(([a], [b]) => a - b);
}

/** Copies a saved segment's files into `<work>/raw/<segment>`, the folder returned. */
export async function fetchSegment(storage: Storage, orgId: string, recordingId: string, [seg, files]: [number, string[]], work: string): Promise<string> {
  const dir = join(work, 'raw', String(seg));
  await mkdir(dir, { recursive: true });
  for (const f of files) await storage.fetch(`${rawPrefix(orgId, recordingId)}/${seg}/${f}`, join(dir, f));
  return dir;
}

export interface RecordingsOptions {
  sql: Sql;
  clock: Clock;
  outbox: Outbox;
  meetings: Meetings;
  rooms: RoomClients;
  storage: Storage;
  /** Keys playback links (derived from the server's secret, the same on every node). */
  playbackKey: Buffer;
  /** Where this node keeps what its media captures before a segment is saved to storage. */
  spoolDir: string;
  baseUrl: () => string;
  log: Logger;
  /** Wakes the job runners (every node's): a saved segment may let a composition start at once. */
  bus: Bus;
  /** Whether a node is alive (publishes its media load): a segment's capture that its dead node never finished is final. */
  alive: (nodeId: string) => boolean;
  /** In the transaction that makes a recording READY (its transcript and notes are queued: RecordingNotes.afterReady). */
  afterReady?: (tx: Db, orgId: string, recordingId: string, at: number) => Promise<void>;
}

/**
 * Recordings: started, paused and stopped through the meeting's actor (which writes the row and
 * recording.started, and tells the room); captured by the media node that hosts the room, which saves
 * each segment to storage; composed by a job into one MP4 and an M4A (recording.ready or .failed);
 * played through signed, short-lived links; deleted with their files (recording.deleted).
 */
export class Recordings {
  readonly #o: RecordingsOptions;

  constructor(o: RecordingsOptions) {
    this.#o = o;
  }

  get storage(): Storage {
    return this.#o.storage;
  }

  /** The meeting actor's recording change, written in its transition's transaction; a stop queues the composition. */
  static async record(tx: Db, orgId: string, meetingId: string, e: RecordingSavedEffect['recording'], at: number): Promise<void> {
    const ts = (v: number | null) => (v === null ? null : iso(v));
    await tx`insert into recordings (id, org_id, meeting_id, status, phase, automatic, started_by, started_at, ended_at, paused_at, paused_ms, updated_at)
      values (${e.recordingId}, ${orgId}, ${meetingId}, 'RECORDING', ${e.phase}, ${e.automatic}, ${e.startedBy}, ${iso(e.startedAt)}, ${ts(e.endedAt)}, ${ts(e.pausedAt)}, ${e.pausedMs}, ${iso(at)})
      on conflict (id) do update set phase = excluded.phase, ended_at = excluded.ended_at, paused_at = excluded.paused_at, paused_ms = excluded.paused_ms, updated_at = excluded.updated_at
      where recordings.status = 'RECORDING'`;
    if (e.phase === 'PROCESSING' && e.endedAt !== null) {
      await tx`insert into jobs (id, org_id, kind, status, input, total, created_at, not_before)
        values (${newId('job', at)}, ${orgId}, 'recording.compose', 'QUEUED', ${tx.json({ recordingId: e.recordingId })}, 1, ${iso(at)}, ${iso(e.endedAt + CAPTURE_SAVE_MS)})`;
    }
  }

  // ---- starting and stopping ----------------------------------------------------------------------

  /** Whether the organization may record now: its plan has the feature, and its recordings are within the plan's storage. */
  async assertMayRecord(db: Db, orgId: string): Promise<void> {
    const [org] = await db<{ plan: PlanName }[]>`select plan from organizations where id = ${orgId}`;
    const plan = org?.plan ?? 'free';
    if (!planHas(plan, 'recording')) throw new AppError('plan_feature_unavailable', { message: `The ${plan} plan does not include recording.`, details: { feature: 'recording', plan } });
    const used = await this.usedBytes(db, orgId);
    const quota = PLANS[plan].recordingStorageGb * 1e9;
    if (used >= quota) throw new AppError('storage_quota_exceeded', { details: { usedBytes: used, quotaBytes: quota, plan } });
  }

  async usedBytes(db: Db, orgId: string): Promise<number> {
    const [u] = await db<{ used: string | null }[]>`select sum(coalesce(file_size_bytes, 0) + coalesce(audio_size_bytes, 0)) as used from recordings where org_id = ${orgId} and status <> 'DELETED'`;
    return Number(u?.used ?? 0);
  }

  /** An id for the recording a join would start (a meeting that records automatically), or none when the plan does not record. */
  async autoRecordingId(db: Db, m: { orgId: string; status: string; settings: Pick<MeetingRow['settings'], 'recordAutomatically'> }): Promise<string | undefined> {
    if (m.status !== 'SCHEDULED' || !m.settings.recordAutomatically) return undefined;
    try {
      await this.assertMayRecord(db, m.orgId);
      return newId('rec', this.#o.clock.now());
    } catch (err) {
      this.#o.log.info({ err, orgId: m.orgId }, 'a meeting set to record automatically starts without recording');
      return undefined;
    }
  }

  /** POST /public/meetings/:id/recordings: starts recording a LIVE meeting. */
  async start(db: Db, orgId: string, meetingIdOrExternal: string): Promise<RecordingRecord> {
    const m = await this.#o.meetings.get(db, orgId, meetingIdOrExternal);
    if (m.status !== 'LIVE') throw new AppError('invalid_state', { message: 'Only a LIVE meeting can be recorded.', details: { status: m.status } });
    await this.assertMayRecord(db, orgId);
    const reply = await this.#o.rooms.meeting.startRecording(m.id, { recordingId: newId('rec', this.#o.clock.now()), byApi: true });
    return this.get(this.#o.sql, orgId, reply.recording.recordingId);
  }

  /** POST /public/recordings/:id/stop: stops it (a recording stopped already is answered as it is). */
  async stop(db: Db, orgId: string, recordingId: string): Promise<RecordingRecord> {
    const r = await this.#row(db, orgId, recordingId);
    if (r.status === 'RECORDING' && r.phase === 'CAPTURING') {
      await this.#o.rooms.meeting.stopRecording(r.meetingId, { recordingId, byApi: true }).catch((err) => {
        if (!(err instanceof AppError && err.code === 'invalid_state')) throw err; // stopped meanwhile
      });
    }
    return this.get(this.#o.sql, orgId, recordingId);
  }

  // ---- reading -------------------------------------------------------------------------------------

  async #row(db: Db, orgId: string, id: string): Promise<RecordingRow> {
    const [r] = await db<RecordingRow[]>`select r.*, m.external_id as external_meeting_id from recordings r join meetings m on m.id = r.meeting_id
      where r.id = ${id} and r.org_id = ${orgId}`;
    if (!r) throw new AppError('recording_not_found', { details: { id } });
    return r;
  }

  async get(db: Db, orgId: string, id: string): Promise<RecordingRecord> {
    return toRecordingRecord(await this.#row(db, orgId, id));
  }

  async list(db: Db, orgId: string, q: RecordingListQuery): Promise<{ items: RecordingRecord[]; nextCursor: string | null }> {
    const after = decodeCursor(q.cursor, 'time', 'id');
    const meeting = q.meetingId ? await this.#o.meetings.get(db, orgId, q.meetingId) : null;
    const rows = await db<RecordingRow[]>`select r.*, m.external_id as external_meeting_id from recordings r join meetings m on m.id = r.meeting_id
      where r.org_id = ${orgId}
        ${meeting ? db`and r.meeting_id = ${meeting.id}` : db``}
        ${q.status ? db`and r.status = ${q.status}` : db``}
        ${q.from ? db`and r.started_at >= ${q.from}` : db``}
        ${q.to ? db`and r.started_at < ${q.to}` : db``}
        ${after ? db`and (r.started_at, r.id) < (${after[0]!}::timestamptz, ${after[1]!})` : db``}
      order by r.started_at desc, r.id desc limit ${q.limit + 1}`;
    const items = rows.slice(0, q.limit).map(toRecordingRecord);
    const last = items.at(-1);
    return { items, nextCursor: rows.length > q.limit && last ? encodeCursor([last.startedAt, last.id]) : null };
  }

  // ---- deleting ------------------------------------------------------------------------------------

  /** DELETE: its files are removed, it is DELETED, recording.deleted is sent; a recording still capturing is stopped first. */
  async delete(db: Db, orgId: string, id: string): Promise<RecordingRecord> {
    const r = await this.#row(db, orgId, id);
    if (r.status === 'DELETED') return toRecordingRecord(r);
    if (r.status === 'RECORDING' && r.phase === 'CAPTURING') await this.stop(db, orgId, id);
    const now = this.#o.clock.now();
    const deleted = await inTx(db, async (tx) => {
      const [row] = await tx<RecordingRow[]>`update recordings set status = 'DELETED', phase = null, deleted_at = ${iso(now)}, updated_at = ${iso(now)}
        where id = ${id} and status <> 'DELETED' returning *`;
      if (!row) return null;
      // its transcripts and notes go with it; a run under way finds its row gone and sends nothing
      await tx`delete from recording_notes where recording_id = ${id}`;
      await this.#emit(tx, row, 'recording.deleted');
      return row;
    });
    // the files go after the commit: a failure here leaves files of a DELETED recording, which retention removes again
    await this.#o.storage.deletePrefix(recordingPrefix(orgId, id)).catch((err) => this.#o.log.warn({ err, recordingId: id }, 'could not remove a deleted recording\'s files'));
    return this.get(this.#o.sql, orgId, deleted?.id ?? id);
  }

  /** Recordings older than their organization's retention are deleted as DELETE does (the maintenance run). */
  async purgeExpired(at: number): Promise<number> {
    const rows = await this.#o.sql<{ id: string; orgId: string }[]>`select r.id, r.org_id from recordings r join organizations o on o.id = r.org_id
      where r.status in ('READY', 'FAILED') and r.started_at < ${iso(at)}::timestamptz - make_interval(days => coalesce(o.recording_retention_days, ${RECORDING_LIMITS.retentionDays}))
      limit 100`;
    for (const r of rows) await this.delete(this.#o.sql, r.orgId, r.id);
    return rows.length;
  }

  async #emit(db: Db, r: RecordingRow, type: 'recording.ready' | 'recording.failed' | 'recording.deleted'): Promise<void> {
    const [m] = await db<{ externalId: string | null; kind: string }[]>`select external_id, kind from meetings where id = ${r.meetingId}`;
    const facts = { meetingId: r.meetingId, externalMeetingId: m?.externalId ?? null, kind: m?.kind ?? 'MEETING' } as MeetingFacts;
    const data = recordingData(
      { meeting: facts },
      {
        recordingId: r.id,
        status: r.status,
        startedAt: r.startedAt.getTime(),
        endedAt: r.endedAt?.getTime() ?? null,
        durationSeconds: r.durationSeconds,
        fileSizeBytes: num(r.fileSizeBytes),
        mimeType: r.mimeType,
        failureReason: r.failureReason,
        deletedAt: r.deletedAt?.getTime() ?? null,
      },
    );
    await this.#o.outbox.emit(db, r.orgId, type, data, this.#o.clock.now());
  }

  // ---- capture segments (the media node) -------------------------------------------------------------

  /** A media node begins capturing: the segment's number, and the folder it writes to until it is saved. */
  async segmentStarted(recordingId: string): Promise<{ orgId: string; segment: number; dir: string } | null> {
    const [r] = await this.#o.sql<{ orgId: string; segments: number }[]>`update recordings set segments = segments + 1
      where id = ${recordingId} and status = 'RECORDING' returning org_id, segments`;
    if (!r) return null;
    const segment = r.segments - 1;
    // on disk the capture is written in storage itself: a node that dies leaves its segment there to compose
    const inPlace = this.#o.storage.localFolder ? await this.#o.storage.localFolder(`${rawPrefix(r.orgId, recordingId)}/${segment}`) : null;
    const dir = inPlace ?? join(this.#o.spoolDir, recordingId, String(segment));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return { orgId: r.orgId, segment, dir };
  }

  /** A segment's capture ended: its files go to storage (raw/<segment>/...), then the local copy goes. */
  async segmentSaved(orgId: string, recordingId: string, segment: number, dir: string): Promise<void> {
    if (!this.#o.storage.localFolder) {
      const files = await readdir(dir);
      // the manifest last: a segment with a manifest in storage is complete
      for (const f of [...files.filter((f) => f !== MANIFEST), ...files.filter((f) => f === MANIFEST)]) {
        await this.#o.storage.put(`${rawPrefix(orgId, recordingId)}/${segment}/${f}`, join(dir, f), f.endsWith('.json') ? 'application/json' : 'application/octet-stream');
      }
      await rm(dir, { recursive: true, force: true });
    }
    // a stopped recording whose last segment is now saved need not wait out CAPTURE_SAVE_MS
    const now = iso(this.#o.clock.now());
    const woken = await this.#o.sql`update jobs set not_before = ${now}
      where kind = 'recording.compose' and status = 'QUEUED' and input->>'recordingId' = ${recordingId} and not_before > ${now}
        and (select count(*) from recordings where id = ${recordingId} and phase = 'PROCESSING') = 1 returning id`;
    if (woken.length) await this.#o.bus.publish('jobs', {});
  }

  // ---- composition (the job) -----------------------------------------------------------------------

  /**
   * The composition job: fetches the raw segments, composes the MP4 and the M4A (compose.ts, at low
   * priority), stores them, and makes the recording READY (recording.ready); FAILED with a reason a
   * person understands when nothing can be made (recording.failed). Throws to be retried while a
   * segment may still be on its way.
   */
  async composeJob(recordingId: string, signal?: AbortSignal): Promise<void> {
    const [r] = await this.#o.sql<RecordingRow[]>`select * from recordings where id = ${recordingId}`;
    if (!r || r.status !== 'RECORDING' || r.phase !== 'PROCESSING') return; // deleted, or done by an earlier attempt
    const work = await mkdtemp(join(tmpdir(), `aula-rec-${recordingId}-`));
    try {
      const complete = await savedSegments(this.#o.storage, r.orgId, recordingId);
      const waited = this.#o.clock.now() - (r.endedAt?.getTime() ?? 0);
      if (complete.length < r.segments && waited < SEGMENT_WAIT_MS) throw new Error(`waiting for ${r.segments - complete.length} segment(s) to be saved`);
      if (!complete.length) return this.#fail(r, r.segments === 0 ? 'Nothing was recorded: the class had no audio or video while it was being recorded.' : 'The recording could not be saved: the server recording the class stopped before it could save anything.');
      const dirs: string[] = [];
      for (const saved of complete) dirs.push(await fetchSegment(this.#o.storage, r.orgId, recordingId, saved, work));
      // a segment without a duration is still being saved, unless the node capturing it died (then it is what there is)
      for (const dir of dirs) {
        const m = await readManifest(dir);
        if (m.durationMs === null && m.nodeId !== undefined && this.#o.alive(m.nodeId) && waited < SEGMENT_WAIT_MS) throw new Error(`segment ${m.segment} is still being saved`);
      }
      const out = { mp4: join(work, RECORDING_FILES.video.name), m4a: join(work, RECORDING_FILES.audio.name) };
      let made: { durationMs: number; mp4Bytes: number; m4aBytes: number };
      try {
        made = await compose(dirs, out, { ...(signal ? { signal } : {}), threads: 1 });
      } catch (err) {
        if (signal?.aborted) throw err;
        return this.#fail(r, `The recording could not be put together: ${(err as Error).message}`);
      }
      const video = await this.#o.storage.put(fileKey(r.orgId, recordingId, 'video'), out.mp4, RECORDING_FILES.video.contentType);
      const audio = await this.#o.storage.put(fileKey(r.orgId, recordingId, 'audio'), out.m4a, RECORDING_FILES.audio.contentType);
      const now = this.#o.clock.now();
      await inTx(this.#o.sql, async (tx) => {
        const [row] = await tx<RecordingRow[]>`update recordings set status = 'READY', phase = null, duration_seconds = ${Math.round(made.durationMs / 1000)},
            file_size_bytes = ${video.bytes}, audio_size_bytes = ${audio.bytes}, mime_type = ${RECORDING_FILES.video.contentType}, updated_at = ${iso(now)}
          where id = ${recordingId} and status = 'RECORDING' returning *`;
        if (!row) return;
        await this.#emit(tx, row, 'recording.ready');
        await this.#o.afterReady?.(tx, row.orgId, row.id, now);
      });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  async #fail(r: RecordingRow, reason: string): Promise<void> {
    const now = this.#o.clock.now();
    await inTx(this.#o.sql, async (tx) => {
      const [row] = await tx<RecordingRow[]>`update recordings set status = 'FAILED', phase = null, failure_reason = ${reason}, updated_at = ${iso(now)}
        where id = ${r.id} and status = 'RECORDING' returning *`;
      if (row) await this.#emit(tx, row, 'recording.failed');
    });
    this.#o.log.warn({ recordingId: r.id, reason }, 'recording failed');
  }

  /** The job gave up (its attempts spent): FAILED, if it is not READY already. */
  async composeGaveUp(recordingId: string, why: string): Promise<void> {
    const [r] = await this.#o.sql<RecordingRow[]>`select * from recordings where id = ${recordingId}`;
    if (r?.status === 'RECORDING') await this.#fail(r, `The recording could not be put together after several tries (${why}).`);
  }

  // ---- playback ------------------------------------------------------------------------------------

  /**
   * A short-lived playback link of a READY recording: `url` (the video), `audioUrl`, and `embedUrl` (the
   * player page), each signed for this recording and file until `expiresAt`. On s3 the file links are
   * presigned by the bucket; on disk this server serves them (GET /api/v1/recordings/:id/:file).
   */
  async playback(db: Db, orgId: string, id: string, expiresInSeconds: number): Promise<{ url: string; audioUrl: string; embedUrl: string; expiresAt: string }> {
    const r = await this.#row(db, orgId, id);
    if (r.status !== 'READY') throw new AppError('invalid_state', { message: r.status === 'RECORDING' ? 'The recording is not ready yet.' : `A ${r.status} recording cannot be played.`, details: { status: r.status } });
    const exp = Math.floor(this.#o.clock.now() / 1000) + expiresInSeconds;
    const link = async (file: RecordingFile) =>
      (await this.#o.storage.presign(fileKey(orgId, id, file), expiresInSeconds, { contentType: RECORDING_FILES[file].contentType, filename: `recording-${id}.${file === 'video' ? 'mp4' : 'm4a'}` })) ??
      `${this.#o.baseUrl()}/api/v1/recordings/${id}/${file}?exp=${exp}&sig=${this.sign(id, file, exp)}`;
    return { url: await link('video'), audioUrl: await link('audio'), embedUrl: `${this.#o.baseUrl()}/api/v1/recordings/${id}/player?exp=${exp}&sig=${this.sign(id, 'player', exp)}`, expiresAt: iso(exp * 1000) };
  }

  /** Who may frame the player page: the organization's allowed origins (as for the room's embed page). */
  async playerOrigins(db: Db, orgId: string): Promise<string[]> {
    const [org] = await db<{ allowedOrigins: string[] }[]>`select allowed_origins from organizations where id = ${orgId}`;
    return org?.allowedOrigins ?? [];
  }

  sign(id: string, file: SignedResource, exp: number): string {
    return createHmac('sha256', this.#o.playbackKey).update(`${id}\n${file}\n${exp}`).digest('base64url');
  }

  /** A playback link's recording (its organization and file key), or playback_link_invalid: altered, expired, or the recording gone. */
  async verify(id: string, file: SignedResource, exp: string | undefined, sig: string | undefined): Promise<{ orgId: string; key: string | null }> {
    const e = Number(exp);
    const want = Buffer.from(this.sign(id, file, e));
    const got = Buffer.from(sig ?? '');
    if (!Number.isInteger(e) || want.length !== got.length || !timingSafeEqual(want, got) || e * 1000 <= this.#o.clock.now()) throw new AppError('playback_link_invalid');
    const [r] = await this.#o.sql<{ orgId: string; status: string }[]>`select org_id, status from recordings where id = ${id}`;
    if (!r || r.status !== 'READY') throw new AppError('playback_link_invalid', { message: 'This recording is no longer available.' });
    return { orgId: r.orgId, key: file === 'player' || file === 'transcript' ? null : fileKey(r.orgId, id, file) };
  }
}
