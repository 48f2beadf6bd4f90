/**
 * The class benchmark: `npm run bench -- --scenario class [options]` (bench/run.ts hands over here).
 *
 * A class through Aula's room machinery on one mediasoup worker (lib/class-room.ts): a teacher sending
 * a camera (VP8 simulcast, 3 layers), a shared screen (2 layers) and a microphone, and N students each
 * sending a camera and a microphone, every one of them also receiving. Measured two ways: `view`, each
 * receiver says what its page shows (a 16-tile laptop page, or a 4-tile phone page for every fourth
 * student; lib/class-views.ts) and the server pauses, picks layers and tells senders what is wanted;
 * `everything`, no view, every video resumed at its top layer (the baseline, in the same run, at a size
 * where it still fits in one core). Reported: the worker's CPU, what is forwarded per student, resumed
 * video consumers, the layers forwarded and RTP loss at the receivers. See bench/README.md, "The class
 * scenario".
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { CAMERA_ENCODINGS, SCREEN_ENCODINGS } from '../src/core/room-protocol.ts';
import { benchArgs } from './lib/args.ts';
import { classChart } from './lib/class-chart.ts';
import { ClassFeed, type VideoSource } from './lib/class-feed.ts';
import { ClassRoom, type Mode } from './lib/class-room.ts';
import { ClassSink } from './lib/class-sink.ts';
import { PAGES } from './lib/class-views.ts';
import { median } from './lib/report.ts';
import { snapshot, usage } from './lib/cpu.ts';
import { sharedClock, sumDrops, udpDrops } from './lib/rtp.ts';
import { captureVp8Simulcast, replaySchedule } from './lib/vp8-capture.ts';
import { hasTaskset } from './lib/wrk.ts';

const USAGE = `npm run bench -- --scenario class [options]

  --students N        the class measured receiver-driven alone                         [60]
  --compare N         the class measured both ways: receiver-driven and receive-everything [12]
  --compare-rounds N  measure the --compare class both ways this many times, alternating which
                      goes first; the CPU ratio is the median of the rounds' ratios, of
                      those where neither class lost packets when there are any        [3]
  --curve LIST        more class sizes for the chart (receiver-driven; receive-everything
                      too up to --everything-max), e.g. 4,8,24,36,48                    []
  --everything-max N  largest class measured receive-everything in --curve              [12]
  --phone-every N     every N-th student views the class on a phone (0: none)           [4]
  --open-mics N       students whose microphone is on (the teacher's always is); the
                      others are muted, which a page does at the source (no packets)    [2]
  --seconds S         measured seconds per class                                        [10]
  --settle S          seconds after the last receiver is ready, before measuring (a layer
                      switch waits for the sender's next key frame, every 2 s)         [6]
  --sink-sockets N    UDP sockets the receivers' sink reads (one thread)                [4]
  --json              print the results as one JSON object on stdout (tables go to stderr)
  --out FILE          JSON results                      [bench/results/class-<time>.json]
  --chart FILE        also draw this run's chart (SVG) to FILE
  --no-pin            do not pin the worker to core 0 and this process to core 1
  --max-minutes N     give up (cleanly) after this long                                 [20]

Needs ffmpeg with libvpx (apt-get install -y ffmpeg) and the mediasoup worker
(media/build-worker.sh). Only 127.0.0.1 is used.`;

const { opt, int } = benchArgs(
  USAGE,
  {
    students: { type: 'string', default: '60' },
    compare: { type: 'string', default: '12' },
    'compare-rounds': { type: 'string', default: '3' },
    curve: { type: 'string', default: '' },
    'everything-max': { type: 'string', default: '12' },
    'phone-every': { type: 'string', default: '4' },
    'open-mics': { type: 'string', default: '2' },
    seconds: { type: 'string', default: '10' },
    settle: { type: 'string', default: '6' },
    'sink-sockets': { type: 'string', default: '4' },
    json: { type: 'boolean', default: false },
    out: { type: 'string' },
    chart: { type: 'string' },
    'no-pin': { type: 'boolean', default: false },
    'max-minutes': { type: 'string', default: '20' },
  },
  'class',
);

const students = int('students', opt.students, 1);
const compare = int('compare', opt.compare, 1);
const compareRounds = int('compare-rounds', opt['compare-rounds'], 1);
const curve = opt.curve ? opt.curve.split(',').map((s) => int('curve', s.trim(), 1)) : [];
const everythingMax = int('everything-max', opt['everything-max'], 1);
const phoneEvery = int('phone-every', opt['phone-every'], 0);
const openMics = int('open-mics', opt['open-mics'], 0);
const seconds = int('seconds', opt.seconds, 1);
const settle = int('settle', opt.settle, 0);
const sinkSockets = int('sink-sockets', opt['sink-sockets'], 1);
const maxMinutes = int('max-minutes', opt['max-minutes'], 1);
if (students > 250 || compare > 250 || curve.some((n) => n > 250)) {
  console.error('at most 250 students (the SSRC plan of lib/class-room.ts)');
  process.exit(2);
}

const pin = !opt['no-pin'] && availableParallelism() >= 2 && hasTaskset();
const WORKER_CORE = 0;
const LOAD_CORE = 1;
/** The senders run this long before anyone receives, so that mediasoup knows every layer. */
const SENDERS_SETTLE_MS = 1200;
const FPS = 30;
const GOP = 60;
const CAPTURE_FRAMES = 120;
const CAPTURE_WARMUP_FRAMES = 60;
const TICKS = 100;

const here = new URL('.', import.meta.url).pathname;
const say = (s: string) => (opt.json ? process.stderr.write(s + '\n') : process.stdout.write(s + '\n'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const clock = sharedClock();

function pinTo(pid: number, core: number): void {
  if (pin) execFileSync('taskset', ['-a', '-p', '-c', String(core), String(pid)], { stdio: 'ignore' });
}

// ---- one class, measured ---------------------------------------------------------------------------

interface PageFigures {
  students: number;
  /** forwarded video (camera and screen) per student, Mbit/s: mean and the busiest student */
  videoMbps: number;
  videoMbpsMax: number;
  audioMbps: number;
  resumedVideo: number;
  resumedVideoMax: number;
}

export interface Row {
  mode: Mode;
  students: number;
  phones: number;
  openMics: number;
  /** worker CPU, share of one core */
  workerCpu: number;
  /** this process (the senders, the sink thread, RoomMedia's Node side), in cores */
  benchCpu: number;
  sinkCpu: number;
  /** every other process on the machine, in cores */
  noise: number;
  loadBefore: number[];
  loadAfter: number[];
  setupSeconds: number;
  consumers: number;
  resumedConsumers: number;
  /** per student, by page; and every student together */
  laptop: PageFigures | null;
  phone: PageFigures | null;
  allStudents: PageFigures;
  teacher: { videoMbps: number; resumedVideo: number };
  /** forwarded by the worker to every receiver, Mbit/s */
  forwardedMbps: { total: number; video: number; audio: number };
  /** sent into the worker by every sender (after dynacast), Mbit/s */
  ingressMbps: number;
  packetsOutPerSecond: number;
  layers: { camera: number[]; screen: number[]; none: number };
  wanted: { camera: number[]; screen: number[] };
  /** RTP loss at the receivers: packets missing from the sequence numbers over those expected */
  loss: number;
  lost: number;
  expected: number;
  worstConsumerLoss: number;
  sinkDrops: number;
  workerInputDrops: number;
  generatorLateMaxMs: number;
  mediaEvents: number;
  flags: string[];
}

const mbps = (bytes: number, s: number) => (bytes * 8) / s / 1e6;
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

async function measure(mode: Mode, n: number, video: { camera: VideoSource; screen: VideoSource }, portMin: number): Promise<Row> {
  const loadBefore = loadavg();
  const sink = await ClassSink.start(sinkSockets, 8 * 1024 * 1024);
  const feed = new ClassFeed(clock);
  const tick = setInterval(() => feed.tick(), 1);
  const room = await ClassRoom.open({ mode, students: n, phoneEvery, openMics: Math.min(openMics, n), camera: video.camera, screen: video.screen, feed, sinkPorts: sink.ports, portMin });
  try {
    pinTo(room.workerPid, WORKER_CORE);
    const t0 = clock();
    await room.send();
    await sleep(SENDERS_SETTLE_MS);
    await room.receive();
    const setupSeconds = (clock() - t0) / 1000;
    await sleep(settle * 1000);

    const pids = { worker: room.workerPid, bench: process.pid };
    await sink.reset();
    const w0 = clock();
    feed.setWindow(w0, w0 + seconds * 1000);
    const d0 = udpDrops();
    const c0 = snapshot(pids);
    const s0 = sink.cpuTicks();
    await sleep(seconds * 1000);
    const c1 = snapshot(pids);
    const s1 = sink.cpuTicks();
    const d1 = udpDrops();
    const counts = await sink.collect();
    const wall = (clock() - w0) / 1000;
    const state = room.state();

    const cpu = usage(c0, c1);
    const g = (k: string) => cpu?.groups[k] ?? NaN;
    const busy = cpu ? cpu.cores.reduce((a, b) => a + b, 0) : NaN;
    const flags: string[] = [];
    if (room.died) flags.push('the worker died');

    // bytes and loss per consumer, from the sink's per-SSRC counts
    const bySsrc = new Map([...room.consumers.values()].map((c) => [c.ssrc, c]));
    const bytesOf = new Map<string, { video: number; audio: number }>();
    let lost = 0;
    let expected = 0;
    let worst = 0;
    let packets = 0;
    let unknown = 0;
    for (const s of counts.perSsrc) {
      const c = bySsrc.get(s.ssrc);
      if (!c) {
        unknown += s.packets;
        continue;
      }
      const b = bytesOf.get(c.receiver) ?? { video: 0, audio: 0 };
      b[c.kind] += s.bytes;
      bytesOf.set(c.receiver, b);
      packets += s.packets;
      lost += Math.max(0, s.expected - s.packets);
      expected += s.expected;
      if (s.expected > 50) worst = Math.max(worst, 1 - s.packets / s.expected);
    }
    if (state.offPlan) flags.push(`${state.offPlan} resumed video consumers not on their preferred layer at the end`);
    if (unknown) flags.push(`${unknown} packets from SSRCs no consumer has`);
    const heard = new Set(counts.perSsrc.filter((s) => s.packets > 0).map((s) => s.ssrc));
    const resumedTotal = [...state.resumedVideo.values()].reduce((a, b) => a + b, 0);
    const receivedVideoConsumers = [...room.consumers.values()].filter((c) => c.kind === 'video' && heard.has(c.ssrc)).length;
    if (receivedVideoConsumers < resumedTotal) flags.push(`${resumedTotal - receivedVideoConsumers} resumed video consumers sent nothing in the window`);

    const figures = (ids: string[]): PageFigures => {
      const v = ids.map((id) => mbps(bytesOf.get(id)?.video ?? 0, wall));
      const a = ids.map((id) => mbps(bytesOf.get(id)?.audio ?? 0, wall));
      const r = ids.map((id) => state.resumedVideo.get(id) ?? 0);
      return { students: ids.length, videoMbps: mean(v), videoMbpsMax: Math.max(...v), audioMbps: mean(a), resumedVideo: mean(r), resumedVideoMax: Math.max(...r) };
    };
    const of = (page: 'laptop' | 'phone') => room.participants.filter((p) => p.role === 'student' && p.page === page).map((p) => p.participantId);
    const teacherId = room.participants[0]!.participantId;
    let videoBytes = 0;
    let audioBytes = 0;
    for (const b of bytesOf.values()) {
      videoBytes += b.video;
      audioBytes += b.audio;
    }
    let ingress = 0;
    for (const t of feed.tracks) ingress += t.bytes.reduce((a, b) => a + b, 0);
    const sinkDrops = sumDrops(d1, sink.ports) - sumDrops(d0, sink.ports);
    const workerInputDrops = sumDrops(d1, room.producerPorts) - sumDrops(d0, room.producerPorts);
    if (sinkDrops) flags.push(`the sink's sockets dropped ${sinkDrops} datagrams (the load side's loss, not the worker's)`);
    const laptops = of('laptop');
    const phones = of('phone');
    return {
      mode,
      students: n,
      phones: phones.length,
      openMics: Math.min(openMics, n),
      workerCpu: g('worker'),
      benchCpu: g('bench'),
      sinkCpu: (s1 - s0) / TICKS / wall,
      noise: Math.max(0, busy - g('worker') - g('bench')),
      loadBefore,
      loadAfter: loadavg(),
      setupSeconds,
      consumers: state.consumers,
      resumedConsumers: state.resumed,
      laptop: laptops.length ? figures(laptops) : null,
      phone: phones.length ? figures(phones) : null,
      allStudents: figures([...laptops, ...phones]),
      teacher: { videoMbps: mbps(bytesOf.get(teacherId)?.video ?? 0, wall), resumedVideo: state.resumedVideo.get(teacherId) ?? 0 },
      forwardedMbps: { total: mbps(videoBytes + audioBytes, wall), video: mbps(videoBytes, wall), audio: mbps(audioBytes, wall) },
      ingressMbps: mbps(ingress, wall),
      packetsOutPerSecond: packets / wall,
      layers: state.layers,
      wanted: state.wanted,
      loss: expected ? lost / expected : NaN,
      lost,
      expected,
      worstConsumerLoss: worst,
      sinkDrops,
      workerInputDrops,
      generatorLateMaxMs: feed.lateMax,
      mediaEvents: room.events,
      flags,
    };
  } finally {
    clearInterval(tick);
    await room.close();
    feed.close();
    await sink.close();
  }
}

// ---- report -----------------------------------------------------------------------------------------

const pct = (x: number, d = 1) => (Number.isFinite(x) ? `${(x * 100).toFixed(d)}%` : '-');
const f2 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(2));

function printTable(head: string[], body: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  say(line(head));
  say(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) say(line(b));
}

function describe(r: Row): string {
  const page = (p: PageFigures | null, name: string) => (p ? `${name} ${f2(p.videoMbps)} (max ${f2(p.videoMbpsMax)}) Mbit/s video, ${p.resumedVideo.toFixed(1)} (max ${p.resumedVideoMax}) resumed` : '');
  return (
    `  ${r.mode.padEnd(10)} ${String(r.students).padStart(3)} students: worker ${pct(r.workerCpu)}  loss ${pct(r.loss, 3)}  out ${f2(r.forwardedMbps.total)} Mbit/s (${Math.round(r.packetsOutPerSecond)} pkt/s)  in ${f2(r.ingressMbps)} Mbit/s` +
    `  ${[page(r.laptop, 'laptop'), page(r.phone, 'phone')].filter(Boolean).join('; ')}  camera r0/r1/r2 ${r.layers.camera.join('/')} screen r0/r1 ${r.layers.screen.join('/')}` +
    `  drops sink ${r.sinkDrops} worker-in ${r.workerInputDrops}  late ${r.generatorLateMaxMs.toFixed(0)} ms  setup ${r.setupSeconds.toFixed(1)} s  noise ${r.noise.toFixed(2)}  load ${r.loadBefore[0]!.toFixed(2)} -> ${r.loadAfter[0]!.toFixed(2)}` +
    (r.flags.length ? `  FLAGGED: ${r.flags.join('; ')}` : '')
  );
}

// ---- the run ----------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = new Date();
  let done = false;
  const deadline = setTimeout(() => {
    if (!done) {
      console.error(`giving up after --max-minutes ${maxMinutes}`);
      process.exit(1);
    }
  }, maxMinutes * 60_000);
  deadline.unref();
  if (pin) execFileSync('taskset', ['-a', '-p', '-c', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' });
  else if (!opt['no-pin']) say('warning: not pinning (needs taskset and 2 cores)');
  say(`class bench: ${students} students receiver-driven, ${compare} both ways${curve.length ? `, curve ${curve.join(',')}` : ''}; a phone every ${phoneEvery || '-'}; ${openMics} open student microphones; ${seconds} s per class; pinned: ${pin ? `worker on core ${WORKER_CORE}, senders and sink on core ${LOAD_CORE}` : 'no'}; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  const capture = async (name: string, layers: { width: number; height: number; bitrate: number }[]): Promise<VideoSource> => {
    const t = clock();
    const c = await captureVp8Simulcast({ layers, fps: FPS, gop: GOP, frames: CAPTURE_FRAMES, warmupFrames: CAPTURE_WARMUP_FRAMES, timeoutMs: 180_000 });
    const sched = replaySchedule(c);
    const desc = c.layers
      .map((l) => {
        const bytes = l.frames.flat().reduce((a, ch) => a + ch.data.length, 0);
        return `${l.width}x${l.height} ${Math.round((bytes * 8) / (sched.loopMs / 1000) / 1000)} kbit/s ${Math.round(l.frames.flat().length / (sched.loopMs / 1000))} pkt/s`;
      })
      .join(', ');
    say(`VP8 ${name} (${c.mode}, ${((clock() - t) / 1000).toFixed(1)} s): ${desc}; key frames every ${GOP} frames`);
    return { capture: c, slots: sched.slots, loopMs: sched.loopMs };
  };
  const video = {
    camera: await capture('camera', CAMERA_ENCODINGS.map((e, i) => ({ width: [320, 640, 1280][i]!, height: [180, 360, 720][i]!, bitrate: e.maxBitrate }))),
    screen: await capture('screen', SCREEN_ENCODINGS.map((e, i) => ({ width: [960, 1920][i]!, height: [540, 1080][i]!, bitrate: e.maxBitrate }))),
  };

  const plan: { mode: Mode; students: number; round: number }[] = [];
  for (let round = 1; round <= compareRounds; round++) {
    for (const mode of round % 2 ? (['everything', 'view'] as const) : (['view', 'everything'] as const)) plan.push({ mode, students: compare, round });
  }
  const sizes = [...new Set([...curve, students])].filter((n) => n !== compare).sort((a, b) => a - b);
  for (const [i, n] of sizes.entries()) {
    const both = curve.includes(n) && n <= everythingMax;
    const modes: Mode[] = both ? (i % 2 ? ['view', 'everything'] : ['everything', 'view']) : ['view'];
    for (const mode of modes) plan.push({ mode, students: n, round: 1 });
  }
  const rows: (Row & { round: number })[] = [];
  let portMin = 47500;
  for (const step of plan) {
    const row = { round: step.round, ...(await measure(step.mode, step.students, video, portMin)) };
    portMin = portMin >= 47900 ? 47500 : portMin + 100;
    rows.push(row);
    say(describe(row));
  }

  // ---- figures and targets --------------------------------------------------------------------------
  const at = (mode: Mode, n: number, round = 1) => rows.find((r) => r.mode === mode && r.students === n && r.round === round) ?? null;
  const big = at('view', students)!;
  // A round counts when neither class lost packets: a worker that loses them was starved by the machine
  // (its input sockets overflowed), and a starved worker spends less CPU than its load needs.
  const clean = (r: Row | null) => r !== null && r.loss < 0.01 && r.sinkDrops === 0;
  const rounds = Array.from({ length: compareRounds }, (_, i) => {
    const v = at('view', compare, i + 1)!;
    const e = at('everything', compare, i + 1)!;
    return { round: i + 1, ratio: v.workerCpu / e.workerCpu, clean: clean(v) && clean(e) };
  });
  const counted = rounds.some((r) => r.clean) ? rounds.filter((r) => r.clean) : rounds;
  const ratios = counted.map((r) => r.ratio);
  const cpuRatioAt12 = median(ratios);
  const figures = {
    students,
    compare,
    perStudentMbps: { laptop: big.laptop?.videoMbpsMax ?? null, phone: big.phone?.videoMbpsMax ?? null },
    resumedVideoConsumersPerStudent: big.allStudents.resumedVideoMax,
    cpuRatioAt12,
    cpuRatioRounds: rounds,
    loss: big.loss,
    workerCpuAt60: big.workerCpu,
  };
  const { laptop, phone } = figures.perStudentMbps;
  const targets = [
    { name: `${students} students and the teacher under 80% of a core`, measured: pct(big.workerCpu), met: big.workerCpu < 0.8 },
    { name: `loss under 1% at ${students}`, measured: pct(big.loss, 3), met: big.loss < 0.01 },
    { name: 'forwarded video per student, laptop page with the screen share: at most 4.5 Mbit/s (the busiest)', measured: laptop === null ? 'no laptop' : `${f2(laptop)} Mbit/s`, met: laptop === null || laptop <= 4.5 },
    { name: 'forwarded video per student, phone page: at most 1.5 Mbit/s (the busiest)', measured: phone === null ? 'no phone' : `${f2(phone)} Mbit/s`, met: phone === null || phone <= 1.5 },
    { name: 'resumed video consumers per student: at most 18 (the most)', measured: String(figures.resumedVideoConsumersPerStudent), met: figures.resumedVideoConsumersPerStudent <= 18 },
    { name: `receiver-driven worker CPU at ${compare}: at most 0.5 of receive-everything`, measured: cpuRatioAt12.toFixed(3), met: cpuRatioAt12 <= 0.5 },
  ];

  say('');
  printTable(
    ['mode', 'students', 'round', 'worker CPU', 'loss', 'out Mbit/s', 'in Mbit/s', 'laptop video Mbit/s', 'phone video Mbit/s', 'resumed video / student', 'camera r0/r1/r2', 'screen r0/r1', 'noise', 'load before/after'],
    rows.map((r) => [
      r.mode + (r.flags.length ? ' (!)' : ''),
      String(r.students),
      String(r.round),
      pct(r.workerCpu),
      pct(r.loss, 3),
      f2(r.forwardedMbps.total),
      f2(r.ingressMbps),
      r.laptop ? `${f2(r.laptop.videoMbps)} (max ${f2(r.laptop.videoMbpsMax)})` : '-',
      r.phone ? `${f2(r.phone.videoMbps)} (max ${f2(r.phone.videoMbpsMax)})` : '-',
      `${r.allStudents.resumedVideo.toFixed(1)} (max ${r.allStudents.resumedVideoMax})`,
      r.layers.camera.join('/'),
      r.layers.screen.join('/'),
      r.noise.toFixed(2),
      `${r.loadBefore[0]!.toFixed(2)}/${r.loadAfter[0]!.toFixed(2)}`,
    ]),
  );
  say(`\ncpu ratio at ${compare} (receiver-driven / receive-everything): ${cpuRatioAt12.toFixed(3)}, the median of rounds ${rounds.map((r) => `${r.round}: ${r.ratio.toFixed(3)}${r.clean ? '' : ' (lost packets)'}`).join(', ')}${rounds.some((r) => r.clean) ? '; rounds that lost packets left out' : '; EVERY round lost packets: the ratio is not a measurement'}`);
  for (const t of targets) say(`target: ${t.name}: ${t.met ? 'met' : 'NOT met'} (${t.measured})`);
  if (rows.some((r) => r.noise > 0.25)) say('Some classes ran while other processes used more than a quarter of a core (noise, cores): the worker\'s own CPU time is still its own, but rerun on a quiet machine for the record.');

  const result = {
    scenario: 'class',
    startedAt: started.toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? null, node: process.version, pinned: pin, loadAverageAtStart: loadavg() },
    options: { students, compare, compareRounds, curve, everythingMax, phoneEvery, openMics, seconds, settle, sinkSockets },
    pages: PAGES,
    video: {
      fps: FPS,
      gop: GOP,
      camera: video.camera.capture.layers.map((l) => ({ width: l.width, height: l.height, targetBitrate: l.bitrate })),
      screen: video.screen.capture.layers.map((l) => ({ width: l.width, height: l.height, targetBitrate: l.bitrate })),
    },
    ...figures,
    targets,
    rows,
  };
  const out = opt.out ?? join(here, 'results', `class-${started.toISOString().replaceAll(':', '-').replace(/\..+/, '')}.json`);
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  say(`results: ${out}`);
  if (opt.chart) {
    writeFileSync(opt.chart, classChart([result]));
    say(`chart: ${opt.chart}`);
  }
  if (opt.json) process.stdout.write(JSON.stringify(result) + '\n');
  done = true;
  process.exitCode = rows.some((r) => r.flags.length) ? 1 : 0;
}

try {
  await main();
} catch (err) {
  console.error((err as Error).stack ?? err);
  process.exitCode = 1;
}
