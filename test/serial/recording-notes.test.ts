import t, { type Test } from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { school as newSchool, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { speechPcm } from '../ai/speech.ts';
import { LESSON, contentWords } from '../ai/lesson.ts';

// A class recorded through a real room, spoken: the teacher's microphone sends flite speech of a
// lesson (Node WebRTC), a student answers. After READY the recording.notes job transcribes each
// microphone apart with the offline engine (PocketSphinx, Debian), merges them and writes the notes:
// transcript.ready and insights.ready (background events), the words in the stored transcript with
// who said them, the player page's captions in sync, chapters and summary (Chromium), a regeneration
// with new event ids, and a recording deleted while its notes are made: nothing sent. Serial: it runs
// a real class for half a minute and the engine at full speed.
const clock = new ManualClock(Date.now());
const node = await startTestNode(t, { clock });
const s = await newSchool(node);
const teacher = await s.user('t-1', 'Tina Teacher', 'TEACHER');
const student = await s.user('s-1', 'Sam Student');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const TEACHER_SAYS = LESSON.slice(1, 8).join(' ');
const STUDENT_SAYS = LESSON[11];
const teacherSpeech = speechPcm(TEACHER_SAYS);
const studentSpeech = speechPcm(STUDENT_SAYS);
const teacherSeconds = teacherSpeech.length / 48000;

const eventRows = async (type: string) =>
  node.app.sql<{ id: string; data: any; background: boolean }[]>`select id, data, background from outbox where org_id = ${s.tenant.orgId} and type = ${type} order by id`;

/** Records the lesson: the teacher speaks from the start, the student answers after the teacher; READY. */
async function recordLesson(t: Test): Promise<{ id: string; durationSeconds: number }> {
  const meeting = (await s.call('POST', '/public/meetings', { title: 'Plants', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60 })).body.data;
  const host = await enterRoom(t, node, s.tenant.key, meeting.id, teacher.id, 'HOST');
  const stu = await enterRoom(t, node, s.tenant.key, meeting.id, student.id);
  await host.peer.produceVideo({ small: true });
  const started = await s.call('POST', `/public/meetings/${meeting.id}/recordings`);
  t.equal(started.status, 201, JSON.stringify(started.body));
  await sleep(500);
  await host.peer.produceAudio({ speech: teacherSpeech });
  await sleep(teacherSeconds * 1000 + 800);
  await stu.peer.produceAudio({ speech: studentSpeech });
  await sleep((studentSpeech.length / 48000) * 1000 + 1200);
  const id = started.body.data.id;
  await s.call('POST', `/public/recordings/${id}/stop`);
  await eventually(async () => (await s.call('GET', `/public/recordings/${id}`)).body.data.status !== 'RECORDING', 180_000);
  const rec = (await s.call('GET', `/public/recordings/${id}`)).body.data;
  t.match(rec, { status: 'READY' }, JSON.stringify(rec));
  return { id, durationSeconds: rec.durationSeconds };
}

t.test('a spoken class: transcript.ready and insights.ready, the words with who said them, captions in sync on the player page', async (t) => {
  const { id, durationSeconds } = await recordLesson(t);
  // the automatic run, queued with recording.ready
  await eventually(async () => (await eventRows('insights.ready')).some((e) => e.data.recordingId === id), 240_000);
  const [tr] = (await eventRows('transcript.ready')).filter((e) => e.data.recordingId === id);
  const [ins] = (await eventRows('insights.ready')).filter((e) => e.data.recordingId === id);
  t.ok(tr && ins, 'both events');
  t.same(Object.keys(tr!.data).sort(), ['kind', 'language', 'meetingId', 'recordingId', 'wordCount']);
  t.match(tr!.data, { recordingId: id, kind: 'MEETING', language: 'en', wordCount: Number });
  t.ok(tr!.data.wordCount > 20, `${tr!.data.wordCount} words`);
  t.ok(tr!.background && ins!.background, 'background events: delivered whatever the plan');
  t.notOk('externalMeetingId' in ins!.data, 'no externalMeetingId');
  t.ok(ins!.data.summary.overview.length > 20, ins!.data.summary.overview);
  t.ok(ins!.data.summary.bullets.length >= 1);
  t.ok(ins!.data.chapters.length >= 1);
  for (const c of ins!.data.chapters) t.ok(c.startSeconds >= 0 && c.startSeconds < durationSeconds, `chapter "${c.title}" at ${c.startSeconds} s of ${durationSeconds}`);
  t.equal(ins!.data.durationSeconds, durationSeconds);
  t.type(ins!.data.quizQuestionCount, 'number');
  t.notMatch(JSON.stringify(ins!.data), /Tina|Sam/, 'no names in the payload');

  // the stored transcript, through the playback capability (the player page's text link)
  const links = (await s.call('POST', `/public/recordings/${id}/playback`, { expiresInSeconds: 600 })).body.data;
  const page = await (await fetch(links.embedUrl)).text();
  const txtUrl = /href="([^"]+format=txt[^"]*)"/.exec(page)?.[1]?.replaceAll('&amp;', '&');
  const vttUrl = /href="([^"]+format=vtt[^"]*)"/.exec(page)?.[1]?.replaceAll('&amp;', '&');
  t.ok(txtUrl && vttUrl, 'the page links the transcript');
  const text = await (await fetch(txtUrl!)).text();
  const teacherLines = text.split('\n').filter((l) => l.includes('Tina Teacher:')).join(' ').toLowerCase();
  const said = contentWords(TEACHER_SAYS);
  const heard = said.filter((w) => teacherLines.includes(w));
  t.ok(heard.length / said.length >= 0.6, `${heard.length} of ${said.length} content words of the teacher's speech in the teacher's lines (${said.filter((w) => !heard.includes(w)).join(', ')} missed)`);
  t.match(text, /Sam Student:/, 'the student\'s answer under their name');
  const vttRes = await fetch(vttUrl!);
  t.equal(vttRes.headers.get('content-type'), 'text/vtt; charset=utf-8');
  const vtt = await vttRes.text();
  t.match(vtt, /^WEBVTT\n/);
  t.match(vtt, /<v Tina Teacher>/);
  // a tampered link is refused
  t.equal((await fetch(txtUrl!.replace(/sig=[^&]+/, 'sig=AAAA'))).status, 403);
  // and the API has no route that returns them
  t.equal((await s.call('GET', `/public/recordings/${id}/transcript`)).status, 404);

  // the player page: captions showing the words spoken at that time, chapters, summary
  const browser = await launchBrowser(t, { args: ['--autoplay-policy=no-user-gesture-required'] });
  const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await p.goto(links.embedUrl);
  await p.waitForFunction(() => (document.querySelector('video') as HTMLVideoElement).readyState >= 1, null, { timeout: 30_000 });
  t.ok(await p.locator('h2', { hasText: 'Summary' }).isVisible());
  t.ok((await p.locator('.chapters button').count()) >= 1, 'chapters as buttons');
  // the first teacher cue of the VTT: seek inside it, the track's active cue is that text
  const cue = /(\d\d):(\d\d):(\d\d)\.(\d{3}) --> (\d\d):(\d\d):(\d\d)\.(\d{3})\n<v Tina Teacher>(.+)/.exec(vtt)!;
  const cueStart = Number(cue[2]) * 60 + Number(cue[3]) + Number(cue[4]) / 1000;
  const cueEnd = Number(cue[6]) * 60 + Number(cue[7]) + Number(cue[8]) / 1000;
  const mid = (cueStart + cueEnd) / 2;
  const active = await p.evaluate(async (at) => {
    const v = document.querySelector('video') as HTMLVideoElement;
    v.currentTime = at;
    await new Promise((r) => v.addEventListener('seeked', r, { once: true }));
    await new Promise((r) => setTimeout(r, 300));
    const track = v.textTracks[0]!;
    return { mode: track.mode, cues: [...(track.activeCues ?? [])].map((c) => (c as VTTCue).text) };
  }, mid);
  t.equal(active.mode, 'showing');
  t.ok(active.cues.some((c) => c.includes(cue[9]!.slice(0, 20))), `at ${mid.toFixed(1)} s the caption is "${active.cues.join(' / ')}"`);
  // the caption is at the time the teacher said it: within the teacher's speech, which began about 0.5 s in
  t.ok(cueStart >= 0 && cueStart < teacherSeconds + 2, `the first caption starts at ${cueStart} s`);
  await screenshot(p, 'recording-player-notes');
  t.same(await axeViolations(p), [], 'axe: no serious or critical violation on the player page');
  // a chapter seeks the video
  const last = p.locator('.chapters button').last();
  const at = Number(await last.getAttribute('data-t'));
  await last.click();
  await p.waitForFunction((want) => Math.abs((document.querySelector('video') as HTMLVideoElement).currentTime - want) < 1, at, { timeout: 10_000 });
  t.pass(`the chapter button took the video to ${at} s`);

  t.test('regeneration: a new job, two new events with new ids; the same Idempotency-Key answers the same job', async (t) => {
    const before = new Set([...(await eventRows('transcript.ready')), ...(await eventRows('insights.ready'))].map((e) => e.id));
    const a = await s.call('POST', `/public/recordings/${id}/notes`, undefined, { 'Idempotency-Key': 'regen-1' });
    t.equal(a.status, 202, JSON.stringify(a.body));
    t.match(a.body.data, { kind: 'recording.notes', status: 'QUEUED' });
    const b = await s.call('POST', `/public/recordings/${id}/notes`, undefined, { 'Idempotency-Key': 'regen-1' });
    t.equal(b.body.data.id, a.body.data.id, 'the same job');
    await eventually(async () => (await s.call('GET', `/public/jobs/${a.body.data.id}`)).body.data.status === 'SUCCEEDED', 240_000);
    const after = [...(await eventRows('transcript.ready')), ...(await eventRows('insights.ready'))].filter((e) => e.data.recordingId === id && !before.has(e.id));
    t.same(after.map((e) => e.data.recordingId), [id, id], 'one transcript.ready and one insights.ready more');
    t.equal(new Set(after.map((e) => e.id)).size, 2);
  });

  t.test('a recording deleted while its notes are made: the job ends, nothing is sent, the words are gone', async (t) => {
    const before = (await eventRows('transcript.ready')).length;
    const job = (await s.call('POST', `/public/recordings/${id}/notes`)).body.data;
    await eventually(async () => (await s.call('GET', `/public/jobs/${job.id}`)).body.data.status === 'RUNNING', 60_000);
    t.equal((await s.call('DELETE', `/public/recordings/${id}`)).status, 200);
    await eventually(async () => ['SUCCEEDED', 'FAILED'].includes((await s.call('GET', `/public/jobs/${job.id}`)).body.data.status), 240_000);
    t.equal((await eventRows('transcript.ready')).length, before, 'no transcript.ready');
    const [row] = await node.app.sql<{ n: number }[]>`select count(*)::int as n from recording_notes where recording_id = ${id}`;
    const n = row!.n;
    t.equal(n, 0, 'its transcripts and notes deleted with it');
    t.equal((await fetch(txtUrl!)).status, 403, 'the transcript link is dead');
  });
});
