import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { shardOf } from '../../src/platform/cluster/cluster.ts';
import { api, createTenant, createTestDatabase, REDIS_URL, startTestNode, TEST_SECRET } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { spawnNode, type NodeProcess } from '../helpers/process.ts';
import { eventually } from '../helpers/ws.ts';
import { pcm, power, probe, toneShare } from '../helpers/av.ts';
import { recordingPrefix } from '../../src/services/recordings.ts';
import type { SegmentManifest } from '../../media/recording/format.ts';

// A recorded class whose media node is killed with SIGKILL: node a (this process, no worker) holds the
// sockets and the meeting's actor; the room's media, and so its capture, is on node b or c (real
// processes). All three share one storage folder. After the kill the room is re-placed on the other
// node, the recording goes on there in a second segment, and the composition joins what the dead node
// left (its manifest, without a duration) with the second segment.
const databaseUrl = await createTestDatabase(t);
const redisPrefix = `aulatest:${randomBytes(4).toString('hex')}:`;
const storageDir = await mkdtemp(join(tmpdir(), 'aula-shared-storage-'));
t.teardown(() => rm(storageDir, { recursive: true, force: true }));
const a = await startTestNode(t, { databaseUrl, redisPrefix, overrides: { AULA_MEDIA_WORKERS: 0, AULA_STORAGE_DIR: storageDir } });
const env = {
  AULA_DATABASE_URL: databaseUrl,
  AULA_REDIS_URL: REDIS_URL,
  AULA_REDIS_PREFIX: redisPrefix,
  AULA_SECRET_KEY: TEST_SECRET,
  AULA_MEDIA_WORKERS: '1',
  AULA_MEDIA_LISTEN_IP: '127.0.0.1',
  AULA_STORAGE_DIR: storageDir,
  AULA_LOG_LEVEL: 'info',
};
const media: NodeProcess[] = await Promise.all([spawnNode(t, env), spawnNode(t, env)]);
const nodeIdOf = (m: NodeProcess) => m.logs.find((l) => l.msg === 'cluster node started')!.nodeId as string;
const tenant = await createTenant(a);
const call = (method: string, path: string, body?: unknown) => api(a, method, path, { key: tenant.key, ...(body ? { body } : {}) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const work = await mkdtemp(join(tmpdir(), 'aula-rec-failover-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

t.test('kill -9 of the node recording the class: the recording goes on in a new segment and the two are joined', async (t) => {
  await eventually(() => a.app.mediaLoad.candidate() !== null && media.every((m) => a.app.mediaLoad.alive(nodeIdOf(m))), 10_000);
  const teacher = (await call('POST', '/public/users', { externalId: 't', fullName: 'Teacher', role: 'TEACHER' })).body.data;
  let meeting: { id: string } | null = null;
  await eventually(async () => {
    const m = (await call('POST', '/public/meetings', { title: 'Failover', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date().toISOString(), durationMinutes: 60 })).body.data;
    if (a.app.cluster.owned().has(shardOf(`meeting:${m.id}`))) meeting = m;
    return meeting;
  }, 20_000);
  const meetingId = meeting!.id;
  const host = await enterRoom(t, a, tenant.key, meetingId, teacher.id, 'HOST');
  await host.peer.produceAudio({ hz: 440 });
  await host.peer.produceVideo({ simulcast: false });
  const placed = a.app.services.rooms.placement(meetingId)!;
  const hosting = media.find((m) => nodeIdOf(m) === placed.nodeId)!;

  const started = await call('POST', `/public/meetings/${meetingId}/recordings`);
  t.equal(started.status, 201);
  const id = started.body.data.id;
  await sleep(6000);
  hosting.proc.kill('SIGKILL');
  const killedAt = Date.now();
  await eventually(() => a.app.services.rooms.placement(meetingId)?.nodeId !== placed.nodeId && host.peer.restarted > 0, 15_000);
  await eventually(async () => (await a.app.sql<{ segments: number }[]>`select segments from recordings where id = ${id}`)[0]!.segments === 2, 15_000);
  t.pass('a second segment began on the other node');
  await sleep(6000);
  const afterMs = Date.now() - killedAt;
  t.match((await call('POST', `/public/recordings/${id}/stop`)).body.data, { phase: 'PROCESSING' });

  await eventually(async () => (await call('GET', `/public/recordings/${id}`)).body.data.status !== 'RECORDING', 180_000);
  const rec = (await call('GET', `/public/recordings/${id}`)).body.data;
  t.match(rec, { status: 'READY' }, JSON.stringify(rec));

  const manifests: SegmentManifest[] = [];
  for (const seg of [0, 1]) {
    const file = join(work, `m${seg}.json`);
    await a.app.services.recordings.storage.fetch(`${recordingPrefix(tenant.orgId, id)}/raw/${seg}/manifest.json`, file);
    manifests.push(JSON.parse(await readFile(file, 'utf8')));
  }
  t.equal(manifests[0]!.durationMs, null, 'the dead node never finished its segment');
  t.equal(manifests[0]!.nodeId, placed.nodeId);
  t.ok(manifests[0]!.tracks.some((x) => x.kind === 'audio'), 'but its tracks were saved as they were written');
  t.ok(manifests[1]!.durationMs! > 4000, `the second segment lasts ${manifests[1]!.durationMs} ms`);

  const links = (await call('POST', `/public/recordings/${id}/playback`, {})).body.data;
  const mp4 = join(work, 'failover.mp4');
  await writeFile(mp4, Buffer.from(await (await fetch(links.url)).arrayBuffer()));
  const p = probe(mp4);
  t.same(p.codecs, ['aac', 'h264']);
  // about 6 s before the kill and 6 s after the second segment began (the gap while the room moved is not in it)
  t.ok(p.durationS > 9 && p.durationS < 6 + afterMs / 1000 + 1, `${p.durationS.toFixed(1)} s of the class in one file`);
  const tone = power(pcm(mp4), 440);
  t.ok(toneShare(tone, 1, 5) > 0.8, 'the first segment\'s audio is in it');
  t.ok(toneShare(tone, p.durationS - 5, p.durationS - 1) > 0.8, 'and the second\'s');
});
