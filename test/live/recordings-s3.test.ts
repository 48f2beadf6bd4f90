import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import t from 'tap';
import { ManualClock } from '../../src/core/clock.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { connect, eventually } from '../helpers/ws.ts';
import { probe } from '../helpers/av.ts';
import { writeManifest } from '../../media/recording/format.ts';
import { tone, vp8, writeTrack } from '../recording/rtp-source.ts';

// Recordings on S3-compatible storage (s3rver, started here): the media node's segment goes up from
// its local spool when the capture stops (the manifest last), the composition fetches it, the MP4 and
// M4A go up, and playback links are the bucket's presigned URLs. The capture itself is the media
// path's (test/serial/recording-media.test.ts); here a segment made from ffmpeg's RTP stands in for it.
const work = await mkdtemp(join(tmpdir(), 'aula-rec-s3-'));
t.teardown(() => rm(work, { recursive: true, force: true }));
const bucket = 'aula-recordings';
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: join(work, 's3'), configureBuckets: [{ name: bucket, configs: [] }] });
const { port } = await server.run();
t.teardown(() => server.close());

const clock = new ManualClock(Date.now());
const node = await startTestNode(t, {
  clock,
  overrides: {
    AULA_STORAGE: 's3',
    AULA_S3_ENDPOINT: `http://127.0.0.1:${port}`,
    AULA_S3_BUCKET: bucket,
    AULA_S3_REGION: 'us-east-1',
    AULA_S3_ACCESS_KEY_ID: 'S3RVER',
    AULA_S3_SECRET_ACCESS_KEY: 'S3RVER',
  },
});

t.test('a recording on S3: saved from the spool, composed, played through presigned URLs', async (t) => {
  t.equal(node.app.services.recordings.storage.kind, 's3');
  const s = await newSchool(node);
  const teacher = await s.user('t-1', 'Tina Teacher', 'TEACHER');
  const meeting = (await s.call('POST', '/public/meetings', { title: 'Music', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 30 })).body.data;
  const link = (await s.call('POST', `/public/meetings/${meeting.id}/join-links`, { userId: teacher.id, role: 'HOST' })).body.data;
  const session = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: 'd1' } })).body.data;
  const ws = await connect(t, session.mediaUrl, session.mediaToken);
  await ws.type('joined');
  const id = (await s.call('POST', `/public/meetings/${meeting.id}/recordings`)).body.data.id;

  // what a media node does: a segment numbered by the row, written to its local spool, saved on stop
  const recordings = node.app.services.recordings;
  const seg = (await recordings.segmentStarted(id))!;
  t.match(seg, { orgId: s.tenant.orgId, segment: 0 });
  t.notMatch(seg.dir, /storage/, 'on S3 the capture is spooled locally');
  const [mic, cam] = await Promise.all([tone(440, 4), vp8('testsrc=size=320x240:rate=15', 4)]);
  const tracks = [
    await writeTrack(seg.dir, mic, { trackId: 't1-mic', kind: 'audio', source: 'mic', participantId: 'par_t', name: 'Tina Teacher', host: true, mimeType: 'audio/opus' }, { startMs: 0 }),
    await writeTrack(seg.dir, cam, { trackId: 't2-camera', kind: 'video', source: 'camera', participantId: 'par_t', name: 'Tina Teacher', host: true, mimeType: 'video/VP8' }, { startMs: 0 }),
  ];
  await writeManifest(seg.dir, { recordingId: id, segment: 0, startedAt: clock.now(), durationMs: 4000, tracks, speakers: [{ at: 0, participantId: 'par_t' }] });
  await s.call('POST', `/public/recordings/${id}/stop`);
  await recordings.segmentSaved(seg.orgId, id, seg.segment, seg.dir);
  t.same(
    (await recordings.storage.list(`recordings/${s.tenant.orgId}/${id}/raw`)).map((k) => k.split('/').pop()),
    ['manifest.json', 't1-mic.rtp', 't2-camera.rtp'],
    'the segment is in the bucket',
  );

  await eventually(async () => (await s.call('GET', `/public/recordings/${id}`)).body.data.status !== 'RECORDING', 120_000);
  const rec = (await s.call('GET', `/public/recordings/${id}`)).body.data;
  t.match(rec, { status: 'READY', durationSeconds: 4, mimeType: 'video/mp4' }, JSON.stringify(rec));

  const links = (await s.call('POST', `/public/recordings/${id}/playback`, { expiresInSeconds: 120 })).body.data;
  t.match(links.url, new RegExp(`^http://127\\.0\\.0\\.1:${port}/${bucket}/recordings/`), 'a presigned URL of the bucket');
  t.match(links.url, /X-Amz-Expires=120/);
  const got = await fetch(links.url);
  t.equal(got.status, 200);
  t.equal(got.headers.get('content-type'), 'video/mp4');
  const file = join(work, 'music.mp4');
  await writeFile(file, Buffer.from(await got.arrayBuffer()));
  t.same(probe(file).codecs, ['aac', 'h264']);
  const ranged = await fetch(links.url, { headers: { range: 'bytes=0-9' } });
  t.equal(ranged.status, 206, 'the bucket serves ranges');
  await ranged.arrayBuffer();

  await s.call('DELETE', `/public/recordings/${id}`);
  t.same(await recordings.storage.list(`recordings/${s.tenant.orgId}/${id}`), [], 'deleting empties its folder in the bucket');
});
