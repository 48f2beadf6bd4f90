import * as mediasoup from 'mediasoup';
import type { Consumer } from 'mediasoup/node/lib/Consumer.js';
import type { RtpCapabilities, RtpParameters } from 'mediasoup/node/lib/RtpParameters.js';
import type { Worker as MsWorker } from 'mediasoup/node/lib/Worker.js';
import { pino } from 'pino';
import type { RosterEntry } from '../../actors/meeting/meeting.types.ts';
import { ROUTER_CODECS } from '../../media/codecs.ts';
import { CAMERA_ENCODINGS } from '../../src/core/room-protocol.ts';
import { RoomMedia, type MediaEmit } from '../../media/room.ts';
import { WorkerPool } from '../../media/workers.ts';
import { AUDIO_LEVEL_EXT_ID, AUDIO_LEVEL_URI, OPUS_PT, VP8_PT } from './rtp.ts';

/**
 * The two systems the media bench measures against each other, each on a worker of its own: bare, a
 * mediasoup Router with Aula's codecs (the baseline), and aula, a `WorkerPool` of one worker and a
 * `RoomMedia` (media/room.ts) as a live room has it. Both open the same transports and declare the
 * same producers and consumers, so what differs between them is Aula's room code alone.
 */

export type Kind = 'audio' | 'video';
export type SystemName = 'bare' | 'aula';

export const LOOPBACK = '127.0.0.1';
const SRTP_SUITE = 'AES_CM_128_HMAC_SHA1_80' as const;

// ---- what producers and consumers declare -------------------------------------------------------------

export function producerParameters(kind: Kind, ssrcs: number[], cname: string): RtpParameters {
  if (kind === 'audio') {
    return {
      codecs: [{ mimeType: 'audio/opus', payloadType: OPUS_PT, clockRate: 48000, channels: 2, parameters: { useinbandfec: 1 }, rtcpFeedback: [] }],
      headerExtensions: [{ uri: AUDIO_LEVEL_URI, id: AUDIO_LEVEL_EXT_ID }],
      encodings: [{ ssrc: ssrcs[0]! }],
      rtcp: { cname, reducedSize: true },
    };
  }
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
    encodings: ssrcs.map((ssrc, i) => ({ ssrc, scalabilityMode: 'L1T1', maxBitrate: CAMERA_ENCODINGS[i]!.maxBitrate })),
    rtcp: { cname, reducedSize: true },
  };
}

/**
 * What the consumers declare: the router's capabilities without transport-cc and REMB. Nothing here
 * answers with congestion feedback, and without feedback mediasoup's estimate would stay at the
 * initial outgoing bitrate and hold every simulcast consumer on a low layer; a recorder or a bench
 * declares no feedback, so mediasoup forwards the preferred layer.
 */
export function consumerCapabilities(router: RtpCapabilities): RtpCapabilities {
  return {
    codecs: (router.codecs ?? []).map((c) => ({ ...c, rtcpFeedback: (c.rtcpFeedback ?? []).filter((f) => f.type !== 'transport-cc' && f.type !== 'goog-remb') })),
    headerExtensions: (router.headerExtensions ?? []).filter((h) => !h.uri.includes('transport-wide-cc')),
  };
}

// ---- the two systems --------------------------------------------------------------------------------

export interface MadeConsumer {
  id: string;
  producerId: string;
  ssrc: number;
}

export interface MediaSystem {
  readonly name: SystemName;
  readonly workerPid: number;
  died: boolean;
  produce(i: number, kind: Kind, rtpParameters: RtpParameters): Promise<{ producerId: string; port: number }>;
  /** One consumer participant: a receiving PlainTransport with SRTP to the sink, consuming every producer (created paused, then resumed). */
  addReceiver(j: number, sinkPort: number): Promise<MadeConsumer[]>;
  /** Video consumers by the spatial layer mediasoup says they forward now. */
  layers(): { top: number; lower: number; none: number };
  /** Worker-side ports of the producers' transports (for the kernel's drop counters). */
  producerPorts: number[];
  close(): Promise<void>;
}

export async function bareSystem(): Promise<MediaSystem> {
  const worker: MsWorker = await mediasoup.createWorker({ logLevel: 'warn' });
  const router = await worker.createRouter({ mediaCodecs: ROUTER_CODECS });
  const caps = consumerCapabilities(router.rtpCapabilities);
  const producerIds: string[] = [];
  const consumers: Consumer[] = [];
  const sys: MediaSystem = {
    name: 'bare',
    workerPid: worker.pid,
    died: false,
    producerPorts: [],
    async produce(_i, kind, rtpParameters) {
      const t = await router.createPlainTransport({ listenIp: LOOPBACK, rtcpMux: true, comedia: true });
      const p = await t.produce({ kind, rtpParameters });
      producerIds.push(p.id);
      sys.producerPorts.push(t.tuple.localPort);
      return { producerId: p.id, port: t.tuple.localPort };
    },
    async addReceiver(_j, sinkPort) {
      const t = await router.createPlainTransport({ listenIp: LOOPBACK, rtcpMux: true, comedia: false, enableSrtp: true, srtpCryptoSuite: SRTP_SUITE });
      await t.connect({ ip: LOOPBACK, port: sinkPort, srtpParameters: t.srtpParameters! });
      const made = await Promise.all(producerIds.map((producerId) => t.consume({ producerId, rtpCapabilities: caps, paused: true })));
      await Promise.all(made.map((c) => c.resume()));
      consumers.push(...made);
      return made.map((c) => ({ id: c.id, producerId: c.producerId, ssrc: c.rtpParameters.encodings![0]!.ssrc! }));
    },
    layers() {
      const out = { top: 0, lower: 0, none: 0 };
      for (const c of consumers) {
        const s = c.currentLayers?.spatialLayer;
        if (s === undefined) out.none++;
        else if (s === 2) out.top++;
        else out.lower++;
      }
      return out;
    },
    async close() {
      worker.close();
    },
  };
  worker.on('died', () => (sys.died = true));
  return sys;
}

let aulaPorts = 47000;

export async function aulaSystem(kind: Kind, producers: number, receivers: number): Promise<MediaSystem> {
  const log = pino({ level: 'silent' });
  // a fresh port range per system: the pool's WebRtcServer listens on the first free one
  const portMin = aulaPorts;
  aulaPorts += 100;
  const pool = new WorkerPool({ size: 1, listenIp: LOOPBACK, announcedIp: LOOPBACK, portMin, portMax: portMin + 99, logLevel: 'warn', log });
  await pool.start();
  const worker = pool.at(0)!;
  const waiting = new Map<string, MadeConsumer[]>();
  const layerOf = new Map<string, number | null>();
  const consumerIds: string[] = [];
  let emitted = 0;
  // What production does with a media event before the bus takes it: JSON. Here it is then dropped,
  // except that the consumer ids are read from consumer-new (RoomMedia has no accessor for them).
  const emit: MediaEmit = (to, message) => {
    emitted += JSON.stringify(message).length;
    if (message.type === 'consumer-new' && 'participantId' in to) {
      const ssrc = (message.rtpParameters as { encodings?: { ssrc?: number }[] }).encodings?.[0]?.ssrc;
      if (ssrc !== undefined) waiting.get(to.participantId)?.push({ id: message.consumerId, producerId: message.producerId, ssrc });
    } else if (message.type === 'consumer-layers') layerOf.set(message.consumerId, message.spatialLayer);
  };
  const entry = (participantId: string, roomRole: RosterEntry['roomRole']): RosterEntry => ({
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
  const roster = [
    ...Array.from({ length: producers }, (_, i) => entry(`prt_${kind}_p${i}`, 'HOST')),
    ...Array.from({ length: receivers }, (_, j) => entry(`prt_${kind}_r${j}`, 'PARTICIPANT')),
  ];
  const room = await RoomMedia.open({
    meetingId: `mtg_bench_${kind}`,
    placementRev: 1,
    pool,
    worker,
    capacity: 500, // AULA_MEDIA_CONSUMERS_PER_WORKER's default; with one worker every receiver stays on it anyway
    maxIncomingBitrate: 3_000_000,
    initialOutgoingBitrate: 1_000_000,
    emit,
    log,
    state: { rev: 1, roster, settings: { waitingRoom: false, muteOnEntry: false, lectureMode: false, allowStudentScreenShare: false, chat: 'everyone', privateChatToHosts: true } },
  });
  let caps: RtpCapabilities | null = null;
  const sys: MediaSystem = {
    name: 'aula',
    workerPid: worker.worker.pid,
    died: false,
    producerPorts: [],
    async produce(i, k, rtpParameters) {
      const pid = `prt_${kind}_p${i}`;
      room.join(pid, 'HOST', 0);
      const t = await room.createPlainTransport(pid, 'send', { listenIp: LOOPBACK });
      const { producerId } = await room.produce(pid, { transportId: t.transportId, kind: k, source: k === 'audio' ? 'mic' : 'camera', rtpParameters });
      sys.producerPorts.push(t.port);
      return { producerId, port: t.port };
    },
    async addReceiver(j, sinkPort) {
      const pid = `prt_${kind}_r${j}`;
      const { routerRtpCapabilities } = room.join(pid, 'PARTICIPANT', 0);
      caps ??= consumerCapabilities(routerRtpCapabilities);
      await room.createPlainTransport(pid, 'recv', { listenIp: LOOPBACK, remote: { ip: LOOPBACK, port: sinkPort }, srtp: true });
      const made: MadeConsumer[] = [];
      waiting.set(pid, made);
      try {
        await room.ready(pid, caps);
      } finally {
        waiting.delete(pid);
      }
      await Promise.all(made.map((c) => room.consumerReady(pid, c.id)));
      consumerIds.push(...made.map((c) => c.id));
      return made;
    },
    layers() {
      const out = { top: 0, lower: 0, none: 0 };
      for (const id of consumerIds) {
        const s = layerOf.get(id);
        if (s === undefined || s === null) out.none++;
        else if (s === 2) out.top++;
        else out.lower++;
      }
      return out;
    },
    async close() {
      room.close();
      await pool.close();
      void emitted;
    },
  };
  worker.worker.on('died', () => (sys.died = true));
  return sys;
}
