/**
 * The RTP side of reading a track file back (depacketize.ts): the header, the order of packets by
 * sequence number, and the clock that turns RTP timestamps into recording time.
 */

export interface RtpPacket {
  seq: number;
  timestamp: number;
  ssrc: number;
  marker: boolean;
  payloadType: number;
  /** Without the header, the extensions and the padding. */
  payload: Buffer;
}

/** The packet, or null for anything that is not RTP version 2 or is cut short. */
export function parseRtp(buf: Buffer): RtpPacket | null {
  if (buf.length < 12 || buf[0]! >> 6 !== 2) return null;
  const padding = (buf[0]! & 0x20) !== 0;
  const extension = (buf[0]! & 0x10) !== 0;
  let offset = 12 + (buf[0]! & 0x0f) * 4;
  if (extension) {
    if (offset + 4 > buf.length) return null;
    offset += 4 + buf.readUInt16BE(offset + 2) * 4;
  }
  let end = buf.length;
  if (padding) end -= buf[buf.length - 1]!;
  if (offset > end) return null;
  return {
    seq: buf.readUInt16BE(2),
    timestamp: buf.readUInt32BE(4),
    ssrc: buf.readUInt32BE(8),
    marker: (buf[1]! & 0x80) !== 0,
    payloadType: buf[1]! & 0x7f,
    payload: buf.subarray(offset, end),
  };
}

export interface Ordered<T> {
  /** The record's arrival, ms of recording time. */
  at: number;
  packet: RtpPacket;
  extra: T;
  /** Packets were lost just before this one, or the stream started over. */
  gap: boolean;
  /** The stream started over here (the first packet, a new SSRC, a jump in sequence numbers). */
  restart: boolean;
}

/**
 * Puts packets back in sequence order within a window of `window` packets, through the 16-bit wrap,
 * and drops duplicates and packets that come after their turn has passed. A packet missing when the
 * window is full is taken as lost: the next one out carries `gap`.
 */
export class SeqOrder<T = undefined> {
  readonly #window: number;
  #held: (Ordered<T> & { ext: number })[] = [];
  #highest = -1;
  #released = -1;
  #ssrc = -1;
  #restarted = false;

  constructor(window = 64) {
    this.#window = window;
  }

  push(at: number, packet: RtpPacket, extra: T): Ordered<T>[] {
    const out: Ordered<T>[] = [];
    let ext: number;
    if (this.#highest < 0 || packet.ssrc !== this.#ssrc) {
      out.push(...this.flush());
      this.#restart(packet);
      ext = this.#highest;
    } else {
      const delta = ((packet.seq - (this.#highest & 0xffff) + 0x18000) & 0xffff) - 0x8000;
      // further than any reordering goes: the sender started over
      if (delta > 3000 || delta < -3000) {
        out.push(...this.flush());
        this.#restart(packet);
        ext = this.#highest;
      } else {
        ext = this.#highest + delta;
        if (ext <= this.#released || this.#held.some((h) => h.ext === ext)) return out;
        if (ext > this.#highest) this.#highest = ext;
      }
    }
    const item = { at, packet, extra, gap: false, restart: false, ext };
    let i = this.#held.length;
    while (i > 0 && this.#held[i - 1]!.ext > ext) i--;
    this.#held.splice(i, 0, item);
    while (this.#held.length && (this.#held[0]!.ext === this.#released + 1 || this.#held.length > this.#window)) {
      out.push(this.#release());
    }
    return out;
  }

  /** What is still held, in order (at the end of the file). */
  flush(): Ordered<T>[] {
    const out: Ordered<T>[] = [];
    while (this.#held.length) out.push(this.#release());
    return out;
  }

  #restart(packet: RtpPacket): void {
    // 65536 up, so that the first packets can be held back by a reordered one with a lower number
    this.#highest = packet.seq + 65536;
    this.#released = this.#highest - 1;
    this.#ssrc = packet.ssrc;
    this.#restarted = true;
  }

  #release(): Ordered<T> {
    const h = this.#held.shift()!;
    const restart = this.#restarted;
    this.#restarted = false;
    const gap = h.ext !== this.#released + 1 || restart;
    this.#released = h.ext;
    return { at: h.at, packet: h.packet, extra: h.extra, gap, restart };
  }
}

/**
 * Recording time from RTP timestamps. Within a continuous run the timestamps are trusted (they do not
 * jitter); where the arrival gap and the timestamp gap between two consecutive packets disagree by more
 * than `toleranceMs` (a microphone muted at the source, a paused camera, a recording pause that left
 * the timestamps running, a sender that started over), the run is re-anchored on the arrival time.
 */
export class RtpClock {
  readonly #rate: number;
  readonly #tolerance: number;
  #anchorAt = 0;
  #anchorTs = 0;
  #prevAt = 0;
  #prevTs = 0;
  #prevRaw = 0;
  #started = false;

  constructor(clockRate: number, toleranceMs = 500) {
    this.#rate = clockRate;
    this.#tolerance = toleranceMs;
  }

  /** The packet's time in recording time (ms); `restart` re-anchors whatever the gaps say. */
  time(at: number, timestamp: number, restart = false): number {
    if (!this.#started || restart) {
      this.#started = true;
      this.#prevRaw = timestamp;
      this.#prevAt = at;
      this.#prevTs = 0;
      this.#anchorAt = at;
      this.#anchorTs = 0;
      return at;
    }
    const ts = this.#prevTs + ((timestamp - this.#prevRaw) | 0);
    const tsGap = ((ts - this.#prevTs) * 1000) / this.#rate;
    if (Math.abs(at - this.#prevAt - tsGap) > this.#tolerance) {
      this.#anchorAt = at;
      this.#anchorTs = ts;
    }
    this.#prevRaw = timestamp;
    this.#prevTs = ts;
    this.#prevAt = at;
    return this.#anchorAt + ((ts - this.#anchorTs) * 1000) / this.#rate;
  }
}
