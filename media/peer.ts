import type { Consumer } from 'mediasoup/node/lib/Consumer.js';
import type { Producer } from 'mediasoup/node/lib/Producer.js';
import type { Router } from 'mediasoup/node/lib/Router.js';
import type { RtpCapabilities } from 'mediasoup/node/lib/RtpParameters.js';
import type { PlainTransport } from 'mediasoup/node/lib/PlainTransport.js';
import type { WebRtcTransport } from 'mediasoup/node/lib/WebRtcTransport.js';
import type { MediaSource, RoomRole } from '../src/core/room-access.ts';
import type { MediaEvent, MediaReport, ProducerPauseReason, TransportDirection } from '../src/core/room-protocol.ts';
import type { Reservation } from './workers.ts';
import { NO_VIEW_YET, type ConsumerPlan, type ReceiverView } from './view.ts';

export interface PeerProducer {
  producer: Producer;
  source: MediaSource;
  /** Why the server holds it paused (a host mute, lecture mode, the entry mute); null when only the owner paused it, or it runs. */
  heldBy: ProducerPauseReason | null;
}

export interface PeerTransport {
  /** WebRTC for browsers and apps; plain RTP for an ingest or a recorder's egress (not on the room protocol). */
  transport: WebRtcTransport | PlainTransport;
  direction: TransportDirection;
  router: Router;
  workerIndex: number;
  /** A receiving transport's consumers promised on its worker (RoomMedia's placement), until they are made. */
  reservation: Reservation | null;
}

/** One participant's media in a room: its transports, what it sends and what it receives. */
export class Peer {
  readonly participantId: string;
  roomRole: RoomRole;
  /** The room revision at which the gateway knew this participant was in: an older roster cannot remove it. */
  sinceRev: number;
  readonly transports = new Map<string, PeerTransport>();
  readonly producers = new Map<string, PeerProducer>();
  readonly consumers = new Map<string, Consumer>();
  /** Producers this peer consumes or is about to (a consumer is made once per producer). */
  readonly consuming = new Set<string>();
  rtpCapabilities: RtpCapabilities | null = null;
  /** What this participant's page shows (its last `view`). */
  view: ReceiverView = NO_VIEW_YET;
  /** Consumers the page set up (consumer-ready): only these are ever resumed. */
  readonly ready = new Set<string>();
  /** Each ready consumer's plan as last applied on the worker. */
  readonly applied = new Map<string, ConsumerPlan>();
  /** The last `seq` of the events told to this participant since its media-join (1, 2, 3...): a gap tells the client one was lost. */
  seq = 0;
  /** Consumers offered (consumer-new) and not answered yet: when, how many times, and the offer to send again. */
  readonly offered = new Map<string, { at: number; times: number; offer: MediaEvent }>();
  /** The page answered an offer since the last re-offer round: it is working through its offers (RoomMedia.reofferUnanswered). */
  answered = false;
  /** Producers whose consumer the page closed itself (consumer-close: it could not set it up): not offered again. */
  readonly declined = new Set<string>();
  /** muteOnEntry was applied to this peer's first microphone. */
  entryMuteDone = false;
  /** What its page last measured of its media (media-report). */
  report: MediaReport | null = null;
  closed = false;

  constructor(participantId: string, roomRole: RoomRole, sinceRev: number) {
    this.participantId = participantId;
    this.roomRole = roomRole;
    this.sinceRev = sinceRev;
  }

  transport(direction: TransportDirection): PeerTransport | undefined {
    for (const t of this.transports.values()) if (t.direction === direction) return t;
    return undefined;
  }

  bySource(source: MediaSource): PeerProducer | undefined {
    for (const p of this.producers.values()) if (p.source === source) return p;
    return undefined;
  }

  /** Closes every transport, and with them every producer and consumer. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.transports.values()) t.transport.close();
    this.transports.clear();
  }
}
