import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import * as mediasoup from 'mediasoup';
import type { PlainTransport } from 'mediasoup/node/lib/PlainTransport.js';
import type { Router } from 'mediasoup/node/lib/Router.js';
import type { Transport } from 'mediasoup/node/lib/Transport.js';
import type { Worker as MsWorker } from 'mediasoup/node/lib/Worker.js';
import { readRecords, type SegmentManifest } from '../../media/recording/format.ts';
import { CAMERA_ENCODINGS, SCREEN_ENCODINGS } from '../../src/core/room-protocol.ts';
import { ClassFeed, type VideoSource } from './class-feed.ts';
import { ClassRoom } from './class-room.ts';
import { ClassSink } from './class-sink.ts';
import { snapshot, usage } from './cpu.ts';
import { consumerCapabilities } from './media-systems.ts';
import { median } from './report.ts';
import { sharedClock, sumDrops, udpDrops } from './rtp.ts';
import { captureVp8Simulcast, replaySchedule } from './vp8-capture.ts';

/**
 * What capturing a recording costs the media node (media/recording/recorder.ts): a class as the class
 * bench builds it (lib/class-room.ts: one worker, RoomMedia, a teacher with a camera, a screen and a
 * microphone, students with a camera and a microphone, everyone receiving what a 16-tile laptop or
 * phone page shows), measured over steady windows with `RoomMedia.startRecording` into a folder on
 * disk and without, alternating in the same room. The recording's cost is what the worker spends on
 * the recorder's consumers and PlainTransport, and what this process spends receiving its UDP and
 * writing the files; this process also runs the senders (the same packets either way, bar the layers
 * the recorder asks for) and the receivers' sink thread, whose CPU is left out.
 */

export interface CaptureOptions {
  /** participants, the teacher included; every one sends a camera */
  room: number;
  /** students whose microphone is open (the teacher's always is) */
  openMics: number;
  phoneEvery: number;
  rounds: number;
  warmupS: number;
  windowS: number;
  /** the worker on core 0, this process on core 1 */
  pin: boolean;
  /** the recorder's consumers as recorder.ts makes them today, with the router's whole capabilities (watchRecorder) */
  asIs: boolean;
  /** where the recordings are written (one folder per recorded window) */
  dir: string;
  say: (s: string) => void;
}

export interface CaptureWindow {
  round: number;
  recorded: boolean;
  /** CPU seconds per wall second: the worker; this process without the sink thread; every other process */
  worker: number;
  node: number;
  sink: number;
  other: number;
  /** sent into the worker by the senders, Mbit/s and packets/s (the recorder raises the layers some of them send) */
  ingressMbps: number;
  ingressPacketsPerSecond: number;
  /** video producers by the top layer their senders are asked for (dynacast, at the window's end): camera r0..r2, screen r0..r1 */
  wanted: { camera: number[]; screen: number[] };
  /** RTP the worker forwarded to the receivers (SRTP, as to a browser), packets/s */
  outPacketsPerSecond: number;
  /** RTP loss at the receivers */
  loss: number;
  sinkDrops: number;
  workerInputDrops: number;
  /** recorded windows: what the worker sent the recorder, what it wrote, and datagrams its socket dropped */
  toRecorderMbps: number | null;
  writtenBytesPerSecond: number | null;
  writtenPacketsPerSecond: number | null;
  tracks: number | null;
  /** tracks of which nothing was written: participant/source */
  silentTracks: string[] | null;
  recorderDrops: number | null;
  load: number;
  flags: string[];
}

export interface CaptureResult {
  options: Omit<CaptureOptions, 'say' | 'dir'>;
  windows: CaptureWindow[];
  notRecorded: { worker: number; node: number };
  recorded: { worker: number; node: number; writtenBytesPerSecond: number; writtenPacketsPerSecond: number; toRecorderMbps: number; tracks: number };
  /**
   * The median over rounds of (recorded - not recorded), each round's two windows side by side; of the
   * rounds where neither window was flagged, when there are any (`rounds`: how many counted). The
   * medians above and below are of the same rounds' windows.
   */
  perRecordedRoom: { worker: number; node: number; total: number; rounds: number };
  rounds: { round: number; worker: number; node: number; total: number; clean: boolean }[];
  ingressMbps: { notRecorded: number; recorded: number };
  ingressPacketsPerSecond: { notRecorded: number; recorded: number };
  /**
   * At most this much of `perRecordedRoom.node` is the senders', not the media node's: the packets the
   * senders add for the layers the recorder asks for, at the CPU per packet this process spent in the
   * windows not recorded (everything it did there counted as sending, so an upper bound).
   */
  sendersShareMax: number;
  /**
   * The worker's share predicted rather than measured: its CPU per packet in and out in the windows not
   * recorded, times the packets recording adds (the layers the recorder asks for, coming in; what it
   * sends the recorder, going out). The measured difference is a small one between two large, noisy
   * figures; this one is steadier, and a little high (a packet to the recorder is not encrypted).
   */
  workerPredicted: number;
  workerMicrosecondsPerPacket: number;
}

const FPS = 30;
const GOP = 60;
const SENDERS_SETTLE_MS = 1200;
const TICKS = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The class bench's VP8 (its settings: 30 fps, a key frame every 2 s), encoded once. */
async function video(say: (s: string) => void): Promise<{ camera: VideoSource; screen: VideoSource }> {
  const capture = async (layers: { width: number; height: number; bitrate: number }[]): Promise<VideoSource> => {
    const c = await captureVp8Simulcast({ layers, fps: FPS, gop: GOP, frames: 120, warmupFrames: 60, timeoutMs: 180_000 });
    const sched = replaySchedule(c);
    return { capture: c, slots: sched.slots, loopMs: sched.loopMs };
  };
  const t0 = performance.now();
  const camera = await capture(CAMERA_ENCODINGS.map((e, i) => ({ width: [320, 640, 1280][i]!, height: [180, 360, 720][i]!, bitrate: e.maxBitrate })));
  const screen = await capture(SCREEN_ENCODINGS.map((e, i) => ({ width: [960, 1920][i]!, height: [540, 1080][i]!, bitrate: e.maxBitrate })));
  say(`  VP8 camera (3 layers) and screen (2 layers) encoded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { camera, screen };
}

/**
 * The recorder's PlainTransport, found through mediasoup's observers (RoomMedia keeps it private): its
 * stats say what the worker sent the recorder, its tuple the recorder socket's port.
 *
 * Unless `asIs`, its consumers are made with the router's capabilities less transport-cc and REMB, as
 * the bench's own receivers are (media-systems.ts, consumerCapabilities). recorder.ts consumes with the
 * router's whole capabilities, so the worker runs its bandwidth estimation on the recorder's transport;
 * the recorder never answers with feedback, the estimate stays near the initial outgoing bitrate, and
 * the simulcast consumers are held below the layers they prefer or given none (in the room of 30, 27
 * of the 31 videos, the screen among them, wrote nothing; `--recorder-as-is` shows it). Stripping the
 * feedback is the change recorder.ts needs; once it has it, this does nothing.
 */
function watchRecorder(asIs: boolean): { current: () => PlainTransport | null; stop: () => void } {
  let current: PlainTransport | null = null;
  const onTransport = (t: Transport) => {
    if (!t.appData.recorder) return;
    current = t as PlainTransport;
    if (asIs) return;
    const consume = t.consume.bind(t);
    t.consume = (options) => consume({ ...options, rtpCapabilities: consumerCapabilities(options.rtpCapabilities) });
  };
  const onRouter = (r: Router) => r.observer.on('newtransport', onTransport);
  const onWorker = (w: MsWorker) => w.observer.on('newrouter', onRouter);
  mediasoup.observer.on('newworker', onWorker);
  return { current: () => (current && !current.closed ? current : null), stop: () => mediasoup.observer.off('newworker', onWorker) };
}

/**
 * What the recording wrote while the window lasted (records whose arrival, in recording time, falls in
 * it), and the tracks of which it wrote nothing at all. Read after the stop: until its files are
 * closed, part of what the recorder received is still in its buffers.
 */
function written(dir: string, m: SegmentManifest, from: number, to: number): { bytes: number; packets: number; silent: string[] } {
  const [a, b] = [from - m.startedAt, to - m.startedAt];
  let bytes = 0;
  let packets = 0;
  for (const t of m.tracks) {
    for (const r of readRecords(readFileSync(join(dir, t.file)))) {
      if (r.at < a || r.at >= b) continue;
      packets++;
      bytes += 6 + r.packet.length; // the record's header: arrival and length
    }
  }
  return { bytes, packets, silent: m.tracks.filter((t) => t.firstPacketAt === null).map((t) => `${t.participantId}/${t.source}`) };
}

export async function measureCapture(o: CaptureOptions): Promise<CaptureResult> {
  const { say } = o;
  const clock = sharedClock();
  const media = await video(say);
  const sink = await ClassSink.start(4, 8 * 1024 * 1024);
  const feed = new ClassFeed(clock);
  const tick = setInterval(() => feed.tick(), 1);
  const recorder = watchRecorder(o.asIs);
  const room = await ClassRoom.open({ mode: 'view', students: o.room - 1, phoneEvery: o.phoneEvery, openMics: o.openMics, camera: media.camera, screen: media.screen, feed, sinkPorts: sink.ports, portMin: 46900 });
  const windows: CaptureWindow[] = [];
  try {
    if (o.pin) {
      execFileSync('taskset', ['-a', '-p', '-c', '0', String(room.workerPid)], { stdio: 'ignore' });
      execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
    }
    const t0 = clock();
    await room.send();
    await sleep(SENDERS_SETTLE_MS);
    await room.receive();
    say(`  the room: ${o.room} participants sending a camera (3 layers), ${o.openMics + 1} open microphones, the teacher's screen (2 layers), everyone receiving its page's view; set up in ${((clock() - t0) / 1000).toFixed(1)} s`);

    for (let round = 1; round <= o.rounds; round++) {
      // ABBA: the order flips each round, so a drift of the machine's load falls on both sides alike
      for (const recorded of round % 2 ? [false, true] : [true, false]) {
        const dir = join(o.dir, `round${round}`);
        if (recorded) {
          mkdirSync(dir, { recursive: true });
          await room.room.startRecording({ recordingId: `rec_bench_${round}`, segment: 0, dir, nodeId: 'bench', paused: false });
        }
        await sleep(o.warmupS * 1000);
        const transport = recorded ? recorder.current() : null;
        const recorderPort = transport?.tuple.remotePort ?? null;
        const sent0 = transport ? (await transport.getStats())[0]!.bytesSent : 0;
        await sink.reset();
        const w0 = clock();
        const wall0 = Date.now();
        feed.setWindow(w0, w0 + o.windowS * 1000);
        const d0 = udpDrops();
        const c0 = snapshot({ worker: room.workerPid, bench: process.pid });
        const p0 = process.cpuUsage();
        const s0 = sink.cpuTicks();
        await sleep(o.windowS * 1000);
        const p1 = process.cpuUsage(p0);
        const s1 = sink.cpuTicks();
        const c1 = snapshot({ worker: room.workerPid, bench: process.pid });
        const d1 = udpDrops();
        const wall = (clock() - w0) / 1000;
        const wall1 = Date.now();
        const sent1 = transport && !transport.closed ? (await transport.getStats())[0]!.bytesSent : sent0;
        const counts = await sink.collect();

        const cpu = usage(c0, c1);
        const sinkCores = (s1 - s0) / TICKS / wall;
        let lost = 0;
        let expected = 0;
        let out = 0;
        for (const s of counts.perSsrc) {
          out += s.packets;
          lost += Math.max(0, s.expected - s.packets);
          expected += s.expected;
        }
        let ingress = 0;
        let ingressPackets = 0;
        for (const t of feed.tracks) {
          ingress += t.bytes.reduce((a, b) => a + b, 0);
          ingressPackets += t.packets.reduce((a, b) => a + b, 0);
        }
        const w: CaptureWindow = {
          round,
          recorded,
          worker: cpu?.groups.worker ?? NaN,
          node: (p1.user + p1.system) / 1e6 / wall - sinkCores,
          sink: sinkCores,
          other: cpu ? cpu.other : NaN,
          ingressMbps: (ingress * 8) / wall / 1e6,
          ingressPacketsPerSecond: ingressPackets / wall,
          wanted: room.state().wanted,
          outPacketsPerSecond: out / wall,
          loss: expected ? lost / expected : NaN,
          sinkDrops: sumDrops(d1, sink.ports) - sumDrops(d0, sink.ports),
          workerInputDrops: sumDrops(d1, room.producerPorts) - sumDrops(d0, room.producerPorts),
          toRecorderMbps: transport ? ((sent1 - sent0) * 8) / wall / 1e6 : null,
          writtenBytesPerSecond: null,
          writtenPacketsPerSecond: null,
          tracks: null,
          silentTracks: null,
          recorderDrops: recorderPort === null ? null : (d1.get(recorderPort) ?? 0) - (d0.get(recorderPort) ?? 0),
          load: loadavg()[0]!,
          flags: [],
        };
        if (recorded) {
          const manifest = await room.room.stopRecording();
          if (!manifest || !transport) w.flags.push('nothing was recorded');
          else {
            const wr = written(dir, manifest, wall0, wall1);
            w.writtenBytesPerSecond = wr.bytes / wall;
            w.writtenPacketsPerSecond = wr.packets / wall;
            w.tracks = manifest.tracks.length;
            w.silentTracks = wr.silent;
          }
        }
        if (room.died) w.flags.push('the worker died');
        if (w.loss > 0.01) w.flags.push(`the receivers lost ${(w.loss * 100).toFixed(2)}% of packets`);
        if (w.sinkDrops) w.flags.push(`the sink's sockets dropped ${w.sinkDrops} datagrams`);
        // a few dropped datagrams (the worker descheduled by other work while a key frame arrives) cost it nothing measurable
        if (w.workerInputDrops > ingressPackets / 100) w.flags.push(`the worker's input sockets dropped ${w.workerInputDrops} datagrams`);
        const silentVideo = w.silentTracks?.filter((t) => !t.endsWith('/mic')) ?? [];
        if (silentVideo.length) w.flags.push(`nothing was written of ${silentVideo.length} video track(s)`);
        if (w.recorderDrops) w.flags.push(`the recorder's socket dropped ${w.recorderDrops} datagrams`);
        windows.push(w);
        say(describe(w));
      }
    }
  } finally {
    clearInterval(tick);
    recorder.stop();
    await room.room.stopRecording().catch(() => null);
    await room.close();
    feed.close();
    await sink.close();
  }

  const med = (ws: CaptureWindow[], f: (w: CaptureWindow) => number | null) => median(ws.map((w) => f(w) ?? NaN));
  const rounds = Array.from({ length: o.rounds }, (_, i) => {
    const [off, on] = [false, true].map((r) => windows.find((w) => w.round === i + 1 && w.recorded === r)!);
    // a worker that dropped input or lost packets was starved by the machine, and spent less than its load needs
    const clean = off!.flags.length === 0 && on!.flags.length === 0;
    return { round: i + 1, worker: on!.worker - off!.worker, node: on!.node - off!.node, total: on!.worker + on!.node - off!.worker - off!.node, clean };
  });
  const counted = rounds.some((r) => r.clean) ? rounds.filter((r) => r.clean) : rounds;
  const side = (recorded: boolean) => windows.filter((w) => w.recorded === recorded && counted.some((r) => r.round === w.round));
  const { say: _say, dir: _dir, ...options } = o;
  const pps = { off: med(side(false), (w) => w.ingressPacketsPerSecond), on: med(side(true), (w) => w.ingressPacketsPerSecond) };
  const perPacket = median(side(false).map((w) => w.worker / (w.ingressPacketsPerSecond + w.outPacketsPerSecond)));
  return {
    options,
    windows,
    notRecorded: { worker: med(side(false), (w) => w.worker), node: med(side(false), (w) => w.node) },
    recorded: {
      worker: med(side(true), (w) => w.worker),
      node: med(side(true), (w) => w.node),
      writtenBytesPerSecond: med(side(true), (w) => w.writtenBytesPerSecond),
      writtenPacketsPerSecond: med(side(true), (w) => w.writtenPacketsPerSecond),
      toRecorderMbps: med(side(true), (w) => w.toRecorderMbps),
      tracks: side(true)[0]?.tracks ?? 0,
    },
    perRecordedRoom: { worker: median(counted.map((r) => r.worker)), node: median(counted.map((r) => r.node)), total: median(counted.map((r) => r.total)), rounds: counted.length },
    rounds,
    ingressMbps: { notRecorded: med(side(false), (w) => w.ingressMbps), recorded: med(side(true), (w) => w.ingressMbps) },
    ingressPacketsPerSecond: { notRecorded: pps.off, recorded: pps.on },
    sendersShareMax: (med(side(false), (w) => w.node) / pps.off) * Math.max(0, pps.on - pps.off),
    workerPredicted: perPacket * (Math.max(0, pps.on - pps.off) + med(side(true), (w) => w.writtenPacketsPerSecond)),
    workerMicrosecondsPerPacket: perPacket * 1e6,
  };
}

function silent(tracks: string[]): string {
  const mics = tracks.filter((t) => t.endsWith('/mic')).length;
  const others = tracks.filter((t) => !t.endsWith('/mic'));
  return [`${mics} microphone(s)`, ...others].join(', ');
}

function describe(w: CaptureWindow): string {
  const rec = w.recorded
    ? `  to the recorder ${w.toRecorderMbps?.toFixed(2)} Mbit/s, written ${((w.writtenBytesPerSecond ?? NaN) / 1e3).toFixed(0)} kB/s (${Math.round(w.writtenPacketsPerSecond ?? NaN)} packets/s, ${w.tracks} tracks; nothing from ${silent(w.silentTracks ?? [])})`
    : '';
  return (
    `  round ${w.round} ${w.recorded ? 'recorded    ' : 'not recorded'}  worker ${w.worker.toFixed(3)}  node ${w.node.toFixed(3)}  (sink ${w.sink.toFixed(3)}, other processes ${w.other.toFixed(2)} cores)  out ${Math.round(w.outPacketsPerSecond)} packets/s  in ${w.ingressMbps.toFixed(1)} Mbit/s (${Math.round(w.ingressPacketsPerSecond)} packets/s; asked for camera r0/r1/r2 ${w.wanted.camera.join('/')}, screen r0/r1 ${w.wanted.screen.join('/')})  loss ${(w.loss * 100).toFixed(3)}%${rec}  load ${w.load.toFixed(2)}` +
    (w.flags.length ? `  FLAGGED: ${w.flags.join('; ')}` : '')
  );
}
