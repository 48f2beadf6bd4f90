import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { IVF_HEADER, OggOpusWriter, OPUS_RATE, ivfFrame, ivfHeader, opusSamples } from './containers.ts';
import { readRecords, type TrackInfo } from './format.ts';
import { H264Depacketizer, Vp8Depacketizer, type Assembler } from './payloads.ts';
import { parseRtp, RtpClock, SeqOrder, type RtpPacket } from './rtp.ts';

/**
 * A track file's records (format.ts) to a file ffmpeg reads, without transcoding: Opus to Ogg Opus,
 * VP8 to IVF, H.264 (single NAL units, STAP-A, FU-A) to Annex B access units in IVF. Timestamps are in
 * recording time from the track's first frame or sample (`startMs`): RTP timestamps within a run,
 * re-anchored on arrival where the two disagree (rtp.ts, RtpClock).
 *
 * Video that lost a packet is skipped up to the next key frame, and so is everything before the first
 * one (payloads.ts). Audio gaps (loss, a muted microphone) become Opus silence, so the Ogg stream runs
 * on without holes.
 */

/**
 * A camera turned off for longer than this is not shown meanwhile (compose.ts's layout). A screen that
 * does not change sends nothing at all, for as long as it does not change, and a share that stops ends
 * its track (another share is another producer, another track): a screen is on from its first frame
 * to its last.
 */
export const SPAN_GAP_MS: Record<TrackInfo['source'], number> = { camera: 1500, screen: Infinity, mic: 1000, 'screen-audio': 1000 };
/** A frame is taken to be on screen this long after it came, at the end of a span. */
const LAST_FRAME_MS = 100;

export type Span = [number, number];

/** What one track holds, in recording time (ms since the segment's start). */
export interface TrackMedia {
  track: TrackInfo;
  /** The first frame's (or sample's) time; null: nothing usable. */
  startMs: number | null;
  endMs: number | null;
  /** When it was on: runs of frames (or packets) with no gap over SPAN_GAP_MS. */
  spans: Span[];
  /** Key frames' times (video). */
  keys: number[];
  /** Video frames, or audio packets (silence filled in not counted). */
  frames: number;
  /** Video frames dropped (incomplete, or waiting for a key frame); audio packets out of place. */
  dropped: number;
  /** Of the first key frame, when its header says (VP8). */
  width: number;
  height: number;
  /** Why the track could not be read at all (a codec not handled); null when it could. */
  problem: string | null;
  /** The files written, with the recording time of each one's time 0 (null: nothing was written). */
  written: { path: string; startMs: number | null; frames: number }[];
}

/**
 * A file to write: `.ogg` for audio, `.ivf` for video. `windows` (video) keeps only the frames within
 * them, each window starting at a key frame: compose.ts decodes only what its layout shows.
 */
export interface TrackOutput {
  path: string;
  windows?: Span[];
}

/** Records of a track file, read in chunks rather than whole: a 30-minute screen share is hundreds of MB. */
export async function* trackRecords(path: string, chunk = 1 << 20): AsyncGenerator<{ at: number; packet: Buffer }> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    // a track whose file never got its first write (its node died first) holds nothing
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    let carry = Buffer.alloc(0);
    for (;;) {
      const buf = Buffer.allocUnsafe(chunk);
      const { bytesRead } = await fh.read(buf, 0, chunk, null);
      if (!bytesRead) return;
      const data = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : buf.subarray(0, bytesRead);
      let used = 0;
      for (const r of readRecords(data)) {
        used += 6 + r.packet.length;
        yield r;
      }
      carry = Buffer.from(data.subarray(used));
    }
  } finally {
    await fh.close();
  }
}

/** Buffered writes to one file, flushed between records. */
class Out {
  #pending: Buffer[] = [];
  #bytes = 0;
  #position: number;
  startMs: number | null = null;
  frames = 0;
  lastPts = -1;
  /** Within a window and past its first key frame. */
  writing = false;

  constructor(
    readonly path: string,
    readonly fh: FileHandle,
    readonly windows: Span[] | null,
    start: number,
  ) {
    this.#position = start;
  }

  write = (b: Buffer): void => {
    this.#pending.push(b);
    this.#bytes += b.length;
  };

  async flush(force = false): Promise<void> {
    if (!this.#bytes || (!force && this.#bytes < 1 << 20)) return;
    const data = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#bytes = 0;
    await this.fh.write(data, 0, data.length, this.#position);
    this.#position += data.length;
  }
}

/**
 * Reads `track`'s file in `dir` and writes `outputs`; with none, only finds when the track was on
 * (compose.ts scans every camera first and writes only what its layout shows).
 */
export async function depacketizeTrack(dir: string, track: TrackInfo, outputs: TrackOutput[] = [], signal?: AbortSignal): Promise<TrackMedia> {
  const media: TrackMedia = {
    track,
    startMs: null,
    endMs: null,
    spans: [],
    keys: [],
    frames: 0,
    dropped: 0,
    width: 0,
    height: 0,
    problem: null,
    written: [],
  };
  const mime = track.mimeType.toLowerCase();
  const codec = mime === 'audio/opus' ? 'opus' : mime === 'video/vp8' ? 'vp8' : mime === 'video/h264' ? 'h264' : null;
  if (!codec) {
    media.problem = `${track.mimeType} is not a codec the recordings handle`;
    return media;
  }
  const gapMs = SPAN_GAP_MS[track.source];
  const span = (t: number, end: number): void => {
    const last = media.spans.at(-1);
    if (last && t - last[1] <= gapMs) last[1] = Math.max(last[1], end);
    else media.spans.push([t, end]);
  };
  const outs: Out[] = [];
  try {
    for (const o of outputs) outs.push(new Out(o.path, await open(o.path, 'w'), o.windows ?? null, codec === 'opus' ? 0 : IVF_HEADER));
    const order = new SeqOrder<undefined>();
    const clock = new RtpClock(track.clockRate);
    let onPacket: (p: RtpPacket, time: number, gap: boolean) => void;
    let finish: () => void;
    if (codec === 'opus') {
      const oggs = outs.map((o) => new OggOpusWriter(o.write, track.source === 'screen-audio' ? 2 : 1));
      let samples = 0; // written, silence included
      onPacket = (p, time) => {
        const n = opusSamples(p.payload);
        if (!n) return void media.dropped++;
        media.startMs ??= time;
        const target = Math.round((time - media.startMs) * (OPUS_RATE / 1000));
        // behind by more than 100 ms: the clock was re-anchored earlier; drop until it catches up
        if (target < samples - OPUS_RATE / 10) return void media.dropped++;
        for (const ogg of oggs) {
          ogg.silenceTo(target);
          ogg.packet(p.payload, n);
        }
        // what silenceTo does, in steps of 2.5 ms
        if (target - samples >= 120) samples += Math.floor((target - samples) / 120) * 120;
        samples += n;
        media.frames++;
        media.endMs = media.startMs + (samples * 1000) / OPUS_RATE;
        span(time, media.endMs);
      };
      finish = () => {
        for (const ogg of oggs) ogg.end();
        for (const o of outs) {
          o.startMs = media.startMs;
          o.frames = media.frames;
        }
      };
    } else {
      const asm: Assembler = codec === 'vp8' ? new Vp8Depacketizer() : new H264Depacketizer();
      onPacket = (p, time, gap) => {
        const f = asm.push(p, time, gap);
        if (!f) return;
        if (media.startMs === null) {
          media.startMs = f.time;
          media.width = f.width;
          media.height = f.height;
        }
        if (f.key) media.keys.push(f.time);
        for (const o of outs) {
          const inside = !o.windows || o.windows.some(([s, e]) => s <= f.time && f.time <= e);
          o.writing = inside && (o.writing || f.key);
          if (!o.writing) continue;
          o.startMs ??= f.time;
          // IVF wants increasing timestamps; two frames within a ms keep their order
          const pts = Math.max(Math.round(f.time - o.startMs), o.lastPts + 1);
          o.lastPts = pts;
          for (const b of ivfFrame(f.data, pts)) o.write(b);
          o.frames++;
        }
        media.frames++;
        media.endMs = f.time + LAST_FRAME_MS;
        span(f.time, media.endMs);
      };
      finish = () => {
        media.dropped = asm.dropped;
        if (asm instanceof H264Depacketizer && asm.unsupported && !media.frames) {
          media.problem = 'H.264 in interleaved mode (STAP-B, MTAP, FU-B) is not handled';
        }
      };
    }
    let gap = false;
    const take = (o: { at: number; packet: RtpPacket; gap: boolean; restart: boolean }) => {
      // padding-only packets hold a sequence number (so their absence is no loss) and no media
      if (!o.packet.payload.length) return void (gap ||= o.gap);
      onPacket(o.packet, clock.time(o.at, o.packet.timestamp, o.restart), o.gap || gap);
      gap = false;
    };
    for await (const r of trackRecords(join(dir, track.file))) {
      const p = parseRtp(r.packet);
      // RTX (another payload type, its own sequence numbers) and anything else not the track's media
      if (!p || p.payloadType !== track.payloadType) continue;
      for (const o of order.push(r.at, p, undefined)) take(o);
      for (const o of outs) await o.flush();
      signal?.throwIfAborted();
    }
    for (const o of order.flush()) take(o);
    finish();
    for (const o of outs) {
      await o.flush(true);
      if (codec !== 'opus') {
        // the header's length field: ffmpeg reads it as the duration in the time base (libvpx as a frame count)
        const head = ivfHeader(codec === 'vp8' ? 'VP80' : 'H264', media.width, media.height, o.lastPts + 1);
        await o.fh.write(head, 0, head.length, 0);
      }
      media.written.push({ path: o.path, startMs: o.frames ? o.startMs : null, frames: o.frames });
    }
  } finally {
    for (const o of outs) await o.fh.close();
  }
  return media;
}
