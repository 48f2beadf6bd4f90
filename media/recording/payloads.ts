import type { RtpPacket } from './rtp.ts';

/**
 * Video frames from RTP payloads: VP8 (RFC 7741) and H.264 (RFC 6184). Packets come in sequence order
 * (rtp.ts, SeqOrder), each with its time in recording time; a frame comes out whole or not at all, and
 * after a loss nothing comes out until the next key frame: a decoder given a frame whose references
 * are missing shows garbage until then anyway.
 */

export interface VideoFrame {
  /** Recording time (ms) of the frame's first packet, as the clock reads it. */
  time: number;
  data: Buffer;
  key: boolean;
  /** From a key frame's header where the codec's header says (VP8); 0 when not known. */
  width: number;
  height: number;
}

export interface Assembler {
  /** Packets in sequence order, each with its time; a completed frame when this packet ends one. */
  push(p: RtpPacket, time: number, gap: boolean): VideoFrame | null;
  dropped: number;
}

/** RFC 7741: the payload descriptor's length, and whether the packet starts a frame (S=1, PID 0). */
export function vp8Descriptor(payload: Buffer): { offset: number; start: boolean } | null {
  if (!payload.length) return null;
  const b0 = payload[0]!;
  let i = 1;
  if (b0 & 0x80) {
    if (payload.length < 2) return null;
    const x = payload[i++]!;
    if (x & 0x80) i += payload.length > i && payload[i]! & 0x80 ? 2 : 1; // picture ID, 7 or 15 bits
    if (x & 0x40) i++; // TL0PICIDX
    if (x & 0x30) i++; // TID/Y/KEYIDX
  }
  if (i >= payload.length) return null;
  return { offset: i, start: (b0 & 0x10) !== 0 && (b0 & 0x07) === 0 };
}

/** VP8 frames from RTP (RFC 7741): by timestamp, ending at the marker bit, whole or not at all. */
export class Vp8Depacketizer implements Assembler {
  #ts = -1;
  #time = 0;
  #parts: Buffer[] = [];
  #started = false;
  #broken = false;
  #needKey = true;
  dropped = 0;

  push(p: RtpPacket, time: number, gap: boolean): VideoFrame | null {
    if (p.timestamp !== this.#ts) {
      if (this.#parts.length) this.#drop(); // its marker never came
      this.#ts = p.timestamp;
      this.#time = time;
      this.#started = false;
      this.#broken = false;
    } else if (gap) this.#broken = true;
    // whole frames may have gone, and later frames refer to them
    if (gap) this.#needKey = true;
    const d = vp8Descriptor(p.payload);
    if (!d) this.#broken = true;
    else {
      if (d.start === this.#started) this.#broken = true; // a second start, or a frame whose start was lost
      this.#started = true;
      this.#parts.push(p.payload.subarray(d.offset));
    }
    if (!p.marker) return null;
    if (this.#broken) {
      this.#drop();
      return null;
    }
    const data = Buffer.concat(this.#parts);
    this.#parts = [];
    const key = (data[0]! & 0x01) === 0;
    if (!key && this.#needKey) {
      this.dropped++;
      return null;
    }
    this.#needKey = false;
    // a key frame's header: 3 bytes of frame tag, the start code 9d 01 2a, then 14-bit width and height
    const sized = key && data.length >= 10 && data[3] === 0x9d && data[4] === 0x01 && data[5] === 0x2a;
    return {
      time: this.#time,
      data,
      key,
      width: sized ? data.readUInt16LE(6) & 0x3fff : 0,
      height: sized ? data.readUInt16LE(8) & 0x3fff : 0,
    };
  }

  #drop(): void {
    this.#parts = [];
    this.#broken = false;
    this.#needKey = true;
    this.dropped++;
  }
}

const START_CODE = Buffer.from([0, 0, 0, 1]);

/**
 * H.264 access units from RTP (RFC 6184, packetization modes 0 and 1): single NAL units, STAP-A and
 * FU-A. STAP-B, MTAP and FU-B (interleaved mode) are not taken: their frames are dropped. The last
 * SPS and PPS seen are put before an IDR frame that came without them.
 */
export class H264Depacketizer implements Assembler {
  #ts = -1;
  #time = 0;
  #nals: Buffer[] = [];
  #fu: Buffer[] | null = null;
  #broken = false;
  #needKey = true;
  #sps: Buffer | null = null;
  #pps: Buffer | null = null;
  dropped = 0;
  /** Packets of a kind not taken (interleaved mode). */
  unsupported = 0;

  push(p: RtpPacket, time: number, gap: boolean): VideoFrame | null {
    if (p.timestamp !== this.#ts) {
      if (this.#nals.length || this.#fu) this.#drop();
      this.#ts = p.timestamp;
      this.#time = time;
      this.#broken = false;
    } else if (gap) this.#broken = true;
    if (gap) this.#needKey = true;
    const pl = p.payload;
    const type = pl.length ? pl[0]! & 0x1f : 0;
    if (type >= 1 && type <= 23) this.#nals.push(pl);
    else if (type === 24) {
      for (let i = 1; i + 2 <= pl.length; ) {
        const size = pl.readUInt16BE(i);
        i += 2;
        if (!size || i + size > pl.length) {
          this.#broken = true;
          break;
        }
        this.#nals.push(pl.subarray(i, i + size));
        i += size;
      }
    } else if (type === 28 && pl.length > 2) {
      const fu = pl[1]!;
      if (fu & 0x80) {
        if (this.#fu) this.#broken = true;
        this.#fu = [Buffer.from([(pl[0]! & 0xe0) | (fu & 0x1f)])];
      } else if (!this.#fu) this.#broken = true;
      if (this.#fu) {
        this.#fu.push(pl.subarray(2));
        if (fu & 0x40) {
          this.#nals.push(Buffer.concat(this.#fu));
          this.#fu = null;
        }
      }
    } else {
      this.#broken = true;
      if (type) this.unsupported++;
    }
    if (!p.marker) return null;
    if (this.#broken || this.#fu || !this.#nals.length) {
      this.#drop();
      return null;
    }
    const nals = this.#nals;
    this.#nals = [];
    const types = nals.map((n) => n[0]! & 0x1f);
    for (const n of nals) {
      if ((n[0]! & 0x1f) === 7) this.#sps = n;
      if ((n[0]! & 0x1f) === 8) this.#pps = n;
    }
    const key = types.includes(5);
    if (!key && this.#needKey) {
      this.dropped++;
      return null;
    }
    if (key && !types.includes(7) && this.#sps && this.#pps) nals.unshift(this.#sps, this.#pps);
    if (key && !nals.some((n) => (n[0]! & 0x1f) === 7)) {
      // nothing to decode it with yet
      this.dropped++;
      return null;
    }
    this.#needKey = false;
    return { time: this.#time, data: Buffer.concat(nals.flatMap((n) => [START_CODE, n])), key, width: 0, height: 0 };
  }

  #drop(): void {
    this.#nals = [];
    this.#fu = null;
    this.#broken = false;
    this.#needKey = true;
    this.dropped++;
  }
}
