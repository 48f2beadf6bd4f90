import { readFileSync } from 'node:fs';

/**
 * RTP and RTCP as the media bench needs them: building the packets producers send, reading the few
 * header fields the sink needs (SRTP leaves the RTP header in clear, so a consumer's SSRC, sequence
 * number and timestamp are readable without keys), the VP8 payload descriptor, a clock that two
 * threads share, and the kernel's per-socket drop counters.
 */

export const RTP_HEADER = 12;

/**
 * Milliseconds on CLOCK_MONOTONIC. `performance.now()` is cheap but each thread has its own origin, so
 * every thread offsets it by its own reading of `process.hrtime` (the same clock in every thread):
 * send times written by the generator and receive times taken in the sink thread are then comparable.
 */
export function sharedClock(): () => number {
  let offset = 0;
  for (let i = 0; i < 5; i++) offset += Number(process.hrtime.bigint()) / 1e6 - performance.now();
  offset /= 5;
  return () => performance.now() + offset;
}

export interface RtpFields {
  marker: boolean;
  payloadType: number;
  seq: number;
  timestamp: number;
  ssrc: number;
}

export function writeRtpHeader(buf: Buffer, h: RtpFields, extension = false): void {
  buf[0] = extension ? 0x90 : 0x80;
  buf[1] = (h.marker ? 0x80 : 0) | (h.payloadType & 0x7f);
  buf.writeUInt16BE(h.seq & 0xffff, 2);
  buf.writeUInt32BE(h.timestamp >>> 0, 4);
  buf.writeUInt32BE(h.ssrc >>> 0, 8);
}

/** RTCP packet types are 192..223 in the second byte; no RTP payload type this bench uses comes near it, marker bit included. */
export const isRtcp = (buf: Buffer): boolean => buf.length >= 2 && buf[1]! >= 192 && buf[1]! <= 223;

export const AUDIO_LEVEL_URI = 'urn:ietf:params:rtp-hdrext:ssrc-audio-level';
/** The one-byte header extension id the synthetic producers put the audio level under. */
export const AUDIO_LEVEL_EXT_ID = 1;
export const OPUS_PT = 111;
/** 20 ms at 48 kHz */
export const OPUS_TS_STEP = 960;

/**
 * An opus-like packet: 20 ms, an audio-level header extension as browsers send (the room's active
 * speaker observer reads it), then a payload of 80 to 120 bytes whose first byte is a valid TOC
 * (config 15: hybrid fullband, 20 ms, one frame) and the rest filler. The length varies with the
 * sequence number so the stream is not one constant size.
 */
export function opusPacket(ssrc: number, seq: number, timestamp: number, filler: Buffer): Buffer {
  const payload = 80 + ((seq * 7919) % 41);
  const buf = Buffer.allocUnsafe(RTP_HEADER + 8 + payload);
  writeRtpHeader(buf, { marker: false, payloadType: OPUS_PT, seq, timestamp, ssrc }, true);
  // One-byte header extension (RFC 8285): 0xBEDE, one 32-bit word: id/len, the level, two pad bytes.
  buf.writeUInt16BE(0xbede, 12);
  buf.writeUInt16BE(1, 14);
  buf[16] = (AUDIO_LEVEL_EXT_ID << 4) | 0;
  // voice activity bit and a level (-dBov) that moves, so the speaker observer has something to rank
  buf[17] = 0x80 | (20 + ((seq >> 4) % 40));
  buf[18] = 0;
  buf[19] = 0;
  buf[20] = 0x78;
  filler.copy(buf, 21, 0, payload - 1);
  return buf;
}

// ---- VP8 ------------------------------------------------------------------------------------------

export const VP8_PT = 96;
/** 30 frames a second at 90 kHz */
export const VP8_TS_STEP = 3000;

/** The payload descriptor's length, whether the packet starts a frame, and whether that frame is a key frame (RFC 7741). */
export function vp8Descriptor(payload: Buffer): { length: number; start: boolean; keyFrame: boolean } | null {
  if (payload.length < 1) return null;
  const b0 = payload[0]!;
  let off = 1;
  if (b0 & 0x80) {
    if (payload.length < 2) return null;
    const b1 = payload[1]!;
    off = 2;
    if (b1 & 0x80) off += payload[off]! & 0x80 ? 2 : 1;
    if (b1 & 0x40) off += 1;
    if (b1 & 0x30) off += 1;
  }
  if (off > payload.length) return null;
  const start = (b0 & 0x10) !== 0 && (b0 & 0x07) === 0;
  return { length: off, start, keyFrame: start && off < payload.length && (payload[off]! & 0x01) === 0 };
}

/**
 * The descriptor Chrome writes for a simulcast VP8 stream: X, a 15-bit picture id, TL0PICIDX and a
 * TID byte (temporal layer 0, layer sync). mediasoup's VP8 handling rewrites the picture id and
 * TL0PICIDX per consumer, which it only does when both are present.
 */
export function chromeVp8Descriptor(start: boolean, pictureId: number, tl0PicIdx: number): Buffer {
  return Buffer.from([0x80 | (start ? 0x10 : 0), 0xe0, 0x80 | ((pictureId >> 8) & 0x7f), pictureId & 0xff, tl0PicIdx & 0xff, 0x20]);
}

// ---- kernel counters --------------------------------------------------------------------------------

/**
 * Datagrams the kernel dropped because a socket's receive queue was full, by local port, for sockets
 * bound to 127.0.0.1 (the `drops` column of /proc/net/udp). A drop on a sink socket is the load side
 * not keeping up; a drop on a worker's transport socket is the worker not keeping up.
 */
export function udpDrops(): Map<number, number> {
  const out = new Map<number, number>();
  let text: string;
  try {
    text = readFileSync('/proc/net/udp', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 13) continue;
    const [addr, port] = f[1]!.split(':');
    if (addr !== '0100007F') continue;
    out.set(parseInt(port!, 16), (out.get(parseInt(port!, 16)) ?? 0) + Number(f[12]));
  }
  return out;
}

export function sumDrops(drops: Map<number, number>, ports: Iterable<number>): number {
  let n = 0;
  for (const p of ports) n += drops.get(p) ?? 0;
  return n;
}
