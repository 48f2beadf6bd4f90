import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { updateOrg } from '../../src/services/orgs.ts';
import { api, createTenant, createTestDatabase, REDIS_URL, startTestNode, TEST_SECRET } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { spawnNode } from '../helpers/process.ts';
import { eventually } from '../helpers/ws.ts';

// kill -9 of the node making a recording's notes, between its two microphones: the first track's
// transcript is kept; when the lease runs out another node takes the job, transcribes only the second
// track, and sends transcript.ready and insights.ready once. The engine is an OpenAI-compatible server
// on this machine that answers at once, except the second request, which it never answers (the node
// is killed while it waits). Serial: it waits out the job's 30 s lease.
let calls = 0;
const server = createServer(async (req, res) => {
  for await (const _ of req);
  const n = ++calls;
  if (n === 2) return; // held until the node that asked dies
  const text = n === 1 ? 'Plants make sugar from sunlight.' : 'The roots hold the plant in the ground.';
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ language: 'english', duration: 2, text, segments: [{ start: 0.1, end: 1.9, text }] }));
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
const asrEnv = { AULA_ASR_ENGINE: 'openai', AULA_ASR_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, AULA_ASR_KEY: 'sk-local' } as const;

const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const storageDir = await mkdtemp(join(tmpdir(), 'aula-shared-storage-'));
t.teardown(() => rm(storageDir, { recursive: true, force: true }));
const a = await startTestNode(t, { databaseUrl, redisPrefix, overrides: { AULA_STORAGE_DIR: storageDir, ...asrEnv } });
const childEnv = { AULA_DATABASE_URL: databaseUrl, AULA_REDIS_URL: REDIS_URL, AULA_REDIS_PREFIX: redisPrefix, AULA_SECRET_KEY: TEST_SECRET, AULA_MEDIA_WORKERS: '0', AULA_STORAGE_DIR: storageDir, AULA_JOB_POLL_MS: '500', ...asrEnv };
const tenant = await createTenant(a);
const call = (method: string, path: string, body?: unknown) => api(a, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const count = async (type: string) => Number((await a.app.sql<{ n: string }[]>`select count(*) as n from outbox where org_id = ${tenant.orgId} and type = ${type}`)[0]!.n);

t.test('kill -9 mid-job: the next node goes on from the kept track and sends the events once', async (t) => {
  // a READY recording of two microphones, made while AI notes are off (no automatic run)
  await updateOrg(a.app.sql, a.app.clock, tenant.orgId, { aiNotes: false });
  const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Tina Teacher', role: 'TEACHER' })).body.data;
  const student = (await call('POST', '/public/users', { externalId: 's', fullName: 'Sam Student', role: 'STUDENT' })).body.data;
  const meeting = (await call('POST', '/public/meetings', { title: 'Plants', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
  const host = await enterRoom(t, a, tenant.key, meeting.id, teacher.id, 'HOST');
  const id = (await call('POST', `/public/meetings/${meeting.id}/recordings`)).body.data.id;
  await host.peer.produceAudio({ hz: 440 });
  const stu = await enterRoom(t, a, tenant.key, meeting.id, student.id);
  await stu.peer.produceAudio({ hz: 880 });
  await sleep(3000);
  await call('POST', `/public/recordings/${id}/stop`);
  await eventually(async () => (await call('GET', `/public/recordings/${id}`)).body.data.status === 'READY', 120_000);

  // this node stops running jobs; the notes are made by b, which dies waiting for the second track
  await a.app.services.jobs.stop();
  await updateOrg(a.app.sql, a.app.clock, tenant.orgId, { aiNotes: true });
  const b = await spawnNode(t, childEnv);
  const job = (await call('POST', `/public/recordings/${id}/notes`)).body.data;
  t.equal(job.kind, 'recording.notes');
  await eventually(async () => calls >= 2, 60_000);
  const [kept] = await a.app.sql<{ tracks: Record<string, unknown> }[]>`select tracks from recording_notes where recording_id = ${id}`;
  t.equal(Object.keys(kept!.tracks).length, 1, 'the first track\'s transcript is kept');
  b.proc.kill('SIGKILL');
  await once(b.proc, 'exit');

  const c = await spawnNode(t, childEnv);
  await eventually(async () => (await count('insights.ready')) >= 1, 90_000);
  await sleep(2000);
  t.equal(await count('transcript.ready'), 1, 'transcript.ready once');
  t.equal(await count('insights.ready'), 1, 'insights.ready once');
  t.equal(calls, 3, 'only the second track was transcribed again');
  await eventually(async () => (await call('GET', `/public/jobs/${job.id}`)).body.data.status === 'SUCCEEDED', 10_000);
  t.pass('the job SUCCEEDED');
  const current = await a.app.services.recordingNotes.current(a.app.sql, tenant.orgId, id);
  t.same(current!.transcript.segments.map((s) => current!.nameOf(s.speaker)).sort(), ['Sam Student', 'Tina Teacher'], 'both speakers in the transcript');
  c.proc.kill('SIGTERM');
});
