import { createSocket, type Socket } from 'node:dgram';
import { LOOPBACK, type Kind } from './media-systems.ts';
import { chromeVp8Descriptor, OPUS_TS_STEP, opusPacket, RTP_HEADER, VP8_PT, VP8_TS_STEP, writeRtpHeader } from './rtp.ts';
import type { RtpSink } from './rtp-sink.ts';
import type { Capture, Slot } from './vp8-capture.ts';

/**
 * The media bench's load generator: RTP from this process into the producers' comedia
 * PlainTransports, audio as Opus-shaped packets every 20 ms and video as the VP8 capture's three
 * layers replayed with fresh headers. Every packet is due at a time fixed from the feed's epoch, so a
 * late tick catches up instead of drifting, and the packets the consumers should forward in the
 * measurement window are counted as they are sent.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FeedProducer {
  kind: Kind;
  socket: Socket;
  /** the sink's stream id of what consumers forward (the audio stream, or the top video layer) */
  stream: number;
  ssrcs: number[];
  seq: number[];
  tsBase: number;
  phaseMs: number;
  /** audio: next packet index; video: loop index and slot cursor */
  next: number;
  loop: number;
  cursor: number;
  /** video: first send time of the top layer's current frame */
  frameFirst: number;
  /** packets of the forwarded stream whose frame started inside the window */
  expected: number;
  sent: number;
  /** when the first packet after the last activate() left (Infinity until then) */
  startedAt: number;
  errors: number;
}

const filler = Buffer.alloc(256, 0x5a);

export class Feed {
  readonly producers: FeedProducer[] = [];
  active = false;
  readonly #clock: () => number;
  readonly #epoch: number;
  #w0 = Infinity;
  #w1 = Infinity;
  /** how late packets left against their schedule, in the window */
  lateMax = 0;
  #video: { capture: Capture; slots: Slot[]; loopMs: number } | null;

  /** `clock` is the one the sink's thread shares (lib/rtp.ts), so the send times it is told compare with its receive times. */
  constructor(clock: () => number, video: { capture: Capture; slots: Slot[]; loopMs: number } | null) {
    this.#clock = clock;
    this.#epoch = clock();
    this.#video = video;
  }

  async add(kind: Kind, stream: number, ssrcs: number[], port: number, index: number, of: number): Promise<FeedProducer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, LOOPBACK, resolve));
    await new Promise<void>((resolve) => socket.connect(port, LOOPBACK, resolve));
    const p: FeedProducer = {
      kind,
      socket,
      stream,
      ssrcs,
      seq: ssrcs.map(() => (Math.random() * 0xffff) | 0),
      tsBase: (Math.random() * 0xffffffff) >>> 0,
      // spread over a packet (audio) or a frame (video) interval so the producers do not send in step
      phaseMs: (index / of) * (kind === 'audio' ? 20 : 1000 / this.#video!.capture.fps),
      next: 0,
      loop: 0,
      cursor: 0,
      frameFirst: -Infinity,
      expected: 0,
      sent: 0,
      startedAt: Infinity,
      errors: 0,
    };
    socket.on('error', () => p.errors++);
    // RTCP from the worker (receiver reports, key frame requests) is read and ignored
    socket.on('message', () => {});
    this.producers.push(p);
    return p;
  }

  /** Audio resumes at the current 20 ms slot; video at the next loop start, which is a key frame on every layer. */
  activate(): void {
    const now = this.#clock();
    for (const p of this.producers) {
      p.startedAt = Infinity;
      if (p.kind === 'audio') p.next = Math.max(p.next, Math.ceil((now - this.#epoch - p.phaseMs) / 20));
      else {
        p.loop = Math.max(p.loop + (p.cursor ? 1 : 0), Math.ceil((now - this.#epoch - p.phaseMs) / this.#video!.loopMs));
        p.cursor = 0;
      }
    }
    this.active = true;
  }

  /** Resolves once every producer has been sending for `ms` since the last activate(). */
  async running(ms: number): Promise<void> {
    for (;;) {
      const since = Math.max(...this.producers.map((p) => p.startedAt));
      if (since !== Infinity && this.#clock() >= since + ms) return;
      await sleep(since === Infinity ? 20 : since + ms - this.#clock());
    }
  }

  deactivate(): void {
    this.active = false;
  }

  setWindow(w0: number, w1: number): void {
    this.#w0 = w0;
    this.#w1 = w1;
    this.lateMax = 0;
    for (const p of this.producers) p.expected = 0;
  }

  tick(sink: RtpSink): void {
    if (!this.active) return;
    const now = this.#clock();
    for (const p of this.producers) {
      if (p.kind === 'audio') this.#audio(p, now, sink);
      else this.#videoTick(p, now, sink);
    }
  }

  #audio(p: FeedProducer, now: number, sink: RtpSink): void {
    // bounded: at most 10 packets (200 ms) per producer and tick; a longer stall skips ahead
    for (let n = 0; n < 10; n++) {
      const due = this.#epoch + p.phaseMs + p.next * 20;
      if (due > now) return;
      const k = p.next++;
      const ts = (p.tsBase + k * OPUS_TS_STEP) >>> 0;
      const seq = (p.seq[0]! = (p.seq[0]! + 1) & 0xffff);
      const buf = opusPacket(p.ssrcs[0]!, seq, ts, filler);
      const at = this.#clock();
      sink.frameStart(p.stream, k, ts, at);
      if (at >= this.#w0 && at < this.#w1) {
        p.expected++;
        this.lateMax = Math.max(this.lateMax, at - due);
      }
      p.socket.send(buf);
      p.sent++;
      if (p.startedAt === Infinity) p.startedAt = at;
    }
    p.next = Math.max(p.next, Math.ceil((now - this.#epoch - p.phaseMs) / 20));
  }

  #videoTick(p: FeedProducer, now: number, sink: RtpSink): void {
    const v = this.#video!;
    const top = v.capture.layers.length - 1;
    // bounded: a tick sends at most one loop's worth of packets per producer
    for (let n = 0; n < v.slots.length; n++) {
      const s = v.slots[p.cursor]!;
      const due = this.#epoch + p.phaseMs + p.loop * v.loopMs + s.at;
      if (due > now) return;
      const g = p.loop * v.capture.frames + s.frame;
      const ts = (p.tsBase + g * VP8_TS_STEP) >>> 0;
      const chunk = v.capture.layers[s.layer]!.frames[s.frame]![s.chunk]!;
      const buf = Buffer.allocUnsafe(RTP_HEADER + 6 + chunk.data.length);
      const seq = (p.seq[s.layer]! = (p.seq[s.layer]! + 1) & 0xffff);
      writeRtpHeader(buf, { marker: s.last, payloadType: VP8_PT, seq, timestamp: ts, ssrc: p.ssrcs[s.layer]! });
      chromeVp8Descriptor(chunk.start, g & 0x7fff, g & 0xff).copy(buf, RTP_HEADER);
      chunk.data.copy(buf, RTP_HEADER + 6);
      const at = this.#clock();
      if (s.layer === top) {
        if (s.chunk === 0) {
          p.frameFirst = at;
          sink.frameStart(p.stream, g, ts, at);
        }
        if (s.last) sink.frameEnd(p.stream, g, at);
        if (p.frameFirst >= this.#w0 && p.frameFirst < this.#w1) {
          p.expected++;
          this.lateMax = Math.max(this.lateMax, at - due);
        }
      }
      p.socket.send(buf);
      p.sent++;
      if (p.startedAt === Infinity) p.startedAt = at;
      if (++p.cursor === v.slots.length) {
        p.cursor = 0;
        p.loop++;
      }
    }
  }

  close(): void {
    for (const p of this.producers) p.socket.close();
  }
}
