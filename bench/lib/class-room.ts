import type { RtpCapabilities, RtpParameters } from 'mediasoup/node/lib/RtpParameters.js';
import { pino } from 'pino';
import { RoomMedia, type MediaEmit } from '../../media/room.ts';
import { WorkerPool } from '../../media/workers.ts';
import type { MediaSource } from '../../src/core/room-access.ts';
import { CAMERA_ENCODINGS, SCREEN_ENCODINGS } from '../../src/core/room-protocol.ts';
import type { RosterEntry } from '../../src/core/room.ts';
import type { ClassFeed, Track, VideoSource } from './class-feed.ts';
import { pageOf, pageView, type Page } from './class-views.ts';
import { consumerCapabilities, LOOPBACK, producerParameters } from './media-systems.ts';
import { VP8_PT } from './rtp.ts';

/**
 * A class through Aula's room machinery on one mediasoup worker: a `WorkerPool` of one worker and a
 * `RoomMedia` (media/room.ts) driven as the media gateway drives it for each participant (join, a
 * sending and a receiving transport, produce, ready, consumer-ready, view), with plain-RTP transports
 * instead of WebRTC ones: the senders are the bench's synthetic feed, the receivers its sink (SRTP to
 * each, as the worker encrypts for a browser). Every media event RoomMedia emits is serialized to JSON
 * as the bus would; `layers-wanted` is also handed to the feed (dynacast).
 *
 * Modes: `view`, every receiver sends the `view` its page would (class-views.ts) before it is ready;
 * `everything`, no view at all, so every video is resumed at its top layer (as before views existed).
 */

export type Mode = 'view' | 'everything';

export interface ClassOptions {
  mode: Mode;
  students: number;
  /** every n-th student on a phone (0: none) */
  phoneEvery: number;
  /** students whose microphone is on (the first ones); the others are muted at the source */
  openMics: number;
  camera: VideoSource;
  screen: VideoSource;
  feed: ClassFeed;
  sinkPorts: number[];
  /** ports for the pool's WebRtcServer (unused here, but the pool opens one) */
  portMin: number;
}

export interface Received {
  consumerId: string;
  receiver: string;
  from: string;
  source: MediaSource;
  kind: 'audio' | 'video';
  ssrc: number;
}

export interface Participant {
  participantId: string;
  role: 'teacher' | 'student';
  /** students: the page they view the class on; the teacher's is a laptop */
  page: Page;
  micOpen: boolean;
}

const TEACHER = 'prt_teacher';
const studentId = (i: number) => `prt_s${String(i).padStart(3, '0')}`;

function videoParameters(ssrcs: number[], encodings: readonly { maxBitrate: number }[], cname: string): RtpParameters {
  return {
    codecs: [
      {
        mimeType: 'video/VP8',
        payloadType: VP8_PT,
        clockRate: 90000,
        rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }, { type: 'ccm', parameter: 'fir' }],
      },
    ],
    headerExtensions: [],
    encodings: ssrcs.map((ssrc, i) => ({ ssrc, scalabilityMode: 'L1T1', maxBitrate: encodings[i]!.maxBitrate })),
    rtcp: { cname, reducedSize: true },
  };
}

const rosterEntry = (participantId: string, roomRole: RosterEntry['roomRole']): RosterEntry => ({
  participantId,
  userId: null,
  name: participantId,
  roomRole,
  joinedAt: new Date(0).toISOString(),
  micLocked: false,
  floor: false,
  askedToUnmute: false,
  enteredMuted: false,
  handRaisedAt: null,
  connected: true,
});

export interface ClassState {
  /** resumed video consumers by receiver */
  resumedVideo: Map<string, number>;
  /** resumed video consumers by the spatial layer they forward (camera r0..r2, screen r0..r1); none: no layer yet */
  layers: { camera: number[]; screen: number[]; none: number };
  /** video producers by the top layer their senders were asked for */
  wanted: { camera: number[]; screen: number[] };
  consumers: number;
  resumed: number;
  /** resumed video consumers not (yet) forwarding the layer they prefer */
  offPlan: number;
}

export class ClassRoom {
  readonly participants: Participant[];
  readonly pool: WorkerPool;
  readonly room: RoomMedia;
  /** every consumer made, by consumer id */
  readonly consumers = new Map<string, Received>();
  /** consumer id -> the spatial layer mediasoup says it forwards now (consumer-layers) */
  readonly layerOf = new Map<string, number | null>();
  /** the sending transports' worker-side ports (for the kernel's drop counters) */
  readonly producerPorts: number[] = [];
  /** media events emitted and their JSON bytes */
  events = 0;
  eventBytes = 0;
  died = false;
  readonly #o: ClassOptions;
  readonly #tracks = new Map<string, Track>();
  /** layers-wanted heard before produce() answered with the producer's id */
  readonly #wantedEarly = new Map<string, number>();
  /** what the receivers declare: the router's capabilities without congestion feedback (media-systems.ts) */
  #caps: RtpCapabilities | null = null;

  private constructor(o: ClassOptions, pool: WorkerPool, room: RoomMedia, participants: Participant[]) {
    this.#o = o;
    this.pool = pool;
    this.room = room;
    this.participants = participants;
  }

  static async open(o: ClassOptions): Promise<ClassRoom> {
    const log = pino({ level: 'silent' });
    const pool = new WorkerPool({ size: 1, listenIp: LOOPBACK, announcedIp: LOOPBACK, portMin: o.portMin, portMax: o.portMin + 99, logLevel: 'warn', log });
    await pool.start();
    const worker = pool.at(0)!;
    const participants: Participant[] = [
      { participantId: TEACHER, role: 'teacher', page: 'laptop', micOpen: true },
      ...Array.from({ length: o.students }, (_, i): Participant => ({ participantId: studentId(i), role: 'student', page: pageOf(i, o.phoneEvery), micOpen: i < o.openMics })),
    ];
    let self: ClassRoom | null = null;
    const emit: MediaEmit = (to, message) => self?.heard(to, message);
    const room = await RoomMedia.open({
      meetingId: 'mtg_bench_class',
      placementRev: 1,
      pool,
      worker,
      capacity: 500, // AULA_MEDIA_CONSUMERS_PER_WORKER's default; with one worker every receiver stays on it
      maxIncomingBitrate: 5_000_000, // AULA_MEDIA_MAX_INCOMING_BITRATE's default (WebRTC sending transports only)
      initialOutgoingBitrate: 1_000_000,
      emit,
      log,
      state: {
        rev: 1,
        roster: participants.map((p) => rosterEntry(p.participantId, p.role === 'teacher' ? 'HOST' : 'PARTICIPANT')),
        settings: { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, chat: 'everyone', privateChatToHosts: true },
      },
    });
    self = new ClassRoom(o, pool, room, participants);
    worker.worker.on('died', () => (self!.died = true));
    return self;
  }

  get workerPid(): number {
    return this.pool.at(0)!.worker.pid;
  }

  /** A media event RoomMedia sent to a participant or to everyone. */
  heard(to: Parameters<MediaEmit>[0], message: Parameters<MediaEmit>[1]): void {
    this.events++;
    this.eventBytes += JSON.stringify(message).length;
    if (!('participantId' in to)) return;
    if (message.type === 'consumer-new') {
      const ssrc = (message.rtpParameters as { encodings?: { ssrc?: number }[] }).encodings?.[0]?.ssrc;
      if (ssrc !== undefined) {
        this.consumers.set(message.consumerId, { consumerId: message.consumerId, receiver: to.participantId, from: message.participantId, source: message.source, kind: message.kind, ssrc });
      }
    } else if (message.type === 'consumer-layers') this.layerOf.set(message.consumerId, message.spatialLayer);
    else if (message.type === 'layers-wanted') {
      const t = this.#tracks.get(message.producerId);
      if (t) this.#o.feed.setMaxLayer(t, message.maxSpatialLayer);
      else this.#wantedEarly.set(message.producerId, message.maxSpatialLayer);
    }
  }

  /** Everyone joins and says what their page shows (view mode), then sends: cameras, the teacher's screen, microphones. */
  async send(): Promise<void> {
    const { feed } = this.#o;
    const cameras = this.participants.map((p) => p.participantId);
    let n = 0;
    const phase = (i: number, of: number) => (i / of) * 33;
    for (const [pi, p] of this.participants.entries()) {
      const { routerRtpCapabilities } = this.room.join(p.participantId, p.role === 'teacher' ? 'HOST' : 'PARTICIPANT', 0);
      this.#caps ??= consumerCapabilities(routerRtpCapabilities);
      if (this.#o.mode === 'view') await this.room.setView(p.participantId, pageView(p.page, p.participantId, cameras, TEACHER), false);
      const t = await this.room.createPlainTransport(p.participantId, 'send', { listenIp: LOOPBACK });
      this.producerPorts.push(t.port);
      const sender = await feed.sender(t.port);
      const ssrcBase = 0x20000000 + pi * 16;
      const tracks: { source: MediaSource; ssrcs: number[]; parameters: RtpParameters; video: VideoSource | null; sending: boolean }[] = [];
      const cam = [0, 1, 2].map((l) => ssrcBase + l);
      tracks.push({ source: 'camera', ssrcs: cam, parameters: videoParameters(cam, CAMERA_ENCODINGS, p.participantId), video: this.#o.camera, sending: true });
      if (p.role === 'teacher') {
        const scr = [4, 5].map((l) => ssrcBase + l);
        tracks.push({ source: 'screen', ssrcs: scr, parameters: videoParameters(scr, SCREEN_ENCODINGS, p.participantId), video: this.#o.screen, sending: true });
      }
      tracks.push({ source: 'mic', ssrcs: [ssrcBase + 8], parameters: producerParameters('audio', [ssrcBase + 8], p.participantId), video: null, sending: p.micOpen });
      for (const tr of tracks) {
        const { producerId } = await this.room.produce(p.participantId, {
          transportId: t.transportId,
          kind: tr.video ? 'video' : 'audio',
          source: tr.source,
          rtpParameters: tr.parameters,
          // a muted microphone: paused at the source, as the page produces it
          ...(tr.sending ? {} : { paused: true }),
        });
        const track = feed.track(sender, { kind: tr.video ? 'video' : 'audio', ssrcs: tr.ssrcs, sending: tr.sending, video: tr.video, phaseMs: phase(n++, this.participants.length * 2) });
        this.#tracks.set(producerId, track);
        const early = this.#wantedEarly.get(producerId);
        if (early !== undefined) feed.setMaxLayer(track, early);
      }
    }
  }

  /** Every participant receives: a receiving transport to the sink, media-ready, and consumer-ready for each consumer offered (as the page answers consumer-new). */
  async receive(): Promise<void> {
    for (const [i, p] of this.participants.entries()) {
      await this.room.createPlainTransport(p.participantId, 'recv', { listenIp: LOOPBACK, remote: { ip: LOOPBACK, port: this.#o.sinkPorts[i % this.#o.sinkPorts.length]! }, srtp: true });
      await this.room.ready(p.participantId, this.#caps!);
      const mine = [...this.consumers.values()].filter((c) => c.receiver === p.participantId);
      await Promise.all(mine.map((c) => this.room.consumerReady(p.participantId, c.consumerId)));
    }
  }

  /**
   * What the receivers get now (RoomMedia.inspect and the consumer-layers events): resumed video
   * consumers per receiver, the layer each resumed one forwards, and the top layer each sender was asked
   * for (layers-wanted; none heard: all of them).
   */
  state(): ClassState {
    const { peers } = this.room.inspect();
    const resumedVideo = new Map<string, number>();
    const layers = { camera: [0, 0, 0], screen: [0, 0], none: 0 };
    const wanted = { camera: [0, 0, 0], screen: [0, 0] };
    let consumers = 0;
    let resumed = 0;
    let offPlan = 0;
    for (const peer of peers) {
      let n = 0;
      for (const c of peer.received) {
        consumers++;
        if (c.paused) continue;
        resumed++;
        if (c.kind !== 'video') continue;
        n++;
        const l = this.layerOf.get(c.consumerId);
        const row = c.source === 'screen' ? layers.screen : layers.camera;
        if (l === undefined || l === null || l >= row.length) layers.none++;
        else row[l]!++;
        if (l !== c.spatialLayer) offPlan++;
      }
      resumedVideo.set(peer.participantId, n);
      for (const p of peer.producers) {
        const row = p.source === 'screen' ? wanted.screen : p.source === 'camera' ? wanted.camera : null;
        if (row) row[Math.min(p.layersWanted ?? row.length - 1, row.length - 1)]!++;
      }
    }
    return { resumedVideo, layers, wanted, consumers, resumed, offPlan };
  }

  async close(): Promise<void> {
    this.room.close();
    await this.pool.close();
  }
}
