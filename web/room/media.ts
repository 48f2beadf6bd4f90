import { Device } from 'mediasoup-client';
import type { Consumer } from 'mediasoup-client/lib/Consumer.js';
import type { Producer } from 'mediasoup-client/lib/Producer.js';
import type { RtpCapabilities, RtpEncodingParameters, RtpParameters } from 'mediasoup-client/lib/RtpParameters.js';
import type { DtlsParameters, IceCandidate, IceParameters, Transport } from 'mediasoup-client/lib/Transport.js';
import type { MediaSource } from '../../src/core/room-access.ts';
import type { MediaEvent, ProducerPauseReason } from '../../src/core/room-protocol.ts';
import { CommandError, type Heard, type RoomSocket } from './socket.ts';

/**
 * The participant's media through the room's SFU, with mediasoup-client (docs/room-protocol.md,
 * "Media"): join the router, one sending and one receiving transport, every producer of the room
 * consumed (paused until the track is attached, then resumed), and this participant's microphone,
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

/** Three simulcast layers (1/4, 1/2 and full size), as the room protocol asks of cameras and screens. */
const SIMULCAST: RtpEncodingParameters[] = [
  { scaleResolutionDownBy: 4, maxBitrate: 150_000 },
  { scaleResolutionDownBy: 2, maxBitrate: 500_000 },
  { scaleResolutionDownBy: 1, maxBitrate: 1_500_000 },
];

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

  constructor(
    private readonly socket: RoomSocket,
    private readonly changed: () => void,
    private readonly canSend: boolean,
  ) {}

  /** Joins the room's media. A client closed meanwhile (the media moved again) stops between steps. */
  async start(): Promise<void> {
    const { routerRtpCapabilities } = await this.socket.ask({ type: 'media-join' });
    this.#check();
    this.#device = new Device();
    // mediasoup's objects cross the protocol as outlines (MediasoupObject): mediasoup-client reads them
    await this.#device.load({ routerRtpCapabilities: routerRtpCapabilities as RtpCapabilities });
    this.#check();
    if (this.canSend) this.#send = await this.#transport('send');
    this.#check();
    this.#recv = await this.#transport('recv');
    this.#check();
    await this.socket.ask({ type: 'media-ready', rtpCapabilities: this.#device.rtpCapabilities });
  }

  #check(): void {
    if (this.#closed) throw new CommandError('media_restarted', 'The media started again.');
  }

  async #transport(direction: 'send' | 'recv'): Promise<Transport> {
    const t = await this.socket.ask({ type: 'transport-create', direction });
    const options = { id: t.transportId, iceParameters: t.iceParameters as IceParameters, iceCandidates: t.iceCandidates as IceCandidate[], dtlsParameters: t.dtlsParameters as DtlsParameters };
    const transport = direction === 'send' ? this.#device!.createSendTransport(options) : this.#device!.createRecvTransport(options);
    transport.on('connect', ({ dtlsParameters }, ok, fail) => {
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
    transport.on('connectionstatechange', (state) => {
      if (state === 'failed' && !this.#closed) {
        // the path broke (a network change): new ICE credentials, and the browser tries again
        this.socket
          .ask({ type: 'transport-restart-ice', transportId: transport.id })
          .then((a) => transport.restartIce({ iceParameters: a.iceParameters as IceParameters }))
          .catch(() => {});
      }
    });
    return transport;
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
    const producer = await this.#send.produce({
      track,
      ...(video ? { encodings: SIMULCAST, codecOptions: { videoGoogleStartBitrate: 1000 } } : { codecOptions: { opusDtx: true, opusFec: true } }),
      stopTracks: false,
      appData: { source },
    });
    this.producers.set(source, producer);
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
    switch (m.type) {
      case 'consumer-new':
        this.#queue = this.#queue.then(() => this.#consume(m)).catch((e) => console.warn(`aula: consuming ${m.source} of ${m.participantId} failed:`, e));
        return true;
      // in the same queue as consumer-new: a consumer closed while it was being set up is not kept
      case 'consumer-closed':
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
        if (p) {
          this.producers.delete(m.source);
          p.close();
          this.changed();
        }
        return true;
      }
      case 'consumer-layers':
        return true;
    }
    return false;
  }

  async #consume(m: Extract<MediaEvent, { type: 'consumer-new' }>): Promise<void> {
    if (!this.#recv || this.#closed) return;
    const consumer: Consumer = await this.#recv.consume({ id: m.consumerId, producerId: m.producerId, kind: m.kind, rtpParameters: m.rtpParameters as RtpParameters });
    this.#consumers.set(consumer.id, consumer);
    this.remote.set(consumer.id, { consumerId: consumer.id, participantId: m.participantId, source: m.source, kind: m.kind, track: consumer.track, paused: m.producerPaused });
    consumer.on('transportclose', () => {
      this.remote.delete(consumer.id);
      this.#consumers.delete(consumer.id);
    });
    await this.socket.ask({ type: 'consumer-resume', consumerId: consumer.id });
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
    this.#send?.close();
    this.#recv?.close();
    for (const p of this.producers.values()) p.close();
    this.producers.clear();
    this.remote.clear();
    this.#consumers.clear();
  }
}
