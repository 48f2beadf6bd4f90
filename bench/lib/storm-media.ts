/**
 * WebRTC in Node for the join storm (bench/storm.ts): libwebrtc (@roamhq/wrtc) under mediasoup-client
 * 3.6's Chrome74 handler, through the real room protocol, as test/helpers/media.ts does for the tests
 * and web/room/media.ts does in the browser. A teacher sends a tone; a sampled student joins the room's
 * media the way the page does (media-join, a sending and a receiving transport, media-ready, each
 * consumer consumed and resumed) and reports when the first RTP packet of the teacher's audio arrived.
 */
import wrtc from '@roamhq/wrtc';
import { Device } from 'mediasoup-client';
import type { Consumer } from 'mediasoup-client/lib/Consumer.js';
import type { Transport } from 'mediasoup-client/lib/Transport.js';

// mediasoup-client's Chrome74 handler uses the browser's globals: libwebrtc in Node supplies them.
const globals = globalThis as Record<string, unknown>;
for (const name of ['RTCPeerConnection', 'RTCSessionDescription', 'RTCIceCandidate', 'MediaStream', 'MediaStreamTrack', 'RTCRtpSender', 'RTCRtpReceiver', 'RTCRtpTransceiver'] as const) {
  globals[name] ??= (wrtc as unknown as Record<string, unknown>)[name];
}
const { RTCAudioSource } = (wrtc as any).nonstandard;

// libwebrtc crashes Node's environment teardown at a natural exit (see test/helpers/media.ts): once the
// exit handlers ran, leave without that teardown, keeping the exit code.
process.once('beforeExit', () => {
  process.on('exit', (code) => (process as unknown as { reallyExit(code: number): never }).reallyExit(code));
});
/** Ends the process without Node's teardown (the same reason), after `flush` ran. */
export function exitNow(code: number): never {
  return (process as unknown as { reallyExit(code: number): never }).reallyExit(code);
}

/** Sends one command on a room socket and resolves with its ack (`ok: false` rejects with the code). */
export type Ask = (msg: Record<string, unknown>) => Promise<any>;

/**
 * Tones for every teacher from one timer: 10 ms of a 400 Hz tone (exactly four periods at 48 kHz, so the
 * same samples repeat without a click), 16-bit mono, fed to every source every 10 ms.
 */
class ToneClock {
  readonly #sources = new Set<{ onData(d: unknown): void }>();
  readonly #frame = { samples: new Int16Array(480), sampleRate: 48000, bitsPerSample: 16, channelCount: 1, numberOfFrames: 480 };
  #timer: NodeJS.Timeout | null = null;

  constructor() {
    for (let i = 0; i < 480; i++) this.#frame.samples[i] = Math.round(Math.sin((i * 2 * Math.PI * 400) / 48000) * 8000);
  }

  track(): { track: MediaStreamTrack; stop(): void } {
    const source = new RTCAudioSource();
    const track = source.createTrack() as MediaStreamTrack;
    this.#sources.add(source);
    this.#timer ??= setInterval(() => {
      for (const s of this.#sources) s.onData(this.#frame);
    }, 10);
    return {
      track,
      stop: () => {
        this.#sources.delete(source);
        track.stop();
        if (!this.#sources.size && this.#timer) {
          clearInterval(this.#timer);
          this.#timer = null;
        }
      },
    };
  }
}
const tones = new ToneClock();

/** The media of one participant over its room socket (`ask` sends a command and waits for its ack). */
export class StormPeer {
  device = new Device({ handlerName: 'Chrome74' });
  send: Transport | null = null;
  recv: Transport | null = null;
  readonly consumers: Consumer[] = [];
  #tone: { stop(): void } | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;
  /** Set by a consumer once set up: the first one's consumer-ready ack. */
  firstResumedAt = 0;
  #onConsumer: ((c: Consumer) => void) | null = null;

  constructor(private readonly ask: Ask) {}

  /** media-join, the sending transport (when it may send), the receiving one, media-ready; times of each ack. */
  async start(opts: { send: boolean }): Promise<Record<string, number>> {
    const t: Record<string, number> = {};
    const join = await this.ask({ type: 'media-join' });
    t.mediaJoin = performance.now();
    await this.device.load({ routerRtpCapabilities: join.routerRtpCapabilities });
    if (opts.send) this.send = await this.#transport('send');
    this.recv = await this.#transport('recv');
    t.transports = performance.now();
    await this.ask({ type: 'media-ready', rtpCapabilities: this.device.rtpCapabilities });
    t.mediaReady = performance.now();
    return t;
  }

  async #transport(direction: 'send' | 'recv'): Promise<Transport> {
    const t = await this.ask({ type: 'transport-create', direction });
    const options = { id: t.transportId, iceParameters: t.iceParameters, iceCandidates: t.iceCandidates, dtlsParameters: t.dtlsParameters };
    const transport = direction === 'send' ? this.device.createSendTransport(options) : this.device.createRecvTransport(options);
    transport.on('connect', ({ dtlsParameters }, ok, fail) => {
      this.ask({ type: 'transport-connect', transportId: transport.id, dtlsParameters }).then(() => ok(), fail);
    });
    transport.on('produce', ({ kind, rtpParameters, appData }, ok, fail) => {
      this.ask({ type: 'produce', transportId: transport.id, kind, rtpParameters, source: appData.source }).then((a) => ok({ id: a.producerId }), fail);
    });
    return transport;
  }

  /** Sends a tone as the microphone (Opus, as the page sends it). */
  async produceTone(): Promise<void> {
    const tone = tones.track();
    this.#tone = tone;
    await this.send!.produce({ track: tone.track, codecOptions: { opusDtx: false, opusFec: true }, stopTracks: false, appData: { source: 'mic' } });
  }

  /** A `consumer-new` message: consumed and resumed in order, as the page does. */
  onConsumerNew(m: any): void {
    this.#queue = this.#queue
      .then(async () => {
        if (this.#closed || !this.recv) return;
        const consumer = await this.recv.consume({ id: m.consumerId, producerId: m.producerId, kind: m.kind, rtpParameters: m.rtpParameters });
        this.consumers.push(consumer);
        await this.ask({ type: 'consumer-ready', consumerId: consumer.id });
        this.firstResumedAt ||= performance.now();
        this.#onConsumer?.(consumer);
      })
      .catch(() => {});
  }

  /**
   * Resolves with the time the first RTP packet of an audio consumer was seen in the receiving peer
   * connection's stats (inbound-rtp packetsReceived > 0), polled every `everyMs`; rejects after `timeoutMs`.
   */
  firstPacket(timeoutMs: number, everyMs = 5): Promise<number> {
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const poll = async () => {
        if (this.#closed) return reject(new Error('closed'));
        if (performance.now() - t0 > timeoutMs) return reject(new Error(`no RTP within ${timeoutMs} ms (consumers: ${this.consumers.length}, recv ${this.recv?.connectionState ?? 'none'})`));
        if (this.recv && this.consumers.length) {
          try {
            const stats = await this.recv.getStats();
            let got = false;
            stats.forEach((s: any) => {
              if (s.type === 'inbound-rtp' && (s.packetsReceived ?? 0) > 0) got = true;
            });
            if (got) return resolve(performance.now());
          } catch {
            // the transport closed meanwhile: the next poll says so
          }
        }
        setTimeout(() => void poll(), everyMs);
      };
      void poll();
    });
  }

  /** Closes every consumer here and on the server (`consumer-close`): no more RTP to this receiver. */
  async stopReceiving(): Promise<void> {
    await this.#queue;
    await Promise.all(this.consumers.map((c) => this.ask({ type: 'consumer-close', consumerId: c.id })));
    for (const c of this.consumers) c.close();
  }

  close(): void {
    this.#closed = true;
    this.#tone?.stop();
    this.#tone = null;
    for (const c of this.consumers) c.close();
    this.send?.close();
    this.recv?.close();
    this.send = this.recv = null;
  }
}
