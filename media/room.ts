import type { ActiveSpeakerObserver } from 'mediasoup/node/lib/ActiveSpeakerObserver.js';
import type { Consumer } from 'mediasoup/node/lib/Consumer.js';
import type { Router } from 'mediasoup/node/lib/Router.js';
import type { DtlsParameters } from 'mediasoup/node/lib/WebRtcTransport.js';
import type { RtpCapabilities, RtpParameters } from 'mediasoup/node/lib/RtpParameters.js';
import type { ClientSettings, RosterEntry } from '../src/core/room.ts';
import { AppError } from '../src/core/errors.ts';
import type { Logger } from '../src/platform/logger.ts';
import { isAudio, RoomAccess, type MediaSource, type RoomRole, type Standing } from '../src/core/room-access.ts';
import type { MediaEvent, ProducerPauseReason, TransportDirection } from '../src/core/room-protocol.ts';
import { ROUTER_CODECS } from './codecs.ts';
import { Peer, type PeerProducer } from './peer.ts';
import type { MediaWorker, WorkerPool } from './workers.ts';

/** Where a media event goes: one participant, or everyone in the room. */
export type MediaTarget = { participantId: string } | { all: true };
export type MediaEmit = (to: MediaTarget, message: MediaEvent) => void;

/** The room as the meeting actor last described it (roster with standings, settings), at a revision. */
export interface RoomState {
  rev: number;
  roster: RosterEntry[];
  settings: ClientSettings;
}

export interface RoomMediaOptions {
  meetingId: string;
  /** The placement revision this room was opened for. */
  placementRev: number;
  pool: WorkerPool;
  worker: MediaWorker;
  /** Consumers one worker should carry before new receivers go to a router on another worker. */
  capacity: number;
  maxIncomingBitrate: number;
  initialOutgoingBitrate: number;
  emit: MediaEmit;
  log: Logger;
  state: RoomState;
}

const QUALITY_PERIOD_MS = 2000;
const notFound = (what: string) => new AppError('not_found', { message: `No such ${what} in your media.` });

/**
 * A mediasoup call on a producer, consumer or transport that may close while the call is in flight (its
 * producer closed, its owner left): answered as the object being gone, which it is, rather than as a
 * server error. The worker may drop the object before this process hears so, and then answers that it
 * has no handler for its id.
 */
async function whileOpen<T>(target: { closed: boolean }, what: string, call: () => Promise<T>): Promise<T> {
  if (target.closed) throw notFound(what);
  try {
    return await call();
  } catch (err) {
    if (target.closed || /request handler with ID .* not found/.test((err as Error).message)) throw notFound(what);
    throw err;
  }
}

/** The reason a policy refusal holds a producer paused. */
const holdReason = (code: string): ProducerPauseReason => (code === 'muted_by_host' ? 'muted-by-host' : code === 'floor_required' ? 'floor' : 'policy');

/**
 * One live room's media on this node: a main router on the placed worker where every producer
 * lands, and more routers on other workers of this node for receivers once a worker carries its
 * share of consumers (producers are piped to them with pipeToRouter). Every participant receives every
 * other participant's producers; consumers start paused and the client resumes them. The meeting
 * actor's roster and settings (RoomAccess) decide what may be sent: a locked microphone is held paused
 * here, whatever the client asks, and a participant who left loses its transports at once.
 */
export class RoomMedia {
  readonly meetingId: string;
  readonly placementRev: number;
  readonly #o: RoomMediaOptions;
  readonly #main: Router;
  readonly #routers = new Map<number, Promise<Router>>();
  /** Producers piped to the room's other routers: producer id -> router id -> the pipe. Forgotten when the producer closes. */
  readonly #pipes = new Map<string, Map<string, Promise<unknown>>>();
  readonly #peers = new Map<string, Peer>();
  readonly #speaker: ActiveSpeakerObserver;
  #state: RoomState;
  #standing = new Map<string, RosterEntry>();
  #quality = new Map<string, number>();
  #qualityTimer: NodeJS.Timeout;
  #lastMediaState = '';
  #closed = false;

  private constructor(o: RoomMediaOptions, main: Router, speaker: ActiveSpeakerObserver) {
    this.#o = o;
    this.meetingId = o.meetingId;
    this.placementRev = o.placementRev;
    this.#main = main;
    this.#routers.set(o.worker.index, Promise.resolve(main));
    this.#speaker = speaker;
    this.#state = o.state;
    for (const p of o.state.roster) this.#standing.set(p.participantId, p);
    speaker.on('dominantspeaker', ({ producer }) => {
      const participantId = (producer.appData as { participantId?: string }).participantId ?? null;
      this.#o.emit({ all: true }, { type: 'active-speaker', participantId });
    });
    this.#qualityTimer = setInterval(() => this.#sendQuality(), QUALITY_PERIOD_MS);
    this.#qualityTimer.unref();
  }

  static async open(o: RoomMediaOptions): Promise<RoomMedia> {
    const main = await o.worker.worker.createRouter({ mediaCodecs: ROUTER_CODECS, appData: { meetingId: o.meetingId } });
    const speaker = await main.createActiveSpeakerObserver({ interval: 300 });
    return new RoomMedia(o, main, speaker);
  }

  get workerIndex(): number {
    return this.#o.worker.index;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get peers(): number {
    return this.#peers.size;
  }

  /** The workers the room's routers are on (the placed one first). */
  get workers(): number[] {
    return [...this.#routers.keys()];
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#qualityTimer);
    for (const p of this.#peers.values()) p.close();
    this.#peers.clear();
    for (const r of this.#routers.values()) void r.then((router) => router.close(), () => {});
  }

  // ---- room state from the meeting actor --------------------------------------------------------

  /** Participants with media here, and their producers and consumers. */
  counts(): { participants: number; producers: number; consumers: number } {
    let producers = 0;
    let consumers = 0;
    for (const peer of this.#peers.values()) {
      producers += peer.producers.size;
      consumers += peer.consumers.size;
    }
    return { participants: this.#peers.size, producers, consumers };
  }

  /** A newer roster or settings: participants who left lose their media, and producers are held or closed as RoomAccess now says. */
  applyState(next: Partial<RoomState> & { rev: number }): void {
    if (this.#closed || next.rev <= this.#state.rev) return;
    this.#state = { ...this.#state, ...next };
    if (next.roster) {
      this.#standing = new Map(next.roster.map((p) => [p.participantId, p]));
      for (const peer of [...this.#peers.values()]) {
        const s = this.#standing.get(peer.participantId);
        if (!s && next.rev >= peer.sinceRev) this.#dropPeer(peer);
        else if (s) peer.roomRole = s.roomRole;
      }
    }
    for (const peer of this.#peers.values()) for (const p of [...peer.producers.values()]) void this.#enforce(peer, p);
  }

  #standingOf(peer: Peer): Standing {
    const s = this.#standing.get(peer.participantId);
    return { roomRole: s?.roomRole ?? peer.roomRole, micLocked: s?.micLocked ?? false, floor: s?.floor ?? false };
  }

  /** Holds a producer paused (or closes it, when its source is no longer allowed at all) as the policy says. */
  async #enforce(peer: Peer, p: PeerProducer): Promise<void> {
    const refused = RoomAccess.send(p.source, this.#standingOf(peer), this.#state.settings);
    if (!refused) {
      if (p.heldBy && p.heldBy !== 'entry') p.heldBy = null; // released: the owner unmutes themselves
      return;
    }
    if (refused.code === 'produce_not_allowed') return this.#closeProducer(peer, p, 'policy');
    const reason = holdReason(refused.code);
    if (p.heldBy === reason && p.producer.paused) return;
    p.heldBy = reason;
    if (!p.producer.paused) await p.producer.pause().catch(() => {});
    this.#o.emit({ participantId: peer.participantId }, { type: 'producer-paused', producerId: p.producer.id, source: p.source, reason });
    this.#sendMediaState();
  }

  // ---- signaling: one method per request --------------------------------------------------------

  /** media-join: (re)starts the participant's media; anything it had is closed. */
  join(participantId: string, roomRole: RoomRole, sinceRev: number): { routerRtpCapabilities: RtpCapabilities } {
    this.#live();
    const old = this.#peers.get(participantId);
    if (old) this.#dropPeer(old);
    this.#peers.set(participantId, new Peer(participantId, roomRole, sinceRev));
    return { routerRtpCapabilities: this.#main.rtpCapabilities };
  }

  async createTransport(participantId: string, direction: TransportDirection) {
    const peer = this.#peer(participantId);
    if (direction === 'send') {
      const refused = RoomAccess.sends(this.#standingOf(peer).roomRole);
      if (refused) throw new AppError(refused.code as 'produce_not_allowed', { message: refused.message });
    }
    const old = peer.transport(direction);
    if (old) {
      old.transport.close();
      peer.transports.delete(old.transport.id);
    }
    // Producers land on the main router; a receiver goes to a router whose worker has room for what it will consume.
    const { router, worker } = direction === 'send' ? { router: this.#main, worker: this.#o.worker } : await this.#recvRouter();
    const transport = await router.createWebRtcTransport({
      webRtcServer: worker.webRtcServer,
      enableUdp: true,
      enableTcp: true,
      preferUdp: true,
      initialAvailableOutgoingBitrate: this.#o.initialOutgoingBitrate,
      appData: { participantId, direction },
    });
    if (peer.closed) {
      transport.close();
      throw notFound('participant');
    }
    if (direction === 'send') await transport.setMaxIncomingBitrate(this.#o.maxIncomingBitrate).catch(() => {});
    peer.transports.set(transport.id, { transport, direction, router, workerIndex: worker.index });
    transport.on('icestatechange', () => this.#sendQuality());
    return { transportId: transport.id, iceParameters: transport.iceParameters, iceCandidates: transport.iceCandidates, dtlsParameters: transport.dtlsParameters };
  }

  /**
   * A plain-RTP transport for a server-side peer (an RTP ingest producing into the room, a recorder's
   * egress consuming from it): the same room rules as a WebRTC participant, no ICE or DTLS. A receiving
   * one sends to `remote` (SRTP when `srtp`); a sending one learns its remote from the first packet.
   */
  async createPlainTransport(participantId: string, direction: TransportDirection, opts: { listenIp: string; remote?: { ip: string; port: number }; srtp?: boolean }) {
    const peer = this.#peer(participantId);
    const { router, worker } = direction === 'send' ? { router: this.#main, worker: this.#o.worker } : await this.#recvRouter();
    const transport = await router.createPlainTransport({
      listenIp: opts.listenIp,
      rtcpMux: true,
      comedia: direction === 'send',
      ...(opts.srtp ? { enableSrtp: true, srtpCryptoSuite: 'AES_CM_128_HMAC_SHA1_80' as const } : {}),
      appData: { participantId, direction },
    });
    if (direction === 'recv' && opts.remote) await transport.connect({ ip: opts.remote.ip, port: opts.remote.port, ...(opts.srtp ? { srtpParameters: transport.srtpParameters! } : {}) });
    peer.transports.set(transport.id, { transport, direction, router, workerIndex: worker.index });
    return { transportId: transport.id, ip: transport.tuple.localIp, port: transport.tuple.localPort, srtpParameters: transport.srtpParameters ?? null };
  }

  async connectTransport(participantId: string, transportId: string, dtlsParameters: DtlsParameters): Promise<Record<string, never>> {
    const t = this.#peer(participantId).transports.get(transportId);
    if (!t || !('iceParameters' in t.transport)) throw notFound('transport');
    await whileOpen(t.transport, 'transport', () => t.transport.connect({ dtlsParameters })).catch((err: Error) => {
      if (err instanceof AppError) throw err;
      throw new AppError('validation_failed', { message: `transport-connect: ${err.message}`, details: { fields: [{ field: 'dtlsParameters', in: 'body', code: 'invalid', message: err.message }] } });
    });
    return {};
  }

  async restartIce(participantId: string, transportId: string) {
    const t = this.#peer(participantId).transports.get(transportId);
    if (!t || !('iceParameters' in t.transport)) throw notFound('transport');
    const transport = t.transport;
    return { iceParameters: await whileOpen(transport, 'transport', () => transport.restartIce()) };
  }

  /** media-ready: the device's capabilities are known; it now receives every producer of the room. */
  async ready(participantId: string, rtpCapabilities: RtpCapabilities): Promise<{ consumers: number }> {
    const peer = this.#peer(participantId);
    if (!peer.transport('recv')) throw new AppError('media_not_ready', { message: 'Create the receiving transport before media-ready.' });
    peer.rtpCapabilities = rtpCapabilities;
    const made = await Promise.all(
      [...this.#peers.values()].filter((other) => other !== peer).flatMap((other) => [...other.producers.values()].map((p) => this.#consume(peer, other, p))),
    );
    this.#o.emit({ participantId }, this.#mediaState());
    return { consumers: made.filter(Boolean).length };
  }

  async produce(participantId: string, r: { transportId: string; kind: 'audio' | 'video'; source: MediaSource; rtpParameters: RtpParameters; paused?: boolean }) {
    const peer = this.#peer(participantId);
    const refused = RoomAccess.produce(r.source, this.#standingOf(peer).roomRole, this.#state.settings);
    if (refused) throw new AppError(refused.code as 'produce_not_allowed', { message: refused.message, details: { source: r.source } });
    if (isAudio(r.source) !== (r.kind === 'audio')) {
      throw new AppError('validation_failed', { message: `A ${r.source} producer is ${isAudio(r.source) ? 'audio' : 'video'}.`, details: { fields: [{ field: 'kind', in: 'body', code: 'invalid', message: 'does not match source' }] } });
    }
    // A shared screen's sound belongs to the shared screen: alone it would be a second microphone.
    if (r.source === 'screen-audio' && !peer.bySource('screen')) {
      throw new AppError('invalid_state', { message: 'screen-audio is the sound of a shared screen: produce the screen first.', details: { source: r.source } });
    }
    const t = peer.transports.get(r.transportId);
    if (!t || t.direction !== 'send') throw notFound('sending transport');
    const same = peer.bySource(r.source);
    if (same) this.#closeProducer(peer, same, null);

    const standing = this.#standingOf(peer);
    const hold = RoomAccess.send(r.source, standing, this.#state.settings);
    let heldBy: ProducerPauseReason | null = hold ? holdReason(hold.code) : null;
    if (!heldBy && r.source === 'mic' && !peer.entryMuteDone && (this.#standing.get(participantId)?.enteredMuted ?? RoomAccess.entersMuted(standing.roomRole, this.#state.settings))) {
      heldBy = 'entry';
    }
    if (r.source === 'mic') peer.entryMuteDone = true;
    const producer = await t.transport
      .produce({ kind: r.kind, rtpParameters: r.rtpParameters, paused: r.paused === true || heldBy !== null, appData: { participantId, source: r.source } })
      .catch((err: Error) => {
        throw new AppError('validation_failed', { message: `produce: ${err.message}`, details: { fields: [{ field: 'rtpParameters', in: 'body', code: 'invalid', message: err.message }] } });
      });
    if (peer.closed || (r.source === 'screen-audio' && !peer.bySource('screen'))) {
      producer.close();
      throw peer.closed ? notFound('participant') : new AppError('invalid_state', { message: 'The shared screen closed meanwhile.', details: { source: r.source } });
    }
    // A host's mute or a lecture may have come while the worker made the producer: the room's rules as
    // they are now decide, before anyone hears of it.
    const now = RoomAccess.send(r.source, this.#standingOf(peer), this.#state.settings);
    if (now) {
      heldBy = holdReason(now.code);
      if (!producer.paused) await producer.pause().catch(() => {});
    }
    const entry: PeerProducer = { producer, source: r.source, heldBy };
    peer.producers.set(producer.id, entry);
    producer.observer.once('close', () => {
      peer.producers.delete(producer.id);
      this.#pipes.delete(producer.id); // its pipes closed with it (mediasoup closes the piped producers)
      if (r.source === 'screen') {
        const sound = peer.bySource('screen-audio');
        if (sound) this.#closeProducer(peer, sound, 'policy');
      }
      this.#sendMediaState();
    });
    if (now?.code === 'produce_not_allowed') {
      this.#closeProducer(peer, entry, 'policy');
      throw new AppError('produce_not_allowed', { message: now.message, details: { source: r.source } });
    }
    if (r.source === 'mic') await this.#speaker.addProducer({ producerId: producer.id }).catch(() => {});
    if (heldBy) this.#o.emit({ participantId }, { type: 'producer-paused', producerId: producer.id, source: r.source, reason: heldBy });
    await Promise.all([...this.#peers.values()].filter((other) => other !== peer).map((other) => this.#consume(other, peer, entry)));
    this.#sendMediaState();
    return { producerId: producer.id, paused: producer.paused };
  }

  async pauseProducer(participantId: string, producerId: string): Promise<Record<string, never>> {
    const p = this.#peer(participantId).producers.get(producerId);
    if (!p) throw notFound('producer');
    await whileOpen(p.producer, 'producer', () => p.producer.pause());
    this.#sendMediaState();
    return {};
  }

  /** The owner unmutes: refused while a host mute or lecture mode holds it (RoomAccess.send), before and after the worker resumes it. */
  async resumeProducer(participantId: string, producerId: string): Promise<Record<string, never>> {
    const peer = this.#peer(participantId);
    const p = peer.producers.get(producerId);
    if (!p) throw notFound('producer');
    const refusal = () => RoomAccess.send(p.source, this.#standingOf(peer), this.#state.settings);
    let refused = refusal();
    if (refused) throw new AppError(refused.code as 'muted_by_host', { message: refused.message, details: { producerId, source: p.source } });
    p.heldBy = null;
    await whileOpen(p.producer, 'producer', () => p.producer.resume());
    // A mute that arrived while the worker resumed it found it still paused and left it so: hold it now.
    refused = refusal();
    if (refused) {
      p.heldBy = holdReason(refused.code);
      await p.producer.pause().catch(() => {});
      this.#sendMediaState();
      throw new AppError(refused.code as 'muted_by_host', { message: refused.message, details: { producerId, source: p.source } });
    }
    this.#sendMediaState();
    return {};
  }

  closeProducerById(participantId: string, producerId: string): Record<string, never> {
    const peer = this.#peer(participantId);
    const p = peer.producers.get(producerId);
    if (!p) throw notFound('producer');
    this.#closeProducer(peer, p, null);
    return {};
  }

  async resumeConsumer(participantId: string, consumerId: string): Promise<Record<string, never>> {
    const c = this.#peer(participantId).consumers.get(consumerId);
    if (!c) throw notFound('consumer');
    await whileOpen(c, 'consumer', () => c.resume());
    return {};
  }

  async pauseConsumer(participantId: string, consumerId: string): Promise<Record<string, never>> {
    const c = this.#peer(participantId).consumers.get(consumerId);
    if (!c) throw notFound('consumer');
    await whileOpen(c, 'consumer', () => c.pause());
    return {};
  }

  async setConsumerLayers(participantId: string, consumerId: string, spatialLayer: number, temporalLayer?: number): Promise<Record<string, never>> {
    const c = this.#peer(participantId).consumers.get(consumerId);
    if (!c) throw notFound('consumer');
    if (c.type === 'simulcast' || c.type === 'svc') await whileOpen(c, 'consumer', () => c.setPreferredLayers({ spatialLayer, ...(temporalLayer === undefined ? {} : { temporalLayer }) }));
    return {};
  }

  /** What each participant has here: its transports, producers (paused or not, and why) and consumers (tests, status). */
  inspect(): { pipes: number; peers: { participantId: string; transports: TransportDirection[]; producers: { producerId: string; source: MediaSource; paused: boolean; heldBy: ProducerPauseReason | null }[]; consumers: number; pausedConsumers: number; consuming: number }[] } {
    let pipes = 0;
    for (const m of this.#pipes.values()) pipes += m.size;
    return {
      pipes,
      peers: [...this.#peers.values()].map((peer) => ({
        participantId: peer.participantId,
        transports: [...peer.transports.values()].map((t) => t.direction),
        producers: [...peer.producers.values()].map((p) => ({ producerId: p.producer.id, source: p.source, paused: p.producer.paused, heldBy: p.heldBy })),
        consumers: peer.consumers.size,
        pausedConsumers: [...peer.consumers.values()].filter((c) => c.paused).length,
        consuming: peer.consuming.size,
      })),
    };
  }

  // ---- internals ----------------------------------------------------------------------------------

  #live(): void {
    if (this.#closed) throw new AppError('media_unavailable', { message: 'The room\'s media on this server was closed; wait for the next media message.' });
  }

  #peer(participantId: string): Peer {
    this.#live();
    const peer = this.#peers.get(participantId);
    if (!peer) throw new AppError('media_not_ready', { message: 'Send media-join first.' });
    return peer;
  }

  #dropPeer(peer: Peer): void {
    this.#peers.delete(peer.participantId);
    peer.close();
    this.#quality.delete(peer.participantId);
    this.#sendMediaState();
  }

  #closeProducer(peer: Peer, p: PeerProducer, reason: ProducerPauseReason | null): void {
    if (p.producer.closed) return;
    p.producer.close();
    peer.producers.delete(p.producer.id);
    if (reason) this.#o.emit({ participantId: peer.participantId }, { type: 'producer-closed', producerId: p.producer.id, source: p.source, reason });
    this.#sendMediaState();
  }

  /**
   * The router a new receiver goes on: the room's router on a worker that still has room for the
   * consumers this receiver will need; otherwise a router on the least-loaded worker of this node
   * (made for the room on first use).
   */
  async #recvRouter(): Promise<{ router: Router; worker: MediaWorker }> {
    const need = Math.max(1, [...this.#peers.values()].reduce((n, p) => n + p.producers.size, 0));
    const { capacity } = this.#o;
    for (const [index, router] of this.#routers) {
      const w = this.#o.pool.at(index);
      if (w && w.consumers + need <= capacity) return { router: await router, worker: w };
    }
    const w = this.#o.pool.leastLoaded(capacity, need) ?? this.#o.pool.leastLoaded() ?? this.#o.worker;
    let router = this.#routers.get(w.index);
    if (!router) {
      router = w.worker.createRouter({ mediaCodecs: ROUTER_CODECS, appData: { meetingId: this.meetingId } });
      this.#routers.set(w.index, router);
      router.catch(() => this.#routers.delete(w.index));
      this.#o.log.info({ meetingId: this.meetingId, worker: w.index, routers: this.#routers.size }, 'room spread to another worker');
    }
    return { router: await router, worker: w };
  }

  /** The producer, present on `router` (piped from the main router once per producer and router). */
  async #piped(producerId: string, router: Router): Promise<void> {
    if (router === this.#main) return;
    let pipes = this.#pipes.get(producerId);
    if (!pipes) this.#pipes.set(producerId, (pipes = new Map()));
    let pipe = pipes.get(router.id);
    if (!pipe) {
      pipe = this.#main.pipeToRouter({ producerId, router });
      pipes.set(router.id, pipe);
      const mine = pipes;
      pipe.catch(() => mine.delete(router.id));
    }
    await pipe;
  }

  /** One consumer of `from`'s producer for `to`, once `to` can receive; created paused, announced with consumer-new. */
  async #consume(to: Peer, from: Peer, p: PeerProducer): Promise<Consumer | null> {
    const recv = to.transport('recv');
    const caps = to.rtpCapabilities;
    if (!recv || !caps || to.consuming.has(p.producer.id) || p.producer.closed) return null;
    to.consuming.add(p.producer.id);
    try {
      await this.#piped(p.producer.id, recv.router);
      if (!recv.router.canConsume({ producerId: p.producer.id, rtpCapabilities: caps })) {
        to.consuming.delete(p.producer.id);
        return null;
      }
      const consumer = await recv.transport.consume({ producerId: p.producer.id, rtpCapabilities: caps, paused: true, appData: { participantId: from.participantId, source: p.source } });
      if (to.closed) {
        consumer.close();
        return null;
      }
      const worker = this.#o.pool.at(recv.workerIndex);
      if (worker) worker.consumers++;
      to.consumers.set(consumer.id, consumer);
      const tell = (m: MediaEvent) => this.#o.emit({ participantId: to.participantId }, m);
      consumer.observer.once('close', () => {
        to.consumers.delete(consumer.id);
        to.consuming.delete(p.producer.id);
        if (worker && this.#o.pool.at(worker.index) === worker) worker.consumers--;
      });
      consumer.on('producerclose', () => tell({ type: 'consumer-closed', consumerId: consumer.id }));
      consumer.on('producerpause', () => tell({ type: 'consumer-paused', consumerId: consumer.id }));
      consumer.on('producerresume', () => tell({ type: 'consumer-resumed', consumerId: consumer.id }));
      consumer.on('layerschange', (l) => tell({ type: 'consumer-layers', consumerId: consumer.id, spatialLayer: l?.spatialLayer ?? null, temporalLayer: l?.temporalLayer ?? null }));
      tell({
        type: 'consumer-new',
        consumerId: consumer.id,
        producerId: p.producer.id,
        participantId: from.participantId,
        source: p.source,
        kind: consumer.kind,
        rtpParameters: consumer.rtpParameters as unknown as Record<string, unknown>,
        consumerType: consumer.type,
        producerPaused: consumer.producerPaused,
      });
      return consumer;
    } catch (err) {
      to.consuming.delete(p.producer.id);
      this.#o.log.warn({ err, meetingId: this.meetingId, to: to.participantId, producerId: p.producer.id }, 'could not consume');
      return null;
    }
  }

  #mediaState(): MediaEvent {
    return {
      type: 'media-state',
      participants: [...this.#peers.values()]
        .filter((peer) => peer.producers.size > 0)
        .map((peer) => ({
          participantId: peer.participantId,
          sources: Object.fromEntries([...peer.producers.values()].map((p) => [p.source, p.producer.paused ? 'off' : 'on'])),
        })),
    };
  }

  #sendMediaState(): void {
    if (this.#closed) return;
    const m = this.#mediaState();
    const text = JSON.stringify(m);
    if (text === this.#lastMediaState) return;
    this.#lastMediaState = text;
    this.#o.emit({ all: true }, m);
  }

  /**
   * Network quality per participant, 0 to 5: the worse of what it sends (its producers' best encoding
   * score) and what it receives (its consumers' average score), both 0 to 10 in mediasoup; 0 when a
   * transport lost ICE. Sent to everyone when any value changes.
   */
  #sendQuality(): void {
    if (this.#closed) return;
    let changed = false;
    for (const peer of this.#peers.values()) {
      const transports = [...peer.transports.values()];
      if (transports.length === 0) continue;
      let q: number;
      if (transports.some((t) => 'iceState' in t.transport && (t.transport.iceState === 'disconnected' || t.transport.iceState === 'closed'))) q = 0;
      else {
        const up = [...peer.producers.values()].filter((p) => !p.producer.paused).map((p) => Math.max(0, ...p.producer.score.map((s) => s.score)));
        const down = [...peer.consumers.values()].filter((c) => !c.paused && !c.producerPaused).map((c) => c.score.score);
        const upScore = up.length ? Math.min(...up) : 10;
        const downScore = down.length ? down.reduce((a, b) => a + b, 0) / down.length : 10;
        q = Math.round(Math.min(upScore, downScore) / 2);
      }
      if (this.#quality.get(peer.participantId) !== q) {
        this.#quality.set(peer.participantId, q);
        changed = true;
      }
    }
    if (changed) {
      this.#o.emit({ all: true }, { type: 'network-quality', participants: [...this.#quality].map(([participantId, quality]) => ({ participantId, quality })) });
    }
  }
}
