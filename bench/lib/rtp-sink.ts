import { createSocket, type Socket } from 'node:dgram';
import { readdirSync, readFileSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { sharedClock } from './rtp.ts';

/**
 * The UDP sink of the media bench: sockets on 127.0.0.1 that consumers' PlainTransports send to, read
 * in a worker thread of their own so that receiving 100,000+ packets a second does not delay the
 * generator's timers on the main thread (both threads share the load core).
 *
 * The generator writes, for every frame it sends (an audio packet is a frame of one packet), the time
 * its first and its last packet left, keyed by the frame's RTP timestamp, into memory shared with the
 * sink. mediasoup forwards a simple consumer's RTP timestamp unchanged, and a simulcast consumer's too
 * while it stays on the spatial layer it started with (its timestamp reference), so for every packet
 * a consumer sends, the sink finds the frame it came from: it counts the packet when the frame's first
 * packet was sent inside the measurement window, and takes a latency sample (receipt minus the send
 * time of the same packet) from every audio packet and from the last packet of every video frame (the
 * one with the marker bit).
 */

/** Producer streams (an audio producer, or a video producer's top layer) the shared tables hold. */
export const MAX_STREAMS = 64;
/** Frames remembered per stream: 41 s of audio at 50 a second, 68 s of video at 30. */
const RING = 2048;
const MAX_CONSUMERS = 32_768;
/** Latency histogram: 10 µs buckets up to 200 ms, then one overflow bucket. */
const BUCKET_MS = 0.01;
const BUCKETS = 20_001;

interface Shared {
  /** [first, last] send time (ms, sharedClock) per stream and ring slot */
  times: Float64Array;
  /** the RTP timestamp each slot holds; written last, with Atomics */
  tags: Uint32Array;
  /** per stream: base RTP timestamp, timestamp step per frame */
  meta: Uint32Array;
  /** [w0, w1): frames whose first packet left in it count */
  window: Float64Array;
}

function sharedTables(sab?: SharedArrayBuffer[]): { bufs: SharedArrayBuffer[]; t: Shared } {
  const bufs = sab ?? [
    new SharedArrayBuffer(MAX_STREAMS * RING * 2 * 8),
    new SharedArrayBuffer(MAX_STREAMS * RING * 4),
    new SharedArrayBuffer(MAX_STREAMS * 2 * 4),
    new SharedArrayBuffer(2 * 8),
  ];
  return { bufs, t: { times: new Float64Array(bufs[0]!), tags: new Uint32Array(bufs[1]!), meta: new Uint32Array(bufs[2]!), window: new Float64Array(bufs[3]!) } };
}

export interface SinkCounts {
  /** packets counted (their frame's first packet left inside the window) */
  received: number;
  /** per consumer index, for the consumers asked about */
  perConsumer: number[];
  /** packets from an SSRC the sink was not told about */
  unknown: number;
  /** packets whose timestamp matched no frame in the tables (a rewritten timestamp, or older than the ring) */
  unmatched: number;
  /** RTCP (sender reports) */
  rtcp: number;
  /** latency histogram, BUCKET_MS wide */
  hist: number[];
  latencySamples: number;
}

type Command =
  | { id: number; type: 'bind'; sockets: number; rcvbuf: number }
  | { id: number; type: 'consumers'; list: { ssrc: number; index: number; stream: number; audio: boolean }[] }
  | { id: number; type: 'forget'; ssrcs: number[] }
  | { id: number; type: 'reset' }
  | { id: number; type: 'collect'; consumers: number[] }
  | { id: number; type: 'close' };

// ---- the thread -------------------------------------------------------------------------------------

function sinkThread(): void {
  const { t } = sharedTables(workerData.bufs as SharedArrayBuffer[]);
  const clock = sharedClock();
  const sockets: Socket[] = [];
  /** ssrc to consumer index; streamOf and audioOf by consumer index */
  const consumerOf = new Map<number, number>();
  const streamOf = new Int32Array(MAX_CONSUMERS);
  const audioOf = new Uint8Array(MAX_CONSUMERS);
  const perConsumer = new Float64Array(MAX_CONSUMERS);
  const hist = new Uint32Array(BUCKETS);
  let received = 0;
  let unknown = 0;
  let unmatched = 0;
  let rtcp = 0;
  let latencySamples = 0;
  const { times, tags, meta, window } = t;

  const onPacket = (buf: Buffer): void => {
    const now = clock();
    if (buf.length < 12) return;
    const b1 = buf[1]!;
    if (b1 >= 192 && b1 <= 223) {
      rtcp++;
      return;
    }
    const c = consumerOf.get(buf.readUInt32BE(8));
    if (c === undefined) {
      unknown++;
      return;
    }
    const s = streamOf[c]!;
    const ts = buf.readUInt32BE(4);
    const idx = (((ts - meta[s * 2]!) >>> 0) / meta[s * 2 + 1]!) | 0;
    const slot = s * RING + (idx & (RING - 1));
    if (Atomics.load(tags, slot) !== ts) {
      unmatched++;
      return;
    }
    const first = times[slot * 2]!;
    if (first < window[0]! || first >= window[1]!) return;
    received++;
    perConsumer[c]!++;
    if (audioOf[c] || b1 & 0x80) {
      const lat = now - times[slot * 2 + 1]!;
      hist[lat <= 0 ? 0 : Math.min(BUCKETS - 1, Math.floor(lat / BUCKET_MS))]!++;
      latencySamples++;
    }
  };

  const reply = (id: number, value: unknown) => parentPort!.postMessage({ id, value });
  parentPort!.on('message', (m: Command) => {
    switch (m.type) {
      case 'bind': {
        let bound = 0;
        const ports: number[] = [];
        for (let i = 0; i < m.sockets; i++) {
          const s = createSocket({ type: 'udp4', recvBufferSize: m.rcvbuf });
          s.on('message', onPacket);
          s.bind(0, '127.0.0.1', () => {
            ports[i] = s.address().port;
            if (++bound === m.sockets) reply(m.id, { ports, rcvbuf: s.getRecvBufferSize() });
          });
          sockets.push(s);
        }
        return;
      }
      case 'consumers':
        for (const c of m.list) {
          consumerOf.set(c.ssrc, c.index);
          streamOf[c.index] = c.stream;
          audioOf[c.index] = c.audio ? 1 : 0;
        }
        return reply(m.id, consumerOf.size);
      case 'forget':
        for (const ssrc of m.ssrcs) consumerOf.delete(ssrc);
        return reply(m.id, consumerOf.size);
      case 'reset':
        received = unknown = unmatched = rtcp = latencySamples = 0;
        perConsumer.fill(0);
        hist.fill(0);
        return reply(m.id, null);
      case 'collect':
        return reply(m.id, {
          received,
          perConsumer: m.consumers.map((i) => perConsumer[i]!),
          unknown,
          unmatched,
          rtcp,
          hist: Array.from(hist),
          latencySamples,
        } satisfies SinkCounts);
      case 'close':
        for (const s of sockets) s.close();
        reply(m.id, null);
        parentPort!.close();
        return;
    }
  });
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === 'rtp-sink') sinkThread();

// ---- the main thread's side ----------------------------------------------------------------------------

const threadIds = (): Set<string> => {
  try {
    return new Set(readdirSync('/proc/self/task'));
  } catch {
    return new Set();
  }
};

export class RtpSink {
  ports: number[] = [];
  rcvbuf = 0;
  /** the sink thread's kernel task ids, for its CPU time (empty where /proc is missing) */
  readonly tids: string[];
  readonly #worker: Worker;
  readonly #t: Shared;
  #next = 1;
  readonly #pending = new Map<number, (v: unknown) => void>();

  private constructor(worker: Worker, t: Shared, tids: string[]) {
    this.#worker = worker;
    this.#t = t;
    this.tids = tids;
    worker.on('message', (m: { id: number; value: unknown }) => {
      this.#pending.get(m.id)?.(m.value);
      this.#pending.delete(m.id);
    });
  }

  /** `sockets` sockets on 127.0.0.1, each asking for a receive buffer of `rcvbuf` bytes (the kernel caps it at net.core.rmem_max). */
  static async start(sockets: number, rcvbuf: number): Promise<RtpSink> {
    const { bufs, t } = sharedTables();
    const before = threadIds();
    // Node 20 starts a worker's main module before `--import tsx` has registered in it, so the thread
    // registers tsx itself and then imports this file (messages posted meanwhile wait in its port).
    const boot = `import('tsx/esm/api').then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); })`;
    const worker = new Worker(boot, { eval: true, execArgv: [], workerData: { role: 'rtp-sink', bufs } });
    await new Promise<void>((resolve, reject) => {
      worker.once('online', resolve);
      worker.once('error', reject);
    });
    const sink = new RtpSink(worker, t, [...threadIds()].filter((id) => !before.has(id)));
    const bound = (await sink.#call({ type: 'bind', sockets, rcvbuf })) as { ports: number[]; rcvbuf: number };
    sink.ports = bound.ports;
    sink.rcvbuf = bound.rcvbuf;
    return sink;
  }

  #call(m: Record<string, unknown> & { type: Command['type'] }): Promise<unknown> {
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      this.#worker.postMessage({ ...m, id });
    });
  }

  /** The generator's side of the shared tables: a stream's RTP timestamp base and step per frame. */
  defineStream(stream: number, baseTs: number, tsStep: number): void {
    if (stream >= MAX_STREAMS) throw new Error(`at most ${MAX_STREAMS} producer streams`);
    this.#t.meta[stream * 2] = baseTs >>> 0;
    this.#t.meta[stream * 2 + 1] = tsStep;
  }

  /** A frame's first packet is about to leave (called before it is sent). */
  frameStart(stream: number, frameIndex: number, ts: number, at: number): void {
    const slot = stream * RING + (frameIndex & (RING - 1));
    this.#t.times[slot * 2] = at;
    this.#t.times[slot * 2 + 1] = at;
    Atomics.store(this.#t.tags, slot, ts >>> 0);
  }

  /** A frame's last packet is about to leave. */
  frameEnd(stream: number, frameIndex: number, at: number): void {
    this.#t.times[(stream * RING + (frameIndex & (RING - 1))) * 2 + 1] = at;
  }

  setWindow(w0: number, w1: number): void {
    this.#t.window[0] = w0;
    this.#t.window[1] = w1;
  }

  addConsumers(list: { ssrc: number; index: number; stream: number; audio: boolean }[]): Promise<unknown> {
    for (const c of list) if (c.index >= MAX_CONSUMERS) throw new Error(`at most ${MAX_CONSUMERS} consumers`);
    return this.#call({ type: 'consumers', list });
  }

  forget(ssrcs: number[]): Promise<unknown> {
    return this.#call({ type: 'forget', ssrcs });
  }

  reset(): Promise<unknown> {
    return this.#call({ type: 'reset' });
  }

  collect(consumers: number[]): Promise<SinkCounts> {
    return this.#call({ type: 'collect', consumers }) as Promise<SinkCounts>;
  }

  /** CPU ticks (user + system) of the sink thread so far. */
  cpuTicks(): number {
    let n = 0;
    for (const tid of this.tids) {
      try {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        n += Number(f[11]) + Number(f[12]);
      } catch {
        // the thread is gone
      }
    }
    return n;
  }

  async close(): Promise<void> {
    await Promise.race([this.#call({ type: 'close' }), new Promise((r) => setTimeout(r, 1000))]);
    await this.#worker.terminate();
  }
}

/** Percentile (0..100) of a histogram from `SinkCounts.hist`, in ms; null without samples. */
export function histPercentile(hist: number[], p: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (!total) return null;
  const want = Math.ceil((p / 100) * total);
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    seen += hist[i]!;
    if (seen >= want) return (i + 0.5) * BUCKET_MS;
  }
  return (hist.length - 0.5) * BUCKET_MS;
}

/** Adds histograms (for a summary over rounds). */
export const addHist = (a: number[], b: number[]): number[] => a.map((x, i) => x + (b[i] ?? 0));
