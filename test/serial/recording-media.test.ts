import t from 'tap';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/core/clock.ts';
import { api, school as newSchool, startTestNode } from '../helpers/node.ts';
import { enterRoom } from '../helpers/media.ts';
import { eventually } from '../helpers/ws.ts';
import { onsetMs, pcm, power, probe, toneShare } from '../helpers/av.ts';
import { recordingPrefix } from '../../src/services/recordings.ts';
import type { SegmentManifest } from '../../media/recording/format.ts';

// A class recorded through a real room (Node WebRTC: a teacher sending a 440 Hz tone and a test
// pattern, a student joining 3 s later with 880 Hz), composed by the job, played back through its
// signed link: READY, an MP4 with H.264 and AAC of the stay's length, the tones in it, the late joiner
// placed where they came in, HTTP Range, expiry and tampering, deletion. Serial: it measures time.
const clock = new ManualClock(Date.now());
const node = await startTestNode(t, { clock });
const s = await newSchool(node);
const teacher = await s.user('t-1', 'Tina Teacher', 'TEACHER');
const student = await s.user('s-1', 'Sam Student');
const meeting = (await s.call('POST', '/public/meetings', { title: 'Physics', type: 'MEETING', hostUserId: teacher.id, scheduledStart: new Date(clock.now()).toISOString(), durationMinutes: 60 })).body.data;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const work = await mkdtemp(join(tmpdir(), 'aula-rec-test-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

t.test('20 s of a class: READY, H.264 and AAC of the stay\'s length, both tones, the late joiner lined up within 100 ms', async (t) => {
  const host = await enterRoom(t, node, s.tenant.key, meeting.id, teacher.id, 'HOST');
  await host.peer.produceAudio({ hz: 440 });
  await host.peer.produceVideo();
  await sleep(500);
  const started = await s.call('POST', `/public/meetings/${meeting.id}/recordings`);
  t.equal(started.status, 201, JSON.stringify(started.body));
  const id = started.body.data.id;
  const startedAt = Date.now();
  await sleep(3000);
  const stu = await enterRoom(t, node, s.tenant.key, meeting.id, student.id);
  await stu.peer.produceAudio({ hz: 880 });
  await stu.peer.produceVideo();
  const roster = await host.room.next((m: any) => m.type === 'roster' && m.participants.length >= 2);
  t.same(roster.participants.map((p: any) => p.name).sort(), ['Sam Student', 'Tina Teacher'], 'the recorder is nobody in the roster');
  await sleep(Math.max(0, 20_000 - (Date.now() - startedAt)));
  const stopped = await s.call('POST', `/public/recordings/${id}/stop`);
  const stayS = (Date.now() - startedAt) / 1000;
  t.match(stopped.body.data, { status: 'RECORDING', phase: 'PROCESSING' });

  // the composition starts once the media node has saved the capture, without waiting out its delay
  await eventually(async () => (await s.call('GET', `/public/recordings/${id}`)).body.data.status !== 'RECORDING', 180_000);
  const rec = (await s.call('GET', `/public/recordings/${id}`)).body.data;
  t.match(rec, { status: 'READY', phase: null, mimeType: 'video/mp4' }, JSON.stringify(rec));
  t.ok(Math.abs(rec.durationSeconds - stayS) <= 1, `durationSeconds ${rec.durationSeconds} for a stay of ${stayS.toFixed(1)} s`);
  t.ok(rec.fileSizeBytes > 50_000, `${rec.fileSizeBytes} bytes`);
  const [ready] = await s.events('recording.ready');
  t.match(ready, { recordingId: id, status: 'READY', durationSeconds: rec.durationSeconds, fileSizeBytes: rec.fileSizeBytes, mimeType: 'video/mp4', failureReason: null });
  t.notMatch(JSON.stringify(ready), /https?:\/\//, 'no URL in the payload');

  // the raw segment: the late joiner's first packet, in recording time
  const manifestFile = join(work, 'manifest.json');
  await node.app.services.recordings.storage.fetch(`${recordingPrefix(s.tenant.orgId, id)}/raw/0/manifest.json`, manifestFile);
  const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as SegmentManifest;
  t.same(manifest.tracks.map((x) => `${x.source}:${x.kind}`).sort(), ['camera:video', 'camera:video', 'mic:audio', 'mic:audio']);
  const lateMic = manifest.tracks.find((x) => x.kind === 'audio' && x.participantId === stu.participantId)!;
  t.ok(lateMic.firstPacketAt! > 2500 && lateMic.firstPacketAt! < 5000, `the late joiner's microphone began at ${lateMic.firstPacketAt} ms`);

  const links = (await s.call('POST', `/public/recordings/${id}/playback`, { expiresInSeconds: 600 })).body.data;
  t.match(links, { url: /\/api\/v1\/recordings\/rec_\w+\/video\?exp=\d+&sig=/, audioUrl: /\/audio\?/, embedUrl: /\/player\?/, expiresAt: String });
  const full = await fetch(links.url);
  t.equal(full.status, 200);
  t.equal(full.headers.get('content-type'), 'video/mp4');
  t.equal(full.headers.get('accept-ranges'), 'bytes');
  t.match(full.headers.get('cache-control'), /no-store/);
  const bytes = Buffer.from(await full.arrayBuffer());
  t.equal(bytes.length, rec.fileSizeBytes, 'the whole file');
  const mp4 = join(work, 'class.mp4');
  await writeFile(mp4, bytes);

  const p = probe(mp4);
  t.same(p.codecs, ['aac', 'h264'], 'H.264 and AAC');
  t.ok(Math.abs(p.durationS - stayS) <= 1, `the file lasts ${p.durationS.toFixed(2)} s for a stay of ${stayS.toFixed(1)} s`);
  const audio = pcm(mp4);
  const low = power(audio, 440);
  const high = power(audio, 880);
  t.ok(toneShare(low, 1, stayS - 1) > 0.9, `the teacher's 440 Hz tone is there (${(toneShare(low, 1, stayS - 1) * 100).toFixed(0)}% of the windows)`);
  t.ok(toneShare(high, 0, (lateMic.firstPacketAt! - 200) / 1000) < 0.05, 'no 880 Hz before the student came in');
  const onset = onsetMs(high);
  t.ok(Math.abs(onset - lateMic.firstPacketAt!) <= 100, `the student's tone begins at ${onset} ms, their first packet came at ${lateMic.firstPacketAt} ms`);
  t.ok(toneShare(high, onset / 1000 + 1, stayS - 1) > 0.9, 'and goes on');

  // HTTP Range
  const size = rec.fileSizeBytes;
  const ranged = async (range: string) => fetch(links.url, { headers: { range } });
  const first = await ranged('bytes=0-99');
  t.equal(first.status, 206);
  t.equal(first.headers.get('content-range'), `bytes 0-99/${size}`);
  t.same(Buffer.from(await first.arrayBuffer()), bytes.subarray(0, 100), 'the first bytes');
  const middle = await ranged(`bytes=${size >> 1}-${(size >> 1) + 999}`);
  t.same(Buffer.from(await middle.arrayBuffer()), bytes.subarray(size >> 1, (size >> 1) + 1000), 'the middle');
  const suffix = await ranged('bytes=-500');
  t.equal(suffix.headers.get('content-range'), `bytes ${size - 500}-${size - 1}/${size}`);
  t.same(Buffer.from(await suffix.arrayBuffer()), bytes.subarray(size - 500), 'the last bytes');
  const beyond = await ranged(`bytes=${size}-`);
  t.equal(beyond.status, 416, 'beyond the end');
  t.equal(beyond.headers.get('content-range'), `bytes */${size}`);
  await beyond.arrayBuffer();
  const m4a = await fetch(links.audioUrl);
  t.equal(m4a.headers.get('content-type'), 'audio/mp4');
  const m4aFile = join(work, 'class.m4a');
  await writeFile(m4aFile, Buffer.from(await m4a.arrayBuffer()));
  t.same(probe(m4aFile).codecs, ['aac'], 'the audio alone');
  const player = await fetch(links.embedUrl);
  t.equal(player.status, 200);
  t.match(player.headers.get('content-security-policy'), /frame-ancestors 'self'(;|$)/, 'framed by this server (the console) and by none of the organization\'s origins, since it has none');
  t.match(await player.text(), /<video id="video" controls/);

  // altered and expired links
  const altered = await fetch(links.url.replace(/sig=./, (m: string) => `sig=${m.endsWith('A') ? 'B' : 'A'}`));
  t.equal(altered.status, 403);
  t.equal((await altered.json()).error.code, 'playback_link_invalid');
  const otherFile = await fetch(links.url.replace('/video?', '/audio?'));
  t.equal(otherFile.status, 403, 'a link is for its own file');
  await otherFile.arrayBuffer();
  clock.advance(601_000);
  const expired = await fetch(links.url);
  t.equal(expired.status, 403, 'an expired link is refused');
  await expired.arrayBuffer();

  // deleting removes the files
  t.match((await s.call('DELETE', `/public/recordings/${id}`)).body.data, { status: 'DELETED' });
  t.same(await node.app.services.recordings.storage.list(recordingPrefix(s.tenant.orgId, id)), [], 'no file left');
  const fresh = await api(node, 'POST', `/public/recordings/${id}/playback`, { key: s.tenant.key, body: {} });
  t.equal(fresh.body.error.code, 'invalid_state', 'a deleted recording has no playback');
});
