import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, createTenant, school as newSchool, startTestNode } from '../helpers/node.ts';
import { connect, eventually, type RoomClient } from '../helpers/ws.ts';
import { assertError } from '../helpers/assert.ts';

// Recordings through the API and the room socket, without media: who may start, pause and stop them,
// what the room is told, the rows and the recording.* events, the composition job (which fails plainly
// when nothing was captured), listing, deleting, tenant isolation and the plan's say. The media path
// (capture, composition, playback) is test/serial/recording-media.test.ts.
const T0 = Date.parse('2026-11-05T09:00:00Z');
const clock = new ManualClock(T0);
const node = await startTestNode(t, { clock });
const sql = node.app.sql;

async function school(plan: 'free' | 'standard' | 'pro' = 'pro', settings: Record<string, unknown> = {}) {
  const s = await newSchool(node, plan);
  const teacher = await s.user('t-1', 'Tina Teacher', 'TEACHER');
  const meeting = (await s.call('POST', '/public/meetings', { title: 'Chemistry', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 30, settings })).body.data;
  const enter = async (userId: string, role = 'PARTICIPANT'): Promise<{ ws: RoomClient; joined: any }> => {
    const link = (await s.call('POST', `/public/meetings/${meeting.id}/join-links`, { userId, role })).body.data;
    const r = await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `dev-${userId}-${Math.random()}` } });
    const ws = await connect(t, r.body.data.mediaUrl, r.body.data.mediaToken);
    return { ws, joined: await ws.type('joined') };
  };
  return { ...s, teacher, meeting, enter };
}

const runJobs = async () => {
  node.app.services.jobs.kick();
  await new Promise((r) => setTimeout(r, 50));
};

t.test('a host records from the room: everyone sees it, pauses and resumes, stops; nothing captured fails plainly with recording.failed', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  t.equal(host.joined.recording, null, 'not recorded to begin with');
  const amy = await s.enter((await s.user('s-amy', 'Amy Adams')).id);
  t.match(await amy.ws.command({ type: 'start-recording' }), { ok: false, error: { code: 'forbidden' } }, 'a student cannot record');

  const started = await host.ws.command({ type: 'start-recording' });
  t.match(started, { ok: true, recording: { recordingId: /^rec_/, paused: false } });
  const id = started.recording.recordingId;
  t.match((await amy.ws.type('recording')).recording, { recordingId: id, paused: false }, 'everyone hears it');
  t.match(await host.ws.command({ type: 'start-recording' }), { ok: false, error: { code: 'invalid_state', details: { recordingId: id } } }, 'one at a time');
  const late = await s.enter((await s.user('s-ben', 'Ben Bell')).id);
  t.match(late.joined.recording, { recordingId: id }, 'a late joiner is told at once');

  const [started1] = await s.events('recording.started');
  t.same(Object.keys(started1).sort(), ['deletedAt', 'durationSeconds', 'endedAt', 'externalMeetingId', 'failureReason', 'fileSizeBytes', 'kind', 'meetingId', 'mimeType', 'recordingId', 'startedAt', 'status'].sort(), 'the spec\'s payload');
  t.match(started1, { recordingId: id, meetingId: s.meeting.id, status: 'RECORDING', startedAt: new Date(T0).toISOString(), endedAt: null });
  t.match((await s.call('GET', `/public/recordings/${id}`)).body.data, { id, meetingId: s.meeting.id, status: 'RECORDING', phase: 'CAPTURING', automatic: false, paused: false });

  clock.advance(60_000);
  t.match(await host.ws.command({ type: 'pause-recording', paused: true }), { ok: true, paused: true });
  t.match((await amy.ws.next((m) => m.type === 'recording' && m.recording?.paused)).recording, { recordingId: id, paused: true });
  clock.advance(30_000);
  t.match(await host.ws.command({ type: 'pause-recording', paused: false }), { ok: true, paused: false });
  clock.advance(30_000);
  t.match(await host.ws.command({ type: 'stop-recording' }), { ok: true, recordingId: id });
  t.equal((await amy.ws.next((m) => m.type === 'recording' && m.recording === null)).recording, null, 'everyone hears it stopped');
  const [row] = await sql<{ pausedMs: string; endedAt: Date; phase: string }[]>`select paused_ms, ended_at, phase from recordings where id = ${id}`;
  t.match(row, { pausedMs: '30000', phase: 'PROCESSING' });
  t.equal(row!.endedAt.getTime(), T0 + 120_000);

  const [job] = await sql<{ id: string; status: string }[]>`select id, status from jobs where kind = 'recording.compose' and input->>'recordingId' = ${id}`;
  t.equal(job?.status, 'QUEUED', 'its composition is queued');
  await runJobs();
  t.equal((await sql<{ status: string }[]>`select status from jobs where id = ${job!.id}`)[0]!.status, 'QUEUED', 'and waits while the media node saves the capture');
  clock.advance(11_000);
  await eventually(async () => (await s.call('GET', `/public/recordings/${id}`)).body.data.status === 'FAILED', 5000);
  const failed = (await s.call('GET', `/public/recordings/${id}`)).body.data;
  t.match(failed, { status: 'FAILED', phase: null, failureReason: /Nothing was recorded/ });
  t.match(await s.events('recording.failed'), [{ recordingId: id, status: 'FAILED', failureReason: /Nothing was recorded/ }]);
  t.match((await s.call('GET', `/public/jobs/${job!.id}`)).body.data, { id: job!.id, kind: 'recording.compose', status: 'SUCCEEDED' }, 'the job is readable with recordings:read');
  const metrics = await node.app.metrics.registry.metrics();
  t.match(metrics, /aula_job_runs_total\{kind="recording\.compose",outcome="succeeded"\} 1/, 'the job\'s run is in the metrics');
  t.match(metrics, /aula_job_run_seconds_count\{kind="recording\.compose"\} 1/);
  const usersOnly = await createTenantKey(s.tenant.orgId, ['users:read']);
  assertError(t, await api(node, 'GET', `/public/jobs/${job!.id}`, { key: usersOnly }), 403, 'insufficient_scope');
});

/** Another key of the same organization with these scopes. */
async function createTenantKey(orgId: string, scopes: string[]): Promise<string> {
  const r = await node.app.services.apiKeys.create(sql, { orgId, name: 'narrow', scopes: scopes as never });
  return r.key;
}

t.test('the API starts and stops; recordAutomatically starts with the class; the end stops it; lists, filters, tenant isolation', async (t) => {
  const s = await school('pro', { recordAutomatically: true });
  const host = await s.enter(s.teacher.id, 'HOST');
  t.match(host.joined.recording, { recordingId: /^rec_/ }, 'recordAutomatically: recording from the start');
  const auto = host.joined.recording.recordingId;
  t.match((await s.call('GET', `/public/recordings/${auto}`)).body.data, { automatic: true, status: 'RECORDING' });
  assertError(t, await s.call('POST', `/public/meetings/${s.meeting.id}/recordings`), 409, 'invalid_state');
  const stopped = await s.call('POST', `/public/recordings/${auto}/stop`);
  t.match(stopped.body.data, { id: auto, phase: 'PROCESSING' });
  t.match((await s.call('POST', `/public/recordings/${auto}/stop`)).body.data, { id: auto, phase: 'PROCESSING' }, 'stopping again answers it as it is');

  clock.advance(5000);
  const second = await s.call('POST', `/public/meetings/${s.meeting.id}/recordings`, undefined, { 'Idempotency-Key': 'rec-2' });
  t.equal(second.status, 201);
  t.match(second.body.data, { status: 'RECORDING', phase: 'CAPTURING', automatic: false });
  const again = await s.call('POST', `/public/meetings/${s.meeting.id}/recordings`, undefined, { 'Idempotency-Key': 'rec-2' });
  t.equal(again.body.data.id, second.body.data.id, 'an Idempotency-Key replays the answer');
  await host.ws.next((m) => m.type === 'recording' && m.recording?.recordingId === second.body.data.id);

  t.match((await host.ws.command({ type: 'end' })), { ok: true });
  await eventually(async () => (await s.call('GET', `/public/recordings/${second.body.data.id}`)).body.data.phase === 'PROCESSING');
  t.pass('the meeting\'s end stops the recording');

  const all = await s.call('GET', `/public/meetings/${s.meeting.id}/recordings?limit=1`);
  t.same(all.body.data.map((r: any) => r.id), [second.body.data.id], 'newest first');
  const next = await s.call('GET', `/public/meetings/${s.meeting.id}/recordings?limit=1&cursor=${all.body.nextCursor}`);
  t.same(next.body.data.map((r: any) => r.id), [auto]);
  t.same((await s.call('GET', `/public/recordings?meetingId=${s.meeting.id}&status=RECORDING`)).body.data.length, 2);
  t.same((await s.call('GET', `/public/recordings?status=READY`)).body.data, []);
  assertError(t, await s.call('GET', '/public/recordings?status=DONE'), 400, 'validation_failed');

  const other = await newSchool(node);
  assertError(t, await other.call('GET', `/public/recordings/${auto}`), 404, 'recording_not_found');
  assertError(t, await other.call('POST', `/public/recordings/${auto}/stop`), 404, 'recording_not_found');
  assertError(t, await other.call('DELETE', `/public/recordings/${auto}`), 404, 'recording_not_found');
  assertError(t, await other.call('POST', `/public/recordings/${auto}/playback`, {}), 404, 'recording_not_found');
  t.same((await other.call('GET', '/public/recordings')).body.data, [], 'another organization lists none of them');
  assertError(t, await s.call('POST', `/public/recordings/${auto}/playback`, {}), 409, 'invalid_state');
});

t.test('deleting: DELETED with recording.deleted, its files gone; again answers it as it is', async (t) => {
  const s = await school();
  const host = await s.enter(s.teacher.id, 'HOST');
  const id = (await host.ws.command({ type: 'start-recording' })).recording.recordingId;
  clock.advance(10_000);
  const gone = await s.call('DELETE', `/public/recordings/${id}`);
  t.match(gone.body.data, { id, status: 'DELETED', deletedAt: new Date(clock.now()).toISOString() }, 'a recording in progress is stopped and deleted');
  t.match(await s.events('recording.deleted'), [{ recordingId: id, status: 'DELETED', deletedAt: new Date(clock.now()).toISOString() }]);
  t.match((await s.call('DELETE', `/public/recordings/${id}`)).body.data, { status: 'DELETED' });
  t.equal((await s.events('recording.deleted')).length, 1, 'once');
  for (const e of [...(await s.events('recording.started')), ...(await s.events('recording.deleted'))]) t.notMatch(JSON.stringify(e), /https?:\/\//, 'no URL in a payload');
  clock.advance(11_000);
  await runJobs();
  t.equal((await s.call('GET', `/public/recordings/${id}`)).body.data.status, 'DELETED', 'its composition does nothing for a deleted recording');
});

t.test('the plan: free has no recording; a full storage quota refuses a new one', async (t) => {
  const free = await school('free');
  const host = await free.enter(free.teacher.id, 'HOST');
  t.match(await host.ws.command({ type: 'start-recording' }), { ok: false, error: { code: 'plan_feature_unavailable' } });
  assertError(t, await free.call('POST', `/public/meetings/${free.meeting.id}/recordings`), 402, 'plan_feature_unavailable');

  const std = await school('standard');
  await std.enter(std.teacher.id, 'HOST');
  await sql`insert into recordings (id, org_id, meeting_id, status, automatic, started_at, file_size_bytes, updated_at)
    values ('rec_quota', ${std.tenant.orgId}, ${std.meeting.id}, 'READY', false, now(), ${10e9}, now())`;
  assertError(t, await std.call('POST', `/public/meetings/${std.meeting.id}/recordings`), 403, 'storage_quota_exceeded');
  const auto = await school('free', { recordAutomatically: true });
  const h = await auto.enter(auto.teacher.id, 'HOST');
  t.equal(h.joined.recording, null, 'a free meeting set to record automatically goes live without recording');
  assertError(t, await createTenant(node).then((x) => api(node, 'GET', '/public/recordings/rec_x', { key: x.key })), 404, 'recording_not_found');
});

t.test('retention: recordings past the organization\'s days are deleted as DELETE does, others stay', async (t) => {
  const s = await school();
  await s.enter(s.teacher.id, 'HOST');
  const day = 24 * 60 * 60_000;
  const old = (days: number) => new Date(clock.now() - days * day).toISOString();
  await sql`insert into recordings (id, org_id, meeting_id, status, automatic, started_at, file_size_bytes, updated_at) values
    ('rec_old', ${s.tenant.orgId}, ${s.meeting.id}, 'READY', false, ${old(40)}, 1000, now()),
    ('rec_new', ${s.tenant.orgId}, ${s.meeting.id}, 'READY', false, ${old(10)}, 1000, now()),
    ('rec_live', ${s.tenant.orgId}, ${s.meeting.id}, 'RECORDING', false, ${old(400)}, null, now())`;
  await node.app.services.recordings.purgeExpired(clock.now());
  t.equal((await s.call('GET', '/public/recordings/rec_old')).body.data.status, 'READY', 'the default keeps a year');
  await sql`update organizations set recording_retention_days = 30 where id = ${s.tenant.orgId}`;
  t.equal(await node.app.services.recordings.purgeExpired(clock.now()), 1);
  t.match((await s.call('GET', '/public/recordings/rec_old')).body.data, { status: 'DELETED' });
  t.equal((await s.call('GET', '/public/recordings/rec_new')).body.data.status, 'READY');
  t.equal((await s.call('GET', '/public/recordings/rec_live')).body.data.status, 'RECORDING', 'one being recorded is never purged');
  t.match(await s.events('recording.deleted'), [{ recordingId: 'rec_old' }]);
});
