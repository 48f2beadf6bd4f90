/**
 * The two containers a track is rewritten into for ffmpeg (depacketize.ts): Ogg Opus (RFC 7845) for
 * audio, IVF for video (VP8, and H.264 access units in Annex B, which ffmpeg's IVF reader takes by
 * their fourcc). Both carry timestamps, which the raw streams would not.
 */

const CRC_TABLE = new Uint32Array(256);
for (let i = 0; i < 256; i++) {
  let r = i << 24;
  for (let k = 0; k < 8; k++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
  CRC_TABLE[i] = r >>> 0;
}

/** Ogg's CRC-32: polynomial 0x04c11db7, not reflected, starting from 0. */
export function oggCrc(buf: Buffer): number {
  let crc = 0;
  for (let i = 0; i < buf.length; i++) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ buf[i]!) & 0xff]!) >>> 0;
  return crc;
}

export const OPUS_RATE = 48000;
const PAGE_SAMPLES = OPUS_RATE; // a page a second: few pages, and a seek stays close

/** 48 kHz samples in an Opus packet, from its TOC byte (RFC 6716, 3.1); 0 for a malformed packet. */
export function opusSamples(packet: Buffer): number {
  if (!packet.length) return 0;
  const toc = packet[0]!;
  const config = toc >> 3;
  const perFrame =
    config < 12 ? [480, 960, 1920, 2880][config & 3]! : config < 16 ? [480, 960][config & 1]! : [120, 240, 480, 960][config & 3]!;
  const code = toc & 3;
  const frames = code === 0 ? 1 : code < 3 ? 2 : packet.length > 1 ? packet[1]! & 0x3f : 0;
  const samples = frames * perFrame;
  return samples > 5760 ? 0 : samples; // at most 120 ms in a packet
}

/**
 * Opus packets that decode to silence: CELT-only fullband, one frame, with the silence flag set
 * (the bytes 0xff 0xfe raise it whatever the frame size). Sizes 20, 10, 5 and 2.5 ms, largest first.
 */
export const OPUS_SILENCE: readonly { samples: number; packet: Buffer }[] = [
  { samples: 960, packet: Buffer.from([31 << 3, 0xff, 0xfe]) },
  { samples: 480, packet: Buffer.from([30 << 3, 0xff, 0xfe]) },
  { samples: 240, packet: Buffer.from([29 << 3, 0xff, 0xfe]) },
  { samples: 120, packet: Buffer.from([28 << 3, 0xff, 0xfe]) },
];

/** Ogg Opus pages, handed to `write` as they fill. */
export class OggOpusWriter {
  readonly #write: (b: Buffer) => void;
  readonly #serial: number;
  #seq = 0;
  #granule = 0;
  #packets: Buffer[] = [];
  #lacing: number[] = [];
  #pageStart = 0;
  readonly #pageSamples: number;

  /** `pageSamples`: a page is written once it holds this many samples (a second; live captions take 20 ms). */
  constructor(write: (b: Buffer) => void, channels: 1 | 2, serial = 0x41554c41, pageSamples = PAGE_SAMPLES) {
    this.#write = write;
    this.#serial = serial;
    this.#pageSamples = pageSamples;
    const head = Buffer.alloc(19);
    head.write('OpusHead', 0, 'latin1');
    head[8] = 1; // version
    head[9] = channels;
    head.writeUInt16LE(0, 10); // pre-skip: RTP says nothing of the encoder's delay
    head.writeUInt32LE(OPUS_RATE, 12);
    head.writeInt16LE(0, 16); // output gain
    head[18] = 0; // channel mapping family 0: mono or stereo
    this.#page([head], 0x02, 0);
    const vendor = Buffer.from('aula', 'latin1');
    const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
    tags.write('OpusTags', 0, 'latin1');
    tags.writeUInt32LE(vendor.length, 8);
    vendor.copy(tags, 12);
    tags.writeUInt32LE(0, 12 + vendor.length);
    this.#page([tags], 0, 0);
  }

  /** Samples written so far (the granule position after the last packet). */
  get samples(): number {
    return this.#granule;
  }

  packet(data: Buffer, samples: number): void {
    const lacing = [...Array<number>(Math.floor(data.length / 255)).fill(255), data.length % 255];
    if (this.#lacing.length + lacing.length > 255) this.#flush(0);
    this.#packets.push(data);
    this.#lacing.push(...lacing);
    this.#granule += samples;
    if (this.#granule - this.#pageStart >= this.#pageSamples) this.#flush(0);
  }

  /** Silence up to `samples` (in steps of 2.5 ms: less than that is left out). */
  silenceTo(samples: number): void {
    for (const s of OPUS_SILENCE) while (samples - this.#granule >= s.samples) this.packet(s.packet, s.samples);
  }

  end(): void {
    this.#flush(0x04);
  }

  #flush(flags: number): void {
    if (!this.#packets.length && !(flags & 0x04)) return;
    this.#page(this.#packets, flags, this.#granule, this.#lacing);
    this.#packets = [];
    this.#lacing = [];
    this.#pageStart = this.#granule;
  }

  #page(packets: Buffer[], flags: number, granule: number, lacing?: number[]): void {
    const segs = lacing ?? packets.flatMap((p) => [...Array<number>(Math.floor(p.length / 255)).fill(255), p.length % 255]);
    const head = Buffer.alloc(27 + segs.length);
    head.write('OggS', 0, 'latin1');
    head[4] = 0;
    head[5] = flags;
    head.writeBigInt64LE(BigInt(granule), 6);
    head.writeUInt32LE(this.#serial, 14);
    head.writeUInt32LE(this.#seq++, 18);
    head[26] = segs.length;
    segs.forEach((s, i) => (head[27 + i] = s));
    const page = Buffer.concat([head, ...packets]);
    page.writeUInt32LE(oggCrc(page), 22);
    this.#write(page);
  }
}

export const IVF_HEADER = 32;

/** The 32-byte IVF file header; timestamps in ms (a time base of 1/1000). */
export function ivfHeader(fourcc: 'VP80' | 'H264', width: number, height: number, length: number): Buffer {
  const h = Buffer.alloc(IVF_HEADER);
  h.write('DKIF', 0, 'latin1');
  h.writeUInt16LE(0, 4);
  h.writeUInt16LE(IVF_HEADER, 6);
  h.write(fourcc, 8, 'latin1');
  h.writeUInt16LE(width, 12);
  h.writeUInt16LE(height, 14);
  h.writeUInt32LE(1000, 16); // time base denominator
  h.writeUInt32LE(1, 20); // numerator
  h.writeUInt32LE(length, 24);
  return h;
}

/** One IVF frame: its 12-byte header (size, timestamp in ms) and its data. */
export function ivfFrame(data: Buffer, ms: number): Buffer[] {
  const h = Buffer.alloc(12);
  h.writeUInt32LE(data.length, 0);
  h.writeBigUInt64LE(BigInt(Math.max(0, Math.round(ms))), 4);
  return [h, data];
}
