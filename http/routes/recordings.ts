import { z } from 'zod';
import { AppError } from '../../src/core/errors.ts';
import { RECORDING_LIMITS } from '../../src/core/recording.ts';
import { RECORDING_FILES } from '../../src/services/recordings.ts';
import { route } from '../route.ts';
import { NOTES_LIMITS, type CurrentNotes, type LectureNotes } from '../../src/services/recording-notes.ts';
import { toPlainText } from '../../src/core/transcript.ts';
import { recordAudit } from '../../src/services/audit-log.ts';
import { inTx } from '../../src/platform/db/tx.ts';
import { jobRecord } from '../schemas/users.ts';
import { toJobRecord } from '../../src/services/jobs.ts';
import { idParam } from '../schemas/common.ts';
import { fileParams, playbackLinks, playbackRequest, recordingListQuery, recordingRecord, signedQuery } from '../schemas/recordings.ts';

const tag = 'Recordings';
const recordingParam = z.object({ id: z.string().max(64) });

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` (one range); null: no Range header; 'bad': one this server does not serve. */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null | 'bad' {
  if (header === undefined) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'bad';
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0 || size === 0) return 'bad';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) return 'bad';
  return { start, end };
}

const html = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
const clock = (seconds: number) => {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = String(Math.floor(seconds % 60)).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
};

/** What the player page shows beside the video when the recording has a transcript and notes (docs/ai-notes.md). */
interface PlayerNotes {
  language: string;
  captionsUrl: string;
  textUrl: string;
  /** The summary and chapters; null while a person keeps them from viewers (the captions still show). */
  notes: LectureNotes | null;
}

/** The player page: the video with its speed, downloads, and (when they exist) captions, chapters and the summary. */
export function playerPage(o: { title: string; video: string; audio: string; notes: PlayerNotes | null }): string {
  const n = o.notes;
  const lang = n ? html(n.language) : 'en';
  const notes = n?.notes ?? null;
  const notesHtml = n
    ? `${notes ? `<section aria-labelledby="summary-h"><h2 id="summary-h">Summary</h2><p>${html(notes.summary.overview)}</p>
<ul>${notes.summary.bullets.map((b) => `<li>${html(b)}</li>`).join('')}</ul></section>
${notes.chapters.length ? `<section aria-labelledby="chapters-h"><h2 id="chapters-h">Chapters</h2><ol class="chapters">${notes.chapters
      .map((c) => `<li><button type="button" data-t="${c.startSeconds}"><span class="t">${clock(c.startSeconds)}</span> ${html(c.title)}</button></li>`)
      .join('')}</ol></section>` : ''}` : ''}
<p class="bar"><a href="${n.textUrl}" download>Download the transcript (text)</a><a href="${n.captionsUrl}" download>Download the captions (WebVTT)</a></p>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><meta name="referrer" content="no-referrer"><title>${html(o.title)}</title>
<style>
body{margin:0;background:#14171f;color:#f3f5f9;font:16px/1.5 system-ui,sans-serif;display:flex;flex-direction:column;min-height:100vh}
main{flex:1;display:flex;flex-direction:column;gap:.6rem;padding:.8rem;max-width:1280px;margin:0 auto;width:100%;box-sizing:border-box}
h1{font-size:1.1rem;margin:0}h2{font-size:1rem;margin:.4rem 0 .2rem}
video{width:100%;max-height:70vh;background:#000;border-radius:8px}
.bar{display:flex;flex-wrap:wrap;gap:.6rem;align-items:center;margin:0}
label,a{color:#cdd6ff}
select{font:inherit;padding:.3rem;border-radius:6px}
section{background:#1d2130;border-radius:8px;padding:.2rem .9rem .6rem}
ul,ol{margin:.2rem 0;padding-left:1.2rem}
.chapters{list-style:none;padding:0;display:flex;flex-direction:column;gap:.2rem}
.chapters button{font:inherit;color:#f3f5f9;background:none;border:1px solid #3a4160;border-radius:6px;padding:.3rem .6rem;width:100%;text-align:left;cursor:pointer}
.chapters button:hover,.chapters button:focus-visible{background:#2a3048;outline:2px solid #8fa2ff}
.chapters button[aria-current="true"]{border-color:#8fa2ff}
::cue{background:rgba(0,0,0,.8);color:#fff}
.t{font-variant-numeric:tabular-nums;color:#cdd6ff;margin-right:.4rem}
</style></head>
<body><main><h1>${html(o.title)}</h1>
<video id="video" controls preload="metadata" src="${o.video}">${n ? `<track kind="captions" srclang="${lang}" label="Captions" src="${n.captionsUrl}" default>` : ''}</video>
<div class="bar"><label>Speed <select id="speed">${[0.75, 1, 1.25, 1.5, 1.75, 2].map((r) => `<option value="${r}"${r === 1 ? ' selected' : ''}>${r}×</option>`).join('')}</select></label>
<a href="${o.video}" download>Download the video</a><a href="${o.audio}" download>Download the audio only</a></div>
${notesHtml}</main>
<script>
var v=document.getElementById('video');
document.getElementById('speed').addEventListener('change',function(e){v.playbackRate=Number(e.target.value)});
var cs=[].slice.call(document.querySelectorAll('.chapters button'));
cs.forEach(function(b){b.addEventListener('click',function(){v.currentTime=Number(b.dataset.t);v.play().catch(function(){})})});
v.addEventListener('timeupdate',function(){var cur=null;cs.forEach(function(b){if(Number(b.dataset.t)<=v.currentTime+0.25)cur=b});cs.forEach(function(b){b.setAttribute('aria-current',b===cur?'true':'false')})});
if(v.textTracks&&v.textTracks[0])v.textTracks[0].mode='showing';
</script>
</body></html>`;
}

const L = NOTES_LIMITS;
const text = (max: number) => z.string().trim().min(1).max(max);
const summaryShape = z.object({ overview: text(L.overviewChars), bullets: z.array(text(L.bulletChars)).max(L.maxBullets) });
const chaptersShape = z.array(z.object({ title: text(L.titleChars), startSeconds: z.number().int().min(0) })).max(L.maxChapters);
const orgRecordingParams = z.object({ orgId: z.string().min(1).max(64), id: z.string().max(64) });
const notesReview = z.object({
  notesId: z.string(),
  language: z.string(),
  createdAt: z.string(),
  durationSeconds: z.number(),
  summary: summaryShape,
  chapters: chaptersShape,
  quizQuestionCount: z.number(),
  generated: z.object({ summary: summaryShape, chapters: chaptersShape }).describe('As the engine made them, before any edit.'),
  edited: z.object({ by: z.string().nullable(), at: z.string() }).nullable(),
  hidden: z.boolean().describe('Kept from the player page (its captions still show) until a person shows them.'),
  transcript: z.string().describe('The transcript as text, a paragraph per turn with its speaker.'),
});
const notesRun = z.object({
  id: z.string(),
  jobId: z.string().describe('GET /public/jobs/:id (recordings:read).'),
  status: z.enum(['RUNNING', 'READY', 'FAILED']),
  manual: z.boolean().describe('Asked for with POST /public/recordings/:id/notes; false when made after recording.ready.'),
  language: z.string(),
  wordCount: z.number().int().nullable(),
  failureReason: z.string().nullable().describe('Why a FAILED run failed, as a person reads it.'),
  lastAttemptError: z.string().nullable().describe('A RUNNING run\'s job retries after this error.'),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});
const presentNotes = (c: CurrentNotes) => ({
  notesId: c.notesId,
  language: c.transcript.language,
  createdAt: c.createdAt.toISOString(),
  durationSeconds: Math.round(c.transcript.durationMs / 1000),
  summary: c.notes.summary,
  chapters: c.notes.chapters,
  quizQuestionCount: c.notes.quiz.length,
  generated: { summary: c.generated.summary, chapters: c.generated.chapters },
  edited: c.edited ? { by: c.edited.by, at: c.edited.at.toISOString() } : null,
  hidden: c.hidden,
  transcript: toPlainText(c.transcript, c.nameOf),
});

export const recordingRoutes = [
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/recordings/:id/notes',
      tag: 'Recordings (admin)',
      auth: 'admin',
      summary: 'A recording\'s transcript and notes, for the console to review (the API-key surface has none: the spec\'s "no public endpoint").',
      params: orgRecordingParams,
      response: notesReview,
      errors: ['not_found'],
    },
    async ({ app, db, params }) => {
      const c = await app.services.recordingNotes.current(db, params.orgId, params.id);
      if (!c) throw new AppError('not_found', { message: 'This recording has no transcript and notes yet.' });
      return { data: presentNotes(c) };
    },
  ),
  route(
    {
      method: 'get',
      path: '/orgs/:orgId/recordings/:id/notes/runs',
      tag: 'Recordings (admin)',
      auth: 'admin',
      summary: 'The makings of a recording\'s transcript and notes, newest first (at most 20): under way, READY, or FAILED and why.',
      description: 'What the console shows beside the notes: a run under way (and the error its job retries after), or why the last one failed (the engine refused, no speech was heard, the recording was deleted). docs/ai-notes.md.',
      params: orgRecordingParams,
      response: z.array(notesRun),
      errors: ['recording_not_found'],
    },
    async ({ app, db, params }) => {
      const runs = await app.services.recordingNotes.runs(db, params.orgId, params.id);
      return { data: runs.map((r) => ({ ...r, createdAt: r.createdAt.toISOString(), finishedAt: r.finishedAt?.toISOString() ?? null })) };
    },
  ),
  route(
    {
      method: 'patch',
      path: '/orgs/:orgId/recordings/:id/notes',
      tag: 'Recordings (admin)',
      auth: 'admin',
      summary: 'Edit a recording\'s summary and chapters, or keep the notes from viewers until they are right.',
      description: 'What is given replaces the shown summary or chapters (chapters start in increasing order inside the recording); `hidden` keeps the summary and chapters off the player page (its captions still show). A regeneration starts again from the engine\'s notes; `hidden` stays. Audit: recording_notes.edited.',
      params: orgRecordingParams,
      body: z.strictObject({ summary: summaryShape.optional(), chapters: chaptersShape.optional(), hidden: z.boolean().optional() }),
      response: notesReview,
      errors: ['not_found'],
    },
    async ({ app, db, req, admin, params, body }) => {
      const c = await inTx(db, async (tx) => {
        const done = await app.services.recordingNotes.review(tx, params.orgId, params.id, body, admin!.email);
        const changed = Object.keys(body).filter((k) => body[k as keyof typeof body] !== undefined);
        await recordAudit(tx, app.clock.now(), { orgId: params.orgId, actor: { type: 'admin', id: admin!.adminId, email: admin!.email }, action: 'recording_notes.edited', target: { type: 'recording', id: params.id }, details: { changed }, requestId: req.requestId });
        return done;
      });
      return { data: presentNotes(c) };
    },
  ),
  route(
    {
      method: 'post',
      path: '/public/meetings/:id/recordings',
      tag,
      auth: 'apiKey',
      scope: 'recordings:write',
      summary: 'Start recording a LIVE meeting.',
      description: 'The room shows everyone it is being recorded; `recording.started` is sent. One recording at a time per meeting (invalid_state while one runs); several per meeting over time. docs/recordings.md.',
      params: idParam,
      status: 201,
      response: recordingRecord,
      errors: ['meeting_not_found', 'invalid_state', 'plan_feature_unavailable', 'storage_quota_exceeded'],
    },
    async ({ app, db, apiKey, params }) => ({ status: 201, data: await app.services.recordings.start(db, apiKey!.orgId, params.id) }),
  ),
  route(
    {
      method: 'post',
      path: '/public/recordings/:id/stop',
      tag,
      auth: 'apiKey',
      scope: 'recordings:write',
      summary: 'Stop a recording; it is composed into its file (phase PROCESSING), then READY.',
      description: 'A recording stopped already is answered as it is.',
      params: recordingParam,
      response: recordingRecord,
      errors: ['recording_not_found'],
    },
    async ({ app, db, apiKey, params }) => ({ data: await app.services.recordings.stop(db, apiKey!.orgId, params.id) }),
  ),
  route(
    { method: 'get', path: '/public/recordings', tag, auth: 'apiKey', scope: 'recordings:read', summary: 'List recordings, newest first.', query: recordingListQuery, response: z.array(recordingRecord), list: true, errors: ['meeting_not_found'] },
    async ({ app, db, apiKey, query }) => {
      const page = await app.services.recordings.list(db, apiKey!.orgId, query);
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
  route(
    { method: 'get', path: '/public/recordings/:id', tag, auth: 'apiKey', scope: 'recordings:read', summary: 'Read a recording.', params: recordingParam, response: recordingRecord, errors: ['recording_not_found'] },
    async ({ app, db, apiKey, params }) => ({ data: await app.services.recordings.get(db, apiKey!.orgId, params.id) }),
  ),
  route(
    {
      method: 'get',
      path: '/public/meetings/:id/recordings',
      tag,
      auth: 'apiKey',
      scope: 'recordings:read',
      summary: "A meeting's recordings, newest first.",
      params: idParam,
      query: z.strictObject({ limit: recordingListQuery.shape.limit, cursor: recordingListQuery.shape.cursor }),
      response: z.array(recordingRecord),
      list: true,
      errors: ['meeting_not_found'],
    },
    async ({ app, db, apiKey, params, query }) => {
      const page = await app.services.recordings.list(db, apiKey!.orgId, { ...query, meetingId: params.id });
      return { data: page.items, nextCursor: page.nextCursor };
    },
  ),
  route(
    {
      method: 'delete',
      path: '/public/recordings/:id',
      tag,
      auth: 'apiKey',
      scope: 'recordings:write',
      summary: 'Delete a recording: its files are removed, it is DELETED, recording.deleted is sent.',
      description: 'Deleting again answers it as it is. A recording still being captured is stopped first.',
      params: recordingParam,
      response: recordingRecord,
      errors: ['recording_not_found'],
    },
    async ({ app, db, apiKey, params }) => ({ data: await app.services.recordings.delete(db, apiKey!.orgId, params.id) }),
  ),
  route(
    {
      method: 'post',
      path: '/public/recordings/:id/playback',
      tag,
      auth: 'apiKey',
      scope: 'recordings:read',
      summary: 'Short-lived playback links of a READY recording: the video, the audio alone and a player page.',
      description: `The spec leaves the scope open: reading a recording (recordings:read) is what playing it needs. Links are signed for this recording and expire after expiresInSeconds (default ${RECORDING_LIMITS.playbackDefaultSeconds}); an altered or expired link answers 403 playback_link_invalid. docs/recordings.md.`,
      params: recordingParam,
      body: playbackRequest,
      response: playbackLinks,
      errors: ['recording_not_found', 'invalid_state'],
    },
    async ({ app, db, apiKey, params, body }) => ({ data: await app.services.recordings.playback(db, apiKey!.orgId, params.id, body.expiresInSeconds ?? RECORDING_LIMITS.playbackDefaultSeconds) }),
  ),
  route(
    {
      method: 'post',
      path: '/public/recordings/:id/notes',
      tag,
      auth: 'apiKey',
      scope: 'recordings:write',
      summary: 'Make a READY recording\'s transcript and lecture notes again.',
      description: 'Answers 202 with the job (GET /public/jobs/:id, recordings:read). When it finishes, transcript.ready and insights.ready are sent again with new event ids; nothing is sent if it fails (the job says why), or if the recording is deleted meanwhile. The earlier notes are shown until the new ones are ready. Refused when the plan lacks `ai_notes` (402), and with ai_notes_unavailable when the organization switched AI notes off, its language is one the server\'s engine cannot do, or the server has no engine. docs/ai-notes.md.',
      params: recordingParam,
      status: 202,
      response: jobRecord,
      errors: ['recording_not_found', 'invalid_state', 'plan_feature_unavailable', 'ai_notes_unavailable'],
    },
    async ({ app, db, apiKey, params }) => ({ status: 202, data: toJobRecord(await app.services.recordingNotes.regenerate(db, apiKey!.orgId, params.id)) }),
  ),
  route(
    {
      method: 'get',
      path: '/recordings/:id/transcript',
      tag,
      auth: 'none',
      summary: 'The transcript of a playback link\'s recording: WebVTT captions (`format=vtt`) or text (`format=txt`).',
      description: 'Linked from the player page, signed with the page\'s expiry; 404 not_found while the recording has no transcript. docs/ai-notes.md.',
      raw: ['text/vtt', 'text/plain'],
      params: recordingParam,
      query: signedQuery.extend({ format: z.enum(['vtt', 'txt']) }),
      errors: ['playback_link_invalid', 'not_found'],
    },
    async ({ app, db, params, query }) => {
      const { orgId } = await app.services.recordings.verify(params.id, 'transcript', query.exp, query.sig);
      const body = await app.services.recordingNotes.transcriptFile(db, orgId, params.id, query.format);
      if (body === null) throw new AppError('not_found', { message: 'This recording has no transcript yet.' });
      return {
        data: null,
        raw: { contentType: query.format === 'vtt' ? 'text/vtt; charset=utf-8' : 'text/plain; charset=utf-8', body },
        headers: {
          'Cache-Control': 'private, no-store',
          'X-Content-Type-Options': 'nosniff',
          'Content-Disposition': `inline; filename="transcript-${params.id}.${query.format}"`,
        },
      };
    },
  ),
  route(
    {
      method: 'get',
      path: '/recordings/:id/player',
      tag,
      auth: 'none',
      summary: 'The player page of a playback link (embedUrl).',
      raw: ['text/html'],
      params: recordingParam,
      query: signedQuery,
      errors: ['playback_link_invalid'],
    },
    async ({ app, db, params, query }) => {
      const { orgId } = await app.services.recordings.verify(params.id, 'player', query.exp, query.sig);
      const exp = Number(query.exp);
      const links = await app.services.recordings.playback(db, orgId, params.id, Math.max(60, exp - Math.floor(app.clock.now() / 1000)));
      const origins = await app.services.recordings.playerOrigins(db, orgId);
      const current = await app.services.recordingNotes.current(db, orgId, params.id);
      // the transcript's links ride on the page's own expiry, signed for the transcript
      const transcript = (format: 'vtt' | 'txt') => html(`${app.baseUrl}/api/v1/recordings/${params.id}/transcript?format=${format}&exp=${exp}&sig=${app.services.recordings.sign(params.id, 'transcript', exp)}`);
      const notes = current ? { language: current.transcript.language, captionsUrl: transcript('vtt'), textUrl: transcript('txt'), notes: current.hidden ? null : current.notes } : null;
      return {
        data: null,
        raw: { contentType: 'text/html; charset=utf-8', body: playerPage({ title: 'Class recording', video: html(links.url), audio: html(links.audioUrl), notes }) },
        headers: {
          'Cache-Control': 'no-store',
          'Referrer-Policy': 'no-referrer',
          'X-Content-Type-Options': 'nosniff',
          'Content-Security-Policy': `default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; media-src 'self' https: http:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'${origins.map((o) => ` ${o}`).join('')}`,
        },
      };
    },
  ),
  route(
    {
      method: 'get',
      path: '/recordings/:id/:file',
      tag,
      auth: 'none',
      summary: 'A recording\'s file through a playback link (HTTP Range: 206 with Content-Range, 416 beyond the end).',
      raw: ['video/mp4', 'audio/mp4'],
      params: fileParams,
      query: signedQuery,
      errors: ['playback_link_invalid'],
    },
    async ({ app, params, query, req }) => {
      const { key } = await app.services.recordings.verify(params.id, params.file, query.exp, query.sig);
      const storage = app.services.recordings.storage;
      const size = await storage.size(key!);
      if (size === null) throw new AppError('playback_link_invalid', { message: 'This recording is no longer available.' });
      const range = parseRange(req.headers.range, size);
      const common = { 'Accept-Ranges': 'bytes', 'Cache-Control': 'private, no-store', 'X-Content-Type-Options': 'nosniff', 'Content-Disposition': `inline; filename="recording-${params.id}.${params.file === 'video' ? 'mp4' : 'm4a'}"` };
      const contentType = RECORDING_FILES[params.file].contentType;
      if (range === 'bad') {
        return { status: 416, data: null, raw: { contentType: 'text/plain', body: '' }, headers: { ...common, 'Content-Range': `bytes */${size}` } };
      }
      if (range === null) return { data: null, file: { contentType, length: size, stream: await storage.read(key!) }, headers: common };
      return {
        status: 206,
        data: null,
        file: { contentType, length: range.end - range.start + 1, stream: await storage.read(key!, range) },
        headers: { ...common, 'Content-Range': `bytes ${range.start}-${range.end}/${size}` },
      };
    },
  ),
];
