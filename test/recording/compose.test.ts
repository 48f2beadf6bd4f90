import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { pcm, power, probe, run } from '../helpers/av.ts';
import { compose } from '../../media/recording/compose.ts';
import { writeManifest, type SpeakerChange, type TrackInfo } from '../../media/recording/format.ts';
import { h264, tone, vp8, writeTrack, type Capture } from './rtp-source.ts';

// Real RTP from ffmpeg, written as the media node writes it, composed, and looked at with ffprobe:
// the codecs, the duration, the tones in the audio and when they start, and pixels of the layout.

const root = mkdtempSync(join(tmpdir(), 'aula-compose-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

// captured once, two at a time (the machine has two cores), then written as tracks in several ways
const caps: Record<string, Capture> = {};
t.before(async () => {
  const jobs: [string, () => Promise<Capture>][] = [
    ['a440', () => tone(440, 5)],
    ['a880', () => tone(880, 3)],
    ['teacherCam', () => vp8('testsrc=size=320x180:rate=15', 5)],
    ['blueCam', () => vp8('color=c=blue:size=320x180:rate=15', 3)],
    ['redScreen', () => vp8('color=c=red:size=640x360:rate=5', 2, { gop: 5 })],
    ['greenH264', () => h264('color=c=0x00ff00:size=320x180:rate=15', 2)],
    ['redSquare', () => vp8('color=c=red:size=240x240:rate=15', 2)],
  ];
  for (let i = 0; i < jobs.length; i += 2) {
    await Promise.all(jobs.slice(i, i + 2).map(async ([name, make]) => (caps[name] = await make())));
  }
});

let n = 0;
const segmentDir = () => {
  const dir = join(root, `seg${n++}`);
  mkdirSync(dir);
  return dir;
};
const mic = (trackId: string, participantId: string, host = false) =>
  ({ trackId, participantId, host, name: participantId, kind: 'audio', source: 'mic', mimeType: 'audio/opus' }) as const;
const video = (trackId: string, participantId: string, source: 'camera' | 'screen', host = false, mimeType = 'video/VP8') =>
  ({ trackId, participantId, host, name: participantId, kind: 'video', source, mimeType }) as const;

async function segment(dir: string, durationMs: number | null, tracks: TrackInfo[], speakers: SpeakerChange[] = [], i = 0) {
  await writeManifest(dir, { recordingId: 'rec', segment: i, startedAt: Date.now(), durationMs, tracks, speakers });
  return dir;
}

/** Whether the tone is there over [fromS, toS): each 10 ms window well above silence. */
function toneHeld(p: number[], fromS: number, toS: number): boolean {
  return p.slice(Math.round(fromS * 100), Math.round(toS * 100)).every((v) => v > 0.001);
}
/** The first 10 ms window (in ms) where the tone is there. */
const onsetMs = (p: number[]) => p.findIndex((v) => v > 0.001) * 10;

/** Every frame at 128x72, RGB: 15 a second. */
function frames(file: string): Buffer[] {
  const b = run('ffmpeg', ['-v', 'error', '-i', file, '-map', '0:v', '-vf', 'scale=128:72:flags=area', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-']);
  const size = 128 * 72 * 3;
  return Array.from({ length: b.length / size }, (_, i) => b.subarray(i * size, (i + 1) * size));
}
/** The pixel at (x, y) of the 1280x720 frame. */
const pixel = (f: Buffer, x: number, y: number) => {
  const i = (Math.floor(y / 10) * 128 + Math.floor(x / 10)) * 3;
  return { r: f[i]!, g: f[i + 1]!, b: f[i + 2]! };
};
const isColour = (p: { r: number; g: number; b: number }, c: 'r' | 'g' | 'b') =>
  p[c] > 150 && (['r', 'g', 'b'] as const).filter((o) => o !== c).every((o) => p[o] < 80);
const isBlack = (p: { r: number; g: number; b: number }) => p.r < 30 && p.g < 30 && p.b < 30;

t.test('compose() of a class: the teacher from the start, a student 2 s late, a screen at 3.5 s', async (t) => {
  const dir = segmentDir();
  const tracks = [
    await writeTrack(dir, caps.a440!, mic('tmic', 'teacher', true), { startMs: 0, jitterMs: 10 }),
    await writeTrack(dir, caps.a880!, mic('smic', 'student'), { startMs: 2000, jitterMs: 10 }),
    await writeTrack(dir, caps.teacherCam!, video('tcam', 'teacher', 'camera', true), { startMs: 0, jitterMs: 10 }),
    await writeTrack(dir, caps.blueCam!, video('scam', 'student', 'camera'), { startMs: 2000, jitterMs: 10 }),
    await writeTrack(dir, caps.redScreen!, video('screen', 'student', 'screen'), { startMs: 3500, jitterMs: 10 }),
  ];
  await segment(dir, 5500, tracks, [
    { at: 0, participantId: 'teacher' },
    { at: 2000, participantId: 'student' },
  ]);
  const out = { mp4: join(dir, 'class.mp4'), m4a: join(dir, 'class.m4a') };
  const made = await compose([dir], out);
  t.equal(made.durationMs, 5500);

  const p = probe(out.mp4);
  t.same(p.codecs, ['aac', 'h264'], 'H.264 and AAC');
  t.ok(Math.abs(p.durationS - 5.5) < 1, `lasts 5.5 s within 1 s (${p.durationS})`);
  t.same(probe(out.m4a).codecs, ['aac'], 'the M4A is the audio alone');
  t.equal(made.mp4Bytes > 10_000 && made.m4aBytes > 10_000 && made.m4aBytes < made.mp4Bytes, true, 'sizes reported');

  const audio = pcm(out.mp4);
  const a440 = power(audio, 440);
  const a880 = power(audio, 880);
  t.ok(toneHeld(a440, 0.1, 5.0), 'the teacher\'s 440 Hz tone runs through');
  const onset = onsetMs(a880);
  t.ok(Math.abs(onset - 2000) <= 100, `the student's 880 Hz tone starts at 2 s within 100 ms (${onset} ms)`);
  t.ok(toneHeld(a880, 2.1, 4.9), 'and goes on, mixed with the other');

  const f = frames(out.mp4);
  t.ok(f.length >= 80 && f.length <= 84, `15 frames a second (${f.length})`);
  // 15 fps: frame 29 is at 1.933 s, frame 31 at 2.067 s
  t.notOk(isColour(pixel(f[29]!, 640, 360), 'b'), 'before 2 s, the teacher\'s camera');
  t.ok(isColour(pixel(f[31]!, 640, 360), 'b'), 'from 2 s, the student, who speaks, over the whole frame');
  t.ok(isColour(pixel(f[31]!, 20, 360), 'b'), 'to its edges (16:9 in 16:9)');
  const shared = f[60]!; // 4 s
  t.ok(isColour(pixel(shared, 480, 360), 'r'), 'with a screen shared: the screen large, on the left');
  t.ok(isBlack(pixel(shared, 480, 30)), 'fitted into 960x720 (16:9: bands above and below)');
  const side = pixel(shared, 1120, 120);
  t.ok(!isBlack(side) && !isColour(side, 'r') && !isColour(side, 'b'), 'the teacher\'s camera beside it, though the student speaks');
  t.ok(isBlack(pixel(shared, 1120, 600)), 'small: the rest of the right column is black');
});

/** `b` after `a` in one stream, numbered on from it, as a consumer switching layers sends it. */
function follow(a: Capture, b: Capture): Capture {
  const last = a.packets.at(-1)!;
  const seq = last.readUInt16BE(2) + 1;
  const ts = last.readUInt32BE(4) + 6000;
  const [seq0, ts0] = [b.packets[0]!.readUInt16BE(2), b.packets[0]!.readUInt32BE(4)];
  const rest = b.packets.map((p) => {
    const q = Buffer.from(p);
    q.writeUInt16BE((seq + q.readUInt16BE(2) - seq0) & 0xffff, 2);
    q.writeUInt32BE((ts + q.readUInt32BE(4) - ts0) >>> 0, 4);
    q.writeUInt32BE(a.ssrc, 8);
    return q;
  });
  return { ...a, packets: [...a.packets, ...rest] };
}

t.test('compose() of a camera that changes size and shape on the way (a layer switch, a resized window)', async (t) => {
  const dir = segmentDir();
  const tracks = [await writeTrack(dir, follow(caps.blueCam!, caps.redSquare!), video('tcam', 'teacher', 'camera', true), { startMs: 0 })];
  await segment(dir, 5000, tracks, [{ at: 0, participantId: 'teacher' }]);
  const out = { mp4: join(dir, 'switch.mp4'), m4a: join(dir, 'switch.m4a') };
  await compose([dir], out);
  const f = frames(out.mp4);
  t.ok(isColour(pixel(f[15]!, 20, 360), 'b'), '320x180 over the whole frame');
  t.ok(isColour(pixel(f[60]!, 640, 360), 'r') && isBlack(pixel(f[60]!, 100, 360)), 'then 240x240, fitted: black on the sides');
  t.same(probe(out.mp4).codecs, ['aac', 'h264'], 'silent audio where nobody had a microphone');
});

t.test('compose() with a pause: the records leave the paused time out, the RTP timestamps do not', async (t) => {
  const dir = segmentDir();
  const pause = { atMs: 1500, ms: 1500 };
  const tracks = [
    await writeTrack(dir, caps.a440!, mic('tmic', 'teacher', true), { startMs: 0, pause }),
    await writeTrack(dir, caps.teacherCam!, video('tcam', 'teacher', 'camera', true), { startMs: 0, pause }),
  ];
  await segment(dir, 3500, tracks, [{ at: 0, participantId: 'teacher' }]);
  const out = { mp4: join(dir, 'paused.mp4'), m4a: join(dir, 'paused.m4a') };
  await compose([dir], out);
  const p = probe(out.mp4);
  t.ok(Math.abs(p.durationS - 3.5) < 1, `3.5 s, the pause left out (${p.durationS})`);
  t.ok(toneHeld(power(pcm(out.mp4), 440), 0.1, 3.4), 'the tone runs on across the pause, without a hole');
  const f = frames(out.mp4);
  t.notOk(f.slice(1, 50).some((x) => isBlack(pixel(x, 640, 360)) && isBlack(pixel(x, 200, 200))), 'and so does the camera');
});

t.test('compose() joins two segments (the room moved to another node)', async (t) => {
  const first = segmentDir();
  const second = segmentDir();
  await segment(first, 2000, [
    await writeTrack(first, caps.a440!, mic('tmic', 'teacher', true), { startMs: 0, untilMs: 2000 }),
    await writeTrack(first, caps.blueCam!, video('tcam', 'teacher', 'camera', true), { startMs: 0, untilMs: 2000 }),
  ], [{ at: 0, participantId: 'teacher' }], 0);
  // the node died: no duration in the manifest, it lasted as long as its media
  await segment(second, null, [
    await writeTrack(second, caps.a880!, mic('tmic2', 'teacher', true), { startMs: 0, untilMs: 2000 }),
    await writeTrack(second, caps.greenH264!, video('tcam2', 'teacher', 'camera', true, 'video/H264'), { startMs: 0, untilMs: 2000 }),
  ], [], 1);
  const out = { mp4: join(root, 'joined.mp4'), m4a: join(root, 'joined.m4a') };
  const made = await compose([first, second], out);
  t.ok(Math.abs(made.durationMs - 4000) <= 100, `about 4 s reported (${made.durationMs})`);
  const p = probe(out.mp4);
  t.same(p.codecs, ['aac', 'h264']);
  t.ok(Math.abs(p.durationS - 4) < 1, `4 s (${p.durationS})`);
  const m = probe(out.m4a);
  t.same(m.codecs, ['aac']);
  t.ok(Math.abs(m.durationS - 4) < 1, `the M4A too (${m.durationS})`);
  const audio = pcm(out.mp4);
  t.ok(toneHeld(power(audio, 440), 0.1, 1.9), 'the first segment\'s tone first');
  t.ok(toneHeld(power(audio, 880), 2.2, 3.8), 'then the second\'s');
  const f = frames(out.mp4);
  t.ok(isColour(pixel(f[15]!, 640, 360), 'b'), 'the first segment\'s camera (VP8)');
  t.ok(isColour(pixel(f[45]!, 640, 360), 'g'), 'then the second\'s (H.264)');
});

t.test('compose() fails in words a person understands', async (t) => {
  const empty = segmentDir();
  await segment(empty, 3000, []);
  const out = { mp4: join(empty, 'x.mp4'), m4a: join(empty, 'x.m4a') };
  await t.rejects(compose([empty], out), { message: 'the recording has no audio or video' });
  t.notOk(existsSync(out.mp4) || existsSync(`${out.mp4}.part`), 'nothing left behind');

  const vp9 = segmentDir();
  await segment(vp9, 3000, [await writeTrack(vp9, caps.blueCam!, video('cam', 'teacher', 'camera', true, 'video/VP9'), { startMs: 0 })]);
  await t.rejects(compose([vp9], out), { message: 'the recording has no audio or video that can be read (cam: video/VP9 is not a codec the recordings handle)' });

  const dir = segmentDir();
  await segment(dir, 5000, [await writeTrack(dir, caps.a440!, mic('tmic', 'teacher', true), { startMs: 0 })]);
  const ac = new AbortController();
  const started = compose([dir], out, { signal: ac.signal });
  // aborted once ffmpeg runs (nice has become it)
  const children = `/proc/${process.pid}/task/${process.pid}/children`;
  let ffmpeg = 0;
  let settled = false;
  void started.catch(() => {}).finally(() => (settled = true));
  while (!ffmpeg && !settled) {
    await new Promise((r) => setTimeout(r, 5));
    const pids = readFileSync(children, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    ffmpeg = pids.find((pid) => existsSync(`/proc/${pid}/comm`) && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'ffmpeg') ?? 0;
  }
  ac.abort(new Error('the job was cancelled'));
  await t.rejects(started, { message: 'the job was cancelled' }, 'an abort rejects with its reason');
  t.ok(ffmpeg && !existsSync(`/proc/${ffmpeg}`), 'ffmpeg was killed');
  t.notOk(existsSync(out.mp4) || existsSync(`${out.mp4}.part`), 'nothing left behind');
});
