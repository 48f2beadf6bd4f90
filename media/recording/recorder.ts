import { createSocket, type Socket } from 'node:dgram';
import type { Consumer } from 'mediasoup/node/lib/Consumer.js';
import type { PlainTransport } from 'mediasoup/node/lib/PlainTransport.js';
import type { Producer } from 'mediasoup/node/lib/Producer.js';
import type { Router } from 'mediasoup/node/lib/Router.js';
import type { RtpCapabilities } from 'mediasoup/node/lib/RtpParameters.js';
import type { Logger } from '../../src/platform/logger.ts';
import type { MediaSource } from '../../src/core/room-access.ts';
import { TrackWriter, writeManifest, type SegmentManifest, type SpeakerChange, type TrackInfo } from './format.ts';

/**
 * One recorded room's capture on its media node (docs/recordings.md): one PlainTransport on the room's
 * main router sends every recorded consumer's RTP to one UDP socket of this process, which tells the
 * tracks apart by SSRC and writes each as it came (format.ts), with no transcoding and no process per
 * track. The recorder is nobody in the roster: its consumers are the room's, not a participant's. It
 * asks each video for the layer the composition shows (a screen whole, the speaker and the teacher
 * large, the others small), which dynacast counts like any receiver's.
 */

/** How often the manifest on disk is brought up to date while capturing (the speakers so far). */
const MANIFEST_EVERY_MS = 5000;

export interface RecordedProducer {
  producer: Producer;
  source: MediaSource;
  participantId: string;
  name: string;
  host: boolean;
}

/**
 * What the recorder receives: the router's codecs without congestion control. The recorder sends no
 * feedback, so with transport-cc or REMB the worker would estimate its bandwidth at the starting rate
 * for ever and hold a class's simulcast videos (the shared screen too) at a low layer or at nothing
 * (bench --scenario recording: 27 of 31 videos of a class of 30 wrote nothing). Loopback needs none.
 */
export function recorderCapabilities(router: RtpCapabilities): RtpCapabilities {
  return {
    codecs: (router.codecs ?? []).map((c) => ({ ...c, rtcpFeedback: (c.rtcpFeedback ?? []).filter((f) => f.type !== 'transport-cc' && f.type !== 'goog-remb') })),
    headerExtensions: (router.headerExtensions ?? []).filter((h) => !h.uri.includes('transport-wide-cc')),
  };
}

/** The top simulcast layer the composition needs of a video: a screen whole, the speaker's and the teacher's camera large, the others small. */
export function recorderLayer(source: MediaSource, host: boolean, speaking: boolean): number {
  if (source === 'screen') return 2;
  return host || speaking ? 2 : 0;
}

interface Track {
  info: TrackInfo;
  consumer: Consumer;
  writer: TrackWriter;
  host: boolean;
}

export class Recorder {
  readonly recordingId: string;
  readonly segment: number;
  readonly dir: string;
  readonly #router: Router;
  readonly #transport: PlainTransport;
  readonly #socket: Socket;
  readonly #log: Logger;
  readonly #nodeId: string;
  readonly #tracks = new Map<number, Track>();
  readonly #byProducer = new Map<string, Track>();
  readonly #speakers: SpeakerChange[] = [];
  /** Wall-clock ms of the segment's start, and time spent paused since (recording time leaves it out). */
  readonly #startedAt: number;
  #pausedMs = 0;
  #pausedAt: number | null = null;
  #speaking: string | null = null;
  #stopped: Promise<SegmentManifest> | null = null;
  #seq = 0;
  /** The manifest is kept current on disk (durationMs null until the stop): a node that dies leaves its tracks readable. */
  #manifestTimer: NodeJS.Timeout;
  #manifestWrite: Promise<void> = Promise.resolve();

  private constructor(o: { recordingId: string; segment: number; dir: string; nodeId: string; router: Router; transport: PlainTransport; socket: Socket; log: Logger; paused: boolean }) {
    this.#nodeId = o.nodeId;
    this.recordingId = o.recordingId;
    this.segment = o.segment;
    this.dir = o.dir;
    this.#router = o.router;
    this.#transport = o.transport;
    this.#socket = o.socket;
    this.#log = o.log;
    this.#startedAt = Date.now();
    if (o.paused) this.#pausedAt = this.#startedAt;
    o.socket.on('message', (packet) => this.#receive(packet));
    this.#manifestTimer = setInterval(() => void this.#saveManifest(null), MANIFEST_EVERY_MS);
    this.#manifestTimer.unref();
  }

  #manifest(durationMs: number | null): SegmentManifest {
    return { recordingId: this.recordingId, segment: this.segment, startedAt: this.#startedAt, durationMs, tracks: [...this.#tracks.values()].map((t) => t.info), speakers: this.#speakers, nodeId: this.#nodeId };
  }

  /** Writes the manifest (one write at a time), and flushes the tracks so what it names is on disk. */
  #saveManifest(durationMs: number | null): Promise<void> {
    const m = this.#manifest(durationMs);
    this.#manifestWrite = this.#manifestWrite
      .then(async () => {
        await Promise.all([...this.#tracks.values()].map((t) => t.writer.flush()));
        await writeManifest(this.dir, m);
      })
      .catch((err) => this.#log.warn({ err, recordingId: this.recordingId }, 'recording: the manifest could not be written'));
    return this.#manifestWrite;
  }

  static async start(o: { recordingId: string; segment: number; dir: string; nodeId: string; router: Router; log: Logger; paused: boolean }): Promise<Recorder> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    // a second of class video at a high layer is a few hundred packets: room for bursts
    socket.setRecvBufferSize(4 * 1024 * 1024);
    const transport = await o.router.createPlainTransport({ listenIp: '127.0.0.1', rtcpMux: true, comedia: false, appData: { recorder: o.recordingId } });
    await transport.connect({ ip: '127.0.0.1', port: socket.address().port });
    const recorder = new Recorder({ ...o, transport, socket });
    // on disk from the start: a node that dies before its first track still leaves a segment that says so
    await recorder.#saveManifest(null);
    return recorder;
  }

  /** Recording time now: ms since the segment's start, paused time left out. */
  #now(): number {
    const at = this.#pausedAt ?? Date.now();
    return at - this.#startedAt - this.#pausedMs;
  }

  #receive(packet: Buffer): void {
    if (this.#pausedAt !== null || packet.length < 12 || (packet[0]! & 0xc0) !== 0x80) return;
    const pt = packet[1]! & 0x7f;
    if (pt >= 72 && pt <= 76) return; // RTCP (SR, RR, SDES, BYE, APP) on the same port
    const track = this.#tracks.get(packet.readUInt32BE(8));
    if (!track || pt !== track.info.payloadType) return; // RTX and padding are not kept
    const at = this.#now();
    track.info.firstPacketAt ??= at;
    track.writer.write(at, Buffer.from(packet));
  }

  /** Records this producer from now (a late joiner's track starts where they came in). */
  async add(p: RecordedProducer): Promise<void> {
    if (this.#stopped || this.#byProducer.has(p.producer.id) || p.producer.closed) return;
    const consumer = await this.#transport.consume({ producerId: p.producer.id, rtpCapabilities: recorderCapabilities(this.#router.rtpCapabilities), paused: this.#pausedAt !== null, appData: { recorder: this.recordingId } });
    const codec = consumer.rtpParameters.codecs[0]!;
    const ssrc = consumer.rtpParameters.encodings?.[0]?.ssrc;
    if (ssrc === undefined || this.#stopped) {
      consumer.close();
      return;
    }
    const trackId = `t${++this.#seq}-${p.source}`;
    const info: TrackInfo = {
      trackId,
      file: `${trackId}.rtp`,
      kind: consumer.kind,
      source: p.source,
      participantId: p.participantId,
      name: p.name,
      host: p.host,
      mimeType: codec.mimeType,
      clockRate: codec.clockRate,
      payloadType: codec.payloadType,
      ssrc,
      firstPacketAt: null,
    };
    const track: Track = { info, consumer, writer: await TrackWriter.create(this.dir, info.file), host: p.host };
    this.#tracks.set(ssrc, track);
    this.#byProducer.set(p.producer.id, track);
    if (consumer.type === 'simulcast') await consumer.setPreferredLayers({ spatialLayer: recorderLayer(p.source, p.host, p.participantId === this.#speaking), temporalLayer: 2 }).catch(() => {});
    if (consumer.kind === 'video') await consumer.requestKeyFrame().catch(() => {});
    void this.#saveManifest(null);
  }

  /** The top layer the recorder receives of a producer (for dynacast), or -1 when it does not record it. */
  layerOf(producerId: string): number {
    const t = this.#byProducer.get(producerId);
    if (!t || t.consumer.closed || t.info.kind !== 'video') return -1;
    return t.consumer.type === 'simulcast' ? (t.consumer.preferredLayers?.spatialLayer ?? 0) : 0;
  }

  /** The active speaker changed: kept for the composition, and their camera asked for large. */
  speaker(participantId: string | null): void {
    if (this.#stopped || participantId === this.#speaking) return;
    const was = this.#speaking;
    this.#speaking = participantId;
    this.#speakers.push({ at: this.#now(), participantId });
    for (const t of this.#byProducer.values()) {
      if (t.info.source !== 'camera' || t.consumer.type !== 'simulcast' || (t.info.participantId !== participantId && t.info.participantId !== was)) continue;
      void t.consumer.setPreferredLayers({ spatialLayer: recorderLayer('camera', t.host, t.info.participantId === participantId), temporalLayer: 2 }).catch(() => {});
    }
  }

  /** A host paused or resumed: nothing is written meanwhile, and recording time stands still. */
  async pause(paused: boolean): Promise<void> {
    if (this.#stopped || (this.#pausedAt !== null) === paused) return;
    if (paused) this.#pausedAt = Date.now();
    else {
      this.#pausedMs += Date.now() - this.#pausedAt!;
      this.#pausedAt = null;
    }
    await Promise.all(
      [...this.#byProducer.values()].map(async (t) => {
        if (t.consumer.closed) return;
        if (paused) await t.consumer.pause().catch(() => {});
        else {
          await t.consumer.resume().catch(() => {});
          if (t.info.kind === 'video') await t.consumer.requestKeyFrame().catch(() => {});
        }
      }),
    );
  }

  /** Stops capturing: every file flushed and closed, the manifest written. Once; later calls get the same manifest. */
  stop(): Promise<SegmentManifest> {
    this.#stopped ??= (async () => {
      const durationMs = this.#now();
      clearInterval(this.#manifestTimer);
      this.#transport.close();
      this.#socket.close();
      await this.#manifestWrite;
      await Promise.all([...this.#tracks.values()].map((t) => t.writer.close().catch((err) => this.#log.warn({ err, recordingId: this.recordingId }, 'a recorded track could not be closed'))));
      const manifest = this.#manifest(durationMs);
      await writeManifest(this.dir, manifest);
      return manifest;
    })();
    return this.#stopped;
  }
}
