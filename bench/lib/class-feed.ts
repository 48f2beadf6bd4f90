import { createSocket, type Socket } from 'node:dgram';
import { LOOPBACK } from './media-systems.ts';
import { chromeVp8Descriptor, OPUS_TS_STEP, opusPacket, RTP_HEADER, VP8_PT, VP8_TS_STEP, writeRtpHeader } from './rtp.ts';
import type { Capture, Slot } from './vp8-capture.ts';

/**
 * The class bench's senders: each participant one UDP socket into its sending PlainTransport (comedia),
 * carrying its tracks as a browser would: a camera or a screen as the VP8 capture's simulcast layers
 * replayed with fresh headers, a microphone as Opus-shaped packets every 20 ms, or nothing while it is
 * muted (a page pauses a muted microphone at the source: zeroRtpOnPause).
 *
 * Dynacast: each video track sends only the layers up to the one RoomMedia last asked for
 * (`layers-wanted`), as the page does with mediasoup-client's setMaxSpatialLayer (Chromium then stops
 * encoding the layers above: test/browser/room.test.ts). A layer asked for again starts at its next key
 * frame, since a decoder cannot start on a delta frame (a browser sends a key frame at once; the capture
 * has one every 2 s).
 *
 * Every stream also gets an RTCP sender report each second while it sends, as a browser's does:
 * mediasoup moves a simulcast consumer from one layer to another only once both streams have had one
 * (it maps their timestamps onto each other through the reports' NTP times).
 */

export interface VideoSource {
  capture: Capture;
  slots: Slot[];
  loopMs: number;
}

export interface Sender {
  socket: Socket;
  errors: number;
}

export interface Track {
  kind: 'audio' | 'video';
  ssrcs: number[];
  /** audio: false while muted (nothing is sent) */
  sending: boolean;
  /** video: the top layer sent now (layers-wanted) */
  maxLayer: number;
  /** video: per layer, whether it is being sent (off until its next key frame after being asked for again) */
  live: boolean[];
  /** per layer, in the measurement window */
  packets: number[];
  bytes: number[];
  /** per layer, since the start (the sender reports' counts) */
  sentPackets: number[];
  sentOctets: number[];
  nextReport: number;
  sender: Sender;
  video: VideoSource | null;
  keyFrames: Set<number>[];
  seq: number[];
  tsBase: number;
  t0: number;
  next: number;
  loop: number;
  cursor: number;
}

const filler = Buffer.alloc(256, 0x5a);
const REPORT_MS = 1000;
/** Seconds from 1900 (NTP) to 1970 (Unix). */
const NTP_EPOCH = 2_208_988_800;

export class ClassFeed {
  readonly tracks: Track[] = [];
  readonly senders: Sender[] = [];
  readonly #clock: () => number;
  /** wall-clock ms at clock() 0, for the sender reports' NTP times */
  readonly #wallOffset: number;
  #w0 = Infinity;
  #w1 = Infinity;
  /** how late a packet left against its schedule, in the window (ms) */
  lateMax = 0;

  constructor(clock: () => number) {
    this.#clock = clock;
    this.#wallOffset = Date.now() - clock();
  }

  async sender(port: number): Promise<Sender> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, LOOPBACK, resolve));
    await new Promise<void>((resolve) => socket.connect(port, LOOPBACK, resolve));
    const s: Sender = { socket, errors: 0 };
    socket.on('error', () => s.errors++);
    // RTCP from the worker (receiver reports, key frame requests) is read and ignored
    socket.on('message', () => {});
    this.senders.push(s);
    return s;
  }

  /**
   * A track that starts now: video on frame 0 of its capture (a key frame on every layer) after
   * `phaseMs`, so the senders do not send in step; audio on its next 20 ms slot after `phaseMs`.
   */
  track(sender: Sender, o: { kind: 'audio' | 'video'; ssrcs: number[]; sending: boolean; video: VideoSource | null; phaseMs: number }): Track {
    const layers = o.ssrcs.length;
    const t: Track = {
      kind: o.kind,
      ssrcs: o.ssrcs,
      sending: o.sending,
      maxLayer: layers - 1,
      live: o.ssrcs.map(() => true),
      packets: o.ssrcs.map(() => 0),
      bytes: o.ssrcs.map(() => 0),
      sentPackets: o.ssrcs.map(() => 0),
      sentOctets: o.ssrcs.map(() => 0),
      nextReport: this.#clock() + o.phaseMs + 1000,
      sender,
      video: o.video,
      keyFrames: o.video ? o.video.capture.layers.map((l) => new Set(l.keyFrames)) : [],
      seq: o.ssrcs.map(() => (Math.random() * 0xffff) | 0),
      tsBase: (Math.random() * 0xffffffff) >>> 0,
      t0: this.#clock() + o.phaseMs,
      next: 0,
      loop: 0,
      cursor: 0,
    };
    if (o.video && o.video.capture.layers.length !== layers) throw new Error(`a ${layers}-layer track needs a capture of ${layers} layers`);
    this.tracks.push(t);
    return t;
  }

  /** layers-wanted: send layers 0 to `layer` (a layer above the track's top means all). */
  setMaxLayer(t: Track, layer: number): void {
    t.maxLayer = Math.max(0, Math.min(layer, t.ssrcs.length - 1));
  }

  setWindow(w0: number, w1: number): void {
    this.#w0 = w0;
    this.#w1 = w1;
    this.lateMax = 0;
    for (const t of this.tracks) {
      t.packets.fill(0);
      t.bytes.fill(0);
    }
  }

  tick(): void {
    const now = this.#clock();
    for (const t of this.tracks) {
      if (t.kind === 'audio') this.#audio(t, now);
      else this.#videoTick(t, now);
      if (now >= t.nextReport) this.#report(t, now);
    }
  }

  /** An RTCP sender report (RFC 3550, 6.4.1) for each stream of the track that is sending. */
  #report(t: Track, now: number): void {
    t.nextReport += REPORT_MS * Math.max(1, Math.ceil((now - t.nextReport) / REPORT_MS));
    const wallMs = this.#wallOffset + now;
    const seconds = Math.floor(wallMs / 1000);
    const fraction = Math.floor(((wallMs % 1000) / 1000) * 0x100000000);
    // the RTP timestamp of this instant on the track's media clock (frame or packet k is due at t0 + k steps)
    const rate = t.kind === 'audio' ? 48 : 90;
    const ts = (t.tsBase + Math.round((now - t.t0) * rate)) >>> 0;
    t.ssrcs.forEach((ssrc, layer) => {
      if (!t.sentPackets[layer] || (t.kind === 'video' && !t.live[layer]) || (t.kind === 'audio' && !t.sending)) return;
      const buf = Buffer.alloc(28);
      buf[0] = 0x80;
      buf[1] = 200;
      buf.writeUInt16BE(6, 2);
      buf.writeUInt32BE(ssrc >>> 0, 4);
      buf.writeUInt32BE((seconds + NTP_EPOCH) >>> 0, 8);
      buf.writeUInt32BE(fraction >>> 0, 12);
      buf.writeUInt32BE(ts, 16);
      buf.writeUInt32BE(t.sentPackets[layer]! >>> 0, 20);
      buf.writeUInt32BE(t.sentOctets[layer]! >>> 0, 24);
      t.sender.socket.send(buf);
    });
  }

  #count(t: Track, layer: number, bytes: number, at: number, due: number): void {
    t.sentPackets[layer]!++;
    t.sentOctets[layer]! += bytes - RTP_HEADER;
    if (at < this.#w0 || at >= this.#w1) return;
    t.packets[layer]!++;
    t.bytes[layer]! += bytes;
    this.lateMax = Math.max(this.lateMax, at - due);
  }

  #audio(t: Track, now: number): void {
    // bounded: at most 10 packets (200 ms) per track and tick; a longer stall skips ahead
    for (let n = 0; n < 10; n++) {
      const due = t.t0 + t.next * 20;
      if (due > now) return;
      const k = t.next++;
      if (!t.sending) continue;
      const seq = (t.seq[0]! = (t.seq[0]! + 1) & 0xffff);
      const buf = opusPacket(t.ssrcs[0]!, seq, (t.tsBase + k * OPUS_TS_STEP) >>> 0, filler);
      t.sender.socket.send(buf);
      this.#count(t, 0, buf.length, this.#clock(), due);
    }
    t.next = Math.max(t.next, Math.ceil((now - t.t0) / 20));
  }

  #videoTick(t: Track, now: number): void {
    const v = t.video!;
    // bounded: a tick sends at most one loop's worth of packets per track
    for (let n = 0; n < v.slots.length; n++) {
      const s = v.slots[t.cursor]!;
      const due = t.t0 + t.loop * v.loopMs + s.at;
      if (due > now) return;
      const g = t.loop * v.capture.frames + s.frame;
      if (++t.cursor === v.slots.length) {
        t.cursor = 0;
        t.loop++;
      }
      if (s.layer > t.maxLayer) {
        t.live[s.layer] = false;
        continue;
      }
      if (!t.live[s.layer]) {
        if (s.chunk !== 0 || !t.keyFrames[s.layer]!.has(s.frame)) continue;
        t.live[s.layer] = true;
      }
      const chunk = v.capture.layers[s.layer]!.frames[s.frame]![s.chunk]!;
      const buf = Buffer.allocUnsafe(RTP_HEADER + 6 + chunk.data.length);
      const seq = (t.seq[s.layer]! = (t.seq[s.layer]! + 1) & 0xffff);
      writeRtpHeader(buf, { marker: s.last, payloadType: VP8_PT, seq, timestamp: (t.tsBase + g * VP8_TS_STEP) >>> 0, ssrc: t.ssrcs[s.layer]! });
      chromeVp8Descriptor(chunk.start, g & 0x7fff, g & 0xff).copy(buf, RTP_HEADER);
      chunk.data.copy(buf, RTP_HEADER + 6);
      t.sender.socket.send(buf);
      this.#count(t, s.layer, buf.length, this.#clock(), due);
    }
  }

  close(): void {
    for (const s of this.senders) s.socket.close();
  }
}
