import { Device } from 'mediasoup-client';
import type { Consumer } from 'mediasoup-client/lib/Consumer.js';
import type { Producer } from 'mediasoup-client/lib/Producer.js';
import type { RtpCapabilities, RtpEncodingParameters, RtpParameters } from 'mediasoup-client/lib/RtpParameters.js';
import type { DtlsParameters, IceCandidate, IceParameters, Transport } from 'mediasoup-client/lib/Transport.js';
import type { MediaSource } from '../../src/core/room-access.ts';
import { CAMERA_ENCODINGS, SCREEN_ENCODINGS, type IceServer, type MediaEvent, type ProducerPauseReason, type ViewTile } from '../../src/core/room-protocol.ts';
import type { MediaErrorCode } from '../shared/embed-protocol.ts';
import { selectedPath, type SelectedPath } from './ice-stats.ts';
import { CommandError, type Heard, type RoomSocket } from './socket.ts';

/**
 * The participant's media through the room's SFU, with mediasoup-client (docs/room-protocol.md,
 * "Media"): join the router, one sending and one receiving transport, every producer of the room
 * consumed (each answered consumer-ready once set up; the server sends what the page's `view` shows:
 * view.ts), and this participant's microphone,
 * camera and screen sent as producers. When the room's media moves (`media` with a higher rev) a new
 * client starts again and sends the same tracks (media-control.ts).
 */

export interface RemoteTrack {
  consumerId: string;
  participantId: string;
  source: MediaSource;
  kind: 'audio' | 'video';
  track: MediaStreamTrack;
  /** The sender paused it (muted their microphone, turned the camera off). */
  paused: boolean;
}

/** The simulcast layers the room protocol asks of cameras (1/4, 1/2, full size) and of screens (1/2 and full). */
const encodingsOf = (layers: readonly { scaleResolutionDownBy: number; maxBitrate: number }[]): RtpEncodingParameters[] => layers.map(({ scaleResolutionDownBy, maxBitrate }) => ({ scaleResolutionDownBy, maxBitrate }));
const CAMERA = encodingsOf(CAMERA_ENCODINGS);
const SCREEN = encodingsOf(SCREEN_ENCODINGS);

/** A transport whose path broke waits this long in `disconnected` (it often comes back alone) before an ICE restart. */
export const RESTART_AFTER_DISCONNECT_MS = 2000;
/** Waits between ICE restarts while the path stays broken. */
export const RESTART_BACKOFF_MS = [1000, 2000, 4000, 8000];
/** Restarts that have not brought the path back after this long: the transports are rebuilt. */
export const REBUILD_AFTER_MS = 30_000;
/** A transport that has not connected this long after it began (or after its path broke) is reported (media-error). */
export const MEDIA_ERROR_AFTER_MS = 12_000;
/** How often the page tells the server what it measures of its media (media-report: hosts see it). */
export const REPORT_EVERY_MS = 5000;
/**
 * A connected transport that received nothing (no media, no RTCP, no ICE answer) this long has likely
 * lost its path (a new address, a dead Wi-Fi): the room socket is checked at once, and if it is dead too
 * the reconnect resumes the media and restarts ICE, seconds before the browser says `disconnected`.
 */
export const STALL_MS = 1500;

/** What this participant's media needs from the page around it (media-control.ts). */
export interface MediaHooks {
  /** Re-render. */
  changed(): void;
  /** The server closed one of this participant's producers (a setting, a host): what it captures for it stops too. */
  closedByServer(source: MediaSource, reason: ProducerPauseReason): void;
  /** The tiles the page shows now, as `participantId:source` (view-reporter.ts): their offers are set up first. */
  shown(): ReadonlySet<string>;
  /** Media cannot get through this network (a code), or it can again (null). */
  mediaError(code: MediaErrorCode | null): void;
  /** ICE restarts did not bring the path back: start the media again with new transports. */
  rebuild(): void;
  /** A connected transport stopped receiving anything (STALL_MS): check that the room socket is alive. */
  stalled(): void;
  /** The error the page shows now (a media that starts again keeps it until its own paths connect). */
  initialError: MediaErrorCode | null;
}

export class MediaClient {
  readonly remote = new Map<string, RemoteTrack>();
  readonly producers = new Map<MediaSource, Producer>();
  /** Sources the server holds paused, with its reason (`muted-by-host`, `floor`, `entry`). */
  readonly heldByServer = new Map<MediaSource, ProducerPauseReason>();
  #device: Device | null = null;
  #send: Transport | null = null;
  #recv: Transport | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #consumers = new Map<string, Consumer>();
  #closed = false;
  /** The last `seq` of this participant's media events (media-resync on a gap). */
  #seq = 0;
  /** Whether this browser plays the room's video codec (media-ready says); if not, it hears the class only. */
  receivesVideo = true;
  /** media-ready answered: the server knows this participant's media, and takes its `view`. */
  #ready = false;
  /** Consumers offered to this page (consumer-new heard), for tests' diagnostics: what it heard and what it set up. */
  readonly #heard = new Set<string>();
  /** Offers heard and not set up yet, by consumer id (#next picks the order). */
  readonly #offers = new Map<string, Extract<MediaEvent, { type: 'consumer-new' }>>();
  /** The TURN relays this session may use (media-join and turn-credentials say). */
  #iceServers: IceServer[] = [];
  /** Transports whose path is broken or not yet made, with since when (media-error, rebuild). */
  readonly #broken = new Map<Transport, number>();
  #errorTimer: ReturnType<typeof setTimeout> | null = null;
  #error: MediaErrorCode | null = null;
  /** ICE restarts asked so far (tests, diagnostics). */
  iceRestarts = 0;
  #socket: RoomSocket;
  readonly #hooks: MediaHooks;
  #reportTimer: ReturnType<typeof setInterval> | null = null;
  #stallTimer: ReturnType<typeof setInterval> | null = null;
  /** Bytes each transport had received at the last stall check, and since when that number stands still. */
  readonly #received = new Map<Transport, { bytes: number; since: number }>();
  /** The stall in progress was told (once per stall). */
  #stallTold = false;
  /** inbound-rtp totals at the last report (loss of what this page receives, between reports). */
  #lastInbound = { received: 0, lost: 0 };
  private readonly changed: () => void;

  constructor(
    socket: RoomSocket,
    private readonly canSend: boolean,
    hooks: Partial<MediaHooks> & { changed(): void },
  ) {
    this.#socket = socket;
    this.#hooks = { closedByServer: () => {}, shown: () => new Set(), mediaError: () => {}, rebuild: () => {}, stalled: () => {}, initialError: null, ...hooks };
    this.#error = this.#hooks.initialError;
    this.changed = () => this.#hooks.changed();
  }

  private get socket(): RoomSocket {
    return this.#socket;
  }

  /** Joins the room's media. A client closed meanwhile (the media moved again) stops between steps. */
  async start(): Promise<void> {
    const { routerRtpCapabilities, iceServers } = await this.socket.ask({ type: 'media-join' });
    this.#iceServers = iceServers ?? [];
    this.#check();
    this.#device = new Device();
    // mediasoup's objects cross the protocol as outlines (MediasoupObject): mediasoup-client reads them
    await this.#device.load({ routerRtpCapabilities: routerRtpCapabilities as RtpCapabilities });
    this.#check();
    if (this.canSend) this.#send = await this.#transport('send');
    this.#check();
    this.#recv = await this.#transport('recv');
    this.#check();
    const ready = await this.socket.ask({ type: 'media-ready', rtpCapabilities: this.#device.rtpCapabilities });
    this.receivesVideo = ready.receivesVideo;
    this.#ready = true;
    this.#reportTimer = setInterval(() => void this.report().catch(() => {}), REPORT_EVERY_MS);
    this.#stallTimer = setInterval(() => void this.#checkStall().catch(() => {}), 500);
  }

  /**
   * The room socket came back (within the reconnect grace): this media carries on over the new one. The
   * server still holds its transports, producers and consumers; what changed meanwhile comes with a
   * media-resync. False when the server no longer has it (the grace passed, the media moved): start again.
   */
  async resume(socket: RoomSocket): Promise<boolean> {
    if (this.#closed || !this.#ready || !this.#recv || this.#recv.closed || this.#recv.connectionState === 'closed') return false;
    this.#socket = socket;
    const a = await socket.ask({ type: 'media-join', resume: true });
    if (!a.resumed) return false;
    // new credentials, not restarted for: both paths restart below
    this.#updateIceServers(a.iceServers ?? [], false);
    // the socket dropped, so the network under it may have changed (a new address, another Wi-Fi): ICE
    // starts over on both paths now that it can ask; on a path that still works this costs no media
    for (const t of [this.#send, this.#recv]) if (t && !t.closed) void this.#restartIce(t);
    this.#seq = 0; // the resync below says where the server is
    await this.#resync();
    return true;
  }

  /** Tells the server what the page shows (view-reporter.ts); null until the media is ready. */
  view(view: { tiles: ViewTile[]; audioOnly: boolean }): Promise<unknown> | null {
    if (!this.#ready || this.#closed) return null;
    return this.socket.ask({ type: 'view', tiles: view.tiles, audioOnly: view.audioOnly });
  }

  #check(): void {
    if (this.#closed) throw new CommandError('media_restarted', 'The media started again.');
  }

  async #transport(direction: 'send' | 'recv'): Promise<Transport> {
    const t = await this.socket.ask({ type: 'transport-create', direction });
    const options = {
      id: t.transportId,
      iceParameters: t.iceParameters as IceParameters,
      iceCandidates: t.iceCandidates as IceCandidate[],
      dtlsParameters: t.dtlsParameters as DtlsParameters,
      // the relays, tried when neither UDP nor TCP reaches the media server (docs/networks.md)
      iceServers: this.#iceServers,
    };
    const transport = direction === 'send' ? this.#device!.createSendTransport(options) : this.#device!.createRecvTransport(options);
    transport.on('connect', ({ dtlsParameters }, ok, fail) => {
      // ICE begins now (the first producer or consumer): it has MEDIA_ERROR_AFTER_MS to connect
      this.#markBroken(transport);
      this.socket.ask({ type: 'transport-connect', transportId: transport.id, dtlsParameters }).then(() => ok(), fail);
    });
    transport.on('produce', ({ kind, rtpParameters, appData }, ok, fail) => {
      this.socket
        .ask({ type: 'produce', transportId: transport.id, kind, rtpParameters, source: appData.source as MediaSource })
        .then((a) => {
          if (a.paused) this.heldByServer.set(appData.source as MediaSource, 'entry');
          ok({ id: a.producerId });
        }, fail);
    });
    this.#watchIce(transport);
    return transport;
  }

  /**
   * Keeps a transport's path up: `disconnected` for RESTART_AFTER_DISCONNECT_MS (a Wi-Fi blip, a new
   * address) or `failed` asks the server for new ICE credentials and restarts ICE, again with backoff
   * while it stays broken; after REBUILD_AFTER_MS of that the transports are rebuilt (hooks.rebuild).
   */
  #watchIce(transport: Transport): void {
    let timer: ReturnType<typeof setTimeout> | null = null;
    let attempt = 0;
    const later = (ms: number) => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => void run(), ms);
    };
    const run = async () => {
      timer = null;
      if (this.#closed || transport.closed || transport.connectionState === 'connected') return;
      const since = this.#broken.get(transport);
      if (since !== undefined && performance.now() - since > REBUILD_AFTER_MS) return this.#hooks.rebuild();
      // the next try is set before this one is asked: an answer that never comes stops nothing
      later(RESTART_BACKOFF_MS[Math.min(attempt++, RESTART_BACKOFF_MS.length - 1)]!);
      await this.#restartIce(transport);
    };
    transport.on('connectionstatechange', (state) => {
      if (this.#closed) return;
      if (state === 'connected') {
        attempt = 0;
        if (timer) clearTimeout(timer);
        timer = null;
        this.#broken.delete(transport);
        this.#checkError();
      } else if (state === 'disconnected' || state === 'failed') {
        this.#markBroken(transport, true);
        later(state === 'failed' ? 0 : RESTART_AFTER_DISCONNECT_MS);
      }
    });
  }

  /** Each connected transport's received bytes; one that stands still STALL_MS is a stall (hooks.stalled, once per stall). */
  async #checkStall(): Promise<void> {
    const now = performance.now();
    let stalled = false;
    for (const t of [this.#send, this.#recv]) {
      if (!t || t.closed || t.connectionState !== 'connected') continue;
      let bytes = 0;
      (await t.getStats()).forEach((s: any) => {
        if (s.type === 'transport') bytes += s.bytesReceived ?? 0;
      });
      const last = this.#received.get(t);
      if (!last || bytes !== last.bytes) this.#received.set(t, { bytes, since: now });
      else if (now - last.since >= STALL_MS) stalled = true;
    }
    if (!stalled) this.#stallTold = false;
    else if (!this.#stallTold && !this.#closed) {
      this.#stallTold = true;
      this.#hooks.stalled();
    }
  }

  async #restartIce(transport: Transport): Promise<void> {
    try {
      const a = await this.socket.ask({ type: 'transport-restart-ice', transportId: transport.id });
      this.iceRestarts++;
      await transport.restartIce({ iceParameters: a.iceParameters as IceParameters });
    } catch {
      // the socket is away (it reconnects and resumes) or the transport is gone: the next round tries again
    }
  }

  /** A transport is not connected (yet, or any more): if that lasts MEDIA_ERROR_AFTER_MS, the page says why. */
  #markBroken(transport: Transport, again = false): void {
    if (!again && transport.connectionState === 'connected') return;
    if (!this.#broken.has(transport)) this.#broken.set(transport, performance.now());
    this.#errorTimer ??= setTimeout(() => {
      this.#errorTimer = null;
      void this.#checkError();
    }, MEDIA_ERROR_AFTER_MS);
  }

  /**
   * What the page tells a person whose media cannot get through: `relay_unreachable` when relays are
   * configured and none answered (no relay candidate), `media_blocked` when there are none to try, and
   * `ice_failed` when candidates were found and still nothing connected. Cleared once every path is up.
   */
  async #checkError(): Promise<void> {
    if (this.#closed) return;
    const now = performance.now();
    let worst: Transport | null = null;
    for (const [t, since] of this.#broken) {
      if (t.closed) this.#broken.delete(t);
      else if (now - since >= MEDIA_ERROR_AFTER_MS - 50) worst = t;
    }
    if (!worst) {
      if (this.#broken.size) this.#markBroken([...this.#broken.keys()][0]!, true);
      return this.#setError(null);
    }
    let relay = false;
    try {
      (await worst.getStats()).forEach((s: any) => {
        if (s.type === 'local-candidate' && s.candidateType === 'relay') relay = true;
      });
    } catch {
      // closed meanwhile
    }
    this.#setError(this.#iceServers.length === 0 ? 'media_blocked' : relay ? 'ice_failed' : 'relay_unreachable');
    // checked again while it lasts: it may clear, or its reason change
    this.#markBroken(worst, true);
  }

  #setError(code: MediaErrorCode | null): void {
    if (code === this.#error) return;
    this.#error = code;
    this.#hooks.mediaError(code);
    void this.report().catch(() => {});
  }

  /**
   * Tells the server what this page measures of its media (hosts see it): its error, whether its path is
   * relayed, the round-trip time of its selected path, and the loss of what it receives (inbound-rtp,
   * since the last report) and of what it sends (the server's receiver reports, remote-inbound-rtp).
   */
  async report(): Promise<void> {
    if (this.#closed || !this.#ready || !this.socket.open) return;
    let relayed = false;
    let rttMs: number | null = null;
    let received = 0;
    let lost = 0;
    const lossUp: number[] = [];
    for (const t of [this.#send, this.#recv]) {
      if (!t || t.closed) continue;
      const stats = await t.getStats();
      const path = selectedPath(stats);
      if (path?.rttMs != null) rttMs = Math.max(rttMs ?? 0, path.rttMs);
      if (path?.candidateType === 'relay') relayed = true;
      stats.forEach((s: any) => {
        if (s.type === 'inbound-rtp') {
          received += s.packetsReceived ?? 0;
          lost += Math.max(0, s.packetsLost ?? 0);
        }
        if (s.type === 'remote-inbound-rtp' && typeof s.fractionLost === 'number') lossUp.push(s.fractionLost);
      });
    }
    const dReceived = received - this.#lastInbound.received;
    const dLost = lost - this.#lastInbound.lost;
    this.#lastInbound = { received, lost };
    const lossDown = dReceived + dLost > 0 ? Math.min(1, Math.max(0, dLost / (dReceived + dLost))) : null;
    await this.socket.ask({
      type: 'media-report',
      error: this.#error,
      relayed,
      rttMs: rttMs === null ? null : Math.min(60_000, rttMs),
      lossDown: lossDown === null ? null : Math.round(lossDown * 1000) / 1000,
      lossUp: lossUp.length ? Math.round(Math.min(1, Math.max(...lossUp)) * 1000) / 1000 : null,
    });
  }

  /** New TURN credentials: the transports use them from their next gathering; one on a relay restarts ICE now, so its allocation uses them. */
  #updateIceServers(iceServers: IceServer[], restartRelayed = true): void {
    this.#iceServers = iceServers;
    for (const t of [this.#send, this.#recv]) {
      if (!t || t.closed) continue;
      void t
        .updateIceServers({ iceServers })
        .then(() => (restartRelayed ? this.#relayed(t) : false))
        .then((relayed) => (relayed ? this.#restartIce(t) : undefined))
        .catch(() => {});
    }
  }

  /** Whether the transport's selected path goes through a relay (its local candidate is `relay`). */
  async #relayed(t: Transport): Promise<boolean> {
    return selectedPath(await t.getStats())?.candidateType === 'relay';
  }

  /** The selected path of each transport (ice-stats.ts; tests, diagnostics). */
  async paths(): Promise<(SelectedPath & { direction: 'send' | 'recv' })[]> {
    const out: (SelectedPath & { direction: 'send' | 'recv' })[] = [];
    for (const [direction, t] of [['send', this.#send], ['recv', this.#recv]] as const) {
      if (!t || t.closed) continue;
      const path = selectedPath(await t.getStats());
      if (path) out.push({ direction, ...path });
    }
    return out;
  }

  /** Sends a track as `source`, replacing what was sent for it. A refusal (`produce_not_allowed`) rejects. */
  async send(source: MediaSource, track: MediaStreamTrack): Promise<void> {
    if (!this.#send) throw new CommandError('produce_not_allowed', 'This role cannot send.');
    const existing = this.producers.get(source);
    if (existing && !existing.closed) {
      await existing.replaceTrack({ track });
      return;
    }
    const video = track.kind === 'video';
    const screen = source === 'screen';
    // a screen is text and drawings: encoded for detail, and it keeps its resolution when bandwidth is short
    if (screen) track.contentHint = 'detail';
    const producer = await this.#send.produce({
      track,
      ...(video ? { encodings: screen ? SCREEN : CAMERA, codecOptions: { videoGoogleStartBitrate: 1000 } } : { codecOptions: { opusDtx: true, opusFec: true } }),
      stopTracks: false,
      // paused at the source: a muted microphone or a camera turned off sends no packets at all
      zeroRtpOnPause: true,
      appData: { source },
    });
    this.producers.set(source, producer);
    if (screen && producer.rtpSender) {
      const parameters = producer.rtpSender.getParameters();
      await producer.rtpSender.setParameters({ ...parameters, degradationPreference: 'maintain-resolution' }).catch(() => {});
    }
    if (this.heldByServer.has(source)) producer.pause();
    producer.on('trackended', () => void this.stop(source));
    this.changed();
  }

  /** Pauses (`on: false`) or resumes a source; the server may refuse a resume (`muted_by_host`, `floor_required`). */
  async setOn(source: MediaSource, on: boolean): Promise<void> {
    const producer = this.producers.get(source);
    if (!producer || producer.closed) return;
    if (on) {
      await this.socket.ask({ type: 'producer-resume', producerId: producer.id });
      this.heldByServer.delete(source);
      producer.resume();
    } else {
      producer.pause();
      await this.socket.ask({ type: 'producer-pause', producerId: producer.id });
    }
    this.changed();
  }

  isOn(source: MediaSource): boolean {
    const p = this.producers.get(source);
    return !!p && !p.closed && !p.paused;
  }

  /** Stops sending a source (screen share ended, camera turned off for good). */
  async stop(source: MediaSource): Promise<void> {
    const producer = this.producers.get(source);
    if (!producer) return;
    this.producers.delete(source);
    producer.close();
    this.changed();
    await this.socket.ask({ type: 'producer-close', producerId: producer.id }).catch(() => {});
  }

  /** Media messages from the room socket; the rest are the controller's. */
  handle(m: Heard): boolean {
    if (m.type === 'turn-credentials') {
      this.#updateIceServers(m.iceServers);
      return true;
    }
    // events for this participant are numbered; a gap means one was lost on the way: ask for the whole state
    if ('seq' in m && typeof m.seq === 'number') {
      if (m.seq > this.#seq + 1) this.#queue = this.#queue.then(() => this.#resync()).catch((e) => console.warn('aula: media resync failed:', e));
      this.#seq = Math.max(this.#seq, m.seq);
    }
    switch (m.type) {
      case 'consumer-new':
        this.#heard.add(m.consumerId);
        // set up in the order of need (#next), one at a time: each one renegotiates the transport
        this.#offers.set(m.consumerId, m);
        this.#queue = this.#queue.then(() => this.#consumeNext());
        return true;
      // in the same queue as consumer-new: a consumer closed while it was being set up is not kept
      case 'consumer-closed':
        if (this.#offers.delete(m.consumerId)) return true;
        this.#queue = this.#queue.then(() => {
          this.#consumers.get(m.consumerId)?.close();
          this.#consumers.delete(m.consumerId);
          if (this.remote.delete(m.consumerId)) this.changed();
        });
        return true;
      case 'consumer-paused':
      case 'consumer-resumed':
        this.#queue = this.#queue.then(() => {
          const r = this.remote.get(m.consumerId);
          if (r) {
            r.paused = m.type === 'consumer-paused';
            this.changed();
          }
        });
        return true;
      case 'producer-paused': {
        this.heldByServer.set(m.source, m.reason);
        const p = this.producers.get(m.source);
        if (p && !p.closed) p.pause();
        this.changed();
        return true;
      }
      case 'producer-closed': {
        const p = this.producers.get(m.source);
        if (p && p.id === m.producerId) {
          this.producers.delete(m.source);
          p.close();
          this.#hooks.closedByServer(m.source, m.reason);
          this.changed();
        }
        return true;
      }
      case 'consumer-layers':
        return true;
      case 'layers-wanted': {
        // dynacast: nobody receives the layers above this one, so the browser stops encoding them
        const p = this.producers.get(m.source);
        if (p && !p.closed && p.id === m.producerId && p.rtpParameters.encodings && p.rtpParameters.encodings.length > 1) {
          p.setMaxSpatialLayer(m.maxSpatialLayer).catch((e) => console.warn('aula: could not change the layers sent:', e));
        }
        return true;
      }
    }
    return false;
  }

  /**
   * The offer to set up next: voices first (a late joiner hears the class at once), then the videos the
   * page shows, then the rest as they came. In a class of sixty a page that joins late is offered a
   * consumer per person, and setting each up renegotiates the transport: this order is what a student
   * notices first.
   */
  #next(): Extract<MediaEvent, { type: 'consumer-new' }> | undefined {
    const shown = this.#hooks.shown();
    let video: Extract<MediaEvent, { type: 'consumer-new' }> | undefined;
    let rest: Extract<MediaEvent, { type: 'consumer-new' }> | undefined;
    for (const m of this.#offers.values()) {
      if (m.kind === 'audio') return m;
      if (!video && shown.has(`${m.participantId}:${m.source}`)) video = m;
      rest ??= m;
    }
    return video ?? rest;
  }

  async #consumeNext(): Promise<void> {
    const m = this.#next();
    if (!m) return;
    this.#offers.delete(m.consumerId);
    await this.#consume(m).catch((e) => console.warn(`aula: consuming ${m.source} of ${m.participantId} failed:`, e));
  }

  async #consume(m: Extract<MediaEvent, { type: 'consumer-new' }>): Promise<void> {
    if (!this.#recv || this.#closed) return;
    // offered again: the server did not hear this page's answer
    if (this.#consumers.has(m.consumerId)) {
      await this.socket.ask({ type: 'consumer-ready', consumerId: m.consumerId });
      return;
    }
    let consumer: Consumer;
    try {
      consumer = await this.#recv.consume({ id: m.consumerId, producerId: m.producerId, kind: m.kind, rtpParameters: m.rtpParameters as RtpParameters });
    } catch (e) {
      // the server closes it rather than keep it paused for nothing
      await this.socket.ask({ type: 'consumer-close', consumerId: m.consumerId }).catch(() => {});
      throw e;
    }
    this.#consumers.set(consumer.id, consumer);
    this.remote.set(consumer.id, { consumerId: consumer.id, participantId: m.participantId, source: m.source, kind: m.kind, track: consumer.track, paused: m.producerPaused });
    consumer.on('transportclose', () => {
      this.remote.delete(consumer.id);
      this.#consumers.delete(consumer.id);
    });
    try {
      await this.socket.ask({ type: 'consumer-ready', consumerId: consumer.id });
    } catch (e) {
      // the server no longer has it (closed meanwhile): nothing will come through it
      consumer.close();
      this.#consumers.delete(consumer.id);
      this.remote.delete(consumer.id);
      throw e;
    }
    this.changed();
  }

  /** Per video consumer, the frames decoded and the frame height so far (inbound-rtp stats): which videos this page really receives, and how big. */
  async videoReceived(): Promise<Record<string, { participantId: string; source: MediaSource; framesDecoded: number; frameHeight: number }>> {
    const out: Record<string, { participantId: string; source: MediaSource; framesDecoded: number; frameHeight: number }> = {};
    for (const [id, consumer] of this.#consumers) {
      const r = this.remote.get(id);
      if (!r || r.kind !== 'video' || consumer.closed) continue;
      let framesDecoded = 0;
      let frameHeight = 0;
      (await consumer.getStats()).forEach((s: any) => {
        if (s.type !== 'inbound-rtp') return;
        framesDecoded += s.framesDecoded ?? 0;
        frameHeight = Math.max(frameHeight, s.frameHeight ?? 0);
      });
      out[id] = { participantId: r.participantId, source: r.source, framesDecoded, frameHeight };
    }
    return out;
  }

  /** Offers heard and not set up yet. */
  get waiting(): number {
    return this.#offers.size;
  }

  /** Whether the page heard of a consumer and set it up (tests' diagnostics). */
  knows(consumerId: string): { heard: boolean; setUp: boolean; waiting: number } {
    return { heard: this.#heard.has(consumerId), setUp: this.#consumers.has(consumerId), waiting: this.#offers.size };
  }

  /** Bytes sent so far of a source, per simulcast layer (outbound-rtp stats by rid, lowest first): what dynacast leaves encoded. */
  async sentByLayer(source: MediaSource): Promise<number[]> {
    const producer = this.producers.get(source);
    if (!producer || producer.closed) return [];
    const byRid = new Map<string, number>();
    (await producer.getStats()).forEach((s: any) => {
      if (s.type === 'outbound-rtp') byRid.set(s.rid ?? '', (byRid.get(s.rid ?? '') ?? 0) + (s.bytesSent ?? 0));
    });
    return [...byRid.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, bytes]) => bytes);
  }

  /** After a gap in `seq`: take what the server says this participant holds, and drop what it does not. */
  async #resync(): Promise<void> {
    if (this.#closed || !this.#ready) return;
    const r = await this.socket.ask({ type: 'media-resync' });
    this.#seq = Math.max(this.#seq, r.seq);
    const current = new Set(r.consumers.map((c) => c.consumerId));
    for (const [id, consumer] of this.#consumers) {
      if (current.has(id)) continue;
      consumer.close();
      this.#consumers.delete(id);
      this.remote.delete(id);
    }
    for (const id of this.#offers.keys()) if (!current.has(id)) this.#offers.delete(id);
    for (const c of r.consumers) {
      this.#offers.delete(c.consumerId);
      const remote = this.remote.get(c.consumerId);
      if (remote) remote.paused = c.producerPaused;
      // one this page never heard of; one it has and did not answer is offered again by the server
      else await this.#consume(c);
    }
    for (const [source, producer] of this.producers) {
      const held = r.producers.find((p) => p.producerId === producer.id);
      if (!held) {
        this.producers.delete(source);
        producer.close();
        this.#hooks.closedByServer(source, 'policy');
      } else if (held.heldBy && held.heldBy !== 'entry' && !producer.paused) {
        this.heldByServer.set(source, held.heldBy);
        producer.pause();
      }
    }
    this.changed();
  }

  /** The tracks being sent, to send again after a restart. */
  sending(): [MediaSource, MediaStreamTrack, boolean][] {
    const out: [MediaSource, MediaStreamTrack, boolean][] = [];
    for (const [source, p] of this.producers) if (!p.closed && p.track) out.push([source, p.track, !p.paused]);
    return out;
  }

  /** RTP bytes sent and received so far, and the energy of the audio decoded, from the transports' stats. */
  async bytes(): Promise<{ sent: number; received: number; audioEnergy: number }> {
    let sent = 0;
    let received = 0;
    let audioEnergy = 0;
    for (const t of [this.#send, this.#recv]) {
      if (!t || t.closed) continue;
      (await t.getStats()).forEach((s: any) => {
        if (s.type === 'outbound-rtp') sent += s.bytesSent ?? 0;
        if (s.type === 'inbound-rtp') received += s.bytesReceived ?? 0;
        if (s.type === 'inbound-rtp' && s.kind === 'audio') audioEnergy += s.totalAudioEnergy ?? 0;
      });
    }
    return { sent, received, audioEnergy };
  }

  close(): void {
    this.#closed = true;
    if (this.#errorTimer) clearTimeout(this.#errorTimer);
    if (this.#reportTimer) clearInterval(this.#reportTimer);
    if (this.#stallTimer) clearInterval(this.#stallTimer);
    this.#send?.close();
    this.#recv?.close();
    for (const p of this.producers.values()) p.close();
    this.producers.clear();
    this.remote.clear();
    this.#consumers.clear();
  }
}
