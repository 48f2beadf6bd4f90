import { selectedPath, type SelectedPath } from '../../web/room/ice-stats.ts';
import { randomFillSync } from 'node:crypto';
import wrtc from '@roamhq/wrtc';
import { Device } from 'mediasoup-client';
import type { Consumer } from 'mediasoup-client/lib/Consumer.js';
import type { Producer } from 'mediasoup-client/lib/Producer.js';
import type { Transport } from 'mediasoup-client/lib/Transport.js';
import type { Test } from 'tap';
import type { Node } from '../../src/server/node.ts';
import { api } from './node.ts';
import { connect, type RoomClient } from './ws.ts';

// mediasoup-client's Chrome74 handler uses the browser's globals: libwebrtc in Node supplies them.
const globals = globalThis as Record<string, unknown>;
for (const name of ['RTCPeerConnection', 'RTCSessionDescription', 'RTCIceCandidate', 'MediaStream', 'MediaStreamTrack', 'RTCRtpSender', 'RTCRtpReceiver', 'RTCRtpTransceiver'] as const) {
  globals[name] ??= (wrtc as unknown as Record<string, unknown>)[name];
}

const { RTCAudioSource, RTCVideoSource, RTCAudioSink, RTCVideoSink } = (wrtc as any).nonstandard;

// libwebrtc's media sources crash Node's own environment teardown at a natural exit (SIGSEGV after the
// last line ran, even with every source, sink and peer connection closed). Once everything else has
// run its exit handlers, leave without that teardown, keeping the exit code.
process.once('beforeExit', () => {
  process.on('exit', (code) => (process as unknown as { reallyExit(code: number): never }).reallyExit(code));
});

/** A tone (or silence) fed to an RTCAudioSource every 10 ms: 48 kHz mono, 16-bit. */
class ToneSource {
  readonly source = new RTCAudioSource();
  readonly track: MediaStreamTrack = this.source.createTrack();
  #timer: NodeJS.Timeout;
  #phase = 0;

  /** A tone of `hz`, or `speech` (48 kHz mono samples) once and then silence. */
  constructor(hz = 440, speech?: Int16Array) {
    const samples = new Int16Array(480);
    this.#timer = setInterval(() => {
      if (speech) {
        samples.fill(0);
        if (this.#phase < speech.length) samples.set(speech.subarray(this.#phase, this.#phase + samples.length));
      } else for (let i = 0; i < samples.length; i++) samples[i] = Math.round(Math.sin(((this.#phase + i) * 2 * Math.PI * hz) / 48000) * 12000);
      this.#phase += samples.length;
      this.source.onData({ samples, sampleRate: 48000, bitsPerSample: 16, channelCount: 1, numberOfFrames: samples.length });
    }, 10);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.track.stop();
  }
}

/** Frames of a moving grey gradient fed to an RTCVideoSource (15 fps unless said). */
class FrameSource {
  readonly source = new RTCVideoSource();
  readonly track: MediaStreamTrack = this.source.createTrack();
  #timer: NodeJS.Timeout;

  /** `noise`: random pixels each frame, which an encoder cannot squeeze, so each layer takes the bitrate it is allowed. */
  constructor(width = 320, height = 240, fps = 15, noise = false) {
    const data = new Uint8ClampedArray(width * height * 1.5);
    let n = 0;
    this.#timer = setInterval(() => {
      n++;
      if (noise) randomFillSync(data, 0, width * height);
      else for (let i = 0; i < width * height; i++) data[i] = (i + n * 7) & 0xff;
      data.fill(128, width * height);
      this.source.onFrame({ width, height, data });
    }, Math.round(1000 / fps));
  }

  stop(): void {
    clearInterval(this.#timer);
    this.track.stop();
  }
}

/** Counts the frames a received video track decodes. */
export function framesOf(track: MediaStreamTrack): { count: number; stop(): void } {
  const sink = new RTCVideoSink(track);
  const out = { count: 0, stop: () => sink.stop() };
  sink.onframe = () => out.count++;
  return out;
}

export interface Received {
  consumer: Consumer;
  participantId: string;
  source: string;
  /** Loudest decoded sample seen (audio only). */
  peak: number;
  /** The audio sink reading it (audio only). */
  sink?: { stop(): void };
}

/**
 * A participant's media in Node, through the real room protocol: mediasoup-client 3.6 (Chrome74
 * handler) on libwebrtc. It joins the room's media, receives everything it is offered (resuming each
 * consumer) and sends a tone or frames when asked.
 */
export class MediaPeer {
  readonly room: RoomClient;
  device = new Device({ handlerName: 'Chrome74' });
  send: Transport | null = null;
  recv: Transport | null = null;
  readonly producers = new Map<string, Producer>();
  readonly received = new Map<string, Received>();
  readonly events: any[] = [];
  #sources: { stop(): void }[] = [];
  #sinks: { stop(): void }[] = [];
  #pending: Promise<unknown> = Promise.resolve();
  #listening = false;
  /** What this peer sends, to send again after the room's media moved. */
  #sending: (() => Promise<Producer>)[] = [];
  #rev = 0;
  /** Restarts after `media` messages, once each (see followPlacement). */
  restarts: Promise<void> = Promise.resolve();
  restarted = 0;

  constructor(room: RoomClient) {
    this.room = room;
  }

  /** The last `produce` request each source sent (its RTP parameters, to replay in hostile tests). */
  readonly produced = new Map<string, Record<string, any>>();
  /** Whether it makes a sending transport (a VIEWER does not: the server refuses one). */
  sends = true;
  /** Only relayed paths (RTCPeerConnection's iceTransportPolicy 'relay'): what a network that blocks the media server leaves. */
  relayOnly = false;
  /** The TURN relays the media-join answer gave. */
  iceServers: { urls: string[]; username: string; credential: string }[] = [];

  /** media-join, both transports (the sending one unless `sends` is false), media-ready: from now on it receives every producer of the room. */
  async start(opts: { receive?: boolean } = {}): Promise<void> {
    if (!this.#listening) {
      this.#listening = true;
      this.room.ws.on('message', (raw) => this.#onMessage(JSON.parse(String(raw))));
    }
    const join = await this.#ask({ type: 'media-join' });
    this.iceServers = join.iceServers;
    this.device = new Device({ handlerName: 'Chrome74' });
    await this.device.load({ routerRtpCapabilities: join.routerRtpCapabilities });
    if (this.sends) this.send = await this.#transport('send');
    this.recv = await this.#transport('recv');
    if (opts.receive !== false) await this.#ask({ type: 'media-ready', rtpCapabilities: this.device.rtpCapabilities });
  }

  /** Ack of a room command; a refusal is returned (not thrown) so tests can look at it. */
  async #ask(msg: Record<string, unknown>): Promise<any> {
    const ack = await this.room.command(msg);
    if (!ack.ok) throw Object.assign(new Error(`${String(msg.type)}: ${ack.error.code} ${ack.error.message}`), { ack });
    return ack;
  }

  async #transport(direction: 'send' | 'recv'): Promise<Transport> {
    const t = await this.#ask({ type: 'transport-create', direction });
    const options = {
      id: t.transportId,
      iceParameters: t.iceParameters,
      iceCandidates: t.iceCandidates,
      dtlsParameters: t.dtlsParameters,
      iceServers: this.iceServers,
      iceTransportPolicy: this.relayOnly ? ('relay' as const) : ('all' as const),
    };
    const transport = direction === 'send' ? this.device.createSendTransport(options) : this.device.createRecvTransport(options);
    transport.on('connect', ({ dtlsParameters }, ok, fail) => {
      this.#ask({ type: 'transport-connect', transportId: transport.id, dtlsParameters }).then(() => ok(), fail);
    });
    transport.on('produce', ({ kind, rtpParameters, appData }, ok, fail) => {
      // announceAfterMs: the packets flow before the server hears of the producer (a slow signaling path)
      const delay = new Promise((r) => setTimeout(r, Number(appData.announceAfterMs ?? 0)));
      delay
        .then(() => {
          const request = { type: 'produce', transportId: transport.id, kind, rtpParameters, source: appData.source, paused: appData.paused === true };
          this.produced.set(String(appData.source), request);
          return this.#ask(request);
        })
        .then((a) => ok({ id: a.producerId }), fail);
    });
    return transport;
  }

  /** Each transport's selected path, as the page reads it (web/room/ice-stats.ts). */
  async paths(): Promise<(SelectedPath & { direction: string })[]> {
    const out: (SelectedPath & { direction: string })[] = [];
    for (const [direction, tr] of [['send', this.send], ['recv', this.recv]] as const) {
      if (!tr || tr.closed) continue;
      const path = selectedPath(await tr.getStats());
      if (path) out.push({ direction, ...path });
    }
    return out;
  }

  /**
   * Sends a tone as `source` (mic by default), or `speech` (48 kHz mono samples: test/helpers/av.ts's
   * speechPcm) from its start. Rejects with the server's refusal (`err.ack`).
   */
  async produceAudio(opts: { source?: 'mic' | 'screen-audio'; paused?: boolean; hz?: number; speech?: Int16Array } = {}): Promise<Producer> {
    this.#sending.push(() => this.produceAudio(opts));
    const tone = new ToneSource(opts.hz, opts.speech);
    this.#sources.push(tone);
    const producer = await this.send!.produce({ track: tone.track as never, appData: { source: opts.source ?? 'mic', paused: opts.paused }, ...(opts.paused ? { paused: true } : {}) });
    this.producers.set(producer.id, producer);
    return producer;
  }

  /**
   * Sends frames as `source` (camera by default), in three simulcast layers unless `simulcast` is false;
   * with `announceAfterMs`, RTP flows that long before the `produce` command is sent. `small`: 160x120
   * at 3 fps, one layer (a class's many synthetic cameras, cheap to encode). `noise`: frames an encoder
   * cannot squeeze, so every layer runs at its full bitrate (for tests of bandwidth).
   */
  async produceVideo(opts: { source?: 'camera' | 'screen'; simulcast?: boolean; announceAfterMs?: number; small?: boolean; noise?: boolean } = {}): Promise<Producer> {
    this.#sending.push(() => this.produceVideo(opts));
    const frames = opts.small ? new FrameSource(160, 120, 3) : new FrameSource(opts.simulcast === false ? 320 : 640, opts.simulcast === false ? 240 : 480, 15, opts.noise === true);
    if (opts.small) opts = { ...opts, simulcast: false };
    this.#sources.push(frames);
    const encodings = opts.simulcast === false ? undefined : [{ scaleResolutionDownBy: 4 }, { scaleResolutionDownBy: 2 }, { scaleResolutionDownBy: 1 }];
    const producer = await this.send!.produce({ track: frames.track as never, ...(encodings ? { encodings } : {}), appData: { source: opts.source ?? 'camera', announceAfterMs: opts.announceAfterMs } });
    this.producers.set(producer.id, producer);
    return producer;
  }

  /** Says what this peer's "page" shows (the room protocol's `view`). */
  view(tiles: { participantId: string; source: 'camera' | 'screen'; width: number; height: number }[], audioOnly = false): Promise<any> {
    return this.#ask({ type: 'view', tiles, audioOnly });
  }

  /** RTP bytes received so far for one consumer (the receiving transport's inbound-rtp stats, by SSRC). */
  async receivedBy(consumerId: string): Promise<number> {
    const r = this.received.get(consumerId);
    const ssrc = r?.consumer.rtpParameters.encodings?.[0]?.ssrc;
    let bytes = 0;
    (await this.recv!.getStats()).forEach((s: any) => {
      if (s.type === 'inbound-rtp' && s.ssrc === ssrc) bytes += s.bytesReceived ?? 0;
    });
    return bytes;
  }

  /** Pauses or resumes a producer here and on the server (the server may refuse the resume: returns its ack). */
  async setPaused(producer: Producer, paused: boolean): Promise<any> {
    const ack = await this.room.command({ type: paused ? 'producer-pause' : 'producer-resume', producerId: producer.id });
    if (ack.ok) paused ? producer.pause() : producer.resume();
    return ack;
  }

  /**
   * Does what a client must when the room's media is placed or moves (`{ type: "media", rev }`): drop its
   * transports, join the media again and send what it sent, as the browser bundle does.
   */
  followPlacement(rev: number): void {
    this.#rev = rev;
    this.room.ws.on('message', (raw) => {
      const m = JSON.parse(String(raw));
      if (m.type !== 'media' || !m.available || m.rev <= this.#rev) return;
      this.#rev = m.rev;
      this.restarts = this.restarts.then(() => this.restart()).catch(() => {});
    });
  }

  async restart(): Promise<void> {
    const sending = this.#sending;
    this.reset();
    for (const s of this.#sources) s.stop();
    this.#sources = [];
    this.#sending = [];
    await this.start();
    for (const again of sending) await again();
    this.restarted++;
  }

  /** Media events this peer loses on their way (as a lost bus message would be): the next one matching is dropped. */
  readonly losses: ((m: any) => boolean)[] = [];
  /** The last `seq` seen, and how many times a gap made it ask media-resync. */
  seq = 0;
  resyncs = 0;

  #onMessage(m: any): void {
    if (m.type === 'ack') return;
    const lost = this.losses.findIndex((f) => f(m));
    if (lost !== -1) {
      this.losses.splice(lost, 1);
      return;
    }
    this.events.push(m);
    // as the room page does: a gap in `seq` means an event was lost; ask for the whole state
    if (typeof m.seq === 'number') {
      if (m.seq > this.seq + 1) this.#pending = this.#pending.then(() => this.#resync()).catch(() => {});
      this.seq = Math.max(this.seq, m.seq);
    }
    if (m.type === 'consumer-new') this.#pending = this.#pending.then(() => this.#consume(m)).catch(() => {});
    // dynacast, as the room page does (libwebrtc in Node takes the call and keeps sending every layer;
    // Chromium stops them: test/browser)
    if (m.type === 'layers-wanted') {
      const p = this.producers.get(m.producerId);
      if (p && !p.closed && (p.rtpParameters.encodings?.length ?? 0) > 1) p.setMaxSpatialLayer(m.maxSpatialLayer).catch(() => {});
    }
    // in the same queue as consumer-new, as the room page does: a consumer closed while it was being set up is not kept
    if (m.type === 'consumer-closed') this.#pending = this.#pending.then(() => this.#drop(m.consumerId)).catch(() => {});
  }

  /**
   * A consumer the server closed: its sink stops before its track goes (libwebrtc reading a track whose
   * receiver is gone is where this process has crashed), then the consumer closes.
   */
  #drop(consumerId: string): void {
    const r = this.received.get(consumerId);
    if (!r) return;
    if (r.sink) {
      r.sink.stop();
      this.#sinks = this.#sinks.filter((s) => s !== r.sink);
    }
    r.consumer.close();
    this.received.delete(consumerId);
  }

  async #resync(): Promise<void> {
    this.resyncs++;
    const r = await this.#ask({ type: 'media-resync' });
    this.seq = Math.max(this.seq, r.seq);
    const current = new Set(r.consumers.map((c: any) => c.consumerId));
    for (const id of [...this.received.keys()]) if (!current.has(id)) this.#drop(id);
    for (const c of r.consumers) if (!this.received.has(c.consumerId)) await this.#consume(c);
  }

  async #consume(m: any): Promise<void> {
    // offered again: the server did not hear this peer's answer
    if (this.received.has(m.consumerId)) {
      await this.#ask({ type: 'consumer-ready', consumerId: m.consumerId });
      return;
    }
    const consumer = await this.recv!.consume({ id: m.consumerId, producerId: m.producerId, kind: m.kind, rtpParameters: m.rtpParameters });
    const r: Received = { consumer, participantId: m.participantId, source: m.source, peak: 0 };
    this.received.set(consumer.id, r);
    if (consumer.kind === 'audio') {
      const sink = new RTCAudioSink(consumer.track);
      sink.ondata = (d: { samples: Int16Array }) => {
        for (let i = 0; i < d.samples.length; i += 8) r.peak = Math.max(r.peak, Math.abs(d.samples[i]!));
      };
      r.sink = sink;
      this.#sinks.push(sink);
    }
    await this.#ask({ type: 'consumer-ready', consumerId: consumer.id });
  }

  /** Everything offered so far has been consumed and resumed. */
  settled(): Promise<unknown> {
    return this.#pending;
  }

  /** RTP bytes this peer's transports have sent and received so far (from the peer connections' stats). */
  async bytes(): Promise<{ sent: number; received: number }> {
    let sent = 0;
    let received = 0;
    for (const t of [this.send, this.recv]) {
      if (!t || t.closed) continue;
      const stats = await t.getStats();
      stats.forEach((s: any) => {
        if (s.type === 'outbound-rtp') sent += s.bytesSent ?? 0;
        if (s.type === 'inbound-rtp') received += s.bytesReceived ?? 0;
      });
    }
    return { sent, received };
  }

  /** What this peer receives from one participant's source. */
  from(participantId: string, source: string): Received | undefined {
    for (const r of this.received.values()) if (r.participantId === participantId && r.source === source) return r;
    return undefined;
  }

  /** Drops transports and consumers (e.g. before `start()` again after a `media` message). */
  reset(): void {
    for (const s of this.#sinks) s.stop();
    this.#sinks = [];
    this.send?.close();
    this.recv?.close();
    this.send = this.recv = null;
    this.producers.clear();
    this.received.clear();
  }

  close(): void {
    this.reset();
    for (const s of this.#sources) s.stop();
    this.#sources = [];
  }
}

/**
 * A participant in a live room with media started, the way a page does it: a join link for the role, its
 * exchange, the room socket, then media-join, transports and media-ready. The peer follows the room's
 * media when it moves. Closed at teardown.
 */
export async function enterRoom(t: Test, node: Node, key: string, meetingId: string, userId: string, role = 'PARTICIPANT') {
  const link = (await api(node, 'POST', `/public/meetings/${meetingId}/join-links`, { key, body: { userId, role } })).body.data;
  const s = (await api(node, 'POST', '/join-tokens/exchange', { body: { token: link.token, deviceId: `d-${userId}-${meetingId}` } })).body.data;
  const room = await connect(t, s.mediaUrl, s.mediaToken);
  const joined = await room.type('joined');
  const peer = new MediaPeer(room);
  peer.sends = role !== 'VIEWER';
  t.teardown(() => peer.close());
  peer.followPlacement(joined.media.rev);
  await peer.start();
  return { room, joined, peer, participantId: joined.participantId as string };
}

/**
 * A copy of a `produce` request the client library made, as a hostile client would send it again: new
 * SSRCs and MID, so that the worker takes it as another producer on the same transport.
 */
export function replayProduce(request: Record<string, any>, n: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const rtp = structuredClone(request.rtpParameters);
  rtp.mid = `h${n}`;
  for (const [i, e] of (rtp.encodings ?? []).entries()) {
    if (e.ssrc !== undefined) e.ssrc = 100_000 + n * 10 + i;
    if (e.rtx?.ssrc !== undefined) e.rtx.ssrc = 500_000 + n * 10 + i;
  }
  if (rtp.rtcp) rtp.rtcp.cname = `hostile-${n}`;
  return { ...request, rtpParameters: rtp, ...extra };
}

/** The code of the room's refusal of a MediaPeer call (its `err.ack`), or null when it succeeded. */
export const ackError = (p: Promise<unknown>): Promise<string | null> =>
  p.then(
    () => null,
    (err: { ack?: { error: { code: string } } }) => err.ack?.error.code ?? String(err),
  );
