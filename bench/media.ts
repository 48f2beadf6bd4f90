/**
 * The media benchmark: `npm run bench -- --scenario media [options]` (bench/run.ts hands over here).
 *
 * What one mediasoup worker carries on one core, and how much of it survives Aula's room code:
 *
 *   audio  P opus-like producers (RTP from this process into comedia PlainTransports, 50 packets a
 *          second each) fanned out to consumers on PlainTransports with SRTP (AES_CM_128_HMAC_SHA1_80,
 *          the cost a WebRTC consumer puts on the worker), which send to UDP sink sockets here.
 *   video  producers sending three simulcast layers of real VP8 (encoded once per run by ffmpeg,
 *          replayed with fresh headers), consumers on the top layer, same transports.
 *
 * Consumers are added in steps; at each step the worker's CPU (/proc/<pid>/stat), the packets the
 * sink got against the packets the consumers should have sent, and the forwarding latency are
 * measured. Every step is measured twice, interleaved: on a bare mediasoup Router with exactly the
 * same transports, producers and consumers, and through Aula's `RoomMedia` (media/room.ts) on a
 * `WorkerPool` of one worker. Each has its own worker; only the one being measured gets packets.
 * See bench/README.md, "The media scenario".
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { CAMERA_ENCODINGS } from '../src/core/room-protocol.ts';
import { benchArgs } from './lib/args.ts';
import { snapshot, usage, type CpuSnapshot } from './lib/cpu.ts';
import { aulaSystem, bareSystem, producerParameters, type Kind, type MediaSystem, type SystemName } from './lib/media-systems.ts';
import { median } from './lib/report.ts';
import { OPUS_TS_STEP, sharedClock, sumDrops, udpDrops, VP8_TS_STEP } from './lib/rtp.ts';
import { Feed } from './lib/rtp-feed.ts';
import { histPercentile, RtpSink, type SinkCounts } from './lib/rtp-sink.ts';
import { mediaChart } from './lib/media-chart.ts';
import { captureVp8Simulcast, replaySchedule, type Capture, type Slot } from './lib/vp8-capture.ts';
import { hasTaskset } from './lib/wrk.ts';

const USAGE = `npm run bench -- --scenario media [options]

  --parts LIST          audio,video (default: both)
  --audio-steps LIST    audio consumers per worker, in steps       [250,500,1000,1500,2000,3000,4000]
  --video-steps LIST    video consumers per worker, in steps       [50,100,200,400,800,1000]
  --producers N         audio producers (each consumer participant takes one consumer of each) [10]
  --video-producers N   video producers                                                       [2]
  --seconds S           measured seconds per step and system                                  [5]
  --warmup S            seconds of load before each measurement (audio)                       [2]
  --video-warmup S      the same for video (a consumer waits for a key frame, every 2 s)      [3]
  --rounds N            repeat every series with fresh workers, order of the systems reversed
                        every other round; medians reported                                   [1]
  --stop-cpu X          a series stops after the step where both systems' workers used at
                        least X of a core (or lost more than --stop-loss)                     [0.95]
  --stop-loss X         see --stop-cpu                                                        [0.1]
  --sink-sockets N      UDP sockets the sink reads (one thread)                               [4]
  --json                print the results as one JSON object on stdout (tables go to stderr)
  --out FILE            JSON results                      [bench/results/media-<time>.json]
  --chart FILE          also draw this run's chart (SVG) to FILE
  --no-pin              do not pin the workers to core 0 and this process to core 1
  --max-minutes N       give up (cleanly) after this long                                     [40]

Needs ffmpeg with libvpx for the video part (apt-get install -y ffmpeg), and the mediasoup worker
(media/build-worker.sh). Only 127.0.0.1 is used.`;

const { opt, int } = benchArgs(
  USAGE,
  {
    parts: { type: 'string', default: 'audio,video' },
    'audio-steps': { type: 'string', default: '250,500,1000,1500,2000,3000,4000' },
    'video-steps': { type: 'string', default: '50,100,200,400,800,1000' },
    producers: { type: 'string', default: '10' },
    'video-producers': { type: 'string', default: '2' },
    seconds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    'video-warmup': { type: 'string', default: '3' },
    rounds: { type: 'string', default: '1' },
    'stop-cpu': { type: 'string', default: '0.95' },
    'stop-loss': { type: 'string', default: '0.1' },
    'sink-sockets': { type: 'string', default: '4' },
    json: { type: 'boolean', default: false },
    out: { type: 'string' },
    chart: { type: 'string' },
    'no-pin': { type: 'boolean', default: false },
    'max-minutes': { type: 'string', default: '40' },
  },
  'media',
);

const KINDS: Kind[] = ['audio', 'video'];
const parts = opt.parts.split(',').map((p) => p.trim()) as Kind[];
for (const p of parts) {
  if (!KINDS.includes(p)) {
    console.error(`unknown part ${p}; known: ${KINDS.join(', ')}\n\n${USAGE}`);
    process.exit(2);
  }
}
const steps: Record<Kind, number[]> = {
  audio: opt['audio-steps'].split(',').map((s) => int('audio-steps', s.trim(), 1)),
  video: opt['video-steps'].split(',').map((s) => int('video-steps', s.trim(), 1)),
};
const producerCount: Record<Kind, number> = { audio: int('producers', opt.producers, 1), video: int('video-producers', opt['video-producers'], 1) };
const seconds = int('seconds', opt.seconds, 1);
const warmupS: Record<Kind, number> = { audio: int('warmup', opt.warmup, 0), video: int('video-warmup', opt['video-warmup'], 0) };
const rounds = int('rounds', opt.rounds, 1);
const sinkSockets = int('sink-sockets', opt['sink-sockets'], 1);
const maxMinutes = int('max-minutes', opt['max-minutes'], 1);
const stopCpu = Number(opt['stop-cpu']);
const stopLoss = Number(opt['stop-loss']);
if (!(stopCpu > 0) || !(stopLoss > 0)) {
  console.error(`--stop-cpu and --stop-loss must be positive numbers\n\n${USAGE}`);
  process.exit(2);
}
if (producerCount.audio + producerCount.video > 30) {
  console.error('at most 30 producers per kind and system together (the sink tables hold 64 streams)');
  process.exit(2);
}

/** The load side's core and the workers' core, when pinning. */
const pin = !opt['no-pin'] && availableParallelism() >= 2 && hasTaskset();
const WORKER_CORE = 0;
const LOAD_CORE = 1;
/** Packets already sent when the window closes are waited for this long (forwarding takes well under 50 ms unless the worker is saturated). */
const GRACE_MS = 400;
/** Video: the producers run this long (after each resume) before consumers are added, so that mediasoup knows all three layers and the consumers start on the top one. */
const VIDEO_SETTLE_MS = 1200;
/** Key frame every 2 s, the capture loops over 4 s after 2 s of rate-control warmup. */
const FPS = 30;
const GOP = 60;
const CAPTURE_FRAMES = 120;
const CAPTURE_WARMUP_FRAMES = 60;

const here = new URL('.', import.meta.url).pathname;
const repo = join(here, '..');
const say = (s: string) => (opt.json ? process.stderr.write(s + '\n') : process.stdout.write(s + '\n'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const clock = sharedClock();
const sleepUntil = (t: number) => sleep(Math.max(0, t - clock()));

// ---- the worker binary ------------------------------------------------------------------------------

const sha = (buf: Buffer) => createHash('sha256').update(buf).digest('hex').slice(0, 16);

/** The installed binary: what `ldd | grep srtp` says (the brief's record), its hash and time. */
function installedWorker(): { path: string; sha256: string | null; mtime: string | null; lddSrtp: string } {
  const path = process.env.MEDIASOUP_WORKER_BIN ?? join(repo, 'node_modules/mediasoup/worker/out/Release/mediasoup-worker');
  try {
    const ldd = spawnSync('ldd', [path], { encoding: 'utf8' }).stdout ?? '';
    const line = ldd.split('\n').find((l) => l.includes('srtp'))?.trim();
    return { path, sha256: sha(readFileSync(path)), mtime: statSync(path).mtime.toISOString(), lddSrtp: line ?? 'no shared libsrtp2 (linked statically, or not linked)' };
  } catch (err) {
    return { path, sha256: null, mtime: null, lddSrtp: `unreadable: ${(err as Error).message}` };
  }
}

/** What a running worker process actually is: the hash of its executable (even if the file was replaced since) and the libsrtp2 it mapped. */
function runningWorker(pid: number): { sha256: string | null; exe: string | null; srtp: string } {
  try {
    const maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
    const lib = maps.split('\n').find((l) => l.includes('libsrtp2'));
    return {
      sha256: sha(readFileSync(`/proc/${pid}/exe`)),
      exe: readlinkSync(`/proc/${pid}/exe`),
      srtp: lib ? `shared ${lib.trim().split(/\s+/).at(-1)}` : 'static (no libsrtp2.so mapped)',
    };
  } catch {
    return { sha256: null, exe: null, srtp: 'unknown' };
  }
}

function pinTo(pid: number, core: number): void {
  if (pin) execFileSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' });
}

// ---- measuring ----------------------------------------------------------------------------------------

interface Row {
  kind: Kind;
  system: SystemName;
  round: number;
  consumers: number;
  receivers: number;
  /** worker CPU, share of one core */
  workerCpu: number;
  /** the other system's worker, idle meanwhile (its consumers are still there) */
  idleWorkerCpu: number;
  /** this process (generator, sink thread, mediasoup's and Aula's Node side), in cores */
  benchCpu: number;
  sinkCpu: number;
  core0Busy: number;
  core1Busy: number;
  /** CPU of every other process on the machine, in cores, and on core 0 alone */
  noise: number;
  noiseCore0: number;
  expected: number;
  received: number;
  loss: number;
  /** datagrams the kernel dropped at the sink's sockets (the load side) and at the producers' transports (the worker's input) */
  sinkDrops: number;
  workerInputDrops: number;
  /** the consumer with the smallest share of its packets */
  worstConsumer: number;
  packetsPerSecond: number;
  p50Ms: number | null;
  p99Ms: number | null;
  latencySamples: number;
  hist: number[];
  unmatched: number;
  unknown: number;
  generatorLateMaxMs: number;
  layers: { top: number; lower: number; none: number } | null;
  setupSeconds: number;
  flags: string[];
}

interface Live {
  sys: MediaSystem;
  feed: Feed;
  /** stream id per producer id */
  streamOf: Map<string, number>;
  /** consumer indexes (the sink's), each one's stream and SSRC */
  consumers: { index: number; stream: number; ssrc: number }[];
  receivers: number;
  done: boolean;
}

const TICKS = 100;

async function measureStep(kind: Kind, round: number, live: Live, other: Live, sink: RtpSink, nextIndex: () => number, target: number): Promise<Row> {
  const P = producerCount[kind];
  const wantReceivers = Math.max(1, Math.round(target / P));
  live.feed.activate();
  const t0 = clock();
  // video resumes at the start of the capture's next loop (up to 4 s away): consumers are added once
  // every producer has been sending its three layers for a while again
  if (kind === 'video') await live.feed.running(VIDEO_SETTLE_MS);
  // consumer participants are added while their producers run, one after another as clients would join
  while (live.receivers < wantReceivers) {
    const j = live.receivers++;
    const made = await live.sys.addReceiver(j, sink.ports[j % sink.ports.length]!);
    if (made.length !== P) throw new Error(`${live.sys.name}: receiver ${j} got ${made.length} consumers, expected ${P}`);
    const list = made.map((c) => ({ ssrc: c.ssrc, index: nextIndex(), stream: live.streamOf.get(c.producerId)!, audio: kind === 'audio' }));
    await sink.addConsumers(list);
    live.consumers.push(...list.map((c) => ({ index: c.index, stream: c.stream, ssrc: c.ssrc })));
  }
  const setupSeconds = (clock() - t0) / 1000;
  await sleep(warmupS[kind] * 1000);
  await sink.reset();
  const w0 = clock() + 20;
  const w1 = w0 + seconds * 1000;
  sink.setWindow(w0, w1);
  live.feed.setWindow(w0, w1);
  await sleepUntil(w0);
  const pids = { worker: live.sys.workerPid, idle: other.sys.workerPid, bench: process.pid };
  const sinkPorts = sink.ports;
  const d0 = udpDrops();
  const c0: CpuSnapshot | null = snapshot(pids);
  const s0 = sink.cpuTicks();
  await sleepUntil(w1);
  const c1 = snapshot(pids);
  const s1 = sink.cpuTicks();
  const d1 = udpDrops();
  await sleep(GRACE_MS);
  const layers = kind === 'video' ? live.sys.layers() : null;
  live.feed.deactivate();
  const counts: SinkCounts = await sink.collect(live.consumers.map((c) => c.index));

  const cpu = usage(c0, c1);
  const wall = (c1?.at ?? w1) - (c0?.at ?? w0);
  const g = (k: string) => cpu?.groups[k] ?? NaN;
  const busy = cpu ? cpu.cores.reduce((a, b) => a + b, 0) : NaN;
  const expectedOf = new Map<number, number>();
  for (const p of live.feed.producers) expectedOf.set(p.stream, p.expected);
  let expected = 0;
  let worst = 1;
  live.consumers.forEach((c, i) => {
    const e = expectedOf.get(c.stream) ?? 0;
    expected += e;
    if (e > 0) worst = Math.min(worst, counts.perConsumer[i]! / e);
  });
  const received = counts.received;
  const flags: string[] = [];
  if (live.sys.died || other.sys.died) flags.push('a worker died');
  if (counts.unknown) flags.push(`${counts.unknown} packets from unknown SSRCs`);
  if (layers && layers.top < live.consumers.length) flags.push(`${live.consumers.length - layers.top} video consumers not on the top layer`);
  const row: Row = {
    kind,
    system: live.sys.name,
    round,
    consumers: live.consumers.length,
    receivers: live.receivers,
    workerCpu: g('worker'),
    idleWorkerCpu: g('idle'),
    benchCpu: g('bench'),
    sinkCpu: (s1 - s0) / TICKS / (wall / 1000),
    core0Busy: cpu?.cores[0] ?? NaN,
    core1Busy: cpu?.cores[1] ?? NaN,
    noise: Math.max(0, busy - g('worker') - g('idle') - g('bench')),
    noiseCore0: Math.max(0, (cpu?.cores[0] ?? NaN) - (pin ? g('worker') + g('idle') : 0)),
    expected,
    received,
    loss: expected ? Math.max(0, 1 - received / expected) : NaN,
    sinkDrops: sumDrops(d1, sinkPorts) - sumDrops(d0, sinkPorts),
    workerInputDrops: sumDrops(d1, live.sys.producerPorts) - sumDrops(d0, live.sys.producerPorts),
    worstConsumer: worst,
    packetsPerSecond: expected / seconds,
    p50Ms: histPercentile(counts.hist, 50),
    p99Ms: histPercentile(counts.hist, 99),
    latencySamples: counts.latencySamples,
    hist: counts.hist,
    unmatched: counts.unmatched,
    unknown: counts.unknown,
    generatorLateMaxMs: live.feed.lateMax,
    layers,
    setupSeconds,
    flags,
  };
  return row;
}

// ---- summaries -------------------------------------------------------------------------------------------

/** Consumers at `level` of a core, interpolated linearly between the two steps around it; `below`/`above` when no step brackets it. */
function capacityAt(rows: Row[], level: number): { consumers: number | null; bound: 'exact' | 'above-last-step' | 'below-first-step'; loss: number | null } {
  const pts = [...rows].sort((a, b) => a.consumers - b.consumers);
  const i = pts.findIndex((r) => r.workerCpu >= level);
  if (i === -1) return { consumers: null, bound: 'above-last-step', loss: null };
  if (i === 0) return { consumers: null, bound: 'below-first-step', loss: pts[0]!.loss };
  const a = pts[i - 1]!;
  const b = pts[i]!;
  const f = (level - a.workerCpu) / (b.workerCpu - a.workerCpu);
  return { consumers: a.consumers + f * (b.consumers - a.consumers), bound: 'exact', loss: a.loss + f * (b.loss - a.loss) };
}

const pct = (x: number | null, d = 0) => (x === null || !Number.isFinite(x) ? '-' : `${(x * 100).toFixed(d)}%`);
const msf = (x: number | null) => (x === null ? '-' : x >= 10 ? `${x.toFixed(0)} ms` : `${x.toFixed(2)} ms`);
const fmtN = (n: number) => Math.round(n).toLocaleString('en-US');

function printTable(head: string[], body: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  say(line(head));
  say(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) say(line(b));
}

interface SummaryRow {
  kind: Kind;
  system: SystemName;
  consumers: number;
  rounds: number;
  workerCpu: number;
  loss: number;
  p50Ms: number | null;
  p99Ms: number | null;
  sinkDrops: number;
  noise: number;
  flagged: boolean;
}

function summarize(rows: Row[]): SummaryRow[] {
  const keys = new Map<string, Row[]>();
  for (const r of rows) {
    const k = `${r.kind}|${r.system}|${r.consumers}`;
    if (!keys.has(k)) keys.set(k, []);
    keys.get(k)!.push(r);
  }
  return [...keys.values()].map((rs) => ({
    kind: rs[0]!.kind,
    system: rs[0]!.system,
    consumers: rs[0]!.consumers,
    rounds: rs.length,
    workerCpu: median(rs.map((r) => r.workerCpu)),
    loss: median(rs.map((r) => r.loss)),
    p50Ms: rs.every((r) => r.p50Ms !== null) ? median(rs.map((r) => r.p50Ms!)) : null,
    p99Ms: rs.every((r) => r.p99Ms !== null) ? median(rs.map((r) => r.p99Ms!)) : null,
    sinkDrops: median(rs.map((r) => r.sinkDrops)),
    noise: median(rs.map((r) => r.noise)),
    flagged: rs.some((r) => r.flags.length > 0),
  }));
}

// ---- the run ----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = new Date();
  const cleanups: (() => Promise<void> | void)[] = [];
  let cleaning: Promise<void> | null = null;
  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const c of cleanups.splice(0).reverse()) {
        try {
          await c();
        } catch (err) {
          console.error(`cleanup: ${(err as Error).message}`);
        }
      }
    })());
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  process.once('SIGTERM', () => void cleanup().then(() => process.exit(143)));
  const deadline = setTimeout(() => {
    console.error(`giving up after --max-minutes ${maxMinutes}`);
    void cleanup().then(() => process.exit(1));
  }, maxMinutes * 60_000);
  cleanups.push(() => clearTimeout(deadline));

  try {
    if (pin) execFileSync('taskset', ['-a', '-p', '-c', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
    else say('warning: not pinning (needs taskset and 2 cores)');
    const binaryAtStart = installedWorker();
    say(`media bench: parts ${parts.join(', ')}; ${rounds} round(s); ${seconds} s per step; pinned: ${pin ? `workers on core ${WORKER_CORE}, generator and sink on core ${LOAD_CORE}` : 'no'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    say(`worker binary ${binaryAtStart.path} (sha256 ${binaryAtStart.sha256}, ${binaryAtStart.mtime}); ldd: ${binaryAtStart.lddSrtp}`);

    let video: { capture: Capture; slots: Slot[]; loopMs: number; bitrate: number } | null = null;
    if (parts.includes('video')) {
      const t = clock();
      const capture = await captureVp8Simulcast({
        layers: [
          { width: 320, height: 180, bitrate: CAMERA_ENCODINGS[0]!.maxBitrate },
          { width: 640, height: 360, bitrate: CAMERA_ENCODINGS[1]!.maxBitrate },
          { width: 1280, height: 720, bitrate: CAMERA_ENCODINGS[2]!.maxBitrate },
        ],
        fps: FPS,
        gop: GOP,
        frames: CAPTURE_FRAMES,
        warmupFrames: CAPTURE_WARMUP_FRAMES,
        timeoutMs: 120_000,
      });
      const sched = replaySchedule(capture);
      video = { capture, ...sched };
      const desc = capture.layers
        .map((l) => {
          const bytes = l.frames.flat().reduce((a, c) => a + c.data.length, 0);
          const n = l.frames.flat().length;
          return `${l.width}x${l.height} ${Math.round((bytes * 8) / (sched.loopMs / 1000) / 1000)} kbit/s ${Math.round(n / (sched.loopMs / 1000))} pkt/s`;
        })
        .join(', ');
      say(`VP8 capture (${capture.mode}, ${((clock() - t) / 1000).toFixed(1)} s): ${capture.frames} frames looped, ${desc}; key frames every ${GOP} frames`);
    }

    const sink = await RtpSink.start(sinkSockets, 4 * 1024 * 1024);
    cleanups.push(() => sink.close());
    say(`sink: ${sink.ports.length} sockets, receive buffer ${sink.rcvbuf} bytes each${sink.tids.length ? '' : ' (no per-thread CPU here)'}`);

    const feeds: Feed[] = [];
    const tick = setInterval(() => {
      for (const f of feeds) f.tick(sink);
    }, 1);
    cleanups.push(() => clearInterval(tick));

    const rows: Row[] = [];
    const workers: { kind: Kind; round: number; system: SystemName; pid: number; sha256: string | null; srtp: string; exe: string | null }[] = [];

    for (let round = 1; round <= rounds; round++) {
      for (const kind of parts) {
        const P = producerCount[kind];
        const maxReceivers = Math.max(...steps[kind].map((s) => Math.max(1, Math.round(s / P))));
        let consumerIndex = 0;
        const nextIndex = () => consumerIndex++;
        const lives: Live[] = [];
        const closeLives = async () => {
          // the sink forgets this series' consumers: the next one reuses the indexes and stream ids
          await sink.forget(lives.flatMap((l) => l.consumers.map((c) => c.ssrc)));
          for (const l of lives.splice(0)) {
            l.feed.deactivate();
            feeds.splice(feeds.indexOf(l.feed), 1);
            l.feed.close();
            await l.sys.close();
          }
        };
        cleanups.push(closeLives);
        let stream = 0;
        for (const name of ['bare', 'aula'] as const) {
          const sys = name === 'bare' ? await bareSystem() : await aulaSystem(kind, P, maxReceivers);
          pinTo(sys.workerPid, WORKER_CORE);
          const w = runningWorker(sys.workerPid);
          workers.push({ kind, round, system: name, pid: sys.workerPid, ...w });
          const feed = new Feed(clock, kind === 'video' ? video : null);
          feeds.push(feed);
          const live: Live = { sys, feed, streamOf: new Map(), consumers: [], receivers: 0, done: false };
          lives.push(live);
          for (let i = 0; i < P; i++) {
            const layers = kind === 'audio' ? 1 : 3;
            const ssrcs = Array.from({ length: layers }, (_, l) => 0x10000000 + round * 0x100000 + (name === 'aula' ? 0x80000 : 0) + (kind === 'video' ? 0x1000 : 0) + i * 16 + l);
            const { producerId, port } = await sys.produce(i, kind, producerParameters(kind, ssrcs, `${name}-${kind}-${i}`));
            const fp = await feed.add(kind, stream, ssrcs, port, i, P);
            sink.defineStream(stream, fp.tsBase, kind === 'audio' ? OPUS_TS_STEP : VP8_TS_STEP);
            live.streamOf.set(producerId, stream++);
          }
        }
        say(`\nround ${round}, ${kind}: ${P} producers per system; workers ${lives.map((l) => `${l.sys.name} pid ${l.sys.workerPid} (libsrtp2: ${workers.find((w) => w.pid === l.sys.workerPid)?.srtp})`).join(', ')}`);

        for (const [si, target] of steps[kind].entries()) {
          const order = (si + round) % 2 === 0 ? [lives[0]!, lives[1]!] : [lives[1]!, lives[0]!];
          for (const live of order) {
            const other = live === lives[0] ? lives[1]! : lives[0]!;
            const row = await measureStep(kind, round, live, other, sink, nextIndex, target);
            rows.push(row);
            if (row.workerCpu >= stopCpu || row.loss > stopLoss) live.done = true;
            const lay = row.layers ? `  top layer ${row.layers.top}/${row.consumers}` : '';
            say(
              `  ${kind} ${row.system.padEnd(4)} ${String(row.consumers).padStart(5)} consumers: worker ${pct(row.workerCpu, 1).padStart(6)}  loss ${pct(row.loss, 2).padStart(6)}` +
                `  p50 ${msf(row.p50Ms)}  p99 ${msf(row.p99Ms)}  ${fmtN(row.packetsPerSecond)} pkt/s out  sink ${pct(row.sinkCpu)} drops ${row.sinkDrops}  noise ${row.noise.toFixed(2)}${lay}` +
                (row.flags.length ? `  FLAGGED: ${row.flags.join('; ')}` : ''),
            );
          }
          if (lives.every((l) => l.done)) break;
          if (lives.some((l) => l.sys.died)) {
            say('  a worker died: this series stops here');
            break;
          }
        }
        await closeLives();
        cleanups.splice(cleanups.indexOf(closeLives), 1);
      }
    }
    const binaryAtEnd = installedWorker();

    // ---- report ----------------------------------------------------------------------------------------
    const summary = summarize(rows);
    const capacity: { kind: Kind; system: SystemName; round: number; consumers: number | null; bound: string; loss: number | null }[] = [];
    for (const kind of parts) {
      for (let round = 1; round <= rounds; round++) {
        for (const system of ['bare', 'aula'] as const) {
          const c = capacityAt(
            rows.filter((r) => r.kind === kind && r.round === round && r.system === system),
            0.8,
          );
          capacity.push({ kind, system, round, ...c });
        }
      }
    }
    const capacitySummary = parts.map((kind) => {
      const of = (system: SystemName) => capacity.filter((c) => c.kind === kind && c.system === system);
      const known = (cs: typeof capacity) => cs.filter((c) => c.consumers !== null).map((c) => c.consumers!);
      const bare = of('bare');
      const aula = of('aula');
      const ratios = bare.flatMap((b) => {
        const a = aula.find((x) => x.round === b.round);
        return a?.consumers && b.consumers ? [a.consumers / b.consumers] : [];
      });
      return {
        kind,
        bare: known(bare).length ? median(known(bare)) : null,
        aula: known(aula).length ? median(known(aula)) : null,
        bareLoss: bare.some((c) => c.loss !== null) ? median(bare.filter((c) => c.loss !== null).map((c) => c.loss!)) : null,
        aulaLoss: aula.some((c) => c.loss !== null) ? median(aula.filter((c) => c.loss !== null).map((c) => c.loss!)) : null,
        ratio: ratios.length ? median(ratios) : null,
        bounds: [...new Set([...bare, ...aula].map((c) => `${c.system}:${c.bound}`))].filter((b) => !b.endsWith('exact')),
      };
    });

    for (const kind of parts) {
      say(`\n${kind}: medians over ${rounds} round(s); CPU is the worker's, as a share of one core`);
      const consumersList = [...new Set(summary.filter((s) => s.kind === kind).map((s) => s.consumers))].sort((a, b) => a - b);
      printTable(
        ['consumers', 'bare CPU', 'Aula CPU', 'bare loss', 'Aula loss', 'bare p50', 'bare p99', 'Aula p50', 'Aula p99', 'sink drops', 'noise'],
        consumersList.map((n) => {
          const b = summary.find((s) => s.kind === kind && s.system === 'bare' && s.consumers === n);
          const a = summary.find((s) => s.kind === kind && s.system === 'aula' && s.consumers === n);
          return [
            fmtN(n) + (b?.flagged || a?.flagged ? ' (!)' : ''),
            b ? pct(b.workerCpu, 1) : '-',
            a ? pct(a.workerCpu, 1) : '-',
            b ? pct(b.loss, 2) : '-',
            a ? pct(a.loss, 2) : '-',
            msf(b?.p50Ms ?? null),
            msf(b?.p99Ms ?? null),
            msf(a?.p50Ms ?? null),
            msf(a?.p99Ms ?? null),
            `${b ? fmtN(b.sinkDrops) : '-'}/${a ? fmtN(a.sinkDrops) : '-'}`,
            `${b ? b.noise.toFixed(2) : '-'}/${a ? a.noise.toFixed(2) : '-'}`,
          ];
        }),
      );
      const c = capacitySummary.find((x) => x.kind === kind)!;
      const f = (n: number | null) => (n === null ? 'not bracketed' : fmtN(n));
      say(
        `${kind} consumers at 80% of a core: bare ${f(c.bare)} (loss ${pct(c.bareLoss, 2)}), Aula ${f(c.aula)} (loss ${pct(c.aulaLoss, 2)}); Aula/bare ${c.ratio === null ? '-' : c.ratio.toFixed(3)}` +
          (c.bounds.length ? ` [${c.bounds.join(', ')}]` : ''),
      );
    }
    if (parts.includes('audio')) {
      // measured at the step itself when there is one, else read off the capacity at 80%
      const at1500 = summary.find((s) => s.kind === 'audio' && s.system === 'aula' && s.consumers === 1500);
      const audioCap = capacitySummary.find((c) => c.kind === 'audio')!;
      const meets = at1500
        ? at1500.workerCpu < 0.8 && at1500.loss < 0.01
        : audioCap.aula !== null && audioCap.aula >= 1500 && (audioCap.aulaLoss ?? 1) < 0.01;
      const how = at1500 ? `measured at 1,500: worker ${pct(at1500.workerCpu, 1)}, loss ${pct(at1500.loss, 2)}` : 'read off the capacity at 80%';
      say(`target: at least 1,500 audio consumers per worker below 80% of a core with under 1% loss (Aula): ${meets ? 'met' : 'NOT met'} (${how})`);
    }
    say(`target: Aula carries at least 0.9 of bare at 80% of a core: ${capacitySummary.map((c) => `${c.kind} ${c.ratio === null ? 'not bracketed' : `${c.ratio.toFixed(3)} ${c.ratio >= 0.9 ? 'met' : 'NOT met'}`}`).join(', ')}`);
    if (binaryAtEnd.sha256 !== binaryAtStart.sha256) say(`NOTE: the worker binary changed during the run (${binaryAtStart.sha256} -> ${binaryAtEnd.sha256}); each worker's own binary is in the JSON (workers[])`);
    if (rows.some((r) => r.noise > 0.25)) say('Some steps ran while other processes used more than a quarter of a core (noise column, cores): rerun with --rounds 3, or on a quiet machine.');
    if (rows.some((r) => r.sinkDrops > 0)) say('The sink dropped packets in some steps (its sockets overflowed): loss there is partly the load side\'s, not the worker\'s.');

    const result = {
      scenario: 'media',
      startedAt: started.toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, pinned: pin, loadAverageAtStart: loadavg() },
      binary: { atStart: binaryAtStart, atEnd: binaryAtEnd },
      workers,
      options: { parts, steps, producers: producerCount, seconds, warmup: warmupS, rounds, stopCpu, stopLoss, sinkSockets, sinkRcvbuf: sink.rcvbuf },
      video: video
        ? {
            ffmpeg: video.capture.ffmpeg,
            captureMode: video.capture.mode,
            frames: video.capture.frames,
            fps: FPS,
            gop: GOP,
            bitrate: Math.round(video.bitrate),
            layers: video.capture.layers.map((l) => ({ width: l.width, height: l.height, targetBitrate: l.bitrate, keyFrames: l.keyFrames })),
          }
        : null,
      capacity: capacitySummary,
      capacityPerRound: capacity,
      summary,
      rows: rows.map(({ hist, ...r }) => ({ ...r, hist: compactHist(hist) })),
    };
    const out = opt.out ?? join(here, 'results', `media-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
    mkdirSync(join(out, '..'), { recursive: true });
    writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
    say(`results: ${out}`);
    if (opt.chart) {
      writeFileSync(opt.chart, mediaChart([result]));
      say(`chart: ${opt.chart}`);
    }
    if (opt.json) process.stdout.write(JSON.stringify(result) + '\n');
    process.exitCode = rows.some((r) => r.flags.length) ? 1 : 0;
  } finally {
    await cleanup();
  }
}

/** Non-zero buckets only: [bucket, count] pairs (10 µs buckets). */
const compactHist = (hist: number[]): [number, number][] => hist.flatMap((n, i) => (n ? [[i, n] as [number, number]] : []));

try {
  await main();
} catch (err) {
  console.error((err as Error).stack ?? err);
  process.exitCode = 1;
}
