/**
 * The recording benchmark: `npm run bench -- --scenario recording [options]` (bench/run.ts hands over here).
 * Two parts, both by default: what capturing a recorded class costs the media node (lib/recording-capture.ts),
 * and how fast a recorded class is composed.
 *
 * Capture: a class (30 by default) on one worker, each sending a camera and a microphone, windows recorded and not
 * recorded alternating in the same room; the worker's CPU and this process's, and what was written.
 *
 * Composition: how fast a class is composed (media/recording/compose.ts) on one core: a class with a screen share,
 * a few cameras and a few open microphones, synthesized once with ffmpeg as real RTP and written as the
 * media node writes it, composed with `threads: 1`. Measured against a baseline in the same run: one
 * camera and one microphone scaled to 720p and encoded with the same settings by a bare ffmpeg, the
 * least any composition costs. Reported as seconds of media per second of wall time and per second of
 * CPU (ffmpeg's and this process's depacketization), rounds alternating. See bench/README.md, "The
 * recording scenario".
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { compose } from '../media/recording/compose.ts';
import { depacketizeTrack } from '../media/recording/depacketize.ts';
import { TrackWriter, writeManifest, type SpeakerChange, type TrackInfo } from '../media/recording/format.ts';
// the tests' RTP source: ffmpeg's own RTP, paced, made again in real time if loopback lost a packet
import { captureRtp, type Capture } from '../test/recording/rtp-source.ts';
import { benchArgs } from './lib/args.ts';
import { cleanup, cleanups } from './lib/cleanup.ts';
import { measureCapture } from './lib/recording-capture.ts';
import { median } from './lib/report.ts';
import { hasTaskset } from './lib/wrk.ts';

const USAGE = `npm run bench -- --scenario recording [options]

  --part P        capture, compose or both                                       [both]

 capture: the cost of recording a class on the media node
  --room N        participants in the room, the teacher included; each sends a
                  camera (3 layers) and everyone receives its page's view        [30]
  --open-mics N   students whose microphone is open (the teacher's always is); the
                  others are muted at the source, as in the class scenario         [2]
  --window S      measured seconds per window                                    [20]
  --warmup S      seconds after the recording starts or stops, before measuring  [5]
  --capture-rounds N  recorded and not recorded windows, this many of each,
                  alternating (the order flips each round); medians             [3]
  --no-pin        do not pin the worker to core 0 and this process to core 1
  --recorder-as-is  the recorder's consumers exactly as media/recording/recorder.ts
                  makes them today: with congestion feedback nobody answers, which
                  holds its simulcast consumers below their layers (see
                  lib/recording-capture.ts); by default the bench strips it

 compose: how fast a recorded class is composed
  --minutes N     length of the class composed, in minutes                        [3]
  --cameras N     cameras on (the teacher's and N-1 students'); all are recorded,
                  only those the layout shows are decoded                         [5]
  --mics N        open microphones (the teacher's and N-1 students')               [3]
  --clip S        seconds of each source synthesized with ffmpeg, then repeated
                  to the class's length (RTP numbering carried on)               [20]
  --rounds N      compose and baseline this many times, alternating; medians      [2]
  --json          print the results as one JSON object on stdout (tables go to stderr)
  --out FILE      JSON results                   [bench/results/recording-<time>.json]

Needs Debian's ffmpeg (libvpx, libopus, libx264): apt-get install -y ffmpeg; capture also the mediasoup
worker (media/build-worker.sh). Only 127.0.0.1 is used.`;

const { opt, int } = benchArgs(
  USAGE,
  {
    part: { type: 'string', default: 'both' },
    room: { type: 'string', default: '30' },
    'open-mics': { type: 'string', default: '2' },
    window: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    'capture-rounds': { type: 'string', default: '3' },
    'no-pin': { type: 'boolean', default: false },
    'recorder-as-is': { type: 'boolean', default: false },
    minutes: { type: 'string', default: '3' },
    cameras: { type: 'string', default: '5' },
    mics: { type: 'string', default: '3' },
    clip: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
    json: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
  'recording',
);
const minutes = int('minutes', opt.minutes, 1);
const cameras = int('cameras', opt.cameras, 1);
const mics = int('mics', opt.mics, 1);
const clipS = int('clip', opt.clip, 4);
const rounds = int('rounds', opt.rounds, 1);
if (!['capture', 'compose', 'both'].includes(opt.part)) {
  console.error(`--part must be capture, compose or both\n\n${USAGE}`);
  process.exit(2);
}
const roomSize = int('room', opt.room, 2);
if (roomSize > 250) {
  console.error('--room: at most 250 (the SSRC plan of lib/class-room.ts)');
  process.exit(2);
}
const openMics = Math.min(roomSize - 1, int('open-mics', opt['open-mics'], 0));
const captureWindow = int('window', opt.window, 1);
const captureWarmup = int('warmup', opt.warmup, 0);
const captureRounds = int('capture-rounds', opt['capture-rounds'], 1);
const pin = !opt['no-pin'] && availableParallelism() >= 2 && hasTaskset();
const say = (s: string) => (opt.json ? process.stderr.write(s + '\n') : process.stdout.write(s + '\n'));
const here = new URL('.', import.meta.url).pathname;
const durationMs = minutes * 60_000;

// ---- the class's raw tracks ------------------------------------------------------------------------

type Info = Omit<TrackInfo, 'file' | 'clockRate' | 'payloadType' | 'ssrc' | 'firstPacketAt'>;

/**
 * `c` repeated to `ms` of media, each repetition a frame (`step` of the clock) after the last: sequence
 * numbers, timestamps and arrivals carried on, from `startMs`.
 */
async function writeLooped(dir: string, c: Capture, step: number, info: Info, startMs: number, ms: number): Promise<TrackInfo> {
  const w = await TrackWriter.create(dir, `${info.trackId}.rtp`);
  const first = c.packets[0]!;
  const [seq0, ts0] = [first.readUInt16BE(2), first.readUInt32BE(4)];
  const span = ((c.packets.at(-1)!.readUInt32BE(4) - ts0) >>> 0) + step;
  const spanMs = (span * 1000) / c.clockRate;
  let n = 0;
  for (let loop = 0; loop * spanMs < ms; loop++) {
    for (const p of c.packets) {
      const rel = (p.readUInt32BE(4) - ts0) >>> 0;
      const at = loop * spanMs + (rel * 1000) / c.clockRate;
      if (at >= ms) break;
      const q = Buffer.from(p);
      q.writeUInt16BE((seq0 + n++) & 0xffff, 2);
      q.writeUInt32BE((ts0 + loop * span + rel) >>> 0, 4);
      w.write(startMs + at, q);
    }
  }
  await w.close();
  return { ...info, file: `${info.trackId}.rtp`, clockRate: c.clockRate, payloadType: c.payloadType, ssrc: c.ssrc, firstPacketAt: startMs };
}

async function synthesize(dir: string): Promise<{ tracks: TrackInfo[]; speakers: SpeakerChange[]; captureSeconds: number }> {
  const t0 = performance.now();
  const vp8 = (source: string, bitrate: string, gop: number) => ({
    input: ['-f', 'lavfi', '-i', source, '-t', String(clipS)],
    encode: ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', bitrate, '-g', String(gop), '-auto-alt-ref', '0', '-lag-in-frames', '0'],
    payloadType: 96,
    clockRate: 90000,
  });
  const opus = (hz: number) => ({
    input: ['-f', 'lavfi', '-i', `sine=frequency=${hz}:sample_rate=48000:duration=${clipS}`],
    encode: ['-c:a', 'libopus', '-b:a', '32k'],
    payloadType: 111,
    clockRate: 48000,
  });
  // a camera at the recorder's large layer, 15 fps, a key frame every 10 s; a slide-sized screen at 5 fps
  const [cam, screen] = await Promise.all([
    captureRtp(vp8('testsrc2=size=640x360:rate=15', '600k', 150)),
    captureRtp(vp8('testsrc=size=1280x720:rate=5', '1200k', 50)),
  ]);
  const tones = await Promise.all(Array.from({ length: Math.min(mics, 2) }, (_, i) => captureRtp(opus(330 + 110 * i))));
  const captureSeconds = (performance.now() - t0) / 1000;

  const tracks: TrackInfo[] = [];
  const person = (i: number) => (i === 0 ? 'teacher' : `student${i}`);
  const base = (i: number) => ({ participantId: person(i), name: person(i), host: i === 0 });
  for (let i = 0; i < cameras; i++) {
    // the students' cameras come on a little after the start, as they join
    const start = i === 0 ? 0 : 5000 + i * 3000;
    tracks.push(await writeLooped(dir, cam, 6000, { ...base(i), trackId: `cam${i}`, kind: 'video', source: 'camera', mimeType: 'video/VP8' }, start, durationMs - start));
  }
  for (let i = 0; i < mics; i++) {
    tracks.push(await writeLooped(dir, tones[i % tones.length]!, 960, { ...base(i), trackId: `mic${i}`, kind: 'audio', source: 'mic', mimeType: 'audio/opus' }, 0, durationMs));
  }
  // the teacher shares a screen through the middle half of the class
  tracks.push(await writeLooped(dir, screen, 18000, { ...base(0), trackId: 'screen', kind: 'video', source: 'screen', mimeType: 'video/VP8' }, durationMs / 4, durationMs / 2));
  // the teacher speaks, and a student every 20 s for 8 s
  const speakers: SpeakerChange[] = [{ at: 0, participantId: 'teacher' }];
  for (let at = 20_000, k = 1; at < durationMs; at += 20_000, k++) {
    speakers.push({ at, participantId: person(1 + (k % Math.max(1, mics - 1))) }, { at: at + 8000, participantId: 'teacher' });
  }
  return { tracks, speakers, captureSeconds };
}

// ---- measuring -------------------------------------------------------------------------------------

/** CPU seconds of this process's children that have ended (utime + stime of /proc/self/stat). */
function childrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100; // cutime, cstime (fields 16, 17), in USER_HZ
}

interface Run {
  what: 'compose' | 'baseline';
  round: number;
  wallSeconds: number;
  ffmpegCpuSeconds: number;
  nodeCpuSeconds: number;
  /** media seconds per wall second, and per CPU second */
  xWall: number;
  xCpu: number;
  mp4Bytes: number;
}

async function measure(what: Run['what'], round: number, go: () => Promise<number>): Promise<Run> {
  const cpu0 = process.cpuUsage();
  const kids0 = childrenCpu();
  const t0 = performance.now();
  const mp4Bytes = await go();
  const wallSeconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const nodeCpuSeconds = (cpu.user + cpu.system) / 1e6;
  const ffmpegCpuSeconds = childrenCpu() - kids0;
  const media = durationMs / 1000;
  return { what, round, wallSeconds, ffmpegCpuSeconds, nodeCpuSeconds, xWall: media / wallSeconds, xCpu: media / (ffmpegCpuSeconds + nodeCpuSeconds), mp4Bytes };
}

function run(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const p = spawn('nice', ['-n', '19', 'ffmpeg', '-hide_banner', '-nostdin', '-v', 'error', '-y', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg: ${err.trim()}`))));
  });
}

type Target = { name: string; measured: string; met: boolean };

async function composePart(work: string, started: Date) {
  const seg = join(work, 'segment');
  mkdirSync(seg);

  say(`compose: a ${minutes}-minute class, ${cameras} camera(s), ${mics} open microphone(s), a screen shared through the middle half; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const { tracks, speakers, captureSeconds } = await synthesize(seg);
  await writeManifest(seg, { recordingId: 'bench', segment: 0, startedAt: started.getTime(), durationMs, tracks, speakers });
  say(`  synthesized in ${captureSeconds.toFixed(1)} s (${clipS} s clips, repeated)`);

  // the baseline's inputs: the teacher's camera and microphone as compose() would write them
  const cam = await depacketizeTrack(seg, tracks.find((t) => t.trackId === 'cam0')!, [{ path: join(work, 'cam0.ivf') }]);
  await depacketizeTrack(seg, tracks.find((t) => t.trackId === 'mic0')!, [{ path: join(work, 'mic0.ogg') }]);
  if (!cam.frames) throw new Error('the synthesized camera has no frames');

  const runs: Run[] = [];
  for (let round = 1; round <= rounds; round++) {
    const out = { mp4: join(work, 'class.mp4'), m4a: join(work, 'class.m4a') };
    const c = await measure('compose', round, async () => (await compose([seg], out, { threads: 1 })).mp4Bytes);
    runs.push(c);
    say(`  round ${round} compose   ${c.xWall.toFixed(2)}x real time (wall ${c.wallSeconds.toFixed(1)} s), ${c.xCpu.toFixed(2)}x per CPU second (ffmpeg ${c.ffmpegCpuSeconds.toFixed(1)} s, node ${c.nodeCpuSeconds.toFixed(1)} s)`);
    const base = join(work, 'baseline.mp4');
    const b = await measure('baseline', round, async () => {
      await run([
        '-threads', '1', '-i', join(work, 'cam0.ivf'), '-threads', '1', '-i', join(work, 'mic0.ogg'),
        '-filter_complex', `[0:v]scale=1280:720:flags=bilinear,fps=15,format=yuv420p[v]`, '-filter_complex_threads', '1',
        '-map', '[v]', '-map', '1:a',
        '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-r', '15', '-g', '75', '-threads', '1',
        '-c:a', 'aac', '-b:a', '96k', '-ar', '48000', '-ac', '2', '-t', String(durationMs / 1000), '-movflags', '+faststart', base,
      ]);
      return statSync(base).size;
    });
    runs.push(b);
    say(`  round ${round} baseline  ${b.xWall.toFixed(2)}x real time (wall ${b.wallSeconds.toFixed(1)} s), ${b.xCpu.toFixed(2)}x per CPU second`);
  }

  const summary = (what: Run['what']) => {
    const rs = runs.filter((r) => r.what === what);
    return { xWall: median(rs.map((r) => r.xWall)), xCpu: median(rs.map((r) => r.xCpu)), mp4Bytes: rs[0]!.mp4Bytes };
  };
  const composed = summary('compose');
  const baseline = summary('baseline');
  const ratio = composed.xCpu / baseline.xCpu;
  const target: Target = { name: 'composition at least 2x real time on one core (per CPU second, threads: 1)', measured: `${composed.xCpu.toFixed(2)}x`, met: composed.xCpu >= 2 };
  const report = () => {
    say('');
    say('| run | x real time (wall) | x real time (per CPU second) | MP4 |');
    say('|---|---:|---:|---:|');
    say(`| compose (${cameras} cameras, ${mics} mics, screen) | ${composed.xWall.toFixed(2)} | ${composed.xCpu.toFixed(2)} | ${(composed.mp4Bytes / 1e6).toFixed(1)} MB |`);
    say(`| baseline (one camera and mic, scaled and encoded) | ${baseline.xWall.toFixed(2)} | ${baseline.xCpu.toFixed(2)} | ${(baseline.mp4Bytes / 1e6).toFixed(1)} MB |`);
    say(`\ncompose costs ${(1 / ratio).toFixed(2)}x the baseline's CPU per media second`);
    say(`target: ${target.name}: ${target.met ? 'met' : 'NOT met'} (${target.measured})`);
  };
  const result = {
    mediaSeconds: durationMs / 1000,
    captureSeconds,
    compose: composed,
    baseline,
    composeCpuVsBaseline: 1 / ratio,
    runs,
  };
  return { result, target, report };
}

async function capturePart(work: string) {
  say(`capture: a room of ${roomSize}, ${openMics + 1} open microphones, ${captureRounds} round(s) of ${captureWindow} s recorded and ${captureWindow} s not, after ${captureWarmup} s each; pinned: ${pin ? 'the worker on core 0, this process on core 1' : 'no'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const c = await measureCapture({ room: roomSize, openMics, phoneEvery: 4, rounds: captureRounds, warmupS: captureWarmup, windowS: captureWindow, pin, asIs: opt['recorder-as-is'], dir: join(work, 'capture'), say });
  const d = c.perRecordedRoom;
  const target: Target = { name: `capture at most 0.1 core per recorded room of ${roomSize} (worker + node, recorded - not recorded)`, measured: `${d.total.toFixed(3)} cores${c.rounds.some((r) => r.clean) ? '' : ', every round flagged'}`, met: d.total <= 0.1 && c.rounds.some((r) => r.clean) };
  const report = () => {
    const f = (x: number) => x.toFixed(3);
    say('');
    say('| cores (CPU s per wall s) | worker | node | worker + node |');
    say('|---|---:|---:|---:|');
    say(`| not recorded | ${f(c.notRecorded.worker)} | ${f(c.notRecorded.node)} | ${f(c.notRecorded.worker + c.notRecorded.node)} |`);
    say(`| recorded | ${f(c.recorded.worker)} | ${f(c.recorded.node)} | ${f(c.recorded.worker + c.recorded.node)} |`);
    say(`| **per recorded room** (median of rounds' differences) | ${f(d.worker)} | ${f(d.node)} | **${f(d.total)}** |`);
    say(`\nwritten: ${(c.recorded.writtenBytesPerSecond / 1e3).toFixed(0)} kB/s (${(c.recorded.writtenBytesPerSecond * 3600 / 1e9).toFixed(2)} GB an hour), ${Math.round(c.recorded.writtenPacketsPerSecond)} packets/s in ${c.recorded.tracks} tracks; the worker sent the recorder ${c.recorded.toRecorderMbps.toFixed(2)} Mbit/s; into the worker ${c.ingressMbps.notRecorded.toFixed(1)} Mbit/s not recorded, ${c.ingressMbps.recorded.toFixed(1)} recorded (the layers the recorder asks for); of the node's difference, at most ${c.sendersShareMax.toFixed(3)} cores are the senders' extra packets`);
    say(`the worker's share predicted from its CPU per packet (${c.workerMicrosecondsPerPacket.toFixed(1)} µs, in and out, not recorded) and the packets recording adds: ${c.workerPredicted.toFixed(3)} cores`);
    say(`rounds (recorded - not recorded, worker + node): ${c.rounds.map((r) => r.total.toFixed(3) + (r.clean ? '' : ' (flagged)')).join(', ')}${c.rounds.every((r) => r.clean) ? '' : c.rounds.some((r) => r.clean) ? '; flagged rounds left out' : '; EVERY round was flagged: the difference is not a measurement'}`);
    say(`target: ${target.name}: ${target.met ? 'met' : 'NOT met'} (${target.measured})`);
    if (c.windows.some((w) => w.other > 0.25)) say('note: other processes used more than a quarter of a core in some windows; the worker\'s and this process\'s CPU time are still their own, but they compete for the caches and the cores');
  };
  return { result: c, target, report, flagged: c.windows.some((w) => w.flags.length > 0) };
}

async function main(): Promise<void> {
  const started = new Date();
  const work = mkdtempSync(join(tmpdir(), 'aula-bench-recording-'));
  cleanups.push(async () => rmSync(work, { recursive: true, force: true }));
  const loadAverageAtStart = loadavg();

  const composed = opt.part === 'capture' ? null : await composePart(work, started);
  const captured = opt.part === 'compose' ? null : await capturePart(work);
  composed?.report();
  captured?.report();
  const load = loadavg()[0]!;
  if (load > cpus().length * 0.75) say(`note: load average ${load.toFixed(2)} on ${cpus().length} cores; wall-time figures are unreliable (ffmpeg runs at nice 19), the per-CPU ones much less so`);

  const result = {
    scenario: 'recording',
    startedAt: started.toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, pinned: pin, loadAverageAtStart },
    options: { part: opt.part, minutes, cameras, mics, clipSeconds: clipS, rounds, room: roomSize, openMics, window: captureWindow, warmup: captureWarmup, captureRounds, recorderAsIs: opt['recorder-as-is'] },
    ...(composed?.result ?? {}),
    ...(captured ? { capture: captured.result } : {}),
    targets: [composed?.target, captured?.target].filter((t): t is Target => t !== undefined),
  };
  const out = opt.out ?? join(here, 'results', `recording-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  say(`results: ${out}`);
  if (opt.json) process.stdout.write(JSON.stringify(result) + '\n');
  if (captured?.flagged) process.exitCode = 1;
}

try {
  await main();
} catch (err) {
  console.error((err as Error).stack ?? err);
  process.exitCode = 1;
} finally {
  await cleanup();
}
