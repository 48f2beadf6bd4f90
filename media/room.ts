import type { ActiveSpeakerObserver } from 'mediasoup/node/lib/ActiveSpeakerObserver.js';
import type { Consumer } from 'mediasoup/node/lib/Consumer.js';
import type { Router } from 'mediasoup/node/lib/Router.js';
import type { DtlsParameters } from 'mediasoup/node/lib/WebRtcTransport.js';
import type { RtpCapabilities, RtpParameters } from 'mediasoup/node/lib/RtpParameters.js';
import type { ClientSettings, RosterEntry } from '../src/core/room.ts';
import { AppError } from '../src/core/errors.ts';
import type { Logger } from '../src/platform/logger.ts';
import { isAudio, RoomAccess, type MediaSource, type RoomRole, type Standing } from '../src/core/room-access.ts';
import { PROTOCOL_LIMITS, type MediaErrorCode, type MediaEvent, type MediaHealth, type MediaReport, type MediaResync, type ProducerPauseReason, type TransportDirection, type ViewTile } from '../src/core/room-protocol.ts';
import { ROOM_VIDEO_CODEC, ROUTER_CODECS } from './codecs.ts';
import { Peer, type PeerProducer } from './peer.ts';
import { planConsumer, receiverView, wantedLayer, type ConsumerPlan } from './view.ts';
import { Reservation, type MediaWorker, type WorkerPool } from './workers.ts';
import { Recorder } from './recording/recorder.ts';
import { CaptionPipeline, type Caption } from './captions/captions.ts';
import type { TranscriptionEngine } from '../src/platform/ai/asr.ts';
import type { SegmentManifest } from './recording/format.ts';

/** Where a media event goes: one participant, everyone in the room, or its hosts and cohosts. */
export type MediaTarget = { participantId: string } | { all: true } | { role: 'hosts' };
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
/**
 * mediasoup's stream score (10 x the share of packets delivered, to the 4th power) as network quality 0
 * to 5: about 1% loss is 5, 3% is 4, 5% is 3, 10% is 2 (red: the page offers audio only), 20% is 1.
 * Halving the score instead left a class's 10% loss at 3 or 4, a connection nobody would call good.
 */
const QUALITY_OF_SCORE = [0, 1, 1, 1, 1, 2, 2, 2, 3, 4, 5];
/** How often hosts hear each person's media health (media-health), when it changed. */
export const HEALTH_PERIOD_MS = 5000;
/** An offered consumer not answered (consumer-ready or consumer-close) this long is offered again, at most MAX_OFFERS times in all. */
export const REOFFER_MS = 5000;
export const MAX_OFFERS = 3;
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
 * share of consumers (producers are piped to them with pipeToRouter). Every participant is offered a
 * consumer of every other participant's producers, made paused; once its page has set one up
 * (consumer-ready) the server sends it as that page's `view` says (media/view.ts: paused when not on the
 * page, the layer that fits its tile), and tells each sender which layers anyone receives (dynacast). The meeting
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
  /** Every consumer of each producer, with its receiver (for dynacast). */
  readonly #consumersOf = new Map<string, Map<string, { peer: Peer; consumer: Consumer }>>();
  /** The top layer each video producer's owner was last told to send (layers-wanted); absent: all it sends. */
  readonly #wanted = new Map<string, number>();
  readonly #speaker: ActiveSpeakerObserver;
  /** Who the observer said speaks, last (a late joiner is told). */
  #speaking: string | null = null;
  #state: RoomState;
  #standing = new Map<string, RosterEntry>();
  #quality = new Map<string, number>();
  #qualityTimer: NodeJS.Timeout;
  #healthTimer: NodeJS.Timeout;
  #lastHealth = '';
  #healthPending: NodeJS.Timeout | null = null;
  #lastMediaState = '';
  /** The recording's capture, while the room is being recorded (recording/recorder.ts). */
  #recorder: Recorder | null = null;
  /** Live captions (captions/captions.ts): who has CC on, and the room's one pipeline while anyone does. */
  readonly #captionWatchers = new Set<string>();
  #captions: Promise<CaptionPipeline | null> | null = null;
  #captionLanguage: string | null = null;
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
      this.#speaking = participantId;
      this.#recorder?.speaker(participantId);
      this.#o.emit({ all: true }, { type: 'active-speaker', participantId });
      void this.#followSpeaker();
    });
    this.#qualityTimer = setInterval(() => {
      this.#sendQuality();
      this.reofferUnanswered();
    }, QUALITY_PERIOD_MS);
    this.#qualityTimer.unref();
    this.#healthTimer = setInterval(() => void this.sendHealth().catch((err) => o.log.warn({ err, meetingId: o.meetingId }, 'could not measure media health')), HEALTH_PERIOD_MS);
    this.#healthTimer.unref();
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
    clearInterval(this.#healthTimer);
    if (this.#healthPending) clearTimeout(this.#healthPending);
    this.#captionWatchers.clear();
    void this.#stopCaptions();
    for (const p of this.#peers.values()) p.close();
    this.#peers.clear();
    for (const r of this.#routers.values()) void r.then((router) => router.close(), () => {});
  }

  // ---- recording ----------------------------------------------------------------------------------

  /** The recording this room captures now, if any. */
  get recording(): { recordingId: string; segment: number; dir: string } | null {
    const r = this.#recorder;
    return r ? { recordingId: r.recordingId, segment: r.segment, dir: r.dir } : null;
  }

  /** Begins capturing a recording's segment into `dir`: every producer now, and each new one as it comes. */
  async startRecording(o: { recordingId: string; segment: number; dir: string; nodeId: string; paused: boolean }): Promise<void> {
    if (this.#closed || this.#recorder) return;
    const recorder = await Recorder.start({ ...o, router: this.#main, log: this.#o.log });
    if (this.#closed || this.#recorder) {
      await recorder.stop();
      return;
    }
    this.#recorder = recorder;
    recorder.speaker(this.#speaking);
    for (const peer of this.#peers.values()) for (const p of peer.producers.values()) await this.#record(recorder, peer, p);
  }

  async #record(recorder: Recorder, peer: Peer, p: PeerProducer): Promise<void> {
    const s = this.#standing.get(peer.participantId);
    await recorder
      .add({ producer: p.producer, source: p.source, participantId: peer.participantId, name: s?.name ?? peer.participantId, host: RoomAccess.isHost(s?.roomRole ?? peer.roomRole) })
      .catch((err) => this.#o.log.warn({ err, meetingId: this.meetingId }, 'a track could not be recorded'));
    this.#updateWanted(p.producer.id);
  }

  pauseRecording(paused: boolean): Promise<void> {
    return this.#recorder?.pause(paused) ?? Promise.resolve();
  }

  /** Stops capturing; the segment's files are complete when this resolves (null: nothing was being recorded). */
  async stopRecording(): Promise<SegmentManifest | null> {
    const r = this.#recorder;
    if (!r) return null;
    this.#recorder = null;
    const manifest = await r.stop();
    for (const id of this.#wanted.keys()) this.#updateWanted(id);
    return manifest;
  }

  // ---- live captions -----------------------------------------------------------------------------

  /**
   * Turns this participant's captions on or off (the caller checked that the organization may have
   * them: `captions` names its engine and language). The room's pipeline starts with the first watcher
   * and stops with the last.
   */
  async setCaptions(participantId: string, on: boolean, captions: { engine: TranscriptionEngine; language: string } | null): Promise<{ on: boolean; language: string | null }> {
    const peer = this.#peers.get(participantId);
    if (!peer) throw notFound('participant');
    if (!on || !captions) {
      if (this.#captionWatchers.delete(participantId) && !this.#captionWatchers.size) await this.#stopCaptions();
      return { on: false, language: null };
    }
    this.#captionWatchers.add(participantId);
    if (!this.#captions) {
      this.#captionLanguage = captions.language;
      this.#captions = CaptionPipeline.start({
        router: this.#main,
        engine: captions.engine,
        language: captions.language,
        log: this.#o.log,
        onCaption: (c) => this.#sendCaption(c),
      }).catch((err) => {
        this.#o.log.warn({ err, meetingId: this.meetingId }, 'captions: the pipeline could not start');
        return null;
      });
      await this.#followSpeaker();
    }
    if (!(await this.#captions)) {
      this.#captionWatchers.delete(participantId);
      this.#captions = null;
      throw new AppError('media_unavailable', { message: 'Captions could not start on this server; try again.' });
    }
    return { on: true, language: this.#captionLanguage };
  }

  /** The room's caption pipeline now (for tests and metrics): null when nobody watches. */
  async captionPipeline(): Promise<CaptionPipeline | null> {
    return (await this.#captions) ?? null;
  }

  async #stopCaptions(): Promise<void> {
    const pending = this.#captions;
    this.#captions = null;
    const pipeline = await pending;
    await pipeline?.stop();
  }

  /** The captions follow the active speaker's microphone, or, before anyone spoke, the first microphone sending. */
  async #followSpeaker(): Promise<void> {
    const pipeline = await this.#captions;
    if (!pipeline || pipeline.stopped) return;
    const micOf = (peer: Peer | undefined) => {
      const p = peer?.bySource('mic');
      return p && !p.producer.closed ? p : undefined;
    };
    let peer = this.#speaking ? this.#peers.get(this.#speaking) : undefined;
    if (!micOf(peer)) peer = [...this.#peers.values()].find((x) => micOf(x) && !micOf(x)!.producer.paused) ?? [...this.#peers.values()].find((x) => micOf(x));
    const mic = micOf(peer);
    if (!peer || !mic) return pipeline.follow(null);
    await pipeline.follow({ producer: mic.producer, participantId: peer.participantId, name: this.#standing.get(peer.participantId)?.name ?? peer.participantId });
  }

  #sendCaption(c: Caption): void {
    const m = { type: 'caption', participantId: c.participantId, name: c.name, text: c.text, at: new Date(c.at).toISOString(), final: true } as const;
    for (const id of this.#captionWatchers) if (this.#peers.has(id)) this.#o.emit({ participantId: id }, m);
  }

  // ---- room state from the meeting actor --------------------------------------------------------

  /** Participants with media here, and their producers and consumers; `relayed`: those whose page says its path goes through a TURN relay. */
  counts(): { participants: number; producers: number; consumers: number; relayed: number } {
    let producers = 0;
    let consumers = 0;
    let relayed = 0;
    for (const peer of this.#peers.values()) {
      producers += peer.producers.size;
      consumers += peer.consumers.size;
      if (peer.report?.relayed) relayed++;
    }
    return { participants: this.#peers.size, producers, consumers, relayed };
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
    this.#tell(peer, { type: 'producer-paused', producerId: p.producer.id, source: p.source, reason });
    this.#sendMediaState();
  }

  // ---- signaling: one method per request --------------------------------------------------------

  /**
   * media-join: (re)starts the participant's media; anything it had is closed. With `resume` (its socket
   * came back within the reconnect grace) the media it still has here is kept as it is, transports,
   * producers and consumers, so nobody else sees anything of it close; the page then asks media-resync.
   */
  join(participantId: string, roomRole: RoomRole, sinceRev: number, resume = false): { routerRtpCapabilities: RtpCapabilities; resumed: boolean } {
    this.#live();
    const old = this.#peers.get(participantId);
    if (old && resume && old.transports.size > 0) {
      old.roomRole = roomRole;
      old.sinceRev = Math.max(old.sinceRev, sinceRev);
      return { routerRtpCapabilities: this.#main.rtpCapabilities, resumed: true };
    }
    if (old) this.#dropPeer(old);
    const peer = new Peer(participantId, roomRole, sinceRev);
    // muteOnEntry holds the microphone once per stay in the room, not once per media session
    peer.entryMuteDone = old?.entryMuteDone ?? false;
    this.#peers.set(participantId, peer);
    return { routerRtpCapabilities: this.#main.rtpCapabilities, resumed: false };
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
    const { router, worker, reservation } = direction === 'send' ? { router: this.#main, worker: this.#o.worker, reservation: null } : await this.#recvRouter();
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
      reservation?.release();
      throw notFound('participant');
    }
    if (direction === 'send') await transport.setMaxIncomingBitrate(this.#o.maxIncomingBitrate).catch(() => {});
    peer.transports.set(transport.id, { transport, direction, router, workerIndex: worker.index, reservation });
    if (reservation) transport.observer.once('close', () => reservation.release());
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
    const { router, worker, reservation } = direction === 'send' ? { router: this.#main, worker: this.#o.worker, reservation: null } : await this.#recvRouter();
    const transport = await router.createPlainTransport({
      listenIp: opts.listenIp,
      rtcpMux: true,
      comedia: direction === 'send',
      ...(opts.srtp ? { enableSrtp: true, srtpCryptoSuite: 'AES_CM_128_HMAC_SHA1_80' as const } : {}),
      appData: { participantId, direction },
    });
    if (direction === 'recv' && opts.remote) await transport.connect({ ip: opts.remote.ip, port: opts.remote.port, ...(opts.srtp ? { srtpParameters: transport.srtpParameters! } : {}) });
    peer.transports.set(transport.id, { transport, direction, router, workerIndex: worker.index, reservation });
    if (reservation) transport.observer.once('close', () => reservation.release());
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
  async ready(participantId: string, rtpCapabilities: RtpCapabilities): Promise<{ consumers: number; receivesVideo: boolean; videoCodec: string }> {
    const peer = this.#peer(participantId);
    if (!peer.transport('recv')) throw new AppError('media_not_ready', { message: 'Create the receiving transport before media-ready.' });
    peer.rtpCapabilities = rtpCapabilities;
    const made = await Promise.all(
      [...this.#peers.values()].filter((other) => other !== peer).flatMap((other) => [...other.producers.values()].map((p) => this.#consume(peer, other, p))),
    );
    this.#tell(peer, this.#mediaState());
    // said when it changes: one who joins while the same person speaks on is told now
    if (this.#speaking && this.#peers.has(this.#speaking)) this.#tell(peer, { type: 'active-speaker', participantId: this.#speaking });
    const receivesVideo = (rtpCapabilities.codecs ?? []).some((c) => c.kind === 'video' && c.mimeType.toLowerCase() === ROOM_VIDEO_CODEC.toLowerCase());
    return { consumers: made.filter(Boolean).length, receivesVideo, videoCodec: ROOM_VIDEO_CODEC };
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
      this.#wanted.delete(producer.id);
      if (r.source === 'mic' && this.#captions) void this.#followSpeaker();
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
    if (heldBy) this.#tell(peer, { type: 'producer-paused', producerId: producer.id, source: r.source, reason: heldBy });
    await Promise.all([...this.#peers.values()].filter((other) => other !== peer).map((other) => this.#consume(other, peer, entry)));
    if (this.#recorder) await this.#record(this.#recorder, peer, entry);
    if (r.source === 'mic' && this.#captions) void this.#followSpeaker();
    this.#updateWanted(producer.id);
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

  /**
   * stop-camera: a host or cohost turns a participant's camera off; its producer closes (the owner hears
   * producer-closed, reason stopped-by-host) and they may turn it on again. RoomAccess decides from the
   * standings this room knows (the gateway asked already, from its own view).
   */
  stopCamera(participantId: string, byRole: RoomRole, targetId: string): Record<string, never> {
    this.#live(); // the host need not have media of their own
    const target = this.#peers.get(targetId);
    const standing = this.#standing.get(targetId);
    const d = RoomAccess.command('stop-camera', this.#standing.get(participantId)?.roomRole ?? byRole, standing?.roomRole ?? target?.roomRole);
    if (d) throw new AppError(d.code as 'forbidden', { message: d.message });
    const camera = target?.bySource('camera');
    if (!target || !camera) throw new AppError('not_found', { message: 'That participant sends no camera.', details: { participantId: targetId } });
    this.#closeProducer(target, camera, 'stopped-by-host');
    return {};
  }

  /** view: what this participant's page shows; each of its video consumers follows it, and the senders hear what is wanted. */
  async setView(participantId: string, tiles: ViewTile[], audioOnly: boolean): Promise<Record<string, never>> {
    const peer = this.#peer(participantId);
    peer.view = receiverView(tiles, audioOnly);
    void this.#consumeMissing(peer);
    const consumers = [...peer.consumers.values()];
    await Promise.all(consumers.map((c) => this.#applyPlan(peer, c)));
    for (const producerId of new Set(consumers.map((c) => c.producerId))) this.#updateWanted(producerId);
    return {};
  }

  /** consumer-ready: the page set up the consumer; it is sent from now on as the page's view says. */
  async consumerReady(participantId: string, consumerId: string): Promise<Record<string, never>> {
    const peer = this.#peer(participantId);
    const c = peer.consumers.get(consumerId);
    if (!c) throw notFound('consumer');
    peer.ready.add(consumerId);
    peer.offered.delete(consumerId);
    peer.answered = true;
    await this.#applyPlan(peer, c);
    return {};
  }

  /** consumer-close: the page will not use the consumer (it could not set it up, or is done with it); closed rather than kept for nothing. */
  consumerClose(participantId: string, consumerId: string): Record<string, never> {
    const peer = this.#peer(participantId);
    const c = peer.consumers.get(consumerId);
    if (!c) throw notFound('consumer');
    peer.answered = true;
    peer.declined.add(c.producerId);
    c.close();
    this.#o.log.info({ meetingId: this.meetingId, participantId, consumerId, source: (c.appData as { source?: string }).source }, 'consumer closed at the page\'s request');
    return {};
  }

  /**
   * media-report: what the page measures of its own media. Kept for the hosts' media-health; `raised` is
   * an error this report newly raises (counted once per spell in aula_media_errors_total).
   */
  report(participantId: string, r: MediaReport): { raised: MediaErrorCode | null } {
    const peer = this.#peer(participantId);
    const was = peer.report?.error ?? null;
    peer.report = { error: r.error, relayed: r.relayed, rttMs: r.rttMs, lossDown: r.lossDown, lossUp: r.lossUp };
    if (r.error !== was) {
      this.#healthSoon();
      this.#sendQuality();
    }
    return { raised: r.error !== null && r.error !== was ? r.error : null };
  }

  /** A change hosts should see soon (an error raised or cleared): at most one extra health round a second, however many pages report. */
  #healthSoon(): void {
    if (this.#healthPending) return;
    this.#healthPending = setTimeout(() => {
      this.#healthPending = null;
      void this.sendHealth().catch(() => {});
    }, 1000);
    this.#healthPending.unref();
  }

  /** Each person's media health (their page's report, the server's quality and bitrates), to hosts, when it changed. */
  async sendHealth(): Promise<MediaHealth[]> {
    if (this.#closed) return [];
    const participants = await Promise.all([...this.#peers.values()].map((peer) => this.#health(peer)));
    const text = JSON.stringify(participants);
    if (text !== this.#lastHealth && !this.#closed) {
      this.#lastHealth = text;
      this.#o.emit({ role: 'hosts' }, { type: 'media-health', participants });
    }
    return participants;
  }

  async #health(peer: Peer): Promise<MediaHealth> {
    const bitrate = async (direction: TransportDirection, field: 'recvBitrate' | 'sendBitrate') => {
      const t = peer.transport(direction)?.transport;
      if (!t || t.closed) return 0;
      const [s] = (await t.getStats().catch(() => [])) as { recvBitrate?: number; sendBitrate?: number }[];
      return Math.round(s?.[field] ?? 0);
    };
    const r = peer.report;
    return {
      participantId: peer.participantId,
      quality: this.#quality.get(peer.participantId) ?? 5,
      error: r?.error ?? null,
      relayed: r?.relayed ?? false,
      rttMs: r?.rttMs ?? null,
      lossDown: r?.lossDown ?? null,
      lossUp: r?.lossUp ?? null,
      bitrateUp: await bitrate('send', 'recvBitrate'),
      bitrateDown: await bitrate('recv', 'sendBitrate'),
      audioOnly: peer.view.audioOnly,
    };
  }

  /** What each participant has here: its transports, producers (paused or not, and why) and consumers (tests, status). */
  inspect(): {
    pipes: number;
    peers: {
      participantId: string;
      transports: TransportDirection[];
      producers: { producerId: string; source: MediaSource; paused: boolean; heldBy: ProducerPauseReason | null; layersWanted: number | null }[];
      consumers: number;
      pausedConsumers: number;
      consuming: number;
      received: { consumerId: string; producerId: string; from: string; source: MediaSource; kind: string; ready: boolean; paused: boolean; spatialLayer: number | null; currentLayer: number | null; priority: number }[];
    }[];
  } {
    let pipes = 0;
    for (const m of this.#pipes.values()) pipes += m.size;
    return {
      pipes,
      peers: [...this.#peers.values()].map((peer) => ({
        participantId: peer.participantId,
        transports: [...peer.transports.values()].map((t) => t.direction),
        producers: [...peer.producers.values()].map((p) => ({ producerId: p.producer.id, source: p.source, paused: p.producer.paused, heldBy: p.heldBy, layersWanted: this.#wanted.get(p.producer.id) ?? null })),
        consumers: peer.consumers.size,
        pausedConsumers: [...peer.consumers.values()].filter((c) => c.paused).length,
        consuming: peer.consuming.size,
        received: [...peer.consumers.values()].map((c) => {
          const from = c.appData as { participantId: string; source: MediaSource };
          return {
            consumerId: c.id,
            producerId: c.producerId,
            from: from.participantId,
            source: from.source,
            kind: c.kind,
            ready: peer.ready.has(c.id),
            paused: c.paused,
            spatialLayer: c.preferredLayers?.spatialLayer ?? null,
            currentLayer: c.currentLayers?.spatialLayer ?? null,
            priority: c.priority,
          };
        }),
      })),
    };
  }

  /**
   * media-resync: the client saw a gap in `seq` (an event was lost). What it should have now: every
   * consumer it has here (answer consumer-ready again for each; drop any other), its producers as the
   * server holds them, who sends what, and the `seq` it is at.
   */
  resync(participantId: string): MediaResync {
    const peer = this.#peer(participantId);
    void this.#consumeMissing(peer);
    const consumers: MediaResync['consumers'] = [];
    for (const c of peer.consumers.values()) {
      const from = c.appData as { participantId: string };
      const sender = this.#peers.get(from.participantId);
      const p = sender?.producers.get(c.producerId);
      if (sender && p) consumers.push(this.#offer(sender, p, c));
    }
    return {
      seq: peer.seq,
      consumers,
      producers: [...peer.producers.values()].map((p) => ({ producerId: p.producer.id, source: p.source, paused: p.producer.paused, heldBy: p.heldBy })),
      mediaState: this.#mediaState(),
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
    if (this.#captionWatchers.delete(peer.participantId) && !this.#captionWatchers.size) void this.#stopCaptions();
    peer.close();
    this.#quality.delete(peer.participantId);
    this.#sendMediaState();
  }

  #closeProducer(peer: Peer, p: PeerProducer, reason: ProducerPauseReason | null): void {
    if (p.producer.closed) return;
    p.producer.close();
    peer.producers.delete(p.producer.id);
    if (reason) this.#tell(peer, { type: 'producer-closed', producerId: p.producer.id, source: p.source, reason });
    this.#sendMediaState();
  }

  /**
   * The router a new receiver goes on: the room's router on a worker that still has room for the
   * consumers this receiver will need; otherwise a router on the least-loaded worker of this node
   * (made for the room on first use). The choice is made and its consumers reserved on that worker at
   * once, before any await: receivers placed in the same moment (a join rush at the start of a class)
   * see each other's share instead of all landing on the first worker.
   */
  async #recvRouter(): Promise<{ router: Router; worker: MediaWorker; reservation: Reservation }> {
    const need = Math.max(1, [...this.#peers.values()].reduce((n, p) => n + p.producers.size, 0));
    const { capacity } = this.#o;
    let chosen: { router: Promise<Router>; worker: MediaWorker } | null = null;
    for (const [index, router] of this.#routers) {
      const w = this.#o.pool.at(index);
      if (w && w.consumers + w.reserved + need <= capacity) {
        chosen = { router, worker: w };
        break;
      }
    }
    if (!chosen) {
      const w = this.#o.pool.leastLoaded(capacity, need) ?? this.#o.pool.leastLoaded() ?? this.#o.worker;
      let router = this.#routers.get(w.index);
      if (!router) {
        router = w.worker.createRouter({ mediaCodecs: ROUTER_CODECS, appData: { meetingId: this.meetingId } });
        this.#routers.set(w.index, router);
        router.catch(() => this.#routers.delete(w.index));
        this.#o.log.info({ meetingId: this.meetingId, worker: w.index, routers: this.#routers.size }, 'room spread to another worker');
      }
      chosen = { router, worker: w };
    }
    const reservation = new Reservation(chosen.worker, need);
    try {
      return { router: await chosen.router, worker: chosen.worker, reservation };
    } catch (err) {
      reservation.release();
      throw err;
    }
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

  /**
   * A page that shows it is alive (a view, answers to offers) is offered what it lacks: a consumer
   * closed because its offers went unanswered (a phone whose browser was in the background, a page
   * that stalled) is made again, so no one stays without a voice or a video for the rest of the class.
   * One the page closed itself (it could not set it up) is not: that would fail again, over and over.
   */
  async #consumeMissing(to: Peer): Promise<void> {
    if (!to.rtpCapabilities || to.closed) return;
    const made: Promise<unknown>[] = [];
    for (const from of this.#peers.values()) {
      if (from === to) continue;
      for (const p of from.producers.values()) if (!to.consuming.has(p.producer.id) && !to.declined.has(p.producer.id)) made.push(this.#consume(to, from, p));
    }
    await Promise.all(made);
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
      recv.reservation?.take();
      to.consumers.set(consumer.id, consumer);
      const producerId = p.producer.id;
      let ofProducer = this.#consumersOf.get(producerId);
      if (!ofProducer) this.#consumersOf.set(producerId, (ofProducer = new Map()));
      ofProducer.set(consumer.id, { peer: to, consumer });
      const tell = (m: MediaEvent) => this.#tell(to, m);
      consumer.observer.once('close', () => {
        to.consumers.delete(consumer.id);
        to.consuming.delete(producerId);
        to.ready.delete(consumer.id);
        to.applied.delete(consumer.id);
        to.offered.delete(consumer.id);
        if (worker && this.#o.pool.at(worker.index) === worker) worker.consumers--;
        const of = this.#consumersOf.get(producerId);
        of?.delete(consumer.id);
        if (of?.size === 0) this.#consumersOf.delete(producerId);
        this.#updateWanted(producerId);
      });
      consumer.on('producerclose', () => tell({ type: 'consumer-closed', consumerId: consumer.id }));
      consumer.on('producerpause', () => tell({ type: 'consumer-paused', consumerId: consumer.id }));
      consumer.on('producerresume', () => tell({ type: 'consumer-resumed', consumerId: consumer.id }));
      consumer.on('layerschange', (l) => tell({ type: 'consumer-layers', consumerId: consumer.id, spatialLayer: l?.spatialLayer ?? null, temporalLayer: l?.temporalLayer ?? null }));
      const offer = this.#offer(from, p, consumer);
      to.offered.set(consumer.id, { at: performance.now(), times: 1, offer });
      tell(offer);
      this.#updateWanted(producerId);
      return consumer;
    } catch (err) {
      to.consuming.delete(p.producer.id);
      this.#o.log.warn({ err, meetingId: this.meetingId, to: to.participantId, producerId: p.producer.id }, 'could not consume');
      return null;
    }
  }

  /** What `peer`'s page gets of consumer `c` (media/view.ts), from its view and the sender's standing. */
  #planOf(peer: Peer, c: Consumer): ConsumerPlan {
    const from = c.appData as { participantId: string; source: MediaSource };
    const role = this.#standing.get(from.participantId)?.roomRole ?? this.#peers.get(from.participantId)?.roomRole;
    return planConsumer(peer.view, { participantId: from.participantId, source: from.source, kind: c.kind, host: role === 'HOST' || role === 'COHOST' });
  }

  /** Puts a ready consumer in the state its plan says: resumed or paused, its layer, its priority (only what changed goes to the worker). */
  async #applyPlan(peer: Peer, c: Consumer): Promise<void> {
    if (!peer.ready.has(c.id) || c.closed) return;
    const plan = this.#planOf(peer, c);
    const was = peer.applied.get(c.id);
    peer.applied.set(c.id, plan);
    try {
      if (!plan.on) {
        if (!c.paused) await c.pause();
        return;
      }
      if (plan.spatialLayer !== null && c.type === 'simulcast' && was?.spatialLayer !== plan.spatialLayer) {
        await c.setPreferredLayers({ spatialLayer: plan.spatialLayer, temporalLayer: PROTOCOL_LIMITS.maxLayer });
      }
      if (was?.priority !== plan.priority) await c.setPriority(plan.priority);
      if (c.paused) await c.resume();
    } catch (err) {
      if (c.closed || /request handler with ID .* not found/.test((err as Error).message)) return;
      throw err;
    }
  }

  /** Dynacast: tells a simulcast producer's owner the top layer anyone receives, when that changes. */
  #updateWanted(producerId: string): void {
    if (this.#closed) return;
    let owner: Peer | undefined;
    let entry: PeerProducer | undefined;
    for (const peer of this.#peers.values()) {
      entry = peer.producers.get(producerId);
      if (entry) {
        owner = peer;
        break;
      }
    }
    if (!owner || !entry || entry.producer.closed || entry.producer.type !== 'simulcast') return;
    const consumers = this.#consumersOf.get(producerId)?.values() ?? [];
    // the recording's consumer counts like any receiver's: the layer it composes stays encoded
    const wanted = Math.max(wantedLayer([...consumers].map(({ peer, consumer }) => this.#planOf(peer, consumer))), this.#recorder?.layerOf(producerId) ?? 0);
    if ((this.#wanted.get(producerId) ?? PROTOCOL_LIMITS.maxLayer) === wanted) return;
    this.#wanted.set(producerId, wanted);
    this.#tell(owner, { type: 'layers-wanted', producerId, source: entry.source, maxSpatialLayer: wanted });
  }

  /** An event for one participant, numbered in its media session (`seq`): the client asks for media-resync on a gap. */
  #tell(peer: Peer, m: MediaEvent): void {
    if (peer.closed || this.#peers.get(peer.participantId) !== peer) return;
    this.#o.emit({ participantId: peer.participantId }, { ...m, seq: ++peer.seq });
  }

  #offer(from: Peer, p: PeerProducer, consumer: Consumer): Extract<MediaEvent, { type: 'consumer-new' }> {
    return {
      type: 'consumer-new',
      consumerId: consumer.id,
      producerId: p.producer.id,
      participantId: from.participantId,
      source: p.source,
      kind: consumer.kind,
      rtpParameters: consumer.rtpParameters as unknown as Record<string, unknown>,
      consumerType: consumer.type,
      producerPaused: consumer.producerPaused,
    };
  }

  /**
   * Offers not answered within REOFFER_MS are sent again (an event can be lost on its way: the bus
   * delivers at most once, and a lost one is not always followed by another that shows the gap); after
   * MAX_OFFERS the consumer is closed rather than kept paused for a client that will not take it.
   * A page that answered anything since the last round is working through its offers (a join rush
   * gives a late joiner one per person, and a slow machine sets them up one at a time): its waits start
   * over, and nothing of it is offered again or closed this round.
   */
  reofferUnanswered(now = performance.now()): void {
    for (const peer of this.#peers.values()) {
      if (peer.answered) {
        peer.answered = false;
        for (const o of peer.offered.values()) o.at = now;
        void this.#consumeMissing(peer);
        continue;
      }
      for (const [consumerId, o] of peer.offered) {
        if (now - o.at < REOFFER_MS) continue;
        const c = peer.consumers.get(consumerId);
        if (!c || c.closed) {
          peer.offered.delete(consumerId);
        } else if (o.times >= MAX_OFFERS) {
          peer.offered.delete(consumerId);
          c.close();
          // said, in case the page has it after all (its answer was what got lost): it drops it
          this.#tell(peer, { type: 'consumer-closed', consumerId });
          this.#o.log.info({ meetingId: this.meetingId, participantId: peer.participantId, consumerId }, 'an offered consumer was never taken; closed');
        } else {
          o.at = now;
          o.times++;
          this.#tell(peer, o.offer);
        }
      }
    }
  }

  #mediaState(): Extract<MediaEvent, { type: 'media-state' }> {
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
   * score) and what it receives (its consumers' average score), both 0 to 10 in mediasoup, read through
   * QUALITY_OF_SCORE; 0 when a transport lost ICE. A producer not scored yet (just made) counts as
   * nothing rather than as 0. Sent to everyone when any value changes.
   */
  #sendQuality(): void {
    if (this.#closed) return;
    let changed = false;
    for (const peer of this.#peers.values()) {
      const transports = [...peer.transports.values()];
      if (transports.length === 0) continue;
      let q: number;
      // no connection: a path lost, or none found (the page reports its media error)
      if (peer.report?.error || transports.some((t) => 'iceState' in t.transport && (t.transport.iceState === 'disconnected' || t.transport.iceState === 'closed'))) q = 0;
      else {
        const up = [...peer.producers.values()].filter((p) => !p.producer.paused && p.producer.score.length > 0).map((p) => Math.max(0, ...p.producer.score.map((s) => s.score)));
        const down = [...peer.consumers.values()].filter((c) => !c.paused && !c.producerPaused).map((c) => c.score.score);
        const upScore = up.length ? Math.min(...up) : 10;
        const downScore = down.length ? down.reduce((a, b) => a + b, 0) / down.length : 10;
        q = QUALITY_OF_SCORE[Math.round(Math.min(upScore, downScore))]!;
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
