import { open, readFile, rename, writeFile, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * How a recording's raw media is kept (docs/recordings.md): the media node writes what the recorder's
 * consumers receive, as RTP, without transcoding; the composition job (compose.ts) reads it afterwards.
 *
 * A recording has one or more segments (a new one each time its room's media is placed anew: a node
 * that died, a room moved). A segment is a folder holding `manifest.json` and one `<trackId>.rtp` file
 * per track. A track file is a sequence of records, each
 *
 *     u32 (big-endian)  the packet's arrival, in ms of recording time since the segment's start
 *     u16 (big-endian)  the packet's length
 *     bytes             the RTP packet as received (RTCP is not kept)
 *
 * Recording time is wall-clock time with the recording's pauses left out: while a host has paused the
 * recording nothing is written, and time does not advance, so the composition needs no cuts.
 */

/** One captured track: a participant's microphone, camera, screen or screen audio. */
export interface TrackInfo {
  trackId: string;
  /** The track's file, in the segment's folder. */
  file: string;
  kind: 'audio' | 'video';
  source: 'mic' | 'camera' | 'screen' | 'screen-audio';
  participantId: string;
  name: string;
  /** A host or cohost (the teacher): shown beside a shared screen. */
  host: boolean;
  /** As the consumer's RTP parameters say: `audio/opus`, `video/VP8` (or `video/H264`). */
  mimeType: string;
  clockRate: number;
  payloadType: number;
  ssrc: number;
  /** Recording time (ms since the segment's start) of the track's first packet; null: none came. */
  firstPacketAt: number | null;
}

/** Who was the active speaker from when (recording time, ms since the segment's start); null: nobody. */
export interface SpeakerChange {
  at: number;
  participantId: string | null;
}

export interface SegmentManifest {
  recordingId: string;
  /** 0, 1, 2... in the order they were recorded. */
  segment: number;
  /** Wall-clock ms when this segment began (its recording time 0). */
  startedAt: number;
  /** Recording time (ms) when it ended; null while it is being written or when its node died. */
  durationMs: number | null;
  tracks: TrackInfo[];
  speakers: SpeakerChange[];
  /** The node capturing it: a manifest without a duration whose node is gone is final (the node died mid-class). */
  nodeId?: string;
}

export const MANIFEST = 'manifest.json';
const HEADER = 6;

/** Writes one track's records, appending; buffered writes, flushed on close. */
export class TrackWriter {
  readonly #file: FileHandle;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #flushing: Promise<void> = Promise.resolve();
  bytes = 0;

  private constructor(file: FileHandle) {
    this.#file = file;
  }

  static async create(dir: string, file: string): Promise<TrackWriter> {
    return new TrackWriter(await open(join(dir, file), 'a'));
  }

  write(at: number, packet: Buffer): void {
    const head = Buffer.allocUnsafe(HEADER);
    head.writeUInt32BE(Math.max(0, Math.round(at)) >>> 0, 0);
    head.writeUInt16BE(packet.length, 4);
    this.#pending.push(head, packet);
    this.#pendingBytes += HEADER + packet.length;
    this.bytes += HEADER + packet.length;
    if (this.#pendingBytes >= 64 * 1024) void this.flush();
  }

  flush(): Promise<void> {
    if (!this.#pending.length) return this.#flushing;
    const chunk = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#flushing = this.#flushing.then(() => this.#file.write(chunk).then(() => undefined));
    return this.#flushing;
  }

  async close(): Promise<void> {
    await this.flush();
    await this.#file.close();
  }
}

/** A track file's records, in the order written. */
export function* readRecords(data: Buffer): Generator<{ at: number; packet: Buffer }> {
  let i = 0;
  while (i + HEADER <= data.length) {
    const at = data.readUInt32BE(i);
    const len = data.readUInt16BE(i + 4);
    if (i + HEADER + len > data.length) return; // a record cut short by a crash: the rest is lost
    yield { at, packet: data.subarray(i + HEADER, i + HEADER + len) };
    i += HEADER + len;
  }
}

/** Written whole or not at all (a temp file renamed): a node killed mid-write leaves the previous one. */
export async function writeManifest(dir: string, m: SegmentManifest): Promise<void> {
  const tmp = join(dir, `.${MANIFEST}.${process.pid}.tmp`);
  await writeFile(tmp, JSON.stringify(m, null, 1));
  await rename(tmp, join(dir, MANIFEST));
}

export async function readManifest(dir: string): Promise<SegmentManifest> {
  return JSON.parse(await readFile(join(dir, MANIFEST), 'utf8')) as SegmentManifest;
}
