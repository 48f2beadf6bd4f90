import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { assertError } from '../helpers/assert.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { Receiver } from '../helpers/receiver.ts';
import { eventually } from '../helpers/ws.ts';
import { verifySvcSignature } from '../../src/services/webhooks/verify.ts';

// The notes pipeline's rules, with the transcription engine an OpenAI-compatible server on this
// machine (the `openai` adapter, as an operator would point it at faster-whisper): which recordings
// get a run (the plan's ai_notes, the organization's switch), the admin settings, a run that fails
// (nothing sent, the job FAILED with its reason, the metrics), the two events reaching a receiver
// after the plan lost webhooks (background events), and the speakers merged in time order; live
// captions through the same engine (a request a chunk).
// Recordings are real: a room with tones, composed by the job runner.

/** What the stand-in server answers next; `hold` keeps requests waiting until released. */
const asr = {
  status: 200,
  hold: null as null | Promise<void>,
  calls: 0,
  texts: ['Plants make sugar from sunlight.', 'The roots hold the plant.'],
  /** The last request as it came: its path, authorization and media type, and the size of its body. */
  last: null as null | { url: string; authorization: string; contentType: string; bytes: number },
};
const server = createServer(async (req, res: ServerResponse) => {
  let bytes = 0;
  for await (const b of req) bytes += (b as Buffer).length;
  asr.calls++;
  asr.last = { url: req.url ?? '', authorization: req.headers.authorization ?? '', contentType: req.headers['content-type'] ?? '', bytes };
  if (asr.hold) await asr.hold;
  if (asr.status !== 200) {
    res.writeHead(asr.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'this model does not exist' } }));
    return;
  }
  const text = asr.texts[(asr.calls - 1) % asr.texts.length]!;
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ language: 'english', duration: 2, text, segments: [{ start: 0.2, end: 1.8, text }] }));
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));

const clock = new ManualClock(Date.now());
const node = await startTestNode(t, {
  clock,
  overrides: { WEBHOOKS_ALLOW_PRIVATE_TARGETS: true, AULA_ASR_ENGINE: 'openai', AULA_ASR_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, AULA_ASR_KEY: 'sk-local-test' },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function schoolWithAdmin(plan: 'pro' | 'standard' = 'pro') {
  const s = await newSchool(node, plan);
  const email = `admin-${s.tenant.orgId}@school.example`;
  await node.app.services.admins.create(node.app.sql, { orgId: s.tenant.orgId, email, role: 'admin', password: 'correct horse battery staple' });
  const bearer = (await api(node, 'POST', '/auth/sign-in', { body: { orgId: s.tenant.orgId, email, password: 'correct horse battery staple' } })).body.data.sessionToken as string;
  const org = (method: string, body?: unknown) => api(node, method, `/orgs/${s.tenant.orgId}`, { bearer, ...(body ? { body } : {}) });
  const admin = (method: string, path: string, body?: unknown) => api(node, method, `/orgs/${s.tenant.orgId}${path}`, { bearer, ...(body ? { body } : {}) });
  const teacher = await s.user('t', 'Tina Teacher', 'TEACHER');
  const student = await s.user('s', 'Sam Student');
  return { ...s, org, admin, email, teacher, student };
}

/** Two people speak (tones) for a few seconds, the teacher first: a READY recording. */
async function record(t: Test, s: Awaited<ReturnType<typeof schoolWithAdmin>>): Promise<string> {
  const meeting = (await s.call('POST', '/public/meetings', { title: 'Plants', type: 'MEETING', hostUserId: s.teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60 })).body.data;
  const host = await enterRoom(t, node, s.tenant.key, meeting.id, s.teacher.id, 'HOST');
  const id = (await s.call('POST', `/public/meetings/${meeting.id}/recordings`)).body.data.id;
  await host.peer.produceAudio({ hz: 440 });
  await sleep(1500);
  const stu = await enterRoom(t, node, s.tenant.key, meeting.id, s.student.id);
  await stu.peer.produceAudio({ hz: 880 });
  await sleep(2000);
  await s.call('POST', `/public/recordings/${id}/stop`);
  await eventually(async () => (await s.call('GET', `/public/recordings/${id}`)).body.data.status !== 'RECORDING', 120_000);
  t.equal((await s.call('GET', `/public/recordings/${id}`)).body.data.status, 'READY');
  return id;
}

const notesJobs = async (orgId: string) => node.app.sql<{ id: string; status: string; error: string | null }[]>`select id, status, error from jobs where org_id = ${orgId} and kind = 'recording.notes' order by created_at`;
const eventsOf = async (orgId: string, type: string) => node.app.sql<{ id: string; data: any }[]>`select id, data from outbox where org_id = ${orgId} and type = ${type} order by id`;

t.test('the admin settings: aiNotes and language, validated; aiNotesUnavailable says why', async (t) => {
  const s = await schoolWithAdmin();
  const got = (await s.org('GET')).body.data;
  t.match(got, { aiNotes: true, language: 'en', aiNotesUnavailable: null, features: ['webhooks', 'recording', 'ai_notes'] });
  t.match((await s.org('PATCH', { aiNotes: false })).body.data, { aiNotes: false, aiNotesUnavailable: /switched off/ });
  assertError(t, await s.org('PATCH', { language: 'English' }), 400, 'validation_failed');
  assertError(t, await s.org('PATCH', { aiNotes: 'yes' }), 400, 'validation_failed');
  t.match((await s.org('PATCH', { aiNotes: true, language: 'fr' })).body.data, { aiNotes: true, language: 'fr', aiNotesUnavailable: null }, 'the openai engine does any language');
  const standard = await schoolWithAdmin('standard');
  t.match((await standard.org('GET')).body.data, { aiNotesUnavailable: /standard plan does not include AI notes/ });
});

t.test('a READY recording: one run, the speakers merged in time order, both events; the job readable with recordings:read', async (t) => {
  const s = await schoolWithAdmin();
  asr.calls = 0;
  const id = await record(t, s);
  await eventually(async () => (await eventsOf(s.tenant.orgId, 'insights.ready')).length === 1, 60_000);
  // the runner marks the job SUCCEEDED just after the run's transaction
  await eventually(async () => (await notesJobs(s.tenant.orgId))[0]?.status === 'SUCCEEDED', 10_000);
  const [job] = await notesJobs(s.tenant.orgId);
  const read = await s.call('GET', `/public/jobs/${job!.id}`);
  t.match(read.body.data, { kind: 'recording.notes', status: 'SUCCEEDED', error: null });
  t.equal(asr.calls, 2, 'one request per microphone');
  const current = await node.app.services.recordingNotes.current(node.app.sql, s.tenant.orgId, id);
  const lines = current!.transcript.segments.map((x) => `${current!.nameOf(x.speaker)}@${Math.round(x.startMs / 100) / 10}`);
  t.equal(current!.transcript.segments.length, 2, lines.join(' '));
  t.equal(current!.nameOf(current!.transcript.segments[0]!.speaker), 'Tina Teacher', `the teacher spoke first: ${lines.join(' ')}`);
  t.equal(current!.nameOf(current!.transcript.segments[1]!.speaker), 'Sam Student');
  t.ok(current!.transcript.segments[1]!.startMs >= 1500, 'the student\'s words are placed where they joined');
  const [tr] = await eventsOf(s.tenant.orgId, 'transcript.ready');
  t.match(tr!.data, { recordingId: id, language: 'en', wordCount: 10 });

  t.test('a deleted account\'s name is erased from the transcript', async (t) => {
    await node.app.services.users.erase(node.app.sql, s.tenant.orgId, s.student.id);
    const c = await node.app.services.recordingNotes.current(node.app.sql, s.tenant.orgId, id);
    t.equal(c!.nameOf(c!.transcript.segments[1]!.speaker), 'Deleted user');
    const vtt = await node.app.services.recordingNotes.transcriptFile(node.app.sql, s.tenant.orgId, id, 'vtt');
    t.notMatch(vtt, /Sam/);
    t.match(vtt, /<v Deleted user>/);
  });
});

t.test('the plan without ai_notes, or the switch off: no job, no events; regeneration refused with why', async (t) => {
  const standard = await schoolWithAdmin('standard');
  const a = await record(t, standard);
  const off = await schoolWithAdmin();
  await off.org('PATCH', { aiNotes: false });
  const b = await record(t, off);
  await sleep(1000);
  t.same(await notesJobs(standard.tenant.orgId), []);
  t.same(await notesJobs(off.tenant.orgId), []);
  t.same(await eventsOf(off.tenant.orgId, 'transcript.ready'), []);
  assertError(t, await standard.call('POST', `/public/recordings/${a}/notes`), 402, 'plan_feature_unavailable');
  const r = await off.call('POST', `/public/recordings/${b}/notes`);
  assertError(t, r, 409, 'ai_notes_unavailable');
  t.match(r.body.error.message, /switched off/);
  assertError(t, await off.call('POST', '/public/recordings/rec_nothing/notes'), 404, 'recording_not_found');
});

t.test('the engine refuses: the run FAILED with the reason (job, metrics), nothing sent; a regeneration afterwards succeeds', async (t) => {
  const s = await schoolWithAdmin();
  asr.status = 400;
  t.teardown(() => void (asr.status = 200));
  const id = await record(t, s);
  await eventually(async () => (await notesJobs(s.tenant.orgId))[0]?.status === 'FAILED', 60_000);
  const [job] = await notesJobs(s.tenant.orgId);
  t.match(job!.error, /transcription engine \(openai\) failed.*this model does not exist/);
  t.notMatch(job!.error, /sk-local-test/, 'no key in the reason');
  t.match((await s.call('GET', `/public/jobs/${job!.id}`)).body.data, { status: 'FAILED', error: /this model does not exist/ });
  const [run] = await node.app.sql<{ status: string; failureReason: string }[]>`select status, failure_reason from recording_notes where recording_id = ${id}`;
  t.match(run, { status: 'FAILED', failureReason: /this model does not exist/ });
  // what the console shows beside the notes: the failed run and why
  const runs = await s.admin('GET', `/recordings/${id}/notes/runs`);
  t.equal(runs.status, 200);
  t.match(runs.body.data, [{ status: 'FAILED', manual: false, jobId: job!.id, failureReason: /this model does not exist/, lastAttemptError: null, finishedAt: String }]);
  assertError(t, await s.admin('GET', '/recordings/rec_nothing/notes/runs'), 404, 'recording_not_found');
  const other = await schoolWithAdmin();
  assertError(t, await other.admin('GET', `/recordings/${id}/notes/runs`), 404, 'recording_not_found'); // another organization's recording
  t.same(await eventsOf(s.tenant.orgId, 'transcript.ready'), []);
  t.same(await eventsOf(s.tenant.orgId, 'insights.ready'), []);
  const metrics = await (await fetch(`${node.url}/metrics`)).text();
  t.match(metrics, /aula_job_runs_total\{kind="recording.notes",outcome="failed"\} [1-9]/);
  asr.status = 200;
  const again = await s.call('POST', `/public/recordings/${id}/notes`);
  t.equal(again.status, 202);
  await eventually(async () => (await eventsOf(s.tenant.orgId, 'insights.ready')).length === 1, 60_000);
  t.equal((await eventsOf(s.tenant.orgId, 'transcript.ready')).length, 1);
  t.match((await s.admin('GET', `/recordings/${id}/notes/runs`)).body.data, [{ status: 'READY', manual: true, failureReason: null, wordCount: Number }, { status: 'FAILED' }], 'newest first');
});

t.test('a recording in which nobody spoke: the run FAILED with that reason, nothing sent', async (t) => {
  const s = await schoolWithAdmin();
  const texts = asr.texts;
  asr.texts = [''];
  t.teardown(() => void (asr.texts = texts));
  await record(t, s);
  await eventually(async () => (await notesJobs(s.tenant.orgId))[0]?.status === 'FAILED', 60_000);
  t.match((await notesJobs(s.tenant.orgId))[0]!.error, /No speech was heard/);
  t.same(await eventsOf(s.tenant.orgId, 'transcript.ready'), []);
});

t.test('a plan that lost webhooks while the notes were made: the two events still reach the endpoint', async (t) => {
  const s = await schoolWithAdmin();
  const receiver = await Receiver.start(t);
  const endpoint = await s.call('POST', '/public/webhooks', { url: receiver.url(), events: ['transcript.ready', 'insights.ready', 'recording.ready'] });
  t.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
  let release!: () => void;
  asr.hold = new Promise<void>((r) => (release = r));
  t.teardown(() => { asr.hold = null; release(); });
  const id = await record(t, s);
  await receiver.waitFor(1, 30_000);
  // asking again while the run is under way answers that run's job: a burst queues nothing more
  const [auto] = await notesJobs(s.tenant.orgId);
  const again = await Promise.all([1, 2, 3].map(() => s.call('POST', `/public/recordings/${id}/notes`)));
  t.same(again.map((r) => r.body.data.id), [auto!.id, auto!.id, auto!.id]);
  t.equal((await notesJobs(s.tenant.orgId)).length, 1);
  await node.app.sql`update organizations set plan = 'standard' where id = ${s.tenant.orgId}`;
  asr.hold = null;
  release();
  await receiver.waitFor(3, 60_000);
  t.same(receiver.received.map((r) => r.body.type), ['recording.ready', 'transcript.ready', 'insights.ready']);
  // as a customer's receiver checks them: signed with the endpoint's secret, the spec's fields and no more
  const secret = endpoint.body.data.secret as string;
  for (const r of receiver.received) t.same(verifySvcSignature({ secret, headers: r.headers, rawBody: r.raw }), { ok: true }, `${r.body.type} is signed`);
  const [, transcript, insights] = receiver.received.map((r) => r.body);
  const meetingId = (await s.call('GET', `/public/recordings/${id}`)).body.data.meetingId;
  t.same(Object.keys(transcript.data).sort(), ['kind', 'language', 'meetingId', 'recordingId', 'wordCount']);
  t.match(transcript.data, { recordingId: id, meetingId, kind: 'MEETING', language: 'en', wordCount: Number });
  t.same(Object.keys(insights.data).sort(), ['chapters', 'durationSeconds', 'kind', 'language', 'meetingId', 'quizQuestionCount', 'recordingId', 'summary']);
  t.match(insights.data, { recordingId: id, meetingId, kind: 'MEETING', language: 'en', summary: { overview: String, bullets: Array }, quizQuestionCount: Number, durationSeconds: Number });
  for (const c of insights.data.chapters) t.ok(Number.isInteger(c.startSeconds) && c.startSeconds >= 0 && c.startSeconds < insights.data.durationSeconds && typeof c.title === 'string', `chapter "${c.title}" at ${c.startSeconds} s, inside the recording`);
  const [, transcriptRaw, insightsRaw] = receiver.received.map((r) => r.raw.toString());
  t.notMatch(transcriptRaw, /sugar|roots/i, 'the transcript\'s words are not in transcript.ready (only its count)');
  t.notMatch(`${transcriptRaw}${insightsRaw}`, /externalMeetingId/, 'no externalMeetingId in these two');
});

t.test('the console reviews the notes: edits the summary and chapters, hides them from viewers; the player page follows; a regeneration starts from the engine again', async (t) => {
  const s = await schoolWithAdmin();
  const id = await record(t, s);
  await eventually(async () => (await eventsOf(s.tenant.orgId, 'insights.ready')).length === 1, 60_000);
  const got = await s.admin('GET', `/recordings/${id}/notes`);
  t.equal(got.status, 200, JSON.stringify(got.body));
  t.match(got.body.data, { language: 'en', edited: null, hidden: false, quizQuestionCount: Number });
  t.same(got.body.data.summary, got.body.data.generated.summary);
  // the teacher spoke first; each line says who (the stand-in's words go to whichever track asks first)
  t.match(got.body.data.transcript, /^\[00:00:0\d\] Tina Teacher: \S[\s\S]*\] Sam Student: \S/);
  // not through an API key (no public endpoint), not another organization's recording
  t.equal((await api(node, 'GET', `/orgs/${s.tenant.orgId}/recordings/${id}/notes`, { key: s.tenant.key })).status, 401);
  const other = await schoolWithAdmin();
  assertError(t, await other.admin('GET', `/recordings/${id}/notes`), 404, 'not_found');
  assertError(t, await s.admin('GET', '/recordings/rec_nothing/notes'), 404, 'not_found');

  const edited = await s.admin('PATCH', `/recordings/${id}/notes`, { summary: { overview: 'How plants feed themselves, and what roots do.', bullets: ['Sunlight makes sugar.', 'Roots anchor the plant.'] }, chapters: [{ title: 'Plants and light', startSeconds: 0 }, { title: 'Roots', startSeconds: 2 }] });
  t.equal(edited.status, 200, JSON.stringify(edited.body));
  t.match(edited.body.data, { summary: { overview: 'How plants feed themselves, and what roots do.' }, chapters: [{ title: 'Plants and light' }, { title: 'Roots', startSeconds: 2 }], edited: { by: s.email, at: String } });
  t.same(edited.body.data.generated, got.body.data.generated, 'the engine\'s notes are kept beside');
  assertError(t, await s.admin('PATCH', `/recordings/${id}/notes`, { chapters: [{ title: 'B', startSeconds: 3 }, { title: 'A', startSeconds: 1 }] }), 400, 'validation_failed');
  assertError(t, await s.admin('PATCH', `/recordings/${id}/notes`, { chapters: [{ title: 'Later', startSeconds: 3600 }] }), 400, 'validation_failed');
  assertError(t, await s.admin('PATCH', `/recordings/${id}/notes`, { summary: { overview: '', bullets: [] } }), 400, 'validation_failed');
  assertError(t, await s.admin('PATCH', `/recordings/${id}/notes`, { quiz: [] }), 400, 'validation_failed');
  const page = async () => {
    const links = (await s.call('POST', `/public/recordings/${id}/playback`, { expiresInSeconds: 300 })).body.data;
    return (await fetch(links.embedUrl)).text();
  };
  t.match(await page(), /How plants feed themselves, and what roots do\./, 'the player page shows the edited summary');
  t.match(await page(), /<span class="t">0:02<\/span> Roots/);

  t.match((await s.admin('PATCH', `/recordings/${id}/notes`, { hidden: true })).body.data, { hidden: true });
  const hiddenPage = await page();
  t.notMatch(hiddenPage, /Summary|Chapters/, 'hidden: no summary or chapters for viewers');
  t.match(hiddenPage, /<track kind="captions"/, 'the captions still show');
  const audit = (await s.admin('GET', '/audit-log?action=recording_notes.edited')).body.data;
  t.equal(audit.length, 2);
  t.match(audit[0], { actor: { type: 'admin', email: s.email }, target: { type: 'recording', id }, details: { changed: ['hidden'] } });

  // a regeneration: the engine's notes again, still hidden until shown
  await s.call('POST', `/public/recordings/${id}/notes`);
  await eventually(async () => (await eventsOf(s.tenant.orgId, 'insights.ready')).length === 2, 60_000);
  const after = (await s.admin('GET', `/recordings/${id}/notes`)).body.data;
  t.match(after, { edited: null, hidden: true });
  t.same(after.summary, after.generated.summary);
  t.equal((await s.admin('PATCH', `/recordings/${id}/notes`, { hidden: false })).body.data.hidden, false);
  t.match(await page(), /Summary/);
});

t.test('live captions through the OpenAI-compatible engine: a request a chunk, its text to whoever has CC on, as the speaker\'s', async (t) => {
  const s = await schoolWithAdmin();
  const texts = asr.texts;
  asr.texts = ['Plants use sunlight to make sugar.'];
  t.teardown(() => void (asr.texts = texts));
  const meeting = (await s.call('POST', '/public/meetings', { title: 'Plants', type: 'MEETING', hostUserId: s.teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60 })).body.data;
  const host = await enterRoom(t, node, s.tenant.key, meeting.id, s.teacher.id, 'HOST');
  const stu = await enterRoom(t, node, s.tenant.key, meeting.id, s.student.id);
  t.match(stu.joined, { captionsUnavailable: null }, 'the room offers captions');
  t.match(await stu.room.command({ type: 'captions', on: true }), { ok: true, on: true, language: 'en' });
  const calls = asr.calls;
  await host.peer.produceAudio({ hz: 440 });
  const caption = await stu.room.type('caption', 30_000);
  t.match(caption, { type: 'caption', participantId: host.participantId, name: 'Tina Teacher', text: 'Plants use sunlight to make sugar.', final: true });
  t.ok(asr.calls > calls, `${asr.calls - calls} request(s) to the engine`);
  t.match(asr.last, { url: '/v1/audio/transcriptions', authorization: 'Bearer sk-local-test', contentType: /^multipart\/form-data/ });
  t.ok(asr.last!.bytes > 16_000 * 2, `a chunk of at least a second of audio (${asr.last!.bytes} bytes)`);
  t.equal(host.room.messages.filter((m) => m.type === 'caption').length, 0, 'the host did not turn CC on and gets none');
  t.match(await stu.room.command({ type: 'captions', on: false }), { ok: true, on: false });
  const room = (await node.app.media!.rooms.room(meeting.id))!;
  await eventually(async () => (await room.captionPipeline()) === null, 10_000);
  t.equal((await node.app.sql<{ n: number }[]>`select count(*)::int as n from recording_notes where org_id = ${s.tenant.orgId}`)[0]!.n, 0, 'nothing stored');
});
